// Model "pt2": a module exported from PyTorch 2 with
// torch.export.save(torch.export.export(m, (x,)), path); every parameter is
// trained (skein/io/exported_model.hpp says how).
#include "skein/plugin.hpp"
#include "skein/io/exported_model.hpp"

// Declared once: the schema and Pt2Options.
#define PT2_OPTIONS(X) \
  X(path, string, nullptr, "File written by torch.export.save (.pt2)")

namespace {

SKEIN_OPTIONS_STRUCT(Pt2Options, PT2_OPTIONS)

class Pt2 final : public skein::ExportedModel {
 public:
  explicit Pt2(const skein::PluginArgs& args) : ExportedModel(Pt2Options(args.options).path, args.options.owner()) {}
};

}  // namespace

SKEIN_PLUGIN(Pt2, model, "pt2", "1.0.0",
             "A program exported from PyTorch 2 (torch.export.save(torch.export.export(m, (x,)), path), a .pt2 "
             "file; libtorch 2.x); forward(x) -> Tensor",
             SKEIN_OPTION_SPECS(PT2_OPTIONS))
