// Built "for another libtorch": the fingerprint check must refuse it.
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

#undef SKEIN_BUILD_FINGERPRINT
#define SKEIN_BUILD_FINGERPRINT "sdk=0.1.0;torch=9.9;cxx11abi=1;compiler=gcc-12"
namespace {
class Nothing final : public skein::Callback {
 public:
  explicit Nothing(const skein::PluginArgs&) {}
};
}  // namespace
SKEIN_PLUGIN(Nothing, callback, "wrong_fingerprint", "0.1.0", "Built for torch 9.9")
