#pragma once
// torch.export's serialized program schema: the C++ types libtorch generates
// from torch/_export/serde/schema.py (ExportedProgram, Graph, Node, ...,
// read from JSON with nlohmann_json), and the .pt2 archive's layout
// (torch::_export::archive_spec: "models/", "data/weights/", ...). PyPI's libtorch 2.x ships them;
// Debian's 1.13 predates torch.export, so SKEIN_TORCH_EXPORT_SCHEMA is 0 there
// and the `pt2` model refuses with one line. Include it from sources only: it
// is 4,000 lines of generated code.
#if __has_include(<torch/csrc/utils/generated_serialization_types.h>)
#include <torch/csrc/export/pt2_archive_constants.h>  // the archive's paths (archive_spec::)
#include <torch/csrc/utils/generated_serialization_types.h>
#define SKEIN_TORCH_EXPORT_SCHEMA 1
// The major version of that schema this libtorch writes and Skein reads (a
// program of another major is refused when loaded).
#define SKEIN_EXPORT_SCHEMA_MAJOR 8
#else
#define SKEIN_TORCH_EXPORT_SCHEMA 0
#endif
