// A library of one custom operator, as a user's would be: skein_test::scaled_tanh(x, scale)
// = scale * tanh(x), registered with the dispatcher when loaded (CPU and Meta
// kernels; Meta for torch.export's tracing in Python; autograd by a
// torch::autograd::Function). Python loads it with torch.ops.load_library;
// the pt2 model with its operator_libraries option (tests/test_pt2.cpp).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

namespace {

at::Tensor scaled_tanh_cpu(const at::Tensor& x, double scale) { return at::tanh(x) * scale; }
at::Tensor scaled_tanh_meta(const at::Tensor& x, double) { return at::empty_like(x); }

class ScaledTanh : public torch::autograd::Function<ScaledTanh> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, double scale) {
    at::AutoDispatchBelowADInplaceOrView below;
    static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("skein_test::scaled_tanh", "")
                               .typed<at::Tensor(const at::Tensor&, double)>();
    at::Tensor y = op.call(x, scale);
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const at::Tensor t = at::tanh(ctx->get_saved_variables()[0]);
    return {grad[0] * ctx->saved_data["scale"].toDouble() * (1 - t * t), at::Tensor()};
  }
};

at::Tensor scaled_tanh_autograd(const at::Tensor& x, double scale) { return ScaledTanh::apply(x, scale); }

}  // namespace

TORCH_LIBRARY(skein_test, m) { m.def("scaled_tanh(Tensor x, float scale) -> Tensor"); }
TORCH_LIBRARY_IMPL(skein_test, CPU, m) { m.impl("scaled_tanh", scaled_tanh_cpu); }
TORCH_LIBRARY_IMPL(skein_test, Meta, m) { m.impl("scaled_tanh", scaled_tanh_meta); }
TORCH_LIBRARY_IMPL(skein_test, Autograd, m) { m.impl("scaled_tanh", scaled_tanh_autograd); }
