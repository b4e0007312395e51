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
#define SKEIN_KIND_NAME_(KIND, INTERFACE) \
  case PluginKind::KIND:                  \
    return #KIND;
    SKEIN_PLUGIN_KINDS(SKEIN_KIND_NAME_)
#undef SKEIN_KIND_NAME_
    case PluginKind::unknown: break;
  }
  return "unknown";
}

const char* host_fingerprint() { return SKEIN_BUILD_FINGERPRINT; }

}  // namespace skein
