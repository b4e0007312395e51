// Model "pt2": a module exported from PyTorch 2 with
// torch.export.save(torch.export.export(m, (x,)), path); every parameter is
// trained (skein/io/exported_model.hpp says how).
#include "skein/errors.hpp"
#include "skein/io/exported_model.hpp"
#include "skein/io/operator_libraries.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and Pt2Options.
#define PT2_OPTIONS(X)                                                                                  \
  X(path, string, nullptr, "File written by torch.export.save (.pt2)")                                 \
  X(operator_libraries, string_list, "[]",                                                             \
    "Shared libraries of custom operators the program calls (each registering them with "              \
    "TORCH_LIBRARY), loaded before the program as Python's torch.ops.load_library loads them")

namespace {

SKEIN_OPTIONS_STRUCT(Pt2Options, PT2_OPTIONS)

// The program's path, once the libraries of its custom operators are loaded.
std::string path_with_operators(const skein::PluginArgs& args) {
  const Pt2Options o(args.options);
  skein::load_operator_libraries(o.operator_libraries, args.options.owner(), Pt2Options::names::operator_libraries);
  return o.path;
}

class Pt2 final : public skein::ExportedModel {
 public:
  explicit Pt2(const skein::PluginArgs& args) : ExportedModel(path_with_operators(args), args.options.owner()) {
    if (const std::string& evidence = eval_mode_evidence(); !evidence.empty())
      skein::warn(args.options.owner() + ": '" + path() + "' was exported in eval mode (" + evidence +
                  "): Skein trains its dropout and batch norm operators, but what Python decided from "
                  "self.training at export stays for the whole run (attention's dropout 0, inference fast paths, "
                  "the module's own branches); export the module in train mode (module.train()) to train it as "
                  "PyTorch does");
  }
};

}  // namespace

SKEIN_PLUGIN(Pt2, model, "pt2", "1.1.0",
             "A program exported from PyTorch 2 (torch.export.save(torch.export.export(m, (x,)), path), a .pt2 "
             "file; libtorch 2.x); forward(x) -> Tensor",
             SKEIN_OPTION_SPECS(PT2_OPTIONS))
