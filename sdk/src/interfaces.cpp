// Out-of-line destructors: the one home of each interface's vtable and typeinfo.
#include "skein/callback.hpp"
#include "skein/context.hpp"
#include "skein/dataset.hpp"
#include "skein/errors.hpp"
#include "skein/history_backend.hpp"
#include "skein/loss.hpp"
#include "skein/optimizer.hpp"
#include "skein/model.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"

namespace skein {

ConfigError::~ConfigError() = default;
PluginError::~PluginError() = default;
Callback::~Callback() = default;
TrainContext::~TrainContext() = default;
Dataset::~Dataset() = default;
InMemoryDataset::~InMemoryDataset() = default;
SampleSource::~SampleSource() = default;
HistoryBackend::~HistoryBackend() = default;
Model::~Model() = default;
Parallel::~Parallel() = default;
Loss::~Loss() = default;
// Beside the destructor: Loss's vtable is emitted here and names them.
void Loss::check_targets(const torch::Tensor&, const DataInfo&, const std::string&) const {}
std::vector<LossMetric> Loss::metrics(const torch::Tensor&, const torch::Tensor&) const { return {}; }
OptimizerFactory::~OptimizerFactory() = default;

const char* to_string(PluginKind kind) {
  switch (kind) {
    case PluginKind::callback: return "callback";
    case PluginKind::history: return "history";
    case PluginKind::parallel: return "parallel";
    case PluginKind::model: return "model";
    case PluginKind::dataset: return "dataset";
    case PluginKind::loss: return "loss";
    case PluginKind::optimizer: return "optimizer";
  }
  return "unknown";
}

const char* host_fingerprint() { return SKEIN_BUILD_FINGERPRINT; }

}  // namespace skein
