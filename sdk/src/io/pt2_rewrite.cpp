#include "pt2_rewrite.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <algorithm>
#include <stdexcept>

namespace skein::pt2 {

namespace {

using nlohmann::json;
namespace archive_spec = torch::_export::archive_spec;

json as_int(std::int64_t v) { return json::object({{"as_int", v}}); }

// A float32 CPU tensor's metadata in the schema's form (dtype 7 = FLOAT, layout 7 = Strided).
json tensor_meta(const torch::Tensor& t) {
  json sizes = json::array(), strides = json::array();
  for (auto s : t.sizes()) sizes.push_back(as_int(s));
  for (auto s : t.strides()) strides.push_back(as_int(s));
  return {{"dtype", 7}, {"sizes", sizes}, {"requires_grad", false}, {"device", {{"type", "cpu"}, {"index", nullptr}}},
          {"strides", strides}, {"storage_offset", as_int(0)}, {"layout", 7}};
}

json named(const std::string& name, json arg) {
  return {{"name", name}, {"arg", std::move(arg)}, {"kind", 1}};
}

json tensor_arg(const std::string& name) { return {{"as_tensor", {{"name", name}}}}; }

// Renames tensor argument `from` to `to` wherever `j` holds one.
void rename_tensor(json& j, const std::string& from, const std::string& to) {
  if (j.is_object()) {
    if (j.contains("as_tensor") && j["as_tensor"].is_object() && j["as_tensor"].value("name", "") == from)
      j["as_tensor"]["name"] = to;
    for (auto& [key, value] : j.items()) rename_tensor(value, from, to);
  } else if (j.is_array()) {
    for (auto& value : j) rename_tensor(value, from, to);
  }
}

}  // namespace

void prepend_input_steps(json& program, json& constants_config, std::map<std::string, std::string>& records,
                         const std::vector<ExportedModel::InputStep>& steps) {
  bool any = false;
  for (const auto& step : steps) any = any || step.divide_by != 1 || step.mean.defined() || step.std.defined();
  if (!any) return;
  json& module = program["graph_module"];
  json& graph = module["graph"];
  json& specs = module["signature"]["input_specs"];
  std::size_t user = specs.size();
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].contains("user_input")) user = i;
  if (user == specs.size()) throw std::runtime_error("the program has no user input");
  const std::string input = specs[user]["user_input"]["arg"]["as_tensor"]["name"];
  const json input_meta = graph["tensor_values"][input];
  const std::string raw = "skein_raw_" + input;
  // The raw input takes the old input's place in the signature, the
  // placeholders and the module call graph (what .module() rebuilds from).
  rename_tensor(specs[user], input, raw);
  rename_tensor(graph["inputs"], input, raw);
  for (auto& entry : module["module_call_graph"])
    if (entry.value("fqn", "") == "" && entry.contains("signature")) rename_tensor(entry["signature"]["inputs"], input, raw);
  graph["tensor_values"][raw] = input_meta;

  json nodes = json::array();
  std::string current = raw;
  std::size_t placed = user;  // where the next constant placeholder goes: before the user input
  int made = 0;
  // `value` as a node argument: a number, or a new lifted constant.
  auto operand = [&](const torch::Tensor& value, const std::string& what) -> json {
    const auto t = value.detach().to(torch::kCPU, torch::kFloat).contiguous();
    if (t.numel() == 1) return {{"as_float", t.item<double>()}};
    // The file's name must start as a tensor constant's for torch.export.load.
    const std::string name = std::string(archive_spec::TENSOR_CONSTANT_FILENAME_PREFIX) + "skein_input_" + what + "_" +
                             std::to_string(made);
    const std::string placeholder = "c_" + name;
    specs.insert(specs.begin() + static_cast<std::ptrdiff_t>(placed),
                 json{{"tensor_constant", {{"arg", {{"name", placeholder}}}, {"tensor_constant_name", name}}}});
    graph["inputs"].insert(graph["inputs"].begin() + static_cast<std::ptrdiff_t>(placed), tensor_arg(placeholder));
    ++placed;
    graph["tensor_values"][placeholder] = tensor_meta(t);
    constants_config["config"][name] = {{"path_name", name}, {"is_param", false}, {"use_pickle", false},
                                        {"tensor_meta", tensor_meta(t)}};
    records[std::string(archive_spec::CONSTANTS_DIR) + name] = std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
    return tensor_arg(placeholder);
  };
  auto node = [&](const std::string& op, json other) {
    const std::string out = "skein_scaled_" + std::to_string(nodes.size());
    nodes.push_back({{"target", "torch.ops.aten." + op + ".Tensor"},
                     {"inputs", json::array({named("self", tensor_arg(current)), named("other", std::move(other))})},
                     {"outputs", json::array({tensor_arg(out)})},
                     {"metadata", json::object()},
                     {"is_hop_single_tensor_return", nullptr},
                     {"name", out}});
    graph["tensor_values"][out] = input_meta;
    current = out;
  };
  for (const auto& step : steps) {
    if (step.divide_by != 1) node("div", {{"as_float", step.divide_by}});
    if (step.mean.defined()) node("sub", operand(step.mean, "mean"));
    if (step.std.defined()) node("div", operand(step.std, "std"));
    ++made;
  }
  // The last step's output is the program's old input.
  const std::string last = current;
  graph["tensor_values"].erase(last);
  rename_tensor(nodes.back()["outputs"], last, input);
  nodes.back()["name"] = input;
  for (auto& n : graph["nodes"]) nodes.push_back(std::move(n));
  graph["nodes"] = std::move(nodes);
}

void to_eval_mode(json& program, const std::set<std::string>& buffer_writes,
                  const std::map<std::string, std::vector<std::string>>& mode_arguments) {
  json kept = json::array();
  for (auto& node : program["graph_module"]["graph"]["nodes"]) {
    const std::string node_name = node.value("name", "");
    if (buffer_writes.count(node_name)) continue;
    if (const auto found = mode_arguments.find(node_name); found != mode_arguments.end()) {
      for (auto& input : node["inputs"]) {
        const std::string name = input.value("name", "");
        if (std::find(found->second.begin(), found->second.end(), name) == found->second.end()) continue;
        if (input["arg"].contains("as_bool")) input["arg"]["as_bool"] = false;
        if (input["arg"].contains("as_float")) input["arg"]["as_float"] = 0.0;
      }
    }
    kept.push_back(std::move(node));
  }
  program["graph_module"]["graph"]["nodes"] = std::move(kept);
}

}  // namespace skein::pt2
#endif
