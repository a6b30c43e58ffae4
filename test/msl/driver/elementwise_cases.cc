// The elementwise kernels (shaders/elementwise.metal) against the cpu backend's
// (native/cpu/elementwise.cc): silu, gelu, gelu_tanh over float32/float16/bfloat16 x, and add, mul,
// swiglu over every pair of input dtypes (float32 out where they differ) with broadcasting:
// contiguous operands, one repeated value, [3,1,7] x [1,5,1], [300,257] x [257], four merged
// dimensions. Data holds 0, -0, +-1e30, +-inf and NaN (every op's rule is defined there). add and
// mul are bit-exact (one float32 operation, one rounding, on both sides; NaN matches NaN); silu,
// gelu, gelu_tanh and swiglu within 1e-6 (1 + |ref|) plus one unit in the last place for 16-bit
// outputs. Also plan/elementwise: what the plans refuse and which kernel they pick.
#include "cases.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/plan/elementwise.h"
#include "cpu/ops.h"
#include "data.h"
#include "model_data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;
using namespace model;

// exp, erf and tanh differ between the kernels (erfc's fitted form for gelu, Metal's precise::
// functions on a GPU) and the cpu's libm by a few units in the last place.
constexpr double kTolerance = 1e-6;

const char* unary_name(mto::UnaryOp op) {
  return op == mto::UnaryOp::Silu ? "silu" : op == mto::UnaryOp::Gelu ? "gelu" : "gelu_tanh";
}
const char* binary_name(mto::BinaryOp op) {
  return op == mto::BinaryOp::Add         ? "add"
         : op == mto::BinaryOp::Mul       ? "mul"
         : op == mto::BinaryOp::SwigluOai ? "swiglu_oai"
                                          : "swiglu";
}

std::string shape_tag(const mto::Shape& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "." : "") + std::to_string(s[i]);
  return t;
}

CaseResult run_unary(mto::UnaryOp op, DType dt, int64_t n, const std::string& name, const std::string& variant) {
  const mto::Tensor x = tensor_of(data_with_extremes(n, seed_of(name), 3.0f, true), {n}, dt);
  const mto::ElementwiseParams p = mto::check_unary(unary_name(op), x);
  mto::Tensor out = empty_tensor({n}, p.out_dtype);
  mto::cpu::ThreadPool pool(1);
  mto::cpu::unary(pool, op, x, p, out);
  const std::vector<float> ref = floats_of(out);
  const mto::plan::Dispatch plan = mto::plan::plan_unary(op, dt, p.out_dtype, p.bc, mto::Tier::Simdgroup);
  return run_plan_case("unary", plan, variant, {{Arg::X, bytes_of(x)}}, {{Arg::Y, out.bytes()}},
                       [&](const std::map<Arg, Bytes>& o) {
                         return compare_outputs(o.at(Arg::Y), p.out_dtype, ref, kTolerance, n, "y");
                       });
}

CaseResult run_binary(mto::BinaryOp op, DType da, DType db, const mto::Shape& sa, const mto::Shape& sb,
                      const std::string& name, const std::string& variant) {
  const uint64_t seed = seed_of(name);
  const mto::Tensor a = tensor_of(data_with_extremes(mto::shape_numel(sa), seed, 3.0f, true), sa, da);
  const mto::Tensor b = tensor_of(data_with_extremes(mto::shape_numel(sb), seed + 1, 3.0f, true), sb, db);
  // swiglu_oai: gpt-oss's alpha and limit (the data's scale 3 and its extremes cross the limit).
  const mto::ElementwiseParams p = op == mto::BinaryOp::SwigluOai ? mto::check_swiglu_oai(a, b, 1.702, 7.0)
                                                                  : mto::check_binary(binary_name(op), a, b);
  mto::Tensor out = empty_tensor(p.bc.out_shape, p.out_dtype);
  mto::cpu::ThreadPool pool(1);
  mto::cpu::binary(pool, op, a, b, p, out);
  const Bytes want = bytes_of(out);
  const std::vector<float> ref = floats_of(out);
  const int64_t width = p.bc.out_shape.back();
  const mto::plan::Dispatch plan =
      mto::plan::plan_binary(op, da, db, p.out_dtype, p.bc, mto::Tier::Simdgroup, p.alpha, p.limit);
  const bool exact = op != mto::BinaryOp::Swiglu && op != mto::BinaryOp::SwigluOai;
  return run_plan_case("binary", plan, variant, {{Arg::A, bytes_of(a)}, {Arg::B, bytes_of(b)}},
                       {{Arg::Y, out.bytes()}}, [&](const std::map<Arg, Bytes>& o) {
                         return exact ? compare_exact(o.at(Arg::Y), want, p.out_dtype, width, "y")
                                      : compare_outputs(o.at(Arg::Y), p.out_dtype, ref, kTolerance, width, "y");
                       });
}

mto::Broadcast broadcast(const mto::Shape& a, const mto::Shape& b) { return mto::broadcast_shapes("a", a, "b", b); }

CaseResult plan_rules() {
  namespace plan = mto::plan;
  using mto::Tier;
  const DType f32 = DType::Float32, f16 = DType::Float16, bf16 = DType::BFloat16;
  const auto add = mto::BinaryOp::Add;
  std::vector<std::pair<std::string, std::string>> checks = {
      {"seven unmergeable dimensions", expect_error(mto::code::Shape, [&] {
         plan::plan_binary(add, f32, f32, f32, broadcast({2, 1, 2, 1, 2, 1, 2}, {1, 2, 1, 2, 1, 2, 1}), Tier::Simdgroup);
       })},
      {"2^31 elements", expect_error(mto::code::Shape, [&] {
         plan::plan_unary(mto::UnaryOp::Silu, f32, f32, broadcast({int64_t(1) << 31}, {int64_t(1) << 31}), Tier::Simdgroup);
       })},
      {"int32 a", expect_error(mto::code::DType, [&] {
         plan::plan_binary(add, DType::Int32, f32, f32, broadcast({4}, {4}), Tier::Simdgroup);
       })},
      {"float16 out for float16 and bfloat16", expect_error(mto::code::DType, [&] {
         plan::plan_binary(add, f16, bf16, f16, broadcast({4}, {4}), Tier::Simdgroup);
       })},
      {"unary out of another dtype", expect_error(mto::code::DType, [&] {
         plan::plan_unary(mto::UnaryOp::Gelu, bf16, f32, broadcast({4}, {4}), Tier::Simdgroup);
       })},
      {"the cpu tier", expect_error(mto::code::Backend, [&] {
         plan::plan_binary(add, f32, f32, f32, broadcast({4}, {4}), Tier::Cpu);
       })},
  };
  const auto kernel = [&](const mto::Shape& a, const mto::Shape& b, DType da, DType db, const char* want) {
    const plan::Dispatch d = plan::plan_binary(add, da, db, da == db ? da : f32, broadcast(a, b), Tier::TensorOpsMx);
    checks.push_back({std::string("kernel for ") + want, d.kernel == want && d.library == "elementwise"
                                                              ? ""
                                                              : "got " + d.library + "/" + d.kernel});
  };
  kernel({37, 33}, {37, 33}, f32, f32, "elementwise_binary_f32_f32");
  kernel({1000}, {1}, f16, bf16, "elementwise_binary_f16_bf16");
  kernel({300, 257}, {257}, bf16, f32, "elementwise_binary_strided_bf16_f32");
  return rule_checks(checks);
}

}  // namespace

std::vector<Case> elementwise_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/elementwise", [](const std::string&) { return plan_rules(); }});
  const DType dtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
  for (mto::UnaryOp op : {mto::UnaryOp::Silu, mto::UnaryOp::Gelu, mto::UnaryOp::GeluTanh}) {
    for (DType dt : dtypes) {
      for (int64_t n : {1, 7, 33, 1000, 4099}) {
        const std::string name = std::string("elementwise/unary/") + unary_name(op) + "/" + tag(dt) + "/n" + std::to_string(n);
        cases.push_back({name, [=](const std::string& v) { return run_unary(op, dt, n, name, v); }});
      }
    }
  }
  // Contiguous, a repeated value either side, rows against one row, an outer product of
  // broadcasts, and four merged dimensions.
  const std::pair<mto::Shape, mto::Shape> shapes[] = {
      {{37, 33}, {37, 33}}, {{1000}, {1}}, {{1}, {4099}}, {{300, 257}, {257}}, {{3, 1, 7}, {1, 5, 1}},
      {{5, 1, 3, 1}, {1, 4, 1, 2}}, {{7, 1}, {1, 1}},
  };
  for (mto::BinaryOp op : {mto::BinaryOp::Add, mto::BinaryOp::Mul, mto::BinaryOp::Swiglu, mto::BinaryOp::SwigluOai}) {
    for (DType da : dtypes) {
      for (DType db : dtypes) {
        for (const auto& s : shapes) {
          // Every shape for operands of one dtype; three shapes (contiguous, scalar, strided) for
          // the mixed pairs.
          if (da != db && !(s.first == mto::Shape{37, 33} || s.first == mto::Shape{1000} ||
                            s.first == mto::Shape{3, 1, 7})) {
            continue;
          }
          const std::string name = std::string("elementwise/binary/") + binary_name(op) + "/" + tag(da) + "." + tag(db) +
                                   "/" + shape_tag(s.first) + "x" + shape_tag(s.second);
          const mto::Shape sa = s.first, sb = s.second;
          cases.push_back({name, [=](const std::string& v) { return run_binary(op, da, db, sa, sb, name, v); }});
        }
      }
    }
  }
  return cases;
}

}  // namespace mtoh_driver
