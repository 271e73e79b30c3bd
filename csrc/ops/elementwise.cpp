// Elementwise ops: dtype rules per family, then the device kernel through its stub.
#include <cmath>
#include <limits>

#include "elementwise_into.h"
#include "native_ops.h"
#include "ops/activation_kernels.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"

namespace kindle {

DTypeClass dtype_class(DType dt) {
  return dt == kBool ? DTypeClass::Bool
       : is_complex(dt) ? DTypeClass::Complex
       : is_floating_point(dt) ? DTypeClass::Floating : DTypeClass::Integral;
}

void check_kernel_dtype(const char* name, const KernelRule& rule, DType dt) {
  DTypeClass c = dtype_class(dt);
  if (rule.dtypes & class_bit(c)) return;
  if (const char* refusal = rule.refuse[int(c)]) {
    std::string_view r(refusal);
    size_t colon = r.find(": ");
    std::string msg(r.substr(colon + 2));
    std::string_view type = r.substr(0, colon);
    if (type == "NotImplementedError") throw NotImplementedError(msg);
    if (type == "TypeError") throw TypeError(msg);
    if (type == "ValueError") throw ValueError(msg);
    throw Error(msg);
  }
  throw NotImplementedError(detail::str_cat("\"", name, "_cpu\" not implemented for '", scalar_type_name(dt), "'"));
}

Tensor unary(const char* name, const Tensor& self, UnaryOp op, const Tensor& out) {
  const KernelRule& rule = kernel_rule(op);
  DType dt = self.dtype();
  bool promote = rule.promote_float && !is_floating_point(dt) && !is_complex(dt);
  check_kernel_dtype(name, rule, promote ? default_dtype() : dt);
  bool real_out = rule.output == KernelOutput::Real && is_complex(dt);
  KINDLE_CHECK(!(real_out && out.defined() && out.is_same(self)), "In-place ", rule.name,
               " is not supported for complex tensors.");
  // An op that keeps its input's dtype writes only that dtype (PyTorch's unary ops; the ones that
  // promote to float cast their result to any out dtype it converts to).
  KINDLE_CHECK(!out.defined() || rule.promote_float || rule.output != KernelOutput::Same || out.dtype() == dt,
               name, ": found dtype ", out.dtype(), " for the output but expected ", dt);
  TensorIterConfig cfg;
  cfg.add_output(out).add_input(self);
  cfg.int_to_float = rule.promote_float;
  if (rule.output == KernelOutput::Bool) cfg.output_dtype = kBool;
  if (real_out) cfg.output_dtype = to_real_value_type(dt);
  TensorIter it = cfg.build(name);
  if (it.numel) unary_stub[it.device()](it, op);
  it.finish();
  if (out.defined()) out.bump_version();
  return it.output();
}

namespace {

// A float16/bfloat16 tensor multiplied or divided by a Python number (`h * 65536.0`, loss
// scaling): PyTorch computes in float32 with the number unrounded and rounds the result once;
// converting the number to the tensor's dtype first would overflow it to inf. (Its add and sub
// do round the number first, and so does Kindle.) Called for mul and the divisions; returns an
// undefined tensor when the operands are not one reduced-float tensor and one scalar.
Tensor reduced_float_with_number(const char* name, const Tensor& a, const Tensor& b, BinaryOp op,
                                 const Tensor& out) {
  // The scalar is a Python number or any 0-d tensor (PyTorch's CPU-scalar path reads its value
  // unrounded); for the divisions only as the divisor.
  bool wa = a.impl()->wrapped_number || (op == BinaryOp::Mul && a.dim() == 0 && b.dim() > 0);
  bool wb = b.impl()->wrapped_number || (b.dim() == 0 && a.dim() > 0);
  if (wa == wb) return {};
  DType t = wa ? b.dtype() : a.dtype();
  if ((t != kFloat16 && t != kBFloat16) || result_type({a, b}) != t) return {};
  const Tensor& s = wa ? a : b;
  Tensor sv = s.impl()->wrapped_number ? s : s.to(kFloat32);
  Tensor r = binary(name, wa ? sv : a.to(kFloat32), wb ? sv : b.to(kFloat32), op);
  if (!out.defined()) return r.to(t);
  out.copy_(r);
  return out;
}

}  // namespace

Tensor binary(const char* name, const Tensor& a, const Tensor& b, BinaryOp op, const Tensor& out) {
  if ((op == BinaryOp::Mul || op == BinaryOp::Div || op == BinaryOp::DivTrunc || op == BinaryOp::DivFloor) &&
      (a.dim() == 0 || b.dim() == 0))
    if (Tensor r = reduced_float_with_number(name, a, b, op, out); r.defined()) return r;
  const KernelRule& rule = kernel_rule(op);
  TensorIterConfig cfg;
  cfg.add_output(out).add_input(a).add_input(b);
  cfg.int_to_float = rule.promote_float;
  if (rule.output == KernelOutput::Bool) cfg.output_dtype = kBool;
  TensorIter it = cfg.build(name);
  DType ct = it.common_dtype;
  check_kernel_dtype(name, rule, ct);
  bool int_division = op == BinaryOp::DivTrunc || op == BinaryOp::DivFloor || op == BinaryOp::Remainder ||
                      op == BinaryOp::Fmod;
  // Integer division by zero raises before anything is written (no half-updated in-place result).
  if (int_division && it.numel && is_integral(ct, false) && !b.is_meta()) {
    bool zero;
    if (b.numel() == 1) {  // `x // 2`: the value in ct's width (256 is 0 as uint8), no allocation
      uint64_t bits = itemsize(ct) * 8;
      uint64_t v = uint64_t(b.item().to_int());
      zero = (bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1)) == 0;
    } else {
      zero = eq(b.dtype() == ct ? b : b.to(ct), scalar_to_tensor(Scalar(0))).any().item().to_bool();
    }
    KINDLE_CHECK(!zero, name, ": ZeroDivisionError: integer division or modulo by zero");
  }
  if (it.numel) binary_stub[it.device()](it, op);
  it.finish();
  if (out.defined()) out.bump_version();
  return it.output();
}

namespace {

Tensor add_impl(const char* name, const Tensor& a, const Tensor& b, const Scalar& alpha, bool sub,
                const Tensor& out = {}) {
  KINDLE_CHECK(!sub || (a.dtype() != kBool && b.dtype() != kBool), name, ": subtraction, the `-` operator, with a bool "
               "tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  bool unit = alpha.is_integral() && alpha.to_int() == 1;
  if (unit) return binary(name, a, b, sub ? BinaryOp::Sub : BinaryOp::Add, out);
  TensorIterConfig cfg;
  cfg.add_output(out).add_input(a).add_input(b);
  TensorIter it = cfg.build(name);
  KINDLE_CHECK(is_complex(it.common_dtype) || !alpha.is_complex(), name,
               ": for non-complex input tensors, argument alpha must not be a complex number.");
  KINDLE_CHECK(is_floating_point(it.common_dtype) || is_complex(it.common_dtype) || !alpha.is_floating_point(), name,
               ": for integral input tensors, argument alpha must not be a floating point number.");
  KINDLE_CHECK(!alpha.is_bool() || it.common_dtype == kBool, name, ": Boolean alpha only supported for Boolean results, got ",
               it.common_dtype);
  if (it.common_dtype == kBool) {  // alpha acts as a bool too: a or (alpha and b)
    return alpha.to_bool() ? binary(name, a, b, BinaryOp::Add, out) : (out.defined() ? out.copy_(a) : a.clone());
  }
  Scalar al = !sub ? alpha : alpha.is_complex() ? Scalar(-alpha.to_complex())
             : alpha.is_floating_point() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int());
  if (it.numel) add_alpha_stub[it.device()](it, al);
  it.finish();
  if (out.defined()) out.bump_version();
  return it.output();
}

Tensor param(const char* name, const Tensor& self, ParamOp op, std::initializer_list<double> p,
             const Tensor& out = {}, std::optional<DType> compute = std::nullopt) {
  KINDLE_CHECK_NOT_IMPLEMENTED(!self.is_complex(), name, ": \"", name, "_cpu\" not implemented for '",
                               scalar_type_name(self.dtype()), "'");
  TensorIterConfig cfg;
  cfg.add_output(out).add_input(self);
  cfg.compute_dtype = compute;
  TensorIter it = cfg.build(name);
  KINDLE_CHECK(it.common_dtype != kBool, name, ": not supported for bool tensors");
  if (it.numel) param_stub[it.device()](it, op, p.begin());
  it.finish();
  if (out.defined()) out.bump_version();
  return it.output();
}

Tensor float_param(const char* name, const Tensor& self, ParamOp op, std::initializer_list<double> p,
                   const Tensor& out = {}) {
  KINDLE_CHECK_NOT_IMPLEMENTED(!self.is_complex(), name, ": \"", name, "_cpu\" not implemented for '",
                               scalar_type_name(self.dtype()), "'");
  DType ct = is_floating_point(self.dtype()) ? self.dtype() : default_dtype();
  return param(name, self, op, p, out, ct);
}

}  // namespace

Tensor native_square(const Tensor& self) {  // bool squares to int64, as pow(self, 2) does in PyTorch
  return unary("square", self.dtype() == kBool ? self.to(kInt64) : self, UnaryOp::Square);
}
const Tensor& native_square_(const Tensor& self) {
  KINDLE_CHECK(self.dtype() != kBool, "square_: result type Long can't be cast to the desired output type Bool");
  unary("square_", self, UnaryOp::Square, self);
  return self;
}

Tensor native_round(const Tensor& self, int64_t decimals) {
  KINDLE_CHECK_NOT_IMPLEMENTED(decimals == 0 || self.is_floating_point(), "round(): decimals=", decimals,
                               " is not implemented for ", self.dtype());
  if (decimals == 0) return unary("round", self, UnaryOp::Round);
  return float_param("round", self, ParamOp::RoundDecimals, {double(decimals)});
}
const Tensor& native_round_(const Tensor& self, int64_t decimals) {
  KINDLE_CHECK_NOT_IMPLEMENTED(decimals == 0 || self.is_floating_point(), "round_(): decimals=", decimals,
                               " is not implemented for ", self.dtype());
  if (decimals == 0) unary("round_", self, UnaryOp::Round, self);
  else float_param("round_", self, ParamOp::RoundDecimals, {double(decimals)}, self);
  return self;
}

Tensor native_gelu(const Tensor& self, std::string_view approximate) {
  KINDLE_CHECK(approximate == "none" || approximate == "tanh",
                     "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  KINDLE_CHECK(self.is_floating_point(), "gelu: expected a floating point tensor, got ", self.dtype());
  return unary("gelu", self, approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf);
}

Tensor native_softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  KINDLE_CHECK(self.is_floating_point(), "softplus: expected a floating point tensor, got ", self.dtype());
  return float_param("softplus", self, ParamOp::Softplus, {beta.to_double(), threshold.to_double()});
}

static std::array<double, 3> nan_to_num_params(const Tensor& self, std::optional<double> nan,
                                               std::optional<double> posinf, std::optional<double> neginf) {
  double big = self.dtype() == kFloat64 ? std::numeric_limits<double>::max()
             : self.dtype() == kFloat32 ? double(std::numeric_limits<float>::max())
             : self.dtype() == kFloat16 ? 65504.0 : 3.3895313892515355e38;
  return {nan.value_or(0.0), posinf.value_or(big), neginf.value_or(-big)};
}
Tensor native_nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  if (!self.is_floating_point()) return self.clone();
  auto p = nan_to_num_params(self, nan, posinf, neginf);
  return float_param("nan_to_num", self, ParamOp::NanToNum, {p[0], p[1], p[2]});
}
const Tensor& native_nan_to_num_(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) {
  if (!self.is_floating_point()) return self;
  auto p = nan_to_num_params(self, nan, posinf, neginf);
  float_param("nan_to_num_", self, ParamOp::NanToNum, {p[0], p[1], p[2]}, self);
  return self;
}

static Tensor clamp_impl(const char* name, const Tensor& self, const std::optional<Scalar>& min,
                         const std::optional<Scalar>& max, const Tensor& out) {
  KINDLE_CHECK(min || max, name, ": at least one of 'min' or 'max' must not be None");
  std::vector<Tensor> parts{self};
  if (min) parts.push_back(scalar_to_tensor(*min));
  if (max) parts.push_back(scalar_to_tensor(*max));
  DType ct = result_type(parts);
  KINDLE_CHECK(!out.defined() || can_cast(ct, out.dtype()), name, ": result type ", ct,
               " can't be cast to the desired output type ", out.dtype());
  // A bound must fit the result dtype (PyTorch raises); int64 bounds beyond double's 53 exact
  // bits go through the exact tensor form.
  bool big = false;
  for (const auto* b : {&min, &max})
    if (*b) {
      check_scalar_fits(**b, ct, name);
      big = big || (ct == kInt64 && (*b)->is_integral() && std::abs(double((*b)->to_int())) >= 9007199254740992.0);
    }
  if (big) {
    auto as_t = [&](const std::optional<Scalar>& b) {
      return b ? std::optional<Tensor>(scalar_tensor_of(*b, kInt64)) : std::nullopt;
    };
    Tensor r = clamp(self, as_t(min), as_t(max));
    return out.defined() ? out.copy_(r) : r;
  }
  if (min && max) return param(name, self, ParamOp::Clamp, {min->to_double(), max->to_double()}, out, ct);
  if (min) return param(name, self, ParamOp::ClampMin, {min->to_double()}, out, ct);
  return param(name, self, ParamOp::ClampMax, {max->to_double()}, out, ct);
}
Tensor native_clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp_impl("clamp", self, min, max, {});
}
const Tensor& native_clamp_(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  clamp_impl("clamp_", self, min, max, self);
  return self;
}
Tensor clip(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) { return clamp(self, min, max); }
const Tensor& clip_(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) { return clamp_(self, min, max); }
Tensor clamp_min(const Tensor& self, const Scalar& min) { return clamp(self, min, std::nullopt); }
Tensor clamp_max(const Tensor& self, const Scalar& max) { return clamp(self, std::nullopt, max); }

Tensor native_leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  KINDLE_CHECK(self.is_floating_point(), "leaky_relu: expected a floating point tensor, got ", self.dtype());
  return float_param("leaky_relu", self, ParamOp::LeakyRelu, {negative_slope.to_double()});
}
Tensor native_hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  KINDLE_CHECK(self.dtype() != kBool, "hardtanh: Bool inputs not supported for hardtanh");
  KINDLE_CHECK(self.dtype() != kUInt8 || (min_val.to_double() >= 0 && max_val.to_double() >= 0),
               "hardtanh: cannot do hardtanh on an unsigned type with negative limits");
  return param("hardtanh", self, ParamOp::Hardtanh, {min_val.to_double(), max_val.to_double()});
}
const Tensor& native_hardtanh_(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  KINDLE_CHECK(self.dtype() != kBool, "hardtanh_: Bool inputs not supported for hardtanh");
  KINDLE_CHECK(self.dtype() != kUInt8 || (min_val.to_double() >= 0 && max_val.to_double() >= 0),
               "hardtanh_: cannot do hardtanh on an unsigned type with negative limits");
  param("hardtanh_", self, ParamOp::Hardtanh, {min_val.to_double(), max_val.to_double()}, self);
  return self;
}
Tensor native_elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  KINDLE_CHECK(self.is_floating_point(), "elu: expected a floating point tensor, got ", self.dtype());
  return float_param("elu", self, ParamOp::Elu, {alpha.to_double(), scale.to_double(), input_scale.to_double()});
}
Tensor native_mish(const Tensor& self) {
  KINDLE_CHECK(self.is_floating_point(), "mish: expected a floating point tensor, got ", self.dtype());
  return float_param("mish", self, ParamOp::Mish, {});
}
Tensor native_logsigmoid(const Tensor& self) {
  KINDLE_CHECK(self.is_floating_point(), "log_sigmoid_forward: expected a floating point tensor, got ", self.dtype());
  return float_param("logsigmoid", self, ParamOp::LogSigmoid, {});
}
Tensor native_hardswish(const Tensor& self) {
  check_kernel_dtype(self.dtype(), "hardswish_cpu", false, false);
  return float_param("hardswish", self, ParamOp::Hardswish, {});
}
Tensor native_hardsigmoid(const Tensor& self) {
  check_kernel_dtype(self.dtype(), "hardsigmoid_cpu", false, false);
  return float_param("hardsigmoid", self, ParamOp::Hardsigmoid, {});
}
// The first-order backward of the activations above in one pass (see activation_kernels.h).
Tensor param_backward(const char* name, const Tensor& grad, const Tensor& self, ParamOp op,
                      std::initializer_list<double> p) {
  TensorIterConfig cfg;
  cfg.add_output(Tensor()).add_input(grad).add_input(self);
  TensorIter it = cfg.build(name);
  if (it.numel) param_stub[it.device()](it, op, p.begin());
  return it.output();
}
Tensor native_threshold(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  KINDLE_CHECK(self.dtype() != kUInt8 || value.to_double() >= 0, "threshold: value ", value,
               " cannot be converted to type uint8 without overflow");
  return param("threshold", self, ParamOp::Threshold, {threshold.to_double(), value.to_double()});
}

// ---- binary
Tensor native_add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return add_impl("add", a, b, alpha, false); }
const Tensor& native_add_(const Tensor& a, const Tensor& b, const Scalar& alpha) { add_impl("add_", a, b, alpha, false, a); return a; }
Tensor native_sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return add_impl("sub", a, b, alpha, true); }
void add_into(const Tensor& a, const Tensor& b, const Scalar& alpha, const Tensor& out) { add_impl("add", a, b, alpha, false, out); }
void sub_into(const Tensor& a, const Tensor& b, const Scalar& alpha, const Tensor& out) { add_impl("sub", a, b, alpha, true, out); }
const Tensor& native_sub_(const Tensor& a, const Tensor& b, const Scalar& alpha) { add_impl("sub_", a, b, alpha, true, a); return a; }
Tensor subtract(const Tensor& a, const Tensor& b, const Scalar& alpha) { return sub(a, b, alpha); }
const Tensor& subtract_(const Tensor& a, const Tensor& b, const Scalar& alpha) { return sub_(a, b, alpha); }

static BinaryOp div_op(const char* name, std::optional<std::string_view> mode) {
  if (!mode) return BinaryOp::Div;
  if (*mode == "trunc") return BinaryOp::DivTrunc;
  if (*mode == "floor") return BinaryOp::DivFloor;
  throw Error(detail::str_cat(name, " expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'"));
}
Tensor native_div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode) {
  BinaryOp op = div_op("div", rounding_mode);
  return binary("div", a, b, op);
}
void div_into(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode, const Tensor& out) {
  binary("div", a, b, div_op("div", rounding_mode), out);
}
const Tensor& native_div_(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode) {
  BinaryOp op = div_op("div_", rounding_mode);
  binary("div_", a, b, op, a);
  return a;
}
Tensor divide(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode) { return div(a, b, rounding_mode); }
Tensor true_divide(const Tensor& a, const Tensor& b) { return div(a, b, std::nullopt); }
const Tensor& true_divide_(const Tensor& a, const Tensor& b) { return div_(a, b, std::nullopt); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }
const Tensor& floor_divide_(const Tensor& a, const Tensor& b) { return div_(a, b, "floor"); }

// A Python-number exponent must fit the result dtype (PyTorch converts it to that dtype).
static void check_pow_exponent(const Tensor& a, const Tensor& b, const char* name) {
  if (!b.impl()->wrapped_number) return;
  auto inexact = [](DType t) { return is_floating_point(t) || is_complex(t); };
  if (!inexact(a.dtype()) && !inexact(b.dtype()))
    KINDLE_CHECK(b.item().to_int() >= 0, name, ": integers to negative integer powers are not allowed.");
  // (float32/float64 take the exponent as a double: never out of range)
  DType rt = result_type({a, b});
  if (rt != kFloat32 && rt != kFloat64) check_scalar_fits(b.item(), rt, name);
}
// A bool tensor to a Python bool power is x ** 1 or x ** 0, which PyTorch answers before choosing
// a kernel (there is none for bool: ops.yaml).
static bool bool_to_number_power(const Tensor& a, const Tensor& b) {
  return a.dtype() == kBool && b.dtype() == kBool && b.impl()->wrapped_number;
}
Tensor native_pow(const Tensor& a, const Tensor& b) {
  check_pow_exponent(a, b, "pow");
  if (bool_to_number_power(a, b)) return b.item().to_bool() ? a.clone() : ones_like(a);
  return binary("pow", a, b, BinaryOp::Pow);
}
const Tensor& native_pow_(const Tensor& a, const Tensor& b) {
  check_pow_exponent(a, b, "pow_");
  if (bool_to_number_power(a, b)) {
    if (!b.item().to_bool()) a.fill_(true);
    return a;
  }
  binary("pow_", a, b, BinaryOp::Pow, a);
  return a;
}
Tensor multiply(const Tensor& a, const Tensor& b) { return mul(a, b); }
const Tensor& multiply_(const Tensor& a, const Tensor& b) { return mul_(a, b); }

// Backward kernels of relu, tanh and sigmoid: one fused pass instead of three or four.
Tensor native_threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  if (threshold.to_double() == 0.0 && is_floating_point(promote_types(grad_output.dtype(), self.dtype())))
    return binary("threshold_backward", grad_output, self, BinaryOp::ReluGrad);
  return where(le(self, scalar_to_tensor(threshold)), scalar_tensor_of(0, grad_output.dtype()), grad_output);
}
// One pass (it was two comparisons, a logical_or and a where: a third of a MobileNet's training
// step went to ReLU6's backward).
Tensor native_hardtanh_backward(const Tensor& grad_output, const Tensor& self, const Scalar& min_val,
                                const Scalar& max_val) {
  if (grad_output.dtype() == self.dtype() && grad_output.is_floating_point())
    return param_backward("hardtanh_backward", grad_output, self, ParamOp::HardtanhGrad,
                          {min_val.to_double(), max_val.to_double()});
  const Tensor zero = scalar_tensor_of(0, grad_output.dtype());
  if (self.dtype() == kFloat64)
    return where(logical_and(gt(self, scalar_to_tensor(min_val)), lt(self, scalar_to_tensor(max_val))), grad_output,
                 zero);
  return where(logical_or(le(self, scalar_to_tensor(min_val)), ge(self, scalar_to_tensor(max_val))), zero,
               grad_output);
}
// One pass (it was a comparison, a product and a where, the where a strided scalar loop).
Tensor native_leaky_relu_backward(const Tensor& grad_output, const Tensor& self, const Scalar& negative_slope) {
  if (grad_output.dtype() == self.dtype() && grad_output.is_floating_point())
    return param_backward("leaky_relu_backward", grad_output, self, ParamOp::LeakyReluGrad,
                          {negative_slope.to_double()});
  return where(gt(self, scalar_to_tensor(Scalar(0))), grad_output, mul(grad_output, scalar_to_tensor(negative_slope)));
}
Tensor native_tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return binary("tanh_backward", grad_output, output, BinaryOp::TanhGrad);
}
Tensor native_sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return binary("sigmoid_backward", grad_output, output, BinaryOp::SigmoidGrad);
}

Tensor native_where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  KINDLE_CHECK(condition.dtype() == kBool || condition.dtype() == kUInt8,
                    "where: expected condition to be a boolean tensor, but got a tensor with dtype ", condition.dtype());
  Tensor cond = condition.dtype() == kBool ? condition : condition.to(kBool);
  // A Python number must fit the result dtype, as PyTorch checks (except float16/bfloat16,
  // where it rounds to infinity).
  for (const Tensor* t : {&self, &other})
    if (t->impl()->wrapped_number) {
      DType rt = result_type({self, other});
      if (rt != kFloat16 && rt != kBFloat16) check_scalar_fits(t->item(), rt, "where");
    }
  TensorIterConfig cfg;
  cfg.add_output(Tensor()).add_input(cond).add_input(self).add_input(other);
  cfg.keep_input_dtype = 1;
  TensorIter it = cfg.build("where");
  if (it.numel) where_stub[it.device()](it);
  return it.output();
}

static Tensor lerp_impl(const char* name, const Tensor& self, const Tensor& end, const Tensor& weight, const Tensor& out) {
  KINDLE_CHECK((self.is_floating_point() || self.is_complex()) && end.dtype() == self.dtype(), name,
                    ": expected start and end to be floating point tensors of the same dtype, got ",
                    self.dtype(), " and ", end.dtype());
  if ((weight.impl()->wrapped_number || weight.dim() == 0) && !self.is_complex() && !weight.is_complex() && !weight.is_meta()) {
    TensorIterConfig cfg;
    cfg.add_output(out).add_input(self).add_input(end);
    TensorIter it = cfg.build(name);
    double w = weight.item().to_double();
    if (it.numel) param_stub[it.device()](it, ParamOp::Lerp, &w);
    it.finish();
    if (out.defined()) out.bump_version();
    return it.output();
  }
  bool narrow_float = self.dtype() == kFloat16 || self.dtype() == kBFloat16;  // compute in float32, round once
  Tensor s = narrow_float ? self.to(kFloat32) : self, e = narrow_float ? end.to(kFloat32) : end;
  Tensor w = narrow_float ? weight.to(kFloat32) : weight;
  Tensor r = add(s, mul(w, sub(e, s)));
  if (narrow_float) r = r.to(self.dtype());
  if (out.defined()) { out.copy_(r); return out; }
  return r;
}
Tensor native_lerp(const Tensor& self, const Tensor& end, const Tensor& weight) { return lerp_impl("lerp", self, end, weight, {}); }
const Tensor& native_lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) { lerp_impl("lerp_", self, end, weight, self); return self; }

static Tensor addc(const char* name, ParamOp op, const Tensor& self, const Tensor& t1, const Tensor& t2,
                   const Scalar& value, const Tensor& out) {
  TensorIterConfig cfg;
  cfg.add_output(out).add_input(self).add_input(t1).add_input(t2);
  if (op == ParamOp::Addcdiv) {
    KINDLE_CHECK(t1.is_floating_point() || t2.is_floating_point() || t1.is_complex() || t2.is_complex(), name,
                 ": integer division with addcdiv is not supported; use a floating point tensor");
  }
  TensorIter it = cfg.build(name);
  KINDLE_CHECK(it.common_dtype != kBool, name, ": not supported for bool tensors");
  if (is_complex(it.common_dtype)) {  // composed (no fused complex kernel)
    DType ct = it.common_dtype;
    Tensor a = self.to(ct), b = t1.to(ct), c = t2.to(ct), v = scalar_tensor_of(value, ct);
    Tensor r = add(a, mul(v, op == ParamOp::Addcmul ? mul(b, c) : div(b, c)));
    if (out.defined()) { out.copy_(r); return out; }
    return r;
  }
  KINDLE_CHECK(!value.is_complex(), name, ": For non-complex input tensors, argument value must not be a complex number.");
  double v = value.to_double();
  if (it.numel) param_stub[it.device()](it, op, &v);
  it.finish();
  if (out.defined()) out.bump_version();
  return it.output();
}
Tensor native_addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) { return addc("addcmul", ParamOp::Addcmul, self, t1, t2, value, {}); }
const Tensor& native_addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) { addc("addcmul_", ParamOp::Addcmul, self, t1, t2, value, self); return self; }
Tensor native_addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) { return addc("addcdiv", ParamOp::Addcdiv, self, t1, t2, value, {}); }
const Tensor& native_addcdiv_(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) { addc("addcdiv_", ParamOp::Addcdiv, self, t1, t2, value, self); return self; }

Tensor isclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  KINDLE_CHECK(self.dtype() == other.dtype(), "isclose: expected both tensors to have the same dtype, but got ",
                    self.dtype(), " and ", other.dtype());
  if (!self.is_floating_point() && !self.is_complex()) {  // integers and bools: compare in float64, where atol means something
    return isclose(self.to(kFloat64), other.to(kFloat64), rtol, atol, equal_nan);
  }
  Tensor close = eq(self, other);
  {
    Tensor diff = abs(sub(self, other));
    Tensor tol = add(scalar_to_tensor(atol), mul(abs(other), scalar_to_tensor(rtol)));
    close = logical_or(close, logical_and(isfinite(diff), le(diff, tol)));
    if (equal_nan) close = logical_or(close, logical_and(isnan(self), isnan(other)));
  }
  return close;
}
bool allclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  return all(isclose(self, other, rtol, atol, equal_nan)).item().to_bool();
}
bool equal(const Tensor& self, const Tensor& other) {
  if (self.sizes() != other.sizes()) return false;
  return all(eq(self, other)).item().to_bool();
}

}  // namespace kindle
