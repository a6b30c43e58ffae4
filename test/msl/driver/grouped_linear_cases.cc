// groupedLinear on the GPU (shaders/qlinear_grouped.metal: the route pass, then the decode pass
// up to 64 rows or the tiled pass above) against the cpu backend's grouped_linear
// (native/cpu/linear.cc): every format (affine with each group) through both passes,
// float32/float16/bfloat16 x, y of each of those dtypes, dense w of each float dtype (any K, the
// tiled pass at every T), group sizes with empty experts, one expert holding every row (several
// decode batches; several tiles), many experts and few rows, groups cut into partial tiles, N not
// a multiple of the decode rows or of the tile; within linear's bound, 1e-4 (1 + |ref|) (+1 unit
// in the last place of a 16-bit y). Sizes that are negative or do not add up to T must give the
// cpu backend's E_ARG through the status buffer.
#include <cmath>
#include <cstring>
#include <optional>

#include "cases.h"
#include "core/error.h"
#include "core/plan/grouped_linear.h"
#include "cpu/ops.h"
#include "data.h"
#include "model_data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;

Bytes bytes_of(const mto::Buffer& b) {
  const auto* p = static_cast<const unsigned char*>(b.data());
  return Bytes(p, p + b.bytes());
}

mto::Tensor dense(const std::vector<float>& v, mto::Shape shape, DType dtype) {
  mto::Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.buffer = mto::make_buffer(v.size() * mto::dtype_size(dtype));
  mto::from_float32(dtype, v.data(), t.buffer->data(), v.size());
  return t;
}

struct GroupedCase {
  mto::Format format;
  int block;
  DType x, y;
  int64_t N, K;
  std::vector<int32_t> sizes;  // E of them
  int64_t T;
  std::optional<DType> dense = std::nullopt;  // set: w dense of this dtype (format and block unused)
  bool inf_odd_rows = false;  // w[e, n, 0] = +inf for odd n: a run staged past its row's K reads it
};

Comparison mismatch(const std::string& what) {
  Comparison c;
  c.ok = false;
  c.mismatches = 1;
  c.first_mismatch = what;
  return c;
}

CaseResult run_case(const GroupedCase& c, const std::string& name, const std::string& variant) {
  const uint64_t seed = seed_of(name);
  const int64_t E = int64_t(c.sizes.size());
  const mto::Tensor x = dense(normal_data(c.T * c.K, seed), {c.T, c.K}, c.x);
  // Experts at different magnitudes, rows and blocks too, so a wrong expert or block shows.
  std::vector<float> wv = normal_data(E * c.N * c.K, seed + 1);
  Rng rng(seed + 2);
  for (int64_t b = 0; b < E * c.N * c.K / 32; ++b) {
    const float scale = std::ldexp(1.0f, rng.range(-4, 4));
    for (int i = 0; i < 32; ++i) wv[size_t(b * 32 + i)] *= scale;
  }
  if (c.inf_odd_rows)
    for (int64_t en = 1; en < E * c.N; en += 2) wv[size_t(en * c.K)] = INFINITY;
  const mto::Tensor wd = dense(wv, {E, c.N, c.K}, c.dense ? *c.dense : DType::Float32);
  mto::cpu::ThreadPool pool(1);
  mto::QTensorPtr w;
  if (!c.dense) {
    w = mto::make_qtensor({E, c.N, c.K}, c.format, c.block);
    mto::cpu::quantize(pool, wd, *w);
  }
  mto::Tensor sizes;
  sizes.shape = {E};
  sizes.dtype = DType::Int32;
  sizes.buffer = mto::make_buffer(size_t(E) * 4);
  std::memcpy(sizes.buffer->data(), c.sizes.data(), size_t(E) * 4);

  const mto::Operand xo{&x, nullptr};
  const mto::Operand wo = c.dense ? mto::Operand{&wd, nullptr} : mto::Operand{nullptr, w.get()};
  const mto::GroupedLinearParams p = mto::check_grouped_linear(xo, wo, sizes, c.y);
  std::vector<float> ref(size_t(c.T * c.N));
  std::string cpu_error;
  try {
    mto::cpu::grouped_linear(pool, xo, wo, sizes, p, ref.data());
  } catch (const mto::Error& e) {
    cpu_error = std::string(e.code()) + ": " + e.what();
  }
  const mto::plan::GroupedLinearPlan plan =
      c.dense ? mto::plan::plan_grouped_linear_dense(p, *c.dense, c.x, p.out_dtype, mto::Tier::Simdgroup)
              : mto::plan::plan_grouped_linear(p, c.format, c.block, c.x, p.out_dtype, mto::Tier::Simdgroup);

  CaseResult r;
  r.op = "groupedLinear";
  r.kernel = plan.passes[0].kernel + "+" + plan.passes[1].kernel;
  r.grid = dims_json(plan.passes[1].threadgroups);
  r.threads = dims_json(plan.passes[1].threads_per_threadgroup);
  std::map<Arg, Bytes> inputs = {{Arg::X, bytes_of(*x.buffer)}};
  if (c.dense) {
    inputs[Arg::Weight] = bytes_of(*wd.buffer);
  } else {
    inputs[Arg::WCodes] = bytes_of(*w->codes);
    inputs[Arg::WScales] = bytes_of(*w->scales);
    if (w->biases) inputs[Arg::WBiases] = bytes_of(*w->biases);
  }
  const size_t y_bytes = ref.size() * mto::dtype_size(p.out_dtype);
  Bytes first_status, first_y;
  for (int i = 0; i < 2; ++i) {
    const PlanPass& pass = kPlanPasses[i];
    mtoh::RunOptions opt;
    opt.align_end = pass.align_end;
    opt.reverse_order = pass.reverse;
    opt.threadgroup_poison = pass.threadgroup_poison;
    PlanRun route = execute_plan(plan.passes[0], variant, {{Arg::GroupSizes, bytes_of(*sizes.buffer)}},
                                 {{Arg::GroupSlots, size_t(plan.slots_bytes)},
                                  {Arg::Status, size_t(mto::plan::kGroupedLinearStatusBytes)}},
                                 opt, pass.output_poison);
    if (!route.result.ok) {
      r.error_kind = route.result.kind;
      r.message = route.result.message + " [route pass]" + pass.name;
      return r;
    }
    std::map<Arg, Bytes> decode_in = inputs;
    decode_in[Arg::GroupSlots] = route.outputs.at(Arg::GroupSlots);
    PlanRun decode = execute_plan(plan.passes[1], variant, decode_in, {{Arg::Y, y_bytes}}, opt, pass.output_poison);
    if (!decode.result.ok) {
      r.error_kind = decode.result.kind;
      r.message = decode.result.message + " [decode pass]" + pass.name;
      return r;
    }
    int32_t status[4];
    std::memcpy(status, route.outputs.at(Arg::Status).data(), sizeof status);
    const mto::OpStatus s = mto::plan::grouped_linear_status(status, p);
    const std::string gpu_error = s.ok() ? "" : std::string(s.code) + ": " + s.message;
    r.compare = gpu_error != cpu_error ? mismatch("status: kernel '" + gpu_error + "', cpu '" + cpu_error + "'")
                : cpu_error.empty()    ? compare_outputs(decode.outputs.at(Arg::Y), p.out_dtype, ref, 1e-4, c.N, "y")
                                       : Comparison{};
    if (!r.compare.ok) {
      r.error_kind = "mismatch";
      r.message = r.compare.first_mismatch + pass.name;
      return r;
    }
    // Without a failure y is whole: the two passes must agree on every bit of it.
    const Bytes y = cpu_error.empty() ? decode.outputs.at(Arg::Y) : Bytes{};
    if (i == 0) {
      first_status = route.outputs.at(Arg::Status);
      first_y = y;
    } else if (first_status != route.outputs.at(Arg::Status) || first_y != y) {
      r.error_kind = "nondeterministic";
      r.message = "the two passes produced different bits (a race, or a read of unwritten memory)";
      return r;
    }
  }
  r.ok = true;
  return r;
}

const char* tag(DType t) { return t == DType::Float32 ? "f32" : t == DType::Float16 ? "f16" : "bf16"; }

// plan/grouped-linear: which pass runs, and its slots.
CaseResult plan_rules() {
  namespace plan = mto::plan;
  using mto::Format;
  using mto::Tier;
  const DType f32 = DType::Float32, f16 = DType::Float16;
  auto params = [](int64_t T, int64_t E, int64_t K) {
    mto::GroupedLinearParams p;
    p.T = T;
    p.E = E;
    p.N = 37;
    p.K = K;
    return p;
  };
  auto check = [](const plan::GroupedLinearPlan& g, const std::string& kernel, uint32_t slots, uint32_t threads) {
    const plan::Dispatch& d = g.passes.at(1);
    if (g.passes.size() != 2 || g.passes[0].kernel != "qlinear_grouped_route" || d.kernel != kernel ||
        d.threadgroups[1] != slots || d.threads_per_threadgroup[0] != threads || g.slots_bytes != uint64_t(slots) * 16) {
      return "got " + d.kernel + " over " + std::to_string(d.threadgroups[1]) + " slots of " +
             std::to_string(d.threads_per_threadgroup[0]) + " threads";
    }
    return std::string();
  };
  std::vector<std::pair<std::string, std::string>> checks = {
      // min(E, T) slots of whole groups for decode; ceil(T / 32) + min(E, T) tiles above 64 rows.
      {"decode, 64 rows", check(plan::plan_grouped_linear(params(64, 8, 96), Format::MXFP4, 32, f32, f32, Tier::Simdgroup),
                                "qlinear_grouped_decode_mxfp4_f32", 8, 64)},
      {"tiled, 65 rows", check(plan::plan_grouped_linear(params(65, 8, 96), Format::MXFP4, 32, f16, f32, Tier::TensorOps),
                               "qlinear_grouped_gemm_mxfp4_f16", 3 + 8, 128)},
      {"tiled, 4096 rows of 128 experts",
       check(plan::plan_grouped_linear(params(4096, 128, 128), Format::AFFINE4, 64, f32, f16, Tier::Simdgroup),
             "qlinear_grouped_gemm_affine4_f32_of16", 128 + 128, 128)},
      {"dense w, 3 rows", check(plan::plan_grouped_linear_dense(params(3, 8, 45), f16, f32, DType::BFloat16, Tier::Simdgroup),
                                "qlinear_grouped_gemm_dense_f16_f32_obf16", 1 + 3, 128)},
      {"quantized K not a multiple of 32", model::expect_error(mto::code::Shape, [&] {
         plan::plan_grouped_linear(params(4, 2, 45), Format::MXFP4, 32, f32, f32, Tier::Simdgroup);
       })},
      {"dense int32 w", model::expect_error(mto::code::DType, [&] {
         plan::plan_grouped_linear_dense(params(4, 2, 45), DType::Int32, f32, f32, Tier::Simdgroup);
       })},
      {"the cpu tier", model::expect_error(mto::code::Backend, [&] {
         plan::plan_grouped_linear_dense(params(4, 2, 45), f32, f32, f32, Tier::Cpu);
       })},
  };
  return model::rule_checks(checks);
}

}  // namespace

std::vector<Case> grouped_linear_cases() {
  std::vector<Case> cases;
  auto add = [&](const GroupedCase& c, const char* what) {
    std::string name = std::string("grouped-linear/") + (c.dense ? std::string("dense.") + tag(*c.dense)
                                                                   : std::string(mto::format_info(c.format).name));
    if (!c.dense && mto::format_info(c.format).affine) name += ".g" + std::to_string(c.block);
    if (c.x != DType::Float32) name += std::string("/") + tag(c.x);
    if (c.y != DType::Float32) name += std::string("/o") + tag(c.y);
    name += "/T" + std::to_string(c.T) + "/E" + std::to_string(c.sizes.size()) + "/N" + std::to_string(c.N) + "/K" +
            std::to_string(c.K) + "/" + what;
    cases.push_back({name, [=](const std::string& v) { return run_case(c, name, v); }});
  };
  using mto::Format;
  struct F {
    Format f;
    int block;
    int64_t K;
  };
  const F formats[] = {{Format::MXFP8_E4M3, 32, 96}, {Format::MXFP8_E5M2, 32, 96}, {Format::MXFP6_E3M2, 32, 96},
                       {Format::MXFP6_E2M3, 32, 96}, {Format::MXFP4, 32, 96},      {Format::MXINT8, 32, 96},
                       {Format::MXINT4, 32, 96},     {Format::MXINT2, 32, 96},     {Format::AFFINE4, 32, 96},
                       {Format::AFFINE4, 64, 192},   {Format::AFFINE4, 128, 384},  {Format::AFFINE8, 32, 160},
                       {Format::AFFINE8, 64, 192},   {Format::AFFINE8, 128, 384}};
  const DType f32 = DType::Float32, f16 = DType::Float16, bf16 = DType::BFloat16;
  for (const F& f : formats) {
    // A decode step: 4 tokens' rows over 8 experts, most empty.
    add({f.f, f.block, f32, f32, 37, f.K, {0, 1, 0, 2, 0, 0, 1, 0}, 4}, "decode");
    // One expert with every row: several batches of 8 through the same weights.
    add({f.f, f.block, f16, f16, 37, f.K, {0, 19, 0}, 19}, "one_expert");
    add({f.f, f.block, bf16, f32, 37, f.K, {3, 5, 1, 0, 2}, 11}, "spread");
  }
  // Every x and y dtype pair on an FP, an INT and an affine format.
  for (const F& f : {formats[4], formats[5], formats[9]}) {
    for (DType xt : {f32, f16, bf16})
      for (DType yt : {f32, f16, bf16}) add({f.f, f.block, xt, yt, 64, 576, {2, 0, 3}, 5}, "dtypes");
  }
  // Many experts, few rows: slots = min(E, T); the full T bound; an expert of 64 rows.
  std::vector<int32_t> many(128, 0);
  many[3] = 2, many[77] = 1, many[127] = 3;
  add({Format::MXFP4, 32, f32, f32, 37, 96, many, 6}, "many_experts");
  // More experts than the route kernel stages at a time (QLINEAR_GROUPED_ROUTE_CHUNK, 1024; 256
  // threads): groups in both chunks, and a negative size in the second.
  std::vector<int32_t> chunked(1324, 0);
  chunked[5] = 2, chunked[700] = 1, chunked[1030] = 1, chunked[1323] = 3;
  add({Format::MXFP4, 32, f32, f32, 37, 96, chunked, 7}, "chunked_experts");
  chunked[1200] = -1;
  add({Format::MXFP4, 32, f32, f32, 37, 96, chunked, 7}, "chunked_negative");
  add({Format::MXFP4, 32, f16, bf16, 40, 128, {20, 0, 44}, 64}, "max_rows");
  add({Format::AFFINE4, 64, f32, f32, 37, 128, {0, 0, 64, 0}, 64}, "max_rows");
  // Sizes the op must refuse: the first negative one, or a sum other than T (also one past 2^32).
  add({Format::MXFP4, 32, f32, f32, 37, 96, {2, -1, 3, -4}, 4}, "negative");
  add({Format::MXFP4, 32, f32, f32, 37, 96, {-2, 3, -1}, 3}, "negative_first");  // the first is expert 0
  add({Format::MXFP4, 32, f32, f32, 37, 96, {1, 2}, 4}, "short_sum");
  add({Format::MXINT8, 32, f32, f32, 37, 96, {3, 2, 0}, 4}, "long_sum");
  add({Format::AFFINE8, 32, f32, f32, 37, 96, {2147483647, 2147483647, 2}, 4}, "huge_sum");

  // Prefill (T > 64): the tiled pass, slots of at most 32 rows of one group. Every format, groups
  // cut into full and partial tiles around an empty expert, N past a tile edge.
  for (const F& f : formats) add({f.f, f.block, f32, f32, 37, f.K, {37, 0, 63}, 100}, "tiled");
  // Every x and y dtype pair on an FP, an INT and an affine format.
  for (const F& f : {formats[4], formats[5], formats[9]}) {
    for (DType xt : {f32, f16, bf16})
      for (DType yt : {f32, f16, bf16}) add({f.f, f.block, xt, yt, 40, 192, {33, 0, 1, 31}, 65}, "tiled_dtypes");
  }
  // One expert with every row (many tiles through the same weights), many experts with a few rows
  // each (a partial tile per group: the slot count's bound), and sizes the op must refuse.
  add({Format::MXFP8_E4M3, 32, f16, f16, 64, 96, {0, 129, 0}, 129}, "tiled_one_expert");
  std::vector<int32_t> spread(40, 0);
  for (int e = 0; e < 40; e += 2) spread[size_t(e)] = e % 3 + 3;
  int32_t spread_sum = 0;
  for (int32_t g : spread) spread_sum += g;
  add({Format::MXINT4, 32, bf16, f32, 33, 64, spread, spread_sum}, "tiled_many_experts");
  add({Format::MXFP4, 32, f32, f32, 37, 96, {50, -1, 51}, 100}, "tiled_negative");
  add({Format::AFFINE4, 64, f32, f32, 37, 128, {50, 49}, 100}, "tiled_short_sum");

  // Dense w of each float dtype with each x dtype (the tiled pass at every T; K not a multiple of
  // the 64-wide K step, nor of 32), y of each dtype, prefill sizes, and a refused size.
  for (DType wt : {f32, f16, bf16}) {
    for (DType xt : {f32, f16, bf16}) add({Format::MXFP4, 32, xt, xt, 37, 45, {2, 0, 3}, 5, wt}, "dense");
    for (DType yt : {f32, f16, bf16}) add({Format::MXFP4, 32, f32, yt, 33, 70, {30, 0, 47, 0}, 77, wt}, "dense_tiled");
  }
  add({Format::MXFP4, 32, bf16, f32, 40, 96, {0, 0, 70, 0}, 70, f16}, "dense_one_expert");
  add({Format::MXFP4, 32, f32, f32, 37, 45, {3, 3}, 5, f32}, "dense_long_sum");
  // A K tail (45) with +inf opening every odd row: the even rows' outputs stay finite only if no
  // value past a row's K is staged (x's zeros there would make inf * 0 = NaN); a group of 33 rows
  // leaves a slot of one row.
  add({Format::MXFP4, 32, f32, f32, 37, 45, {30, 0, 33, 0, 14}, 77, f32, true}, "dense_inf_odd_rows");
  cases.push_back({"plan/grouped-linear", [](const std::string&) { return plan_rules(); }});
  return cases;
}

}  // namespace mtoh_driver
