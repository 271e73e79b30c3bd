// The dtypes ops.yaml declares for each elementwise kernel code are the dtypes its CPU kernel
// computes: every declared (code, dtype) runs, every other one is refused by the op layer before
// a kernel runs (NotImplementedError, or the refusal ops.yaml names). A kernel switch that lacks a
// declared case, or a declaration the kernel does not back, fails here for every code at once.
#include <gtest/gtest.h>

#include <string>

#include <kindle/kindle.h>

#include "ops/elementwise.h"

using namespace kindle;

namespace {

const DType kAllDtypes[] = {kBool,    kUInt8,   kInt8,    kInt16,   kInt32,     kInt64,
                            kFloat16, kBFloat16, kFloat32, kFloat64, kComplex64, kComplex128};

// Values every kernel accepts: positive and nonzero (integer division, shifts, logs).
Tensor operand(DType dt) { return full({5}, dt == kBool ? 1 : 2, TensorOptions().dtype(dt)); }

// Which rule decides: the dtype the kernel computes in (bool and integers become the default
// float for promoting codes).
DType computed_dtype(const KernelRule& r, DType dt) {
  return r.promote_float && !is_floating_point(dt) && !is_complex(dt) ? default_dtype() : dt;
}

template <typename Fn>
std::string outcome(Fn&& fn) {
  try {
    fn();
    return "ok";
  } catch (const NotImplementedError&) {
    return "NotImplementedError";
  } catch (const Error& e) {
    return "RuntimeError";
  }
}

std::string expected(const KernelRule& r, DType dt) {
  DTypeClass c = dtype_class(computed_dtype(r, dt));
  if (r.dtypes & class_bit(c)) return "ok";
  const char* refusal = r.refuse[int(c)];
  if (!refusal) return "NotImplementedError";
  return std::string(refusal).rfind("NotImplementedError", 0) == 0 ? "NotImplementedError" : "RuntimeError";
}

}  // namespace

// Every code of a family on every dtype: `call(op, x)` runs the op layer on operand x.
template <typename Op, size_t N, typename Call>
void check_family(const KernelRule (&rules)[N], Call call) {
  for (size_t i = 0; i < N; ++i)
    for (DType dt : kAllDtypes) {
      Tensor x = operand(dt);
      EXPECT_EQ(outcome([&] { call(Op(i), x); }), expected(rules[i], dt)) << rules[i].name << " on " << dt;
    }
}

TEST(KernelDtypes, UnaryCodesComputeExactlyTheirDeclaredDtypes) {
  check_family<UnaryOp>(kUnaryOpRules, [](UnaryOp op, const Tensor& x) { unary(kernel_rule(op).name, x, op); });
}

TEST(KernelDtypes, BinaryCodesComputeExactlyTheirDeclaredDtypes) {
  check_family<BinaryOp>(kBinaryOpRules,
                         [](BinaryOp op, const Tensor& x) { binary(kernel_rule(op).name, x, x, op); });
}

TEST(KernelDtypes, ResultDtypesFollowTheDeclaredOutput) {
  EXPECT_EQ(unary("isnan", operand(kFloat32), UnaryOp::Isnan).dtype(), kBool);
  EXPECT_EQ(unary("abs", operand(kComplex64), UnaryOp::Abs).dtype(), kFloat32);
  EXPECT_EQ(unary("sqrt", operand(kInt32), UnaryOp::Sqrt).dtype(), default_dtype());
  EXPECT_EQ(binary("lt", operand(kInt64), operand(kInt64), BinaryOp::Lt).dtype(), kBool);
  EXPECT_EQ(binary("div", operand(kInt64), operand(kInt64), BinaryOp::Div).dtype(), default_dtype());
  EXPECT_EQ(binary("fmod", operand(kInt16), operand(kInt16), BinaryOp::Fmod).dtype(), kInt16);
}

TEST(KernelDtypes, RefusalsNameTheOpAndTheDtype) {
  try {
    kindle::floor_divide(operand(kBool), operand(kBool));
    FAIL() << "floor_divide on bool computed a result";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("not implemented for 'Bool'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kindle::neg(operand(kBool)), Error);
  EXPECT_THROW(kindle::bitwise_and(operand(kFloat32), operand(kFloat32)), NotImplementedError);
}
