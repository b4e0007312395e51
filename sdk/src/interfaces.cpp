// Out-of-line destructors: the one home of each interface's vtable and typeinfo.
// (The error types, to_string(PluginKind) and host_fingerprint() live in
// libskein_base, base.cpp: the torch-free part of the SDK.)
#include "skein/callback.hpp"
#include "skein/context.hpp"
#include "skein/dataset.hpp"
#include "skein/history_backend.hpp"
#include "skein/loss.hpp"
#include "skein/optimizer.hpp"
#include "skein/model.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"

namespace skein {

Callback::~Callback() = default;
EpochReporter::~EpochReporter() = default;
EpochScorer::~EpochScorer() = default;
TestReporter::~TestReporter() = default;
TrainContext::~TrainContext() = default;
Dataset::~Dataset() = default;
InMemoryDataset::~InMemoryDataset() = default;
OwnValidation::~OwnValidation() = default;
ScaledInputs::~ScaledInputs() = default;
SampleSource::~SampleSource() = default;
HistoryBackend::~HistoryBackend() = default;
Model::~Model() = default;
Parallel::~Parallel() = default;
ParallelState::~ParallelState() = default;
ShardedOptimizer::~ShardedOptimizer() = default;
ShardedInSpans::~ShardedInSpans() = default;
RegroupingParallel::~RegroupingParallel() = default;
BufferSync::~BufferSync() = default;
WorldChangeListener::~WorldChangeListener() = default;
Loss::~Loss() = default;
// Beside the destructor: Loss's vtable is emitted here and names them.
void Loss::check_targets(const torch::Tensor&, const DataInfo&, const std::string&) const {}
std::vector<LossMetric> Loss::metrics(const torch::Tensor&, const torch::Tensor&) const { return {}; }
OptimizerFactory::~OptimizerFactory() = default;
ElementwiseOptimizer::~ElementwiseOptimizer() = default;

}  // namespace skein
