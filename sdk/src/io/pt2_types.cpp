#include "pt2_types.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace skein::pt2 {

namespace ex = torch::_export;

namespace {

constexpr std::array<std::pair<ex::ScalarType, c10::ScalarType>, 21> kScalarTypes{{
    {ex::ScalarType::BYTE, c10::kByte},
    {ex::ScalarType::CHAR, c10::kChar},
    {ex::ScalarType::SHORT, c10::kShort},
    {ex::ScalarType::INT, c10::kInt},
    {ex::ScalarType::LONG, c10::kLong},
    {ex::ScalarType::HALF, c10::kHalf},
    {ex::ScalarType::FLOAT, c10::kFloat},
    {ex::ScalarType::DOUBLE, c10::kDouble},
    {ex::ScalarType::COMPLEXHALF, c10::kComplexHalf},
    {ex::ScalarType::COMPLEXFLOAT, c10::kComplexFloat},
    {ex::ScalarType::COMPLEXDOUBLE, c10::kComplexDouble},
    {ex::ScalarType::BOOL, c10::kBool},
    {ex::ScalarType::BFLOAT16, c10::kBFloat16},
    {ex::ScalarType::UINT16, c10::kUInt16},
    {ex::ScalarType::FLOAT8E4M3FN, c10::kFloat8_e4m3fn},
    {ex::ScalarType::FLOAT8E5M2, c10::kFloat8_e5m2},
    {ex::ScalarType::FLOAT8E4M3FNUZ, c10::kFloat8_e4m3fnuz},
    {ex::ScalarType::FLOAT8E5M2FNUZ, c10::kFloat8_e5m2fnuz},
    {ex::ScalarType::FLOAT8E8M0FNU, c10::kFloat8_e8m0fnu},
    {ex::ScalarType::UINT32, c10::kUInt32},
    {ex::ScalarType::UINT64, c10::kUInt64},
}};

}  // namespace

c10::ScalarType to_c10(ex::ScalarType t) {
  for (const auto& [schema, c10] : kScalarTypes)
    if (schema == t) return c10;
  throw std::runtime_error("dtype number " + std::to_string(static_cast<int>(t)) + " of the export schema is not known here");
}

ex::ScalarType to_schema(c10::ScalarType t) {
  for (const auto& [schema, c10] : kScalarTypes)
    if (c10 == t) return schema;
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
