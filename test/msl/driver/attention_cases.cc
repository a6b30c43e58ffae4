// FlashAttention on the GPU (shaders/attention.metal) against the cpu backend's attention:
// max |o - ref| <= 2e-5 (1 + |ref|) for float32 q, 3e-3 (1 + |ref|) plus one unit in the last place
// of o's dtype for float16/bfloat16 q (o has q's dtype: the kernels round once as they store it).
// Shapes sample Lq, Lk in {1, 7, 33, 129, 300} (decode, split decode and prefill, edge tiles),
// every head dim, GQA ratios 1, 4, 8, causal with Lq > Lk (whole rows masked), bool and additive
// masks with broadcast, float32/float16/bfloat16 q, dense and mxfp8 (E4M3/E5M2) K/V.
// Also "plan/attention": what plan_attention refuses and which kernels it picks.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "attention_case.h"
#include "attention_params.h"
#include "cases.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "cpu/ops.h"
#include "data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::Format;
using mto::plan::Arg;

Bytes bytes_of(const mto::Buffer& b) {
  const auto* p = static_cast<const unsigned char*>(b.data());
  return Bytes(p, p + b.bytes());
}

mto::Tensor tensor(const std::vector<float>& v, mto::Shape shape, DType t) {
  mto::Tensor x;
  x.shape = std::move(shape);
  x.dtype = t;
  x.buffer = mto::make_buffer(v.size() * mto::dtype_size(t));
  mto::from_float32(t, v.data(), x.buffer->data(), v.size());
  return x;
}

const char* dtype_tag(DType t) {
  return t == DType::Float32 ? "f32" : t == DType::Float16 ? "f16" : "bf16";
}

}  // namespace

std::string attention_case_name(const AttnShape& s, const char* prefix) {
  std::string n = std::string(prefix) + (s.Lq <= 8 ? "decode/" : "prefill/") + dtype_tag(s.dtype) + "/" +
                  (s.kv == KV::Dense ? "dense" : s.kv == KV::E4M3 ? "mxfp8" : "mxfp8_e5m2") +
                  "/d" + std::to_string(s.D) + "/B" + std::to_string(s.B) + ".Hq" + std::to_string(s.Hq) +
                  ".Hkv" + std::to_string(s.Hkv) + "/Lq" + std::to_string(s.Lq) + ".Lk" + std::to_string(s.Lk);
  if (s.causal) n += "/causal";
  if (s.mask == MaskKind::Bool) n += "/mask_bool";
  if (s.mask == MaskKind::Additive) n += "/mask_add";
  if (s.mask == MaskKind::AdditiveHalf) n += "/mask_add_f16";
  if (s.mask == MaskKind::AdditiveBF16) n += "/mask_add_bf16";
  if (s.mask == MaskKind::HeadKeys) n += "/mask_bool_heads";
  if (s.scale) n += "/scale";
  if (s.nan) {
    n += "/nan_";
    if (s.nan & kNanQ) n += "q";
    if (s.nan & kNanK) n += "k";
    if (s.nan & kNanV) n += "v";
    if (s.nan & kNanMask) n += "m";
    if (s.nan & kInfV) n += "_vinf";
    if (s.nan & kEdgeV) n += "_vedge";
    if (s.nan & kNegInfK) n += "_kninf";
  }
  if (s.sinks == 1) n += "/sinks";
  if (s.sinks == 2) n += "/sinks_nonfinite";
  if (s.splits) n += "/splits" + std::to_string(s.splits);
  if (s.k_exp) n += "/k_exp" + std::to_string(s.k_exp);
  if (s.k_exp_last) n += "/k_exp_last" + std::to_string(s.k_exp_last);
  return n;
}

namespace {

// Runs every pass of the plan in order (partials flow from the split pass to the merge pass),
// twice with the harness's two layouts and poisons, as run_plan_case does for one dispatch.
CaseResult run_attention_plan(const mto::plan::AttentionPlan& plan, const std::string& variant,
                              const std::map<Arg, Bytes>& inputs, size_t o_bytes, const Compare& compare) {
  if (plan.passes.size() == 1)
    return run_plan_case("attention", plan.passes[0], variant, inputs, {{Arg::O, o_bytes}}, compare);
  CaseResult r;
  r.op = "attention";
  r.kernel = plan.passes[0].kernel + "+" + plan.passes[1].kernel;
  r.grid = dims_json(plan.passes[0].threadgroups);
  r.threads = dims_json(plan.passes[0].threads_per_threadgroup);
  Bytes first;
  for (int i = 0; i < 2; ++i) {
    const PlanPass& pass = kPlanPasses[i];
    mtoh::RunOptions opt;
    opt.align_end = pass.align_end;
    opt.reverse_order = pass.reverse;
    opt.threadgroup_poison = pass.threadgroup_poison;
    const std::string pass_name = pass.name;
    PlanRun a = execute_plan(plan.passes[0], variant, inputs,
                             {{Arg::PartialO, size_t(plan.partial_o_bytes)}, {Arg::PartialML, size_t(plan.partial_ml_bytes)}},
                             opt, pass.output_poison);
    if (!a.result.ok) {
      r.error_kind = a.result.kind;
      r.message = a.result.message + " [split pass]" + pass_name;
      return r;
    }
    std::map<Arg, Bytes> merge_in = {{Arg::PartialO, a.outputs.at(Arg::PartialO)},
                                     {Arg::PartialML, a.outputs.at(Arg::PartialML)}};
    if (inputs.count(Arg::Sinks)) merge_in[Arg::Sinks] = inputs.at(Arg::Sinks);  // the merge joins them
    PlanRun m = execute_plan(plan.passes[1], variant, merge_in, {{Arg::O, o_bytes}}, opt, pass.output_poison);
    if (!m.result.ok) {
      r.error_kind = m.result.kind;
      r.message = m.result.message + " [merge pass]" + pass_name;
      return r;
    }
    r.compare = compare(m.outputs);
    if (!r.compare.ok) {
      r.error_kind = "mismatch";
      r.message = r.compare.first_mismatch + pass_name;
      return r;
    }
    if (i == 0) {
      first = m.outputs.at(Arg::O);
    } else if (first != m.outputs.at(Arg::O)) {
      r.error_kind = "nondeterministic";
      r.message = "the two passes produced different bits (a race, or a read of unwritten memory)";
      return r;
    }
  }
  r.ok = true;
  return r;
}

}  // namespace

CaseResult run_attention_case(const AttnShape& s, const std::string& name, const std::string& variant,
                              mto::Tier tier) {
  const uint64_t seed = seed_of(name);
  // q at twice unit scale, so the running max changes from key to key and the rescale matters.
  std::vector<float> qd = normal_data(s.B * s.Hq * s.Lq * s.D, seed, 2.0f);
  std::vector<float> kd = normal_data(s.B * s.Hkv * s.Lk * s.D, seed + 1);
  std::vector<float> vd = normal_data(s.B * s.Hkv * s.Lk * s.D, seed + 2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (s.nan & kNanQ) qd[size_t(((s.Hq - 1) * s.Lq + s.Lq / 2) * s.D + 1)] = nan;  // batch 0, last head
  if (s.nan & kNanK) {
    kd[size_t((s.Lk - 1) * s.D + s.D / 2)] = nan;
    if (s.B * s.Hkv > 1) kd[size_t((s.Lk / 2) * s.D)] = nan;  // else every row would see it
  }
  if (s.nan & kNanV) {
    vd[size_t((s.Lk / 3) * s.D + 5)] = nan;
    vd[size_t(std::max<int64_t>(0, s.Lk - 2) * s.D + s.D - 1)] = nan;
  }
  if (s.nan & kInfV) {
    const float inf = std::numeric_limits<float>::infinity();
    const size_t a = size_t((s.Lk / 3) * s.D), z = size_t(std::max<int64_t>(0, s.Lk - 2) * s.D);
    vd[a + 6] = inf;
    vd[z + 6] = -inf;
    vd[a + 7] = inf;
    vd[z + 7] = inf;
  }
  if (s.nan & kEdgeV) {
    vd[size_t(31 * s.D + 4)] = nan;
    vd[size_t(32 * s.D + 3)] = std::numeric_limits<float>::infinity();
  }
  if (s.nan & kNegInfK) {
    for (int64_t row = 0; row < s.B * s.Hq * s.Lq; ++row) {
      float& q0 = qd[size_t(row * s.D)];
      q0 = std::fabs(q0) + 0.25f;
    }
    for (int64_t bh = 0; bh < s.B * s.Hkv; ++bh)
      for (int64_t j : {int64_t(0), s.Lk / 2}) {
        const size_t at = size_t((bh * s.Lk + j) * s.D);
        kd[at] = -std::numeric_limits<float>::infinity();
        vd[at + 3] = nan;
        vd[at + 4] = std::numeric_limits<float>::infinity();
      }
  }
  if (s.k_exp) {
    for (int64_t i = 0; i < s.Lk * s.D; ++i) kd[size_t(i)] = std::ldexp(kd[size_t(i)], s.k_exp);
  }
  if (s.k_exp_last) {
    const size_t last = size_t((s.B * s.Hkv * s.Lk - 1) * s.D);
    for (int64_t d = 0; d < s.D; ++d) kd[last + size_t(d)] = std::ldexp(kd[last + size_t(d)], s.k_exp_last);
  }
  const mto::Tensor q = tensor(qd, {s.B, s.Hq, s.Lq, s.D}, s.dtype);
  const mto::Shape kv_shape = {s.B, s.Hkv, s.Lk, s.D};
  const mto::Tensor kdense = tensor(kd, kv_shape, s.kv == KV::Dense ? s.dtype : DType::Float32);
  const mto::Tensor vdense = tensor(vd, kv_shape, s.kv == KV::Dense ? s.dtype : DType::Float32);
  mto::cpu::ThreadPool pool(1);
  mto::QTensorPtr kq, vq;
  const Format fmt = s.kv == KV::E5M2 ? Format::MXFP8_E5M2 : Format::MXFP8_E4M3;
  if (s.kv != KV::Dense) {
    kq = mto::make_qtensor(kv_shape, fmt, 32);
    vq = mto::make_qtensor(kv_shape, fmt, 32);
    mto::cpu::quantize(pool, kdense, *kq);
    mto::cpu::quantize(pool, vdense, *vq);
  }
  const mto::Operand qo{&q, nullptr};
  const mto::Operand ko = s.kv == KV::Dense ? mto::Operand{&kdense, nullptr} : mto::Operand{nullptr, kq.get()};
  const mto::Operand vo = s.kv == KV::Dense ? mto::Operand{&vdense, nullptr} : mto::Operand{nullptr, vq.get()};

  // Masks: bool [Lq, Lk] broadcast over batch and heads, about one key in four hidden and every
  // row of query 0 hidden; additive [B, 1, Lq, Lk] broadcast over heads with some -inf; bool
  // [Hq, 1, Lk] (per head, broadcast over batch and queries) with every key of head 0 hidden.
  mto::Tensor mask;
  Rng rng(seed + 3);
  if (s.mask == MaskKind::HeadKeys) {
    std::vector<float> mv(size_t(s.Hq * s.Lk));
    for (int64_t h = 0; h < s.Hq; ++h)
      for (int64_t j = 0; j < s.Lk; ++j) mv[size_t(h * s.Lk + j)] = h == 0 ? 0.0f : (rng.uniform() < 0.3f ? 0.0f : 1.0f);
    mask = tensor(mv, {s.Hq, 1, s.Lk}, DType::Bool);
  } else if (s.mask == MaskKind::Bool) {
    std::vector<float> mv(size_t(s.Lq * s.Lk));
    for (int64_t i = 0; i < s.Lq; ++i)
      for (int64_t j = 0; j < s.Lk; ++j) mv[size_t(i * s.Lk + j)] = i == 0 ? 0.0f : (rng.uniform() < 0.25f ? 0.0f : 1.0f);
    mask = tensor(mv, {s.Lq, s.Lk}, DType::Bool);
  } else if (s.mask != MaskKind::None) {
    std::vector<float> mv = normal_data(s.B * s.Lq * s.Lk, seed + 4, 2.0f);
    for (float& x : mv)
      if (rng.uniform() < 0.1f) x = -std::numeric_limits<float>::infinity();
    const size_t last = size_t((s.Lq - 1) * s.Lk);  // batch 0, the last query's row
    if (s.nan & kNanV) mv[last + size_t(s.Lk / 3)] = -1e4f;
    if (s.nan & kNanMask) mv[last - size_t(s.Lq > 1 ? s.Lk : 0) + size_t(s.Lk / 4)] = nan;
    mask = tensor(mv, {s.B, 1, s.Lq, s.Lk},
                  s.mask == MaskKind::Additive       ? DType::Float32
                  : s.mask == MaskKind::AdditiveHalf ? DType::Float16
                                                     : DType::BFloat16);
  }
  const mto::Tensor* mask_ptr = s.mask == MaskKind::None ? nullptr : &mask;
  mto::Tensor sinks;
  if (s.sinks) {
    std::vector<float> sv = normal_data(s.Hq, seed + 5, 2.0f);
    sv[0] += 6.0f;
    if (s.sinks == 2) {
      sv[0] = nan;
      if (s.Hq > 1) sv[1] = -std::numeric_limits<float>::infinity();
      if (s.Hq > 2) sv[2] = std::numeric_limits<float>::infinity();
    }
    sinks = tensor(sv, {s.Hq}, DType::Float32);
  }
  const mto::Tensor* sinks_ptr = s.sinks ? &sinks : nullptr;
  const mto::AttentionParams ap = mto::check_attention(qo, ko, vo, s.scale, s.causal, mask_ptr, sinks_ptr);
  std::vector<float> ref(size_t(s.B * s.Hq * s.Lq * s.D));
  mto::cpu::attention(pool, qo, ko, vo, ap, ref.data());
  if (s.nan == kNegInfK) {  // every NaN and inf sits in a key hidden by its own score: none may show
    for (float x : ref)
      if (!std::isfinite(x)) {
        CaseResult r;
        r.op = "attention";
        r.error_kind = "bad_case";
        r.message = "the cpu reference is not finite where every non-finite value is hidden";
        return r;
      }
  } else if (s.nan || s.sinks == 2) {  // a NaN case must be able to tell rows (or columns) apart
    size_t nans = 0;
    for (float x : ref) nans += std::isnan(x) ? 1 : 0;
    if (nans == 0 || nans == ref.size()) {
      CaseResult r;
      r.op = "attention";
      r.error_kind = "bad_case";
      r.message = nans == 0 ? "the cpu reference has no NaN" : "the cpu reference is all NaN";
      return r;
    }
  }

  std::map<Arg, Bytes> inputs = {{Arg::Q, bytes_of(*q.buffer)}};
  if (s.kv == KV::Dense) {
    inputs[Arg::K] = bytes_of(*kdense.buffer);
    inputs[Arg::V] = bytes_of(*vdense.buffer);
  } else {
    inputs[Arg::K] = bytes_of(*kq->codes);
    inputs[Arg::V] = bytes_of(*vq->codes);
    inputs[Arg::KScales] = bytes_of(*kq->scales);
    inputs[Arg::VScales] = bytes_of(*vq->scales);
  }
  if (mask_ptr) inputs[Arg::Mask] = bytes_of(*mask.buffer);
  if (sinks_ptr) inputs[Arg::Sinks] = bytes_of(*sinks.buffer);

  // o in the dtype check_attention gives it (q's), written by the kernels as the cpu backend
  // stores it: the float32 result rounded once.
  const mto::plan::AttentionPlan plan = mto::plan::plan_attention(
      ap, s.dtype, ap.out_dtype, s.kv != KV::Dense, fmt, mask_ptr ? mask.dtype : DType::Bool, tier,
      mto::DeviceProfile{8, s.splits});
  if (s.splits && plan.splits != s.splits) {
    CaseResult r;
    r.op = "attention";
    r.error_kind = "bad_case";
    r.message = "the plan did not take the forced split count";
    return r;
  }
  const double tol = s.dtype == DType::Float32 ? 2e-5 : 3e-3;
  return run_attention_plan(plan, variant, inputs, ref.size() * mto::dtype_size(ap.out_dtype),
                            [&](const std::map<Arg, Bytes>& out) {
                              return compare_outputs(out.at(Arg::O), ap.out_dtype, ref, tol, s.D, "o");
                            });
}

namespace {

// "" when `make` throws mto::Error with `code`, else what happened instead.
std::string expect_error(const char* code, const std::function<void()>& make) {
  try {
    make();
  } catch (const mto::Error& e) {
    return std::string(e.code()) == code ? "" : std::string("threw ") + e.code() + ": " + e.what();
  }
  return std::string("did not throw ") + code;
}

mto::AttentionParams params(int64_t Hq, int64_t Hkv, int64_t Lq, int64_t Lk, int64_t D) {
  mto::AttentionParams p;
  p.B = 1, p.Hq = Hq, p.Hkv = Hkv, p.Lq = Lq, p.Lk = Lk, p.D = D;
  p.scale = 0.125f;
  return p;
}

CaseResult plan_rules() {
  namespace plan = mto::plan;
  CaseResult r;
  r.op = "plan";
  const auto st = mto::Tier::Simdgroup;
  struct Check {
    const char* what;
    std::string outcome;
  };
  const Check checks[] = {
      {"head dim 48", expect_error(mto::code::Shape, [&] {
         plan::plan_attention(params(1, 1, 1, 16, 48), DType::Float32, DType::Float32, false,
                              Format::MXFP8_E4M3, DType::Bool, st);
       })},
      {"head dim 512", expect_error(mto::code::Shape, [&] {
         plan::plan_attention(params(1, 1, 16, 16, 512), DType::Float32, DType::Float32, false,
                              Format::MXFP8_E4M3, DType::Bool, st);
       })},
      {"mxfp8 k/v with D = 80", expect_error(mto::code::Shape, [&] {
         plan::plan_attention(params(1, 1, 1, 16, 80), DType::Float32, DType::Float32, true,
                              Format::MXFP8_E4M3, DType::Bool, st);
       })},
      {"mxfp4 k/v", expect_error(mto::code::Format, [&] {
         plan::plan_attention(params(1, 1, 1, 16, 64), DType::Float32, DType::Float32, true,
                              Format::MXFP4, DType::Bool, st);
       })},
      {"bool q", expect_error(mto::code::DType, [&] {
         plan::plan_attention(params(1, 1, 1, 16, 64), DType::Bool, DType::Bool, false,
                              Format::MXFP8_E4M3, DType::Bool, st);
       })},
      {"o of a dtype other than q's", expect_error(mto::code::DType, [&] {
         plan::plan_attention(params(1, 1, 1, 16, 64), DType::Float16, DType::Float32, false, Format::MXFP8_E4M3, DType::Bool, st);
       })},
      {"the cpu tier", expect_error(mto::code::Backend, [&] {
         plan::plan_attention(params(1, 1, 1, 16, 64), DType::Float32, DType::Float32, false,
                              Format::MXFP8_E4M3, DType::Bool, mto::Tier::Cpu);
       })},
  };
  for (const Check& ch : checks) {
    if (ch.outcome.empty()) continue;
    r.error_kind = "mismatch";
    r.message = std::string(ch.what) + ": " + ch.outcome;
    return r;
  }
  auto fail = [&](const std::string& m) {
    r.error_kind = "mismatch";
    r.message = m;
    return r;
  };
  const auto p8 = plan::plan_attention(params(8, 1, 8, 64, 64), DType::Float16, DType::Float16, false,
                                       Format::MXFP8_E4M3, DType::Bool, st);
  if (p8.passes.size() != 1 || p8.passes[0].kernel != "attention_decode_f16_dense_d64")
    return fail("Lq = 8 should run one decode pass, got " + p8.passes[0].kernel);
  if (p8.passes[0].threadgroups[1] != 8) return fail("Lq = 8, G = 8: 64 rows should be 8 chunks of 8");
  const auto p1 = plan::plan_attention(params(8, 1, 1, 129, 128), DType::Float32, DType::Float32, false,
                                       Format::MXFP8_E4M3, DType::Bool, st);
  if (p1.passes.size() != 1 || p1.passes[0].threadgroups[0] != 1 || p1.passes[0].threadgroups[1] != 1 ||
      p1.passes[0].threadgroups[2] != 1)
    return fail("decode with GQA 8 should be one threadgroup per kv head (K/V read once)");
  const auto p9 = plan::plan_attention(params(2, 2, 9, 64, 128), DType::Float32, DType::Float32, false,
                                       Format::MXFP8_E4M3, DType::Bool, st);
  if (p9.passes.size() != 1 || p9.passes[0].kernel != "attention_prefill_f32_dense_d128")
    return fail("Lq = 9 should run the prefill kernel, got " + p9.passes[0].kernel);
  const auto ps = plan::plan_attention(params(4, 1, 1, 4096, 128), DType::Float32, DType::Float32, true,
                                       Format::MXFP8_E5M2, DType::Bool, st);
  if (ps.passes.size() != 2 || ps.passes[1].kernel != "attention_merge_f32" || ps.splits != ATTN_MAX_SPLITS ||
      ps.passes[1].threadgroups[2] != 4)
    return fail("a long decode with one threadgroup should split the keys ATTN_MAX_SPLITS ways and merge each of "
                "its 4 rows in a threadgroup");
  // The split follows the GPU's cores: B = 1, Hkv = 8, GQA 4 (8 threadgroups unsplit), Lk = 4096
  // on 8 cores: 8 * ATTN_SPLIT_GROUPS_PER_CORE / 8 splits; on 38 and 80 cores the ceiling,
  // ATTN_MAX_SPLITS; a short Lk is not split; the splits stop at ATTN_SPLIT_MIN_LEN keys each.
  struct SplitRule {
    int cores;
    int64_t Hkv, Lk, splits, split_len;
  };
  const SplitRule rules[] = {{8, 8, 4096, ATTN_SPLIT_GROUPS_PER_CORE, 4096 / ATTN_SPLIT_GROUPS_PER_CORE},
                             {38, 8, 4096, ATTN_MAX_SPLITS, 4096 / ATTN_MAX_SPLITS},
                             {80, 8, 4096, ATTN_MAX_SPLITS, 4096 / ATTN_MAX_SPLITS},
                             {80, 8, ATTN_SPLIT_MIN_KEYS - 1, 1, ATTN_SPLIT_MIN_KEYS - 1},
                             {80, 8, 300, 34, 9},  // 300 / 8 = 37 splits of 9 keys: 34 hold keys
                             {8, 64, 4096, 8, 512}};
  // The profile the Metal host builds from MTLDevice.architecture.name: its device class letter.
  const std::pair<const char*, int> classes[] = {
      {"applegpu_g16p", 4}, {"applegpu_g15g", 8}, {"applegpu_g15s", 38}, {"applegpu_g14d", 80}, {"", 8}};
  for (const auto& c : classes)
    if (mto::device_profile(c.first).gpu_cores != c.second)
      return fail(std::string("device_profile(\"") + c.first + "\") should have " + std::to_string(c.second) + " cores");
  for (const SplitRule& sr : rules) {
    const auto pr = plan::plan_attention(params(4 * sr.Hkv, sr.Hkv, 1, sr.Lk, 128), DType::Float16, DType::Float16,
                                         false, Format::MXFP8_E4M3, DType::Bool, st, mto::DeviceProfile{sr.cores, 0});
    AttentionKernelParams kp;
    std::memcpy(&kp, pr.passes[0].params.data(), sizeof kp);
    const int64_t passes = sr.splits > 1 ? 2 : 1;
    if (pr.splits != sr.splits || kp.splits != sr.splits || kp.split_len != sr.split_len ||
        int64_t(pr.passes.size()) != passes || pr.passes[0].threadgroups[2] != uint32_t(sr.splits))
      return fail("Lk = " + std::to_string(sr.Lk) + ", Hkv = " + std::to_string(sr.Hkv) + " on " +
                  std::to_string(sr.cores) + " cores: want " + std::to_string(sr.splits) + " splits of " +
                  std::to_string(sr.split_len) + " keys, got " + std::to_string(kp.splits) + " of " +
                  std::to_string(kp.split_len));
  }
  // The merge pass writes o, so it has an instance per output dtype; the split pass writes float32
  // partials either way.
  const auto ph = plan::plan_attention(params(4, 1, 1, 4096, 128), DType::BFloat16, DType::BFloat16, false,
                                       Format::MXFP8_E4M3, DType::Bool, st);
  if (ph.passes.size() != 2 || ph.passes[0].kernel != "attention_decode_bf16_dense_d128" ||
      ph.passes[1].kernel != "attention_merge_bf16")
    return fail("a bfloat16 split decode should merge with attention_merge_bf16, got " + ph.passes[1].kernel);
  for (mto::Tier tier : {mto::Tier::TensorOps, mto::Tier::TensorOpsMx}) {
    const std::string tn = mto::tier_name(tier);
    const auto pd = plan::plan_attention(params(1, 1, 1, 64, 64), DType::Float32, DType::Float32, false,
                                         Format::MXFP8_E4M3, DType::Bool, tier);
    if (pd.passes[0].kernel != "attention_decode_f32_dense_d64" || pd.passes[0].library != "attention" ||
        pd.passes[0].tier != tier || !pd.passes[0].fallback_reason.empty())
      return fail("decode on " + tn + " should run the vector decode kernel, got " + pd.passes[0].kernel);
    const auto pp = plan::plan_attention(params(2, 2, 33, 64, 80), DType::Float16, DType::Float16, false,
                                         Format::MXFP8_E4M3, DType::Bool, tier);
    const auto& d = pp.passes[0];
    // tensorops-mx: the library whose P V product takes P as a cooperative left input (macOS 27).
    const char* library = tier == mto::Tier::TensorOpsMx ? "attention_tensorops_mx" : "attention_tensorops";
    if (pp.passes.size() != 1 || d.kernel != "attention_tensorops_prefill_f16_dense_d80" ||
        d.library != library || d.tier != tier || !d.fallback_reason.empty())
      return fail("prefill on " + tn + " should run the kernel of " + library + ", got " + d.library + "/" + d.kernel);
    if (d.threadgroups[0] != 2 || d.threadgroups[1] != 2 || d.threads_per_threadgroup[0] != 64)
      return fail("tensorops prefill: 33 rows should be 2 threadgroups of 2 SIMD-groups x 16 rows");
  }
  r.ok = true;
  return r;
}

}  // namespace

std::vector<Case> attention_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/attention", [](const std::string&) { return plan_rules(); }});
  AttentionCaseList list(cases, "attention/", mto::Tier::Simdgroup);
  auto add = [&](const AttnShape& s) { list.add(s); };
  const DType f32 = DType::Float32, f16 = DType::Float16, bf16 = DType::BFloat16;
  const int64_t dims[] = {64, 80, 96, 128, 256};

  // Decode (Lq <= 8): every head dim; GQA 1, 4, 8; Lk 1, 7, 33, 129 (one pass) and 300 (split).
  for (int64_t D : dims) {
    add({1, 8, 1, 1, 129, D, f32});                 // GQA 8, one chunk, K/V read once
    add({1, 4, 1, 7, 33, D, f32, KV::Dense, true}); // GQA 4, 28 rows in 4 chunks, causal
  }
  add({2, 2, 2, 1, 300, 64, f32});                   // split decode, GQA 1
  add({1, 8, 2, 1, 300, 128, f32, KV::Dense, false, MaskKind::Additive});  // split + additive mask
  add({1, 8, 1, 7, 300, 96, f32, KV::Dense, true});  // split, GQA 8 with 7 queries: 7 chunks
  add({1, 2, 2, 7, 1, 64, f32, KV::Dense, true});    // Lq > Lk: six rows see no key
  add({1, 4, 4, 1, 1, 80, f32});
  add({1, 4, 1, 7, 7, 64, f32, KV::Dense, false, MaskKind::Bool});
  add({2, 4, 2, 7, 129, 128, f32, KV::Dense, true, MaskKind::Additive});
  add({1, 4, 4, 1, 33, 256, f32, KV::Dense, false, MaskKind::None, 0.3f});
  add({1, 8, 1, 1, 129, 128, f16});
  add({1, 4, 1, 7, 300, 64, f16, KV::Dense, true});
  add({1, 8, 8, 1, 33, 80, bf16, KV::Dense, false, MaskKind::AdditiveHalf});
  add({1, 8, 1, 1, 129, 128, f32, KV::E4M3});
  add({1, 4, 1, 7, 300, 64, f16, KV::E5M2, true});
  add({1, 8, 2, 1, 33, 256, f32, KV::E5M2, false, MaskKind::Bool});
  add({1, 8, 2, 1, 300, 64, bf16, KV::Dense, true});  // split: the merge pass writes bfloat16 o

  // Prefill (Lq > 8): every head dim; Lq 33, 129, 300 against Lk 1 .. 300.
  add({1, 1, 1, 33, 33, 64, f32});
  add({1, 2, 1, 33, 129, 80, f32, KV::Dense, true});
  add({1, 1, 1, 129, 33, 96, f32, KV::Dense, true});   // Lq > Lk: rows 0..95 see no key
  add({1, 4, 1, 33, 7, 128, f32});                     // GQA 4, Lk inside one tile
  add({1, 1, 1, 33, 129, 256, f32, KV::Dense, true});
  add({1, 8, 1, 33, 1, 64, f32, KV::Dense, false, MaskKind::None, 0.7f});  // GQA 8, one key
  add({1, 1, 1, 300, 300, 64, f32, KV::Dense, true});
  add({1, 1, 1, 300, 129, 128, f32, KV::Dense, true});  // Lq > Lk, skipped tiles
  add({1, 1, 1, 129, 300, 80, f32, KV::Dense, false, MaskKind::Additive});
  add({2, 2, 2, 33, 33, 96, f32, KV::Dense, false, MaskKind::Bool});
  add({1, 2, 2, 129, 129, 64, f16, KV::Dense, true});
  add({1, 1, 1, 33, 300, 128, bf16, KV::Dense, false, MaskKind::AdditiveHalf});
  add({1, 4, 1, 33, 129, 64, f32, KV::E4M3, true});
  add({1, 1, 1, 129, 33, 256, f16, KV::E5M2, false, MaskKind::Bool});

  // The grid: every (Lq, Lk) of {1, 7, 33, 129, 300}^2 for every head dim (float32 q, dense K/V),
  // GQA ratio, causal and mask cycling so that each meets many combinations. Big prefill shapes
  // keep one query head, so the suite stays fast.
  const int64_t lens[] = {1, 7, 33, 129, 300};
  int n = 0;
  for (int64_t D : dims)
    for (int64_t Lq : lens)
      for (int64_t Lk : lens) {
        int64_t G = n % 3 == 0 ? 1 : n % 3 == 1 ? 4 : 8;
        if (Lq > 8 && G * Lq * Lk * D > int64_t(4) * 129 * 129 * 64) G = 1;
        const int64_t Hkv = G == 1 ? 2 : 1;
        const bool causal = (n / 3) % 2 == 1;
        const MaskKind mask = n % 5 == 2 ? MaskKind::Bool : n % 5 == 4 ? MaskKind::Additive : MaskKind::None;
        add({1, G * Hkv, Hkv, Lq, Lk, D, f32, KV::Dense, causal, mask});
        ++n;
      }
  // bfloat16 q with mxfp8 K/V, a bfloat16 additive mask, per-head bool masks.
  add({1, 4, 1, 7, 129, 96, bf16, KV::E4M3, false, MaskKind::AdditiveBF16});
  add({2, 2, 1, 33, 300, 128, bf16, KV::E5M2, true, MaskKind::HeadKeys});
  add({2, 8, 2, 1, 300, 64, f32, KV::Dense, false, MaskKind::HeadKeys});
  add({1, 4, 4, 33, 33, 80, f16, KV::Dense, false, MaskKind::HeadKeys});
  // float16 and mxfp8 over the same lengths, one head dim each.
  for (int64_t Lq : lens)
    for (int64_t Lk : lens) {
      add({1, 4, 1, Lq, Lk, 128, f16, KV::Dense, Lq > Lk});
      add({1, 2, 1, Lq, Lk, 64, f32, (Lq + Lk) % 2 ? KV::E4M3 : KV::E5M2, Lq <= Lk, MaskKind::None});
    }
  // NaN in q, K, V and the additive mask (the rule of check_attention): NaN exactly where the cpu
  // has it. Hidden NaN keys inside visited tiles (causal diagonal, bool mask, additive -inf), a V
  // NaN at weight 0, split decode, mxfp8 blocks with scale byte 0xFF.
  const int qkv = kNanQ | kNanK | kNanV;
  add({2, 4, 2, 1, 129, 64, f32, KV::Dense, true, MaskKind::HeadKeys, {}, qkv});
  add({1, 8, 2, 7, 33, 128, f32, KV::Dense, true, MaskKind::None, {}, kNanK | kNanV});
  add({2, 2, 2, 1, 300, 64, f32, KV::Dense, false, MaskKind::None, {}, qkv});  // split
  add({1, 8, 2, 1, 300, 128, f32, KV::Dense, false, MaskKind::Additive, {}, kNanK | kNanV});
  add({1, 4, 2, 7, 300, 64, f32, KV::Dense, false, MaskKind::Additive, {}, kNanV | kNanMask});
  add({1, 4, 2, 7, 300, 80, f16, KV::Dense, true, MaskKind::None, {}, qkv});   // split, f16
  add({2, 8, 1, 1, 129, 128, f32, KV::E5M2, false, MaskKind::None, {}, kNanV});
  add({1, 2, 1, 33, 129, 80, f32, KV::Dense, true, MaskKind::None, {}, qkv});
  add({2, 2, 2, 33, 33, 96, f32, KV::Dense, false, MaskKind::Bool, {}, kNanK | kNanV});
  add({1, 1, 1, 129, 300, 64, f32, KV::Dense, false, MaskKind::Additive, {}, kNanV | kNanMask});
  add({1, 2, 1, 33, 33, 256, f32, KV::Dense, true, MaskKind::AdditiveHalf, {}, qkv | kNanMask});
  add({1, 4, 1, 33, 129, 64, f32, KV::E4M3, true, MaskKind::None, {}, kNanK | kNanV});
  add({2, 2, 1, 33, 129, 128, bf16, KV::E5M2, false, MaskKind::Bool, {}, qkv});
  add({1, 2, 1, 33, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, kNanQ | kInfV});
  add({2, 2, 2, 33, 300, 96, f32, KV::Dense, false, MaskKind::Bool, {}, kNanK | kInfV});
  add({1, 4, 2, 7, 300, 64, f32, KV::Dense, true, MaskKind::None, {}, kNanQ | kInfV});  // split
  add({1, 2, 1, 129, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, kEdgeV});  // at a tile's first key
  // Keys hidden by a -inf score of their own (the decode loop's rerun; the first key of a
  // SIMD-group; a split of that key alone sees no key), with and without a mask, one and 4 rows.
  add({1, 4, 2, 1, 129, 64, f32, KV::Dense, false, MaskKind::None, {}, kNegInfK});
  add({1, 2, 2, 1, 129, 80, f32, KV::Dense, false, MaskKind::None, {}, kNegInfK});  // one row, NaN at e = 0
  add({2, 8, 2, 1, 300, 128, f16, KV::Dense, false, MaskKind::None, {}, kNegInfK});
  add({1, 4, 1, 7, 33, 64, f32, KV::Dense, true, MaskKind::None, {}, kNegInfK});
  add({1, 4, 2, 1, 129, 96, f32, KV::Dense, false, MaskKind::Bool, {}, kNegInfK});
  add({1, 2, 1, 1, 7, 64, f32, KV::Dense, false, MaskKind::None, {}, kNegInfK, 0, 7});
  add({1, 2, 1, 129, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, kNegInfK});  // prefill
  // Attention sinks (gpt-oss): one logit per head in each row's denominator, joined once where o is
  // normalised: one-pass decode, split decode (the merge, not each split), prefill; rows that see
  // no key stay zeros; NaN / -inf / +inf sinks.
  add({1, 8, 2, 1, 129, 64, f32, KV::Dense, false, MaskKind::None, {}, 0, 1});
  add({1, 4, 2, 7, 33, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 1});
  add({2, 4, 2, 1, 300, 64, f32, KV::Dense, false, MaskKind::None, {}, 0, 1});  // split
  add({1, 8, 2, 7, 300, 128, f16, KV::Dense, true, MaskKind::Bool, {}, 0, 1});  // split, f16
  add({1, 4, 2, 33, 33, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 1});
  add({1, 2, 1, 129, 33, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 1});  // rows with no key
  add({1, 4, 1, 33, 129, 128, bf16, KV::E4M3, false, MaskKind::Additive, {}, 0, 1});
  add({1, 4, 2, 1, 300, 64, f32, KV::Dense, false, MaskKind::None, {}, 0, 2});  // split
  add({1, 4, 2, 7, 33, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 2});
  add({1, 4, 4, 33, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 2});
  add({1, 4, 4, 129, 33, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 2});  // rows with no key
  add({1, 4, 1, 7, 5, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 2});     // decode rows with no key
  add({1, 4, 1, 7, 5, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 2, 8});  // the same through splits
  // Forced key splits (the plan's own counts stop at ATTN_SPLIT_MIN_LEN keys each): splits of one
  // key; more splits than keys (empty splits, with causal rows that see no key at all); an odd Lk
  // whose last split is short; the most splits, mxfp8 and float16; NaN and sinks through a split.
  add({1, 4, 1, 1, 7, 64, f32, KV::Dense, false, MaskKind::None, {}, 0, 0, 7});
  add({1, 4, 1, 7, 5, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 0, 8});
  add({1, 2, 2, 2, 3, 128, f32, KV::Dense, false, MaskKind::Bool, {}, 0, 0, 5});
  add({2, 4, 2, 1, 33, 96, f32, KV::Dense, false, MaskKind::Additive, {}, 0, 1, 4});
  add({1, 8, 1, 1, 129, 128, f16, KV::E4M3, false, MaskKind::None, {}, 0, 0, ATTN_MAX_SPLITS});
  add({1, 8, 2, 3, 255, 64, bf16, KV::E5M2, true, MaskKind::None, {}, 0, 0, 17});
  add({2, 2, 2, 1, 33, 64, f32, KV::Dense, false, MaskKind::None, {}, qkv, 0, 33});
  add({1, 4, 2, 1, 9, 64, f32, KV::Dense, false, MaskKind::None, {}, 0, 2, 3});
  return cases;
}

}  // namespace mtoh_driver
