#pragma once
// Declaring a plugin. Each plugin library exports two C symbols:
//   skein_plugin_info    plain constant data (PluginInfo), read before any object exists
//   skein_plugin_create  the factory
// SKEIN_PLUGIN writes both. Example:
//
//   SKEIN_PLUGIN(MyStopper, callback, "my_stopper", "1.0.0", "Stops on a whim",
//     SKEIN_OPTION("patience", integer, "3", "Epochs to wait"),
//     SKEIN_REQUIRED_OPTION("monitor", string, "History key to watch"))
#include <cstdint>
#include <type_traits>

#include "skein/export.hpp"
#include "skein/manifest.hpp"
#include "skein/options.hpp"
#include "skein/run_info.hpp"
#include "skein/version.hpp"

namespace skein {

class Callback;
class HistoryBackend;
class Parallel;
class Model;
class Dataset;
class Loss;
class OptimizerFactory;
struct RunStore;

// Values are part of the ABI: new kinds are appended (API minor 1 added loss, optimizer).
enum class PluginKind : std::uint32_t { callback = 1, history, parallel, model, dataset, loss, optimizer };
// Every kind, in declaration order.
constexpr PluginKind kAllPluginKinds[] = {PluginKind::callback, PluginKind::history, PluginKind::parallel,
                                          PluginKind::model,    PluginKind::dataset, PluginKind::loss,
                                          PluginKind::optimizer};
SKEIN_EXPORT const char* to_string(PluginKind kind);

template <PluginKind K> struct interface_for;
template <> struct interface_for<PluginKind::callback> { using type = Callback; };
template <> struct interface_for<PluginKind::history> { using type = HistoryBackend; };
template <> struct interface_for<PluginKind::parallel> { using type = Parallel; };
template <> struct interface_for<PluginKind::model> { using type = Model; };
template <> struct interface_for<PluginKind::dataset> { using type = Dataset; };
template <> struct interface_for<PluginKind::loss> { using type = Loss; };
template <> struct interface_for<PluginKind::optimizer> { using type = OptimizerFactory; };

template <class Interface> struct kind_of;
template <> struct kind_of<Callback> { static constexpr PluginKind value = PluginKind::callback; };
template <> struct kind_of<HistoryBackend> { static constexpr PluginKind value = PluginKind::history; };
template <> struct kind_of<Parallel> { static constexpr PluginKind value = PluginKind::parallel; };
template <> struct kind_of<Model> { static constexpr PluginKind value = PluginKind::model; };
template <> struct kind_of<Dataset> { static constexpr PluginKind value = PluginKind::dataset; };
template <> struct kind_of<Loss> { static constexpr PluginKind value = PluginKind::loss; };
template <> struct kind_of<OptimizerFactory> { static constexpr PluginKind value = PluginKind::optimizer; };

constexpr std::uint32_t kPluginMagic = 0x534b4e31;  // "SKN1"

// Never reorder: magic, struct_size and the API version come first so any
// host can read them from any plugin. New fields go at the end (struct_size
// tells the host which ones a plugin has).
struct PluginInfo {
  std::uint32_t magic;
  std::uint32_t struct_size;
  std::uint32_t api_major;
  std::uint32_t api_minor;
  const char* name;
  PluginKind kind;
  const char* version;
  const char* description;
  const OptionSpec* options;
  std::uint32_t option_count;
  const char* fingerprint;
};

// What a plugin's constructor receives.
struct PluginArgs {
  const Options& options;
  const RunInfo& run;
  const DataInfo* data = nullptr;    // set for model plugins
  const RunStore* store = nullptr;   // the run's store (skein/run_store.hpp), if it has one
};

using CreateFn = void* (*)(const PluginArgs*);

}  // namespace skein

#define SKEIN_PLUGIN_INFO_SYMBOL skein_plugin_info
#define SKEIN_PLUGIN_CREATE_SYMBOL skein_plugin_create

#define SKEIN_OPTION(NAME, TYPE, DEFAULT_JSON, DOC) \
  ::skein::OptionSpec { NAME, ::skein::OptionType::TYPE, DEFAULT_JSON, DOC }
#define SKEIN_REQUIRED_OPTION(NAME, TYPE, DOC) \
  ::skein::OptionSpec { NAME, ::skein::OptionType::TYPE, nullptr, DOC }

// The manifest half of SKEIN_PLUGIN: the options array and the JSON manifest
// in the ELF section the host reads without loading the library. Used inside
// an anonymous namespace.
#define SKEIN_PLUGIN_MANIFEST(KIND, NAME, VERSION, DESCRIPTION, ...)                      \
  constexpr ::skein::OptionSpec skein_plugin_options_[] = {                               \
      __VA_ARGS__ __VA_OPT__(, )::skein::OptionSpec{nullptr, ::skein::OptionType::object,  \
                                                    nullptr, nullptr}};                   \
  constexpr ::skein::manifest::Fields skein_manifest_fields_ = {                          \
      SKEIN_STR(SKEIN_API_MAJOR), SKEIN_STR(SKEIN_API_MINOR), NAME, #KIND, VERSION,      \
      DESCRIPTION, SKEIN_BUILD_FINGERPRINT, skein_plugin_options_,                        \
      sizeof(skein_plugin_options_) / sizeof(::skein::OptionSpec) - 1};                   \
  __attribute__((section(SKEIN_MANIFEST_SECTION), used)) constexpr auto skein_manifest_ = \
      ::skein::manifest::build<::skein::manifest::length(skein_manifest_fields_)>(        \
          skein_manifest_fields_);

// CLASS must derive from the kind's interface and have a constructor taking
// `const skein::PluginArgs&`.
#define SKEIN_PLUGIN(CLASS, KIND, NAME, VERSION, DESCRIPTION, ...)                        \
  namespace {                                                                             \
  using skein_plugin_interface_ = ::skein::interface_for<::skein::PluginKind::KIND>::type; \
  static_assert(std::is_base_of<skein_plugin_interface_, CLASS>::value,                  \
                "SKEIN_PLUGIN: " #CLASS " must derive from the interface of kind " #KIND); \
  SKEIN_PLUGIN_MANIFEST(KIND, NAME, VERSION, DESCRIPTION, __VA_ARGS__)                   \
  }                                                                                       \
  extern "C" SKEIN_EXPORT const ::skein::PluginInfo SKEIN_PLUGIN_INFO_SYMBOL = {          \
      ::skein::kPluginMagic,                                                              \
      sizeof(::skein::PluginInfo),                                                        \
      SKEIN_API_MAJOR,                                                                    \
      SKEIN_API_MINOR,                                                                    \
      NAME,                                                                               \
      ::skein::PluginKind::KIND,                                                          \
      VERSION,                                                                            \
      DESCRIPTION,                                                                        \
      skein_plugin_options_,                                                              \
      sizeof(skein_plugin_options_) / sizeof(::skein::OptionSpec) - 1,                    \
      SKEIN_BUILD_FINGERPRINT};                                                           \
  extern "C" SKEIN_EXPORT void* SKEIN_PLUGIN_CREATE_SYMBOL(const ::skein::PluginArgs* args) { \
    skein_plugin_interface_* object = new CLASS(*args);                                   \
    return static_cast<void*>(object);                                                    \
  }
