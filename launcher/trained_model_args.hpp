#pragma once
// Command-line arguments that skein export and skein predict share: the run
// directory (first positional argument), --checkpoint and --plugin-dir.
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "skein/core/model_io.hpp"

namespace skein::launcher {

void add_trained_model_options(boost::program_options::options_description& opts, core::TrainedModelOptions& model);

// Parses `args` against `opts`, RUN_DIR being the first positional argument.
boost::program_options::variables_map parse_with_run_dir(const std::vector<std::string>& args,
                                                         const boost::program_options::options_description& opts);

}  // namespace skein::launcher
