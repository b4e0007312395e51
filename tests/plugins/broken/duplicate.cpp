// Built twice into two files that both declare the name "twin".
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {
class Twin final : public skein::Callback {
 public:
  explicit Twin(const skein::PluginArgs&) {}
};
}  // namespace
SKEIN_PLUGIN(Twin, callback, "twin", "0.1.0", "One of two plugins with the same name")
