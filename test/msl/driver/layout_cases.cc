// The layout ops as strided copies (shaders/copy.metal) against the cpu backend's copies
// (native/cpu/layout.cc): transpose (ranks 2 to 6, the middle axes of attention's layouts, a full
// reversal), slice (inner and outer axes), concat (two and three inputs, one pass each) and write
// (into a KV cache, the rest of dst kept), for every dtype (float32, float16, bfloat16, int32,
// bool: 4, 2 and 1-byte elements) on random bits (NaN payloads included): bit for bit. Also
// plan/copy.
#include <cstring>

#include "cases.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/plan/layout.h"
#include "cpu/ops.h"
#include "data.h"
#include "model_data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;
using namespace model;

mto::Tensor random_tensor(const mto::Shape& shape, DType t, uint64_t seed) {
  mto::Tensor x = empty_tensor(shape, t);
  Rng rng(seed);
  auto* p = static_cast<unsigned char*>(x.buffer->data());
  for (size_t i = 0; i < x.bytes(); ++i) p[i] = t == DType::Bool ? uint8_t(rng.next() & 1) : uint8_t(rng.next());
  return x;
}

Comparison compare_bits(const Bytes& got, const Bytes& want, size_t es, int64_t width) {
  Comparison c;
  for (size_t i = 0; i < got.size() && i < want.size(); i += es) {
    if (std::memcmp(&got[i], &want[i], es) == 0) continue;
    if (c.mismatches++ == 0) {
      const int64_t e = int64_t(i / es);
      c.first_mismatch = "dst[" + std::to_string(e / width) + ", " + std::to_string(e % width) + "] differs from the cpu's";
    }
  }
  if (got.size() != want.size()) {
    ++c.mismatches;
    c.first_mismatch = "dst has " + std::to_string(got.size()) + " bytes, expected " + std::to_string(want.size());
  }
  c.ok = c.mismatches == 0;
  return c;
}

// Runs one copy pass per part in order, each reading its source and the dst the previous pass
// left, in both of the harness's passes (a fresh dst starts as the pass's poison; write's dst as
// its old contents), and compares dst with the cpu backend's bit for bit.
CaseResult run_parts(const std::vector<mto::CopyPart>& parts, const std::vector<const mto::Tensor*>& srcs,
                     const mto::Tensor* old_dst, const mto::Tensor& want, const std::string& variant) {
  CaseResult r;
  r.op = "copy";
  std::vector<mto::plan::Dispatch> plans;
  for (size_t i = 0; i < parts.size(); ++i) {
    plans.push_back(mto::plan::plan_copy(parts[i], srcs[i]->dtype, srcs[i]->numel(), want.numel(), mto::Tier::Simdgroup));
    r.kernel += (i ? "+" : "") + plans.back().kernel;
  }
  r.grid = dims_json(plans[0].threadgroups);
  r.threads = dims_json(plans[0].threads_per_threadgroup);
  const Bytes expected = bytes_of(want);
  const int64_t width = want.shape.back();
  Bytes first;
  for (int pass = 0; pass < 2; ++pass) {
    const PlanPass& pp = kPlanPasses[pass];
    mtoh::RunOptions opt;
    opt.align_end = pp.align_end;
    opt.reverse_order = pp.reverse;
    opt.threadgroup_poison = pp.threadgroup_poison;
    Bytes dst = old_dst ? bytes_of(*old_dst) : Bytes(want.bytes(), pp.output_poison);
    for (size_t i = 0; i < plans.size(); ++i) {
      PlanRun run = execute_plan(plans[i], variant, {{Arg::Src, bytes_of(*srcs[i])}, {Arg::Dst, dst}},
                                 {{Arg::Dst, dst.size()}}, opt, pp.output_poison);
      if (!run.result.ok) {
        r.error_kind = run.result.kind;
        r.message = run.result.message + " (part " + std::to_string(i) + ")" + pp.name;
        return r;
      }
      dst = std::move(run.outputs[Arg::Dst]);
    }
    r.compare = compare_bits(dst, expected, mto::dtype_size(want.dtype), width);
    if (!r.compare.ok) {
      r.error_kind = "mismatch";
      r.message = r.compare.first_mismatch + pp.name;
      return r;
    }
    if (pass == 0) first = dst;
    else if (first != dst) {
      r.error_kind = "nondeterministic";
      r.message = "the two passes produced different bits";
      return r;
    }
  }
  r.ok = true;
  return r;
}

// The cpu backend's result of the parts, into a copy of `old_dst` or a fresh tensor of `shape`.
mto::Tensor cpu_copy(const std::vector<mto::CopyPart>& parts, const std::vector<const mto::Tensor*>& srcs,
                     const mto::Tensor* old_dst, const mto::Shape& shape) {
  mto::Tensor out = empty_tensor(shape, srcs[0]->dtype);
  if (old_dst) std::memcpy(out.buffer->data(), old_dst->buffer->data(), out.bytes());
  else std::memset(out.buffer->data(), 0, out.bytes());
  mto::cpu::ThreadPool pool(1);
  for (size_t i = 0; i < parts.size(); ++i) mto::cpu::copy(pool, *srcs[i], parts[i], out);
  return out;
}

std::string shape_tag(const mto::Shape& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "." : "") + std::to_string(s[i]);
  return t;
}

CaseResult transpose_case(DType t, const mto::Shape& shape, const std::vector<int64_t>& perm, uint64_t seed,
                          const std::string& variant) {
  const mto::Tensor x = random_tensor(shape, t, seed);
  mto::Shape out_shape;
  const auto parts = mto::plan_transpose(x, perm, &out_shape);
  return run_parts(parts, {&x}, nullptr, cpu_copy(parts, {&x}, nullptr, out_shape), variant);
}

CaseResult slice_case(DType t, const mto::Shape& shape, int64_t axis, int64_t start, int64_t end, uint64_t seed,
                      const std::string& variant) {
  const mto::Tensor x = random_tensor(shape, t, seed);
  mto::Shape out_shape;
  const auto parts = mto::plan_slice(x, axis, start, end, &out_shape);
  return run_parts(parts, {&x}, nullptr, cpu_copy(parts, {&x}, nullptr, out_shape), variant);
}

CaseResult concat_case(DType t, const std::vector<mto::Shape>& shapes, int64_t axis, uint64_t seed, const std::string& variant) {
  std::vector<mto::Tensor> xs;
  for (size_t i = 0; i < shapes.size(); ++i) xs.push_back(random_tensor(shapes[i], t, seed + i));
  std::vector<const mto::Tensor*> srcs;
  for (const auto& x : xs) srcs.push_back(&x);
  mto::Shape out_shape;
  const auto parts = mto::plan_concat(srcs, axis, &out_shape);
  return run_parts(parts, srcs, nullptr, cpu_copy(parts, srcs, nullptr, out_shape), variant);
}

CaseResult write_case(DType t, const mto::Shape& dst_shape, const mto::Shape& src_shape, int64_t axis, int64_t offset,
                      uint64_t seed, const std::string& variant) {
  const mto::Tensor dst = random_tensor(dst_shape, t, seed);
  const mto::Tensor src = random_tensor(src_shape, t, seed + 1);
  const auto parts = mto::plan_write(dst, src, axis, offset);
  return run_parts(parts, {&src}, &dst, cpu_copy(parts, {&src}, &dst, dst_shape), variant);
}

CaseResult plan_rules() {
  namespace plan = mto::plan;
  using mto::Tier;
  const mto::Tensor x7 = empty_tensor({2, 3, 2, 3, 2, 3, 2}, DType::Float32);
  mto::Shape out;
  const auto reversed = mto::plan_transpose(x7, {6, 5, 4, 3, 2, 1, 0}, &out);
  mto::CopyPart outside;
  outside.dims = {4, 8};
  outside.src_strides = {8, 1};
  outside.dst_strides = {8, 1};
  outside.dst_offset = 1;
  std::vector<std::pair<std::string, std::string>> checks = {
      {"seven unmergeable dimensions", expect_error(mto::code::Shape, [&] {
         plan::plan_copy(reversed[0], DType::Float32, x7.numel(), x7.numel(), Tier::Simdgroup);
       })},
      {"a part past the end of dst", expect_error(mto::code::Shape, [&] {
         plan::plan_copy(outside, DType::Float32, 32, 32, Tier::Simdgroup);
       })},
      {"the cpu tier", expect_error(mto::code::Backend, [&] {
         plan::plan_copy(outside, DType::Float32, 64, 64, Tier::Cpu);
       })},
  };
  for (auto [t, kernel] : {std::pair<DType, const char*>{DType::Bool, "copy_strided_b8"}, {DType::BFloat16, "copy_strided_b16"},
                           {DType::Int32, "copy_strided_b32"}, {DType::Float32, "copy_strided_b32"}}) {
    const plan::Dispatch d = plan::plan_copy(outside, t, 64, 64, Tier::TensorOps);
    checks.push_back({std::string("kernel for ") + tag(t), d.kernel == kernel ? "" : "got " + d.kernel});
  }
  return rule_checks(checks);
}

}  // namespace

std::vector<Case> layout_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/copy", [](const std::string&) { return plan_rules(); }});
  for (DType t : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int32, DType::Bool}) {
    const std::string dt = tag(t);
    auto add = [&](const std::string& what, std::function<CaseResult(uint64_t, const std::string&)> run) {
      const std::string name = "layout/" + what + "/" + dt;
      cases.push_back({name, [=](const std::string& v) { return run(seed_of(name), v); }});
    };
    const std::pair<mto::Shape, std::vector<int64_t>> transposes[] = {
        {{37, 33}, {1, 0}}, {{2, 3, 37, 5}, {0, 2, 1, 3}}, {{3, 1, 7, 5}, {3, 2, 1, 0}},
        {{2, 3, 2, 3, 2, 3}, {5, 3, 1, 4, 2, 0}}};
    for (const auto& tr : transposes) {
      std::string perm;
      for (int64_t a : tr.second) perm += std::to_string(a);
      const mto::Shape shape = tr.first;
      const std::vector<int64_t> p = tr.second;
      add("transpose/" + shape_tag(shape) + "/p" + perm,
          [=](uint64_t s, const std::string& v) { return transpose_case(t, shape, p, s, v); });
    }
    add("slice/37.33/a1.3-20", [=](uint64_t s, const std::string& v) { return slice_case(t, {37, 33}, 1, 3, 20, s, v); });
    add("slice/4.37.8/a1.30-37", [=](uint64_t s, const std::string& v) { return slice_case(t, {4, 37, 8}, 1, 30, 37, s, v); });
    add("slice/9.7/a0.2-9", [=](uint64_t s, const std::string& v) { return slice_case(t, {9, 7}, 0, 2, 9, s, v); });
    add("concat/3.7+5.7/a0", [=](uint64_t s, const std::string& v) { return concat_case(t, {{3, 7}, {5, 7}}, 0, s, v); });
    add("concat/2.3.4+2.1.4+2.5.4/a1",
        [=](uint64_t s, const std::string& v) { return concat_case(t, {{2, 3, 4}, {2, 1, 4}, {2, 5, 4}}, 1, s, v); });
    add("concat/3.33+3.1+3.1000/a-1",
        [=](uint64_t s, const std::string& v) { return concat_case(t, {{3, 33}, {3, 1}, {3, 1000}}, -1, s, v); });
    add("write/2.8.37.16<2.8.1.16/a2.5",
        [=](uint64_t s, const std::string& v) { return write_case(t, {2, 8, 37, 16}, {2, 8, 1, 16}, 2, 5, s, v); });
    add("write/2.8.37.16<2.8.7.16/a2.30",
        [=](uint64_t s, const std::string& v) { return write_case(t, {2, 8, 37, 16}, {2, 8, 7, 16}, 2, 30, s, v); });
  }
  return cases;
}

}  // namespace mtoh_driver
