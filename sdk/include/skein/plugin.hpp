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

#include "skein/detail/export.hpp"
#include "skein/detail/manifest.hpp"
#include "skein/detail/option_default.hpp"
#include "skein/options.hpp"
#include "skein/run.hpp"
#include "skein/detail/version.hpp"

namespace skein {

class Callback;
class HistoryBackend;
class Parallel;
class Model;
class Dataset;
class Loss;
class OptimizerFactory;
struct RunStore;

// The plugin kinds, the one table of them: X(kind, interface), in the order
// of their values, which are part of the ABI (1, 2, ...; new kinds are
// appended: API minor 1 added loss and optimizer). The enum, the list of all
// kinds, the kind <-> interface maps and to_string are written from it;
// sdk/cmake/SkeinPlugin.cmake and scripts/plugin_docs.py read the kinds from
// this file (keep the #define at the start of its line, each entry as X(kind, ...)).
#define SKEIN_PLUGIN_KINDS(X)                                                        \
  X(callback, Callback) X(history, HistoryBackend) X(parallel, Parallel) X(model, Model) \
  X(dataset, Dataset) X(loss, Loss) X(optimizer, OptimizerFactory)

#define SKEIN_KIND_ENUMERATOR_(KIND, INTERFACE) KIND,
// `unknown` (0) is no kind: what a zeroed PluginInfo holds.
enum class PluginKind : std::uint32_t { unknown = 0, SKEIN_PLUGIN_KINDS(SKEIN_KIND_ENUMERATOR_) };
#undef SKEIN_KIND_ENUMERATOR_

#define SKEIN_KIND_VALUE_(KIND, INTERFACE) PluginKind::KIND,
constexpr PluginKind kAllPluginKinds[] = {SKEIN_PLUGIN_KINDS(SKEIN_KIND_VALUE_)};
#undef SKEIN_KIND_VALUE_
SKEIN_EXPORT const char* to_string(PluginKind kind);

template <PluginKind K> struct interface_for;
template <class Interface> struct kind_of;
#define SKEIN_KIND_MAPS_(KIND, INTERFACE)                                                  \
  template <> struct interface_for<PluginKind::KIND> { using type = INTERFACE; };          \
  template <> struct kind_of<INTERFACE> { static constexpr PluginKind value = PluginKind::KIND; };
SKEIN_PLUGIN_KINDS(SKEIN_KIND_MAPS_)
#undef SKEIN_KIND_MAPS_

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

// An option: name, type, default (JSON text), doc, then its limits if any:
//   SKEIN_OPTION("patience", integer, "3", "Epochs to wait", SKEIN_RANGE("[0, )"))
//   SKEIN_OPTION("mode", choice, "\"min\"", "Which way is better", SKEIN_CHOICES("min|max"))
// The host refuses a value outside them before the plugin is made, with one
// line naming the plugin and the option; `skein plugins describe` and the
// docs show them. SKEIN_PLUGIN checks at compile time that they are well
// formed and that the default keeps to them. (API 3.1)
#define SKEIN_OPTION(NAME, TYPE, DEFAULT_JSON, DOC, ...) \
  ::skein::option_spec(NAME, ::skein::OptionType::TYPE, DEFAULT_JSON, DOC __VA_OPT__(, ) __VA_ARGS__)
#define SKEIN_REQUIRED_OPTION(NAME, TYPE, DOC, ...) SKEIN_OPTION(NAME, TYPE, nullptr, DOC __VA_OPT__(, ) __VA_ARGS__)
// A choice's allowed values, '|' between them: SKEIN_CHOICES("norm|value").
#define SKEIN_CHOICES(TEXT) ::skein::OptionChoices{TEXT}
// An interval of allowed values (for int, number and their lists: each value):
// "[lo, hi]", "(lo, hi)", "[lo, hi)", "[lo, )" (no upper bound), "(0, )" (positive).
#define SKEIN_RANGE(TEXT) ::skein::OptionRange{TEXT}
// A choice option with its default and choices as plain words:
//   SKEIN_CHOICE_OPTION("mode", "min", "min|max", "Which way is better")
#define SKEIN_CHOICE_OPTION(NAME, DEFAULT, CHOICES, DOC) \
  SKEIN_OPTION(NAME, choice, "\"" DEFAULT "\"", DOC, SKEIN_CHOICES(CHOICES))

// Options declared once: an X-macro list of X(name, type, default_json, doc
// [, limits...]) gives the schema entries (SKEIN_OPTION_SPECS), a struct of
// typed values read from the validated options (SKEIN_OPTIONS_STRUCT), in the
// way of libtorch's TORCH_ARG, and the options' names as constants
// (STRUCT::names::NAME), for messages about an option: its name is written
// once. A required option has default_json nullptr.
//
//   #define MY_OPTIONS(X)                                                  \
//     X(patience, integer, "3", "Epochs to wait", SKEIN_RANGE("[0, )"))    \
//     X(mode, choice, "\"min\"", "Which way is better", SKEIN_CHOICES("min|max")) \
//     X(monitor, string, nullptr, "History key to watch")
//   SKEIN_OPTIONS_STRUCT(MyOptions, MY_OPTIONS)  // MyOptions{args.options}.patience: std::int64_t
//   SKEIN_PLUGIN(MyStopper, callback, "my_stopper", "1.0.0", "...", SKEIN_OPTION_SPECS(MY_OPTIONS))
//   ... args.options.fail(MyOptions::names::monitor, "names no history key");
#define SKEIN_OPTION_FIELD_(NAME, TYPE, ...) ::skein::option_value_t<::skein::OptionType::TYPE> NAME{};
#define SKEIN_OPTION_READ_(NAME, TYPE, ...) \
  NAME = ::skein::OptionValue<::skein::OptionType::TYPE>::read(options, #NAME);
#define SKEIN_OPTION_NAME_(NAME, ...) static constexpr const char* NAME = #NAME;
#define SKEIN_OPTION_SPEC_(NAME, ...) , SKEIN_OPTION(#NAME, __VA_ARGS__)
#define SKEIN_DROP_FIRST_(...) SKEIN_DROP_FIRST_I_(__VA_ARGS__)
#define SKEIN_DROP_FIRST_I_(FIRST, ...) __VA_ARGS__
#define SKEIN_OPTION_SPECS(LIST) SKEIN_DROP_FIRST_(LIST(SKEIN_OPTION_SPEC_))
#define SKEIN_OPTIONS_STRUCT(STRUCT, LIST)                                  \
  struct STRUCT {                                                           \
    LIST(SKEIN_OPTION_FIELD_)                                               \
    struct names {                                                          \
      LIST(SKEIN_OPTION_NAME_)                                              \
    };                                                                      \
    STRUCT() = default;                                                     \
    explicit STRUCT(const ::skein::Options& options) { LIST(SKEIN_OPTION_READ_) } \
  };

// The manifest half of SKEIN_PLUGIN: the options array (each default checked
// against its type at compile time) and the JSON manifest in the ELF section
// the host reads without loading the library. Used inside an anonymous namespace.
#define SKEIN_PLUGIN_MANIFEST(KIND, NAME, VERSION, DESCRIPTION, ...)                      \
  constexpr ::skein::OptionSpec skein_plugin_options_[] = {                               \
      __VA_ARGS__ __VA_OPT__(, )::skein::OptionSpec{nullptr, ::skein::OptionType::object,  \
                                                    nullptr, nullptr}};                   \
  static_assert(::skein::option_default::check_defaults<                                  \
                    ::skein::option_default::first_bad_default(skein_plugin_options_)>::ok, \
                "option defaults are checked");                                           \
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
