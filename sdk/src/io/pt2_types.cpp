#include "pt2_types.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace skein::pt2 {

namespace ex = torch::_export;

namespace {

// By the schema's numbers, which only grow: a libtorch whose schema lacks the
// newest names (2.11 has no UINT32) compiles this table all the same.
constexpr std::array<std::pair<int, c10::ScalarType>, 21> kScalarTypes{{
    {1, c10::kByte},
    {2, c10::kChar},
    {3, c10::kShort},
    {4, c10::kInt},
    {5, c10::kLong},
    {6, c10::kHalf},
    {7, c10::kFloat},
    {8, c10::kDouble},
    {9, c10::kComplexHalf},
    {10, c10::kComplexFloat},
    {11, c10::kComplexDouble},
    {12, c10::kBool},
    {13, c10::kBFloat16},
    {28, c10::kUInt16},
    {29, c10::kFloat8_e4m3fn},
    {30, c10::kFloat8_e5m2},
    {31, c10::kFloat8_e4m3fnuz},
    {32, c10::kFloat8_e5m2fnuz},
    {33, c10::kFloat8_e8m0fnu},
    {34, c10::kUInt32},
    {35, c10::kUInt64},
}};

}  // namespace

c10::ScalarType to_c10(ex::ScalarType t) {
  for (const auto& [schema, c10] : kScalarTypes)
    if (schema == static_cast<int>(t)) return c10;
  throw std::runtime_error("dtype number " + std::to_string(static_cast<int>(t)) + " of the export schema is not known here");
}

ex::ScalarType to_schema(c10::ScalarType t) {
  for (const auto& [schema, c10] : kScalarTypes)
    if (c10 == t) return static_cast<ex::ScalarType>(schema);
  throw std::runtime_error(std::string("dtype ") + c10::toString(t) + " has no number in the export schema");
}

c10::Layout to_c10(ex::Layout l) {
  switch (l) {
    case ex::Layout::Strided: return c10::kStrided;
    case ex::Layout::SparseCoo: return c10::kSparse;
    case ex::Layout::SparseCsr: return c10::kSparseCsr;
    case ex::Layout::SparseCsc: return c10::kSparseCsc;
    case ex::Layout::SparseBsr: return c10::kSparseBsr;
    case ex::Layout::SparseBsc: return c10::kSparseBsc;
    case ex::Layout::_mkldnn: return c10::kMkldnn;
    default: throw std::runtime_error("layout number " + std::to_string(static_cast<int>(l)) + " of the export schema is not known here");
  }
}

c10::MemoryFormat to_c10(ex::MemoryFormat m) {
  switch (m) {
    case ex::MemoryFormat::ContiguousFormat: return c10::MemoryFormat::Contiguous;
    case ex::MemoryFormat::ChannelsLast: return c10::MemoryFormat::ChannelsLast;
    case ex::MemoryFormat::ChannelsLast3d: return c10::MemoryFormat::ChannelsLast3d;
    case ex::MemoryFormat::PreserveFormat: return c10::MemoryFormat::Preserve;
    default: throw std::runtime_error("memory format number " + std::to_string(static_cast<int>(m)) + " of the export schema is not known here");
  }
}

std::string archive_path(std::string_view format, const std::string& model) {
  std::string path(format);
  const auto at = path.find("{}");
  if (at != std::string::npos) path.replace(at, 2, model);
  return path;
}

c10::Device to_c10(const ex::Device& d) {
  std::string text = d.get_type();
  if (d.get_index()) text += ":" + std::to_string(*d.get_index());
  return c10::Device(text);
}

}  // namespace skein::pt2
#endif
