#pragma once
// torch.export's serialized enums (ScalarType, Layout, MemoryFormat, Device)
// to libtorch's and back: the schema numbers them on its own.
#include "skein/torch_compat/export_schema.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <string>
#include <string_view>

namespace skein::pt2 {

// Each throws std::runtime_error for a value libtorch has no counterpart of.
c10::ScalarType to_c10(torch::_export::ScalarType t);
c10::Layout to_c10(torch::_export::Layout l);
c10::MemoryFormat to_c10(torch::_export::MemoryFormat m);
c10::Device to_c10(const torch::_export::Device& d);
torch::_export::ScalarType to_schema(c10::ScalarType t);

// An archive path of archive_spec's with "{}" replaced by `model`
// ("data/weights/{}_weights_config.json").
std::string archive_path(std::string_view format, const std::string& model);

}  // namespace skein::pt2
#endif
