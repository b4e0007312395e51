// Claims a future SDK major version: the host must refuse it by name.
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

#undef SKEIN_API_MAJOR
#define SKEIN_API_MAJOR 2
namespace {
class Nothing final : public skein::Callback {
 public:
  explicit Nothing(const skein::PluginArgs&) {}
};
}  // namespace
SKEIN_PLUGIN(Nothing, callback, "wrong_api", "0.1.0", "Built for API 2.0")
