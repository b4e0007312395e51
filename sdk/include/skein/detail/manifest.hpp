#pragma once
// The plugin manifest: a plugin's metadata as JSON text, built at compile time
// by SKEIN_PLUGIN and placed in the ELF section ".skein_manifest", so that a
// host can list and check plugins by reading files, without loading them (no
// plugin code runs). The loader still checks skein_plugin_info when it loads.
//
// {"skein_manifest": 1, "api": [major, minor], "name": ..., "kind": ...,
//  "version": ..., "description": ..., "fingerprint": ...,
//  "options": [{"name": ..., "type": ..., "default": <JSON text or null>, "doc": ...,
//               "choices": [...], "range": "[lo, hi]"}]}  (the last two where declared; API 3.1)
#include <array>
#include <cstddef>
#include <utility>

#include "skein/options.hpp"

#define SKEIN_MANIFEST_SECTION ".skein_manifest"

namespace skein::manifest {

// A writer that only counts (Out = nullptr) or also writes.
struct Writer {
  char* out = nullptr;
  std::size_t n = 0;
  constexpr void put(char c) {
    if (out) out[n] = c;
    ++n;
  }
  constexpr void raw(const char* s) {
    while (*s) put(*s++);
  }
  // `s` as a JSON string, up to its end or the character `stop`.
  constexpr void quoted(const char* s, char stop = '\0') {
    put('"');
    for (; *s && *s != stop; ++s) {
      const char c = *s;
      if (c == '"' || c == '\\') {
        put('\\');
        put(c);
      } else if (static_cast<unsigned char>(c) < 0x20) {
        put(' ');  // control characters have no place in metadata
      } else {
        put(c);
      }
    }
    put('"');
  }
};

struct Fields {
  const char* api_major;
  const char* api_minor;
  const char* name;
  const char* kind;
  const char* version;
  const char* description;
  const char* fingerprint;
  const OptionSpec* options;
  std::size_t option_count;
};

constexpr void write(Writer& w, const Fields& f) {
  w.raw("{\"skein_manifest\":1,\"api\":[");
  w.raw(f.api_major);
  w.put(',');
  w.raw(f.api_minor);
  w.raw("],\"name\":");
  w.quoted(f.name);
  w.raw(",\"kind\":");
  w.quoted(f.kind);
  w.raw(",\"version\":");
  w.quoted(f.version);
  w.raw(",\"description\":");
  w.quoted(f.description);
  w.raw(",\"fingerprint\":");
  w.quoted(f.fingerprint);
  w.raw(",\"options\":[");
  for (std::size_t i = 0; i < f.option_count; ++i) {
    const OptionSpec& o = f.options[i];
    if (i) w.put(',');
    w.raw("{\"name\":");
    w.quoted(o.name);
    w.raw(",\"type\":");
    w.quoted(option_type_name(o.type));
    w.raw(",\"default\":");
    if (o.default_json)
      w.quoted(o.default_json);
    else
      w.raw("null");
    w.raw(",\"doc\":");
    w.quoted(o.doc ? o.doc : "");
    if (o.choices) {
      w.raw(",\"choices\":[");
      for (const char* c = o.choices;; ++c) {  // each word up to the next '|'
        w.quoted(c, '|');
        while (*c && *c != '|') ++c;
        if (!*c) break;
        w.put(',');
      }
      w.put(']');
    }
    if (o.range) {
      w.raw(",\"range\":");
      w.quoted(o.range);
    }
    w.put('}');
  }
  w.raw("]}");
}

constexpr std::size_t length(const Fields& f) {
  Writer w;
  write(w, f);
  return w.n + 1;  // NUL
}

template <std::size_t N>
constexpr std::array<char, N> build(const Fields& f) {
  std::array<char, N> a{};
  Writer w{&a[0], 0};
  write(w, f);
  return a;
}

}  // namespace skein::manifest
