// Claims a newer minor version than the host has: refused.
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

#undef SKEIN_API_MINOR
#define SKEIN_API_MINOR 99
namespace {
class Nothing final : public skein::Callback {
 public:
  explicit Nothing(const skein::PluginArgs&) {}
};
}  // namespace
SKEIN_PLUGIN(Nothing, callback, "newer_minor", "0.1.0", "Built for API 1.99")
