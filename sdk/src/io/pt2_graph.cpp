#include "pt2_graph.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <algorithm>
#include <limits>
#include <stdexcept>

#include <ATen/ScalarOps.h>
#include <torch/version.h>

#include "pt2_types.hpp"

namespace skein::pt2 {

namespace ex = torch::_export;
using Tag = ex::Argument::Tag;

namespace {

// "torch.ops.aten.add_.Tensor" -> {"aten::add_", "Tensor"}; "default" is the
// overload without a name. Empty for a target that is not torch.ops.*.
std::optional<c10::OperatorName> operator_name(const std::string& target) {
  const std::string prefix = "torch.ops.";
  if (target.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string rest = target.substr(prefix.size());
  const auto ns_end = rest.find('.');
  const auto overload_at = rest.rfind('.');
  if (ns_end == std::string::npos || overload_at == ns_end) return std::nullopt;
  std::string overload = rest.substr(overload_at + 1);
  if (overload == "default") overload.clear();
  return c10::OperatorName(rest.substr(0, ns_end) + "::" + rest.substr(ns_end + 1, overload_at - ns_end - 1),
                           overload);
}

// Python's operators on sizes (a dynamic batch dimension times the rest),
// refused where the result does not fit 64 bits (a crafted graph's
// INT64_MIN // -1 would otherwise end the process with SIGFPE).
std::int64_t arithmetic(const std::string& op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  bool overflow = false;
  if (op == "mul") overflow = __builtin_mul_overflow(a, b, &r);
  else if (op == "add") overflow = __builtin_add_overflow(a, b, &r);
  else if (op == "sub") overflow = __builtin_sub_overflow(a, b, &r);
  else if (op == "floordiv" || op == "mod") {
    if (b == 0) throw std::runtime_error("division of a size by zero");
    if (a == std::numeric_limits<std::int64_t>::min() && b == -1) {
      if (op == "mod") return 0;
      overflow = true;
    } else {
      std::int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;  // Python floors
      r = op == "floordiv" ? q : a - q * b;
    }
  } else {
    overflow = __builtin_sub_overflow(std::int64_t{0}, a, &r);  // neg
  }
  if (overflow)
    throw std::runtime_error("size arithmetic " + op + "(" + std::to_string(a) + ", " + std::to_string(b) +
                             ") overflows 64 bits");
  return r;
}

// A Python number where the schema takes a tensor (x.add_(1)): a "wrapped
// number", as TorchScript makes one, so that type promotion treats it as a
// number and not as a tensor of its own dtype.
at::Tensor number_tensor(const c10::IValue& v) {
  at::Tensor t = c10::scalar_to_tensor(v.toScalar());
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

bool is_bool(const c10::Argument& schema_arg) {
  const auto& type = schema_arg.type();
  if (type->kind() == c10::TypeKind::BoolType) return true;
  const auto optional = type->cast<c10::OptionalType>();
  return optional && optional->getElementType()->kind() == c10::TypeKind::BoolType;
}

}  // namespace

bool follows_mode(const c10::Argument& schema_arg) {
  const std::string& name = schema_arg.name();
  if (name == "train" || name == "training" || name == "use_input_stats") return is_bool(schema_arg);
  return name == "dropout_p" && schema_arg.type()->kind() == c10::TypeKind::FloatType;
}

bool eval_only(const std::string& op) {
  return op == "aten::_native_batch_norm_legit_no_training" || op == "aten::_batch_norm_no_update" ||
         op == "aten::_native_multi_head_attention" || op == "aten::_transformer_encoder_layer_fwd";
}

std::string refusal_of(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  if (schema.name() == "aten::_batch_norm_with_update")
    return "updates BatchNorm's statistics in eval mode too (a graph after run_decompositions); export with "
           "torch.export.export alone, whose batch_norm follows the mode";
  const bool switchable = std::any_of(schema.arguments().begin(), schema.arguments().end(),
                                      [](const c10::Argument& a) { return follows_mode(a); });
  if (op.hasTag(at::Tag::nondeterministic_seeded) && !switchable)
    return "draws random numbers in eval mode too; Skein switches off only operators with a train, training or "
           "dropout_p argument (nn.Dropout, F.dropout(training=self.training), attention's dropout)";
  return "";
}

namespace {

std::string describe(const ex::Node& node) {
  return "node '" + node.get_name().value_or("?") + "' (" + node.get_target() + ")";
}

}  // namespace

int Graph::slot_of(const std::string& name) {
  const auto [it, added] = slots_.emplace(name, static_cast<int>(slots_.size()));
  return it->second;
}

Graph::Arg Graph::arg_of(const ex::Argument& a, const std::string& where) {
  Arg r;
  auto constant = [&](c10::IValue v) {
    r.value = std::move(v);
    return r;
  };
  auto from_slot = [&](const std::string& name) {
    r.kind = Arg::in_slot;
    r.slot = slot_of(name);
    return r;
  };
  switch (a.tag()) {
    case Tag::AS_NONE: return constant(c10::IValue());
    case Tag::AS_TENSOR: return from_slot(a.get_as_tensor().get_name());
    case Tag::AS_TENSORS:
      r.kind = Arg::tensor_list;
      for (const auto& t : a.get_as_tensors()) r.slots.push_back(slot_of(t.get_name()));
      r.items.resize(r.slots.size());
      return r;
    case Tag::AS_OPTIONAL_TENSOR:
      if (a.get_as_optional_tensor().tag() == ex::OptionalTensorArgument::Tag::AS_NONE) return constant(c10::IValue());
      return from_slot(a.get_as_optional_tensor().get_as_tensor().get_name());
    case Tag::AS_OPTIONAL_TENSORS:
      r.kind = Arg::optional_tensor_list;
      for (const auto& t : a.get_as_optional_tensors())
        r.slots.push_back(t.tag() == ex::OptionalTensorArgument::Tag::AS_NONE ? -1 : slot_of(t.get_as_tensor().get_name()));
      r.items.resize(r.slots.size());
      return r;
    case Tag::AS_INT: return constant(a.get_as_int());
    case Tag::AS_INTS: return constant(a.get_as_ints());
    case Tag::AS_FLOAT: return constant(a.get_as_float().get());
    case Tag::AS_FLOATS: {
      std::vector<double> v;
      for (const auto& f : a.get_as_floats()) v.push_back(f.get());
      return constant(v);
    }
    case Tag::AS_BOOL: return constant(a.get_as_bool());
    case Tag::AS_BOOLS: {
      c10::List<bool> v;
      for (bool b : a.get_as_bools()) v.push_back(b);
      return constant(v);
    }
    case Tag::AS_STRING: return constant(a.get_as_string());
    case Tag::AS_STRINGS: return constant(a.get_as_strings());
    case Tag::AS_SYM_INT:
      if (a.get_as_sym_int().tag() == ex::SymIntArgument::Tag::AS_INT) return constant(a.get_as_sym_int().get_as_int());
      return from_slot(a.get_as_sym_int().get_as_name());
    case Tag::AS_SYM_INTS:
      r.kind = Arg::int_list;
      for (const auto& s : a.get_as_sym_ints()) {
        const bool named = s.tag() == ex::SymIntArgument::Tag::AS_NAME;
        r.slots.push_back(named ? slot_of(s.get_as_name()) : -1);
        r.items.emplace_back(named ? 0 : s.get_as_int());
      }
      return r;
    case Tag::AS_SYM_BOOL:
      if (a.get_as_sym_bool().tag() == ex::SymBoolArgument::Tag::AS_BOOL) return constant(a.get_as_sym_bool().get_as_bool());
      return from_slot(a.get_as_sym_bool().get_as_name());
    case Tag::AS_SYM_FLOAT:
      if (a.get_as_sym_float().tag() == ex::SymFloatArgument::Tag::AS_FLOAT)
        return constant(a.get_as_sym_float().get_as_float().get());
      return from_slot(a.get_as_sym_float().get_as_name());
    case Tag::AS_SCALAR_TYPE: return constant(to_c10(a.get_as_scalar_type()));
    case Tag::AS_MEMORY_FORMAT: return constant(to_c10(a.get_as_memory_format()));
    case Tag::AS_LAYOUT: return constant(to_c10(a.get_as_layout()));
    case Tag::AS_DEVICE: return constant(to_c10(a.get_as_device()));
    case Tag::AS_GRAPH:
      throw std::runtime_error(where + ": control flow (a subgraph argument) is not supported; export a "
                                       "module without torch.cond, torch.while_loop or torch.map");
    default:
      throw std::runtime_error(where + ": an argument of a kind Skein does not run (schema tag " +
                               std::to_string(static_cast<int>(a.tag())) + ")");
  }
}

void Graph::bind_outputs(Step& step, const ex::Node& node, std::size_t returns) {
  const auto& outs = node.get_outputs();
  auto slots_of = [&](const ex::Argument& a) -> std::vector<int> {
    switch (a.tag()) {
      case Tag::AS_TENSOR: return {slot_of(a.get_as_tensor().get_name())};
      case Tag::AS_SYM_INT:
        if (a.get_as_sym_int().tag() == ex::SymIntArgument::Tag::AS_NAME) return {slot_of(a.get_as_sym_int().get_as_name())};
        return {};
      case Tag::AS_TENSORS: {
        std::vector<int> v;
        for (const auto& t : a.get_as_tensors()) v.push_back(slot_of(t.get_name()));
        return v;
      }
      case Tag::AS_OPTIONAL_TENSORS: {
        std::vector<int> v;
        for (const auto& t : a.get_as_optional_tensors())
          v.push_back(t.tag() == ex::OptionalTensorArgument::Tag::AS_NONE ? -1 : slot_of(t.get_as_tensor().get_name()));
        return v;
      }
      default: return {};  // none, or a constant the graph does not use
    }
  };
  if (outs.size() == returns) {
    for (const auto& o : outs) step.outputs.push_back(slots_of(o));
  } else if (outs.size() == 1 && outs[0].tag() == Tag::AS_TENSORS && outs[0].get_as_tensors().size() == returns) {
    for (const auto& t : outs[0].get_as_tensors()) step.outputs.push_back({slot_of(t.get_name())});
  } else {
    throw std::runtime_error(describe(node) + ": " + std::to_string(outs.size()) + " outputs for an operator of " +
                             std::to_string(returns) + " returns");
  }
}

Graph::Graph(const ex::Graph& graph, const std::set<std::string>& buffers) {
  for (const auto& in : graph.get_inputs()) {
    if (in.tag() == Tag::AS_TENSOR) inputs_.push_back(slot_of(in.get_as_tensor().get_name()));
    else if (in.tag() == Tag::AS_SYM_INT && in.get_as_sym_int().tag() == ex::SymIntArgument::Tag::AS_NAME)
      inputs_.push_back(slot_of(in.get_as_sym_int().get_as_name()));
    else inputs_.push_back(-1);  // a constant input, fed nothing
  }
  std::set<int> buffer_slots;
  for (const auto& name : buffers) buffer_slots.insert(slot_of(name));
  std::unordered_map<int, std::size_t> last_use;
  std::set<std::string> seen_ops;
  for (const auto& node : graph.get_nodes()) {
    const std::string where = describe(node);
    const std::string& target = node.get_target();
    Step step;
    step.name = node.get_name().value_or(target);
    if (target.rfind("_operator.", 0) == 0) {
      step.kind = Step::sym_arith;
      step.arith = target.substr(std::string("_operator.").size());
      const bool unary = step.arith == "neg";
      if (!unary && step.arith != "mul" && step.arith != "add" && step.arith != "sub" && step.arith != "floordiv" &&
          step.arith != "mod")
        throw std::runtime_error(where + ": Python operator '" + target + "' on sizes is not supported");
      if (node.get_inputs().size() != (unary ? 1u : 2u))
        throw std::runtime_error(where + ": " + std::to_string(node.get_inputs().size()) + " arguments");
      for (const auto& in : node.get_inputs()) step.args.push_back(arg_of(in.get_arg(), where));
      const bool constants = std::all_of(step.args.begin(), step.args.end(), [](const Arg& a) {
        return a.kind == Arg::constant && a.value.isInt();
      });
      if (constants) {  // nothing varies: what it computes, or that it cannot, is known now
        try {
          arithmetic(step.arith, step.args[0].value.toInt(), unary ? 0 : step.args[1].value.toInt());
        } catch (const std::exception& e) {
          throw std::runtime_error(where + ": " + e.what());
        }
      }
      bind_outputs(step, node, 1);
    } else {
      if (target.rfind("torch.ops.higher_order.", 0) == 0)
        throw std::runtime_error(where + ": control flow and other higher-order operators are not supported; "
                                         "export a module without torch.cond, torch.while_loop or torch.map");
      const auto name = operator_name(target);
      if (!name) throw std::runtime_error(where + ": '" + target + "' is not an operator Skein runs (torch.ops.* only)");
      const std::string qualified = name->name + (name->overload_name.empty() ? "" : "." + name->overload_name);
      auto handle = c10::Dispatcher::singleton().findSchema(*name);
      if (!handle)
        throw std::runtime_error(where + ": operator " + qualified + " is not in this libtorch (" + TORCH_VERSION +
                                 "): a custom operator (name its library in the pt2 model's operator_libraries), "
                                 "or one of a newer PyTorch");
      if (seen_ops.insert(name->name).second) {
        operators_.push_back(name->name);
        first_callers_.push_back(step.name);
      }
      const c10::FunctionSchema& schema = handle->schema();
      if (name->name == "aten::sym_size" && name->overload_name == "int") step.kind = Step::sym_size;
      // Random draws that eval mode could not switch off would make
      // validation, test and predict noise: refused, never left on.
      if (const std::string why = refusal_of(*handle); !why.empty())
        throw std::runtime_error(where + ": " + qualified + " " + why);
      if (eval_only(name->name) && eval_evidence_.empty()) eval_evidence_ = where;
      // A norm given no running statistics uses the batch's in both modes.
      bool running_stats = true;
      for (const auto& in : node.get_inputs())
        if (in.get_name() == "running_mean" && in.get_arg().tag() == Tag::AS_NONE) running_stats = false;
      step.handle = *handle;
      std::unordered_map<std::string, const ex::NamedArgument*> given;
      for (const auto& in : node.get_inputs()) given.emplace(in.get_name(), &in);
      for (const auto& schema_arg : schema.arguments()) {
        const auto found = given.find(schema_arg.name());
        Arg a;
        if (found != given.end()) {
          a = arg_of(found->second->get_arg(), where);
          given.erase(found);
        } else if (schema_arg.default_value()) {
          a.value = *schema_arg.default_value();
        } else {
          throw std::runtime_error(where + ": argument '" + schema_arg.name() + "' of " + qualified +
                                   " is missing (a schema of another PyTorch?)");
        }
        const std::string& arg_name = schema_arg.name();
        if (a.kind == Arg::constant && follows_mode(schema_arg) && arg_name == "dropout_p" && a.value.isDouble()) {
          a.kind = Arg::by_mode;
          a.eval_value = 0.0;
        } else if (a.kind == Arg::constant && follows_mode(schema_arg) && running_stats) {
          if (a.value.isBool() && !a.value.toBool() && eval_evidence_.empty())
            eval_evidence_ = where + " with " + arg_name + "=False";
          a.kind = Arg::by_mode;
          a.value = true;
          a.eval_value = false;
        }
        if (a.kind == Arg::by_mode) mode_arguments_[step.name].push_back(arg_name);
        if (a.kind == Arg::constant && schema_arg.type()->kind() == c10::TypeKind::TensorType &&
            (a.value.isInt() || a.value.isDouble() || a.value.isBool()))
          a.value = number_tensor(a.value);
        if (schema_arg.alias_info() && schema_arg.alias_info()->isWrite() && a.kind == Arg::in_slot &&
            buffer_slots.count(a.slot))
          step.writes_buffer = true;
        step.args.push_back(std::move(a));
      }
      if (!given.empty())
        throw std::runtime_error(where + ": argument '" + given.begin()->first + "' is not in the schema of " +
                                 qualified + " in this libtorch (" + TORCH_VERSION + ")");
      bind_outputs(step, node, schema.returns().size());
      // What an in-place write on a buffer returns is that buffer
      // (self.mean.mul_(0.9).add_(m): add_ writes it too).
      if (step.writes_buffer)
        for (const auto& out : step.outputs)
          for (int s : out)
            if (s >= 0) buffer_slots.insert(s);
    }
    for (const auto& a : step.args) {
      if (a.slot >= 0) last_use[a.slot] = steps_.size();
      for (int s : a.slots)
        if (s >= 0) last_use[s] = steps_.size();
    }
    steps_.push_back(std::move(step));
  }
  for (const auto& out : graph.get_outputs()) {
    outputs_.push_back(arg_of(out, "the graph's outputs"));
    for (int s : outputs_.back().slots) last_use[s] = steps_.size();
    if (outputs_.back().slot >= 0) last_use[outputs_.back().slot] = steps_.size();
  }
  // Eval mode writes no buffer: a node that writes one is skipped when
  // nothing that eval mode runs reads what it returns (BatchNorm's
  // num_batches_tracked.add_(1), a running average's mul_ then add_ under
  // `if self.training`). Walked from the end, so that a chain's last write
  // is known skipped before the one that feeds it.
  std::set<int> read;  // slots that what eval mode runs reads
  for (const auto& out : outputs_) {
    if (out.slot >= 0) read.insert(out.slot);
    for (int s : out.slots) read.insert(s);
  }
  for (auto step = steps_.rbegin(); step != steps_.rend(); ++step) {
    bool needed = !step->writes_buffer;
    for (const auto& out : step->outputs)
      for (int s : out) needed = needed || (s >= 0 && read.count(s));
    step->writes_buffer = !needed;
    if (!needed) continue;
    for (const auto& a : step->args) {
      if (a.slot >= 0) read.insert(a.slot);
      for (int s : a.slots)
        if (s >= 0) read.insert(s);
    }
  }
  for (const auto& [slot, step] : last_use)
    if (step < steps_.size()) steps_[step].free_after.push_back(slot);
}

c10::IValue Graph::value(const Arg& a, const std::vector<c10::IValue>& slots, bool training) const {
  switch (a.kind) {
    case Arg::constant: return a.value;
    case Arg::in_slot: return slots[a.slot];
    case Arg::by_mode: return training ? a.value : a.eval_value;
    case Arg::int_list: {
      c10::List<std::int64_t> l;
      l.reserve(a.slots.size());
      for (std::size_t i = 0; i < a.slots.size(); ++i) l.push_back(a.slots[i] >= 0 ? slots[a.slots[i]].toInt() : a.items[i].toInt());
      return l;
    }
    case Arg::tensor_list: {
      c10::List<at::Tensor> l;
      l.reserve(a.slots.size());
      for (int s : a.slots) l.push_back(slots[s].toTensor());
      return l;
    }
    case Arg::optional_tensor_list: {
      c10::List<std::optional<at::Tensor>> l;
      l.reserve(a.slots.size());
      for (int s : a.slots) l.push_back(s >= 0 ? std::optional<at::Tensor>(slots[s].toTensor()) : std::nullopt);
      return l;
    }
  }
  return {};
}

void Graph::run_step(const Step& step, std::vector<c10::IValue>& slots, bool training) const {
  if (step.kind == Step::sym_arith) {
    const std::int64_t a = value(step.args[0], slots, training).toInt();
    const std::int64_t b = step.args.size() > 1 ? value(step.args[1], slots, training).toInt() : 0;
    if (!step.outputs[0].empty()) slots[step.outputs[0][0]] = arithmetic(step.arith, a, b);
    return;
  }
  if (step.kind == Step::sym_size) {
    const auto t = value(step.args[0], slots, training).toTensor();
    if (!step.outputs[0].empty()) slots[step.outputs[0][0]] = t.size(value(step.args[1], slots, training).toInt());
    return;
  }
  torch::jit::Stack stack;
  stack.reserve(step.args.size());
  for (const auto& a : step.args) stack.push_back(value(a, slots, training));
  step.handle->callBoxed(stack);
  for (std::size_t i = 0; i < step.outputs.size() && i < stack.size(); ++i) {
    const auto& outs = step.outputs[i];
    if (outs.empty()) continue;
    c10::IValue& v = stack[i];
    if (v.isTensorList()) {
      const auto list = v.toTensorList();
      for (std::size_t j = 0; j < outs.size() && j < list.size(); ++j)
        if (outs[j] >= 0) slots[outs[j]] = list.get(j);
    } else if (v.isSymInt()) {
      slots[outs[0]] = v.toSymInt().guard_int(__FILE__, __LINE__);
    } else {
      slots[outs[0]] = std::move(v);
    }
  }
}

std::set<std::string> Graph::eval_skipped_nodes() const {
  std::set<std::string> names;
  for (const auto& step : steps_)
    if (step.writes_buffer) names.insert(step.name);
  return names;
}

std::vector<c10::IValue> Graph::run(std::vector<c10::IValue> inputs, bool training) const {
  std::vector<c10::IValue> slots(slots_.size());
  for (std::size_t i = 0; i < inputs_.size() && i < inputs.size(); ++i)
    if (inputs_[i] >= 0) slots[inputs_[i]] = std::move(inputs[i]);
  for (const auto& step : steps_) {
    if (step.writes_buffer && !training) continue;
    try {
      run_step(step, slots, training);
    } catch (const c10::Error& e) {
      throw std::runtime_error("node '" + step.name + "': " + e.what_without_backtrace());
    } catch (const std::exception& e) {  // size arithmetic
      throw std::runtime_error("node '" + step.name + "': " + e.what());
    }
    for (int s : step.free_after) slots[s] = c10::IValue();
  }
  std::vector<c10::IValue> outputs;
  for (const auto& out : outputs_) outputs.push_back(value(out, slots, training));
  return outputs;
}

}  // namespace skein::pt2
#endif
