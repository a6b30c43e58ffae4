// argmax, topK and sample on the GPU (shaders/pick.metal) against the cpu backend's kernels
// (native/cpu/pick.cc), exactly: the same ids, the same values bit for bit (NaN for NaN), the
// same sampled ids for the same seed, and for a row without a distribution the same E_ARG
// message. Rows at odd widths on both sides of the threads' kept ranks (a row the candidates
// hold whole, a row much wider), every float dtype, ties, signed zeros, NaN, +-inf, rows built to
// send topK down its exact path (and its bisection), and a [1, 128256] vocabulary row; k and
// sample's candidates past PICK_MAX_K (the wide kernels' radix walks and sort), and plans made
// for a pipeline's thread limit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "../../../shaders/pick_params.h"
#include "../../../shaders/pick_sample.h"
#include "cases.h"
#include "core/error.h"
#include "core/plan/pick.h"
#include "cpu/ops.h"
#include "data.h"
#include "sample_seed.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;

const char* tag(DType t) { return t == DType::Float32 ? "f32" : t == DType::Float16 ? "f16" : "bf16"; }

mto::Tensor dense(const std::vector<float>& v, mto::Shape shape, DType dtype) {
  mto::Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.buffer = mto::make_buffer(v.size() * mto::dtype_size(dtype));
  mto::from_float32(dtype, v.data(), t.buffer->data(), v.size());
  return t;
}

mto::Tensor empty(mto::Shape shape, DType dtype) {
  mto::Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.buffer = mto::make_buffer(t.bytes());
  return t;
}

Bytes bytes_of(const mto::Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.buffer->data());
  return Bytes(p, p + t.bytes());
}

// The rows of a case. Each pattern plants what a rule of core/ops.h decides.
enum class Pattern {
  Normal,      // N(0, 1)
  Special,     // row 0 a tie, row 1 NaN, row 2 all -inf, row 3 -0 before +0 (max 0), row 4 +inf
  Constant,    // every element 1: ties everywhere, the lower index first
  Ascending,   // x[i] = i: the best at the end of the row
  Stride,      // every 512th element (one thread's share) the largest: topK's exact path
  Bisect,      // 63 threads' shares above a 64th's: topK's exact path must raise tau first
  Temperature, // N(0, 4): sampling weights that underflow at low temperature
  PosInf,      // row 1 holds +inf (and row 2 NaN): sample's first failing row is +inf's
  NegInf,      // row 2 all -inf, the rest normal: sample has no distribution there
  Boundary,    // 0, -1, then -inf: weights 2^32 and 2^31 at temperature log2(e) (c = 1), so a
               // chosen seed puts the draw exactly on the first element's end (kBoundarySeed)
  Tiny,        // negative values, +0 or -0, and the smallest subnormal (2^-149) last: it is larger
  Negligible,  // the first half -inf, then -1000 (weight 0: below 2^-33 of the largest), 0 last
  FlushEdge,   // 2^-126 (the smallest normal float), 2^-125, then -inf: at temperature 2^-126 the
               // weights are 2^-log2(e) and 1, and flushing +-2^-126 (not only below) changes them
  Threshold,   // 0, kThresholdValue, then -inf (row 0's draw set at the boundary between the two)
  FarBelow,    // every value in [-3e30, -1e30], below -2^97: every key's top digit is 0 (the walk's
               // lowest bin holds the whole row), weights spread at temperature 1e30
  PartEdge,    // Threshold's pair at elements 95 and 96, the rest -inf: on 160 columns (64 threads,
               // two parts of 96) the first part weighs 2^32, so its end is the draw's boundary
};
const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::Normal: return "";
    case Pattern::Special: return "/special";
    case Pattern::Constant: return "/constant";
    case Pattern::Ascending: return "/ascending";
    case Pattern::Stride: return "/stride";
    case Pattern::Bisect: return "/bisect";
    case Pattern::Temperature: return "/wide";
    case Pattern::PosInf: return "/posinf";
    case Pattern::NegInf: return "/neginf";
    case Pattern::Boundary: return "/boundary";
    case Pattern::Tiny: return "/tiny";
    case Pattern::Negligible: return "/negligible";
    case Pattern::FlushEdge: return "/flush_edge";
    case Pattern::Threshold: return "/threshold";
    case Pattern::FarBelow: return "/far_below";
    case Pattern::PartEdge: return "/part_edge";
  }
  return "";
}

std::vector<float> make_rows(Pattern pat, int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> x = normal_data(rows * cols, seed, pat == Pattern::Temperature ? 4.0f : 1.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x.data() + r * cols;
    switch (pat) {
      case Pattern::Special:
        if (r == 0 && cols > 2) v[cols - 1] = v[cols / 2] = 50.0f;  // a tie: the lower index first
        if (r == 1) v[cols / 3] = nan, v[cols - 1] = nan;
        if (r == 2) for (int64_t c = 0; c < cols; ++c) v[c] = -inf;
        if (r == 3) {
          for (int64_t c = 0; c < cols; ++c) v[c] = -std::fabs(v[c]) - 1.0f;
          v[cols - 1] = 0.0f;
          v[cols / 2] = -0.0f;  // equal to +0: the lower index wins
        }
        if (r == 4) v[cols / 4] = inf;
        break;
      case Pattern::Constant:
        for (int64_t c = 0; c < cols; ++c) v[c] = 1.0f;
        break;
      case Pattern::Ascending:
        for (int64_t c = 0; c < cols; ++c) v[c] = float(c % 2048) + float(c / 2048) * 2048.0f;
        break;
      case Pattern::Stride:
        for (int64_t c = 0; c < cols; c += 512) v[c] = 100.0f + float(c % 97);
        break;
      case Pattern::Bisect:
        // Threads 0..62 (of 512): all elements at 150, the first four at 200; thread 63 at 100.
        // Of 64 threads the same: thread t < 64 holds those of thread t of 512, the rest N(0, 1).
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t t = c % 512, j = c / 512;
          if (t < 63) v[c] = j < 4 ? 200.0f : 150.0f;
          else if (t == 63) v[c] = 100.0f;
        }
        break;
      case Pattern::PosInf:
        if (r == 1) v[cols / 4] = inf;
        if (r == 2) v[0] = nan;
        break;
      case Pattern::NegInf:
        if (r == 2) for (int64_t c = 0; c < cols; ++c) v[c] = -inf;
        break;
      case Pattern::Boundary:
        for (int64_t c = 0; c < cols; ++c) v[c] = c == 0 ? 0.0f : c == 1 ? -1.0f : -inf;
        break;
      case Pattern::Tiny:
        for (int64_t c = 0; c < cols; ++c) v[c] = -std::fabs(v[c]) - 1.0f;
        v[r % 2 == 0 ? 0 : cols / 3] = r % 2 == 0 ? 0.0f : -0.0f;
        v[cols - 1] = std::numeric_limits<float>::denorm_min();
        break;
      case Pattern::Negligible:
        for (int64_t c = 0; c < cols; ++c) v[c] = c < cols / 2 ? -inf : -1000.0f;
        v[cols - 1] = 0.0f;
        break;
      case Pattern::Threshold:
        for (int64_t c = 0; c < cols; ++c) v[c] = c == 0 ? 0.0f : c == 1 ? kThresholdValue : -inf;
        break;
      case Pattern::FlushEdge:
        for (int64_t c = 0; c < cols; ++c) v[c] = c == 0 ? 0x1p-126f : c == 1 ? 0x1p-125f : -inf;
        break;
      case Pattern::PartEdge:
        for (int64_t c = 0; c < cols; ++c) v[c] = c == 95 ? 0.0f : c == 96 ? kThresholdValue : -inf;
        break;
      case Pattern::FarBelow:
        for (int64_t c = 0; c < cols; ++c) v[c] = -1e30f * (2.0f + std::max(-1.0f, std::min(1.0f, v[c])));
        break;
      default:
        break;
    }
  }
  return x;
}

// Exact comparison of int32 ids.
Comparison compare_ids(const Bytes& got, const std::vector<int32_t>& want, int64_t width) {
  Comparison c;
  if (got.size() != want.size() * 4) {
    c.ok = false;
    c.first_mismatch = "ids: " + std::to_string(got.size()) + " bytes for " + std::to_string(want.size()) + " ids";
    return c;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    int32_t g;
    std::memcpy(&g, got.data() + 4 * i, 4);
    if (g == want[i]) continue;
    if (c.mismatches++ == 0) {
      c.first_mismatch = "ids[" + std::to_string(int64_t(i) / width) + ", " + std::to_string(int64_t(i) % width) +
                         "]: kernel " + std::to_string(g) + ", cpu " + std::to_string(want[i]);
    }
  }
  c.ok = c.mismatches == 0;
  return c;
}

// Exact comparison of values stored in `dtype` (NaN equals NaN).
Comparison compare_values(const Bytes& got, const Bytes& want, DType dtype, int64_t width) {
  Comparison c;
  const size_t n = want.size() / mto::dtype_size(dtype);
  if (got.size() != want.size()) {
    c.ok = false;
    c.first_mismatch = "values: wrong size";
    return c;
  }
  std::vector<float> g(n), w(n);
  mto::to_float32(dtype, got.data(), g.data(), n);
  mto::to_float32(dtype, want.data(), w.data(), n);
  for (size_t i = 0; i < n; ++i) {
    if ((std::isnan(g[i]) && std::isnan(w[i])) || (g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i]))) continue;
    if (c.mismatches++ == 0) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "values[%lld, %lld]: kernel %.9g, cpu %.9g", (long long)(int64_t(i) / width),
                    (long long)(int64_t(i) % width), g[i], w[i]);
      c.first_mismatch = buf;
    }
  }
  c.ok = c.mismatches == 0;
  return c;
}

std::vector<int32_t> ints(const mto::Tensor& t) {
  std::vector<int32_t> v(size_t(t.numel()));
  std::memcpy(v.data(), t.buffer->data(), v.size() * 4);
  return v;
}

// max_threads: the pipeline limit the plans are made for (1024: none below the kernels' own).
CaseResult run_argmax(DType dt, int64_t rows, int64_t cols, Pattern pat, const std::string& name,
                      const std::string& variant, uint32_t max_threads = 1024) {
  const mto::Tensor x = dense(make_rows(pat, rows, cols, seed_of(name)), {rows, cols}, dt);
  const mto::PickParams p = mto::check_pick("argmax", x, 0);
  mto::cpu::ThreadPool pool(1);
  mto::Tensor ids = empty(p.out_shape, DType::Int32);
  mto::cpu::argmax(pool, x, p, ids);
  const std::vector<int32_t> want = ints(ids);
  const mto::plan::Dispatch plan = mto::plan::plan_argmax(dt, p, mto::Tier::Simdgroup, max_threads);
  return run_plan_case("argmax", plan, variant, {{Arg::X, bytes_of(x)}}, {{Arg::Ids, want.size() * 4}},
                       [&](const std::map<Arg, Bytes>& out) { return compare_ids(out.at(Arg::Ids), want, 1); });
}

CaseResult run_top_k(DType dt, int64_t rows, int64_t cols, int64_t k, Pattern pat, const std::string& name,
                     const std::string& variant, uint32_t max_threads = 1024) {
  const mto::Tensor x = dense(make_rows(pat, rows, cols, seed_of(name)), {rows, cols}, dt);
  const mto::PickParams p = mto::check_pick("topK", x, k);
  mto::cpu::ThreadPool pool(1);
  mto::Tensor ids = empty(p.out_shape, DType::Int32), values = empty(p.out_shape, dt);
  mto::cpu::top_k(pool, x, p, values, ids);
  const std::vector<int32_t> want = ints(ids);
  const Bytes want_values = bytes_of(values);
  const mto::plan::TopKPlan plan = mto::plan::plan_top_k(dt, p, mto::Tier::Simdgroup, max_threads);
  std::map<Arg, Bytes> inputs = {{Arg::X, bytes_of(x)}};
  // The wide kernel's sort buffer, as the host makes it: uninitialised. 0xFF bytes are index -1,
  // so an entry read before the sort wrote it reads outside x (reported).
  if (plan.scratch_bytes) inputs[Arg::Scratch] = Bytes(size_t(plan.scratch_bytes), 0xFF);
  return run_plan_case("topK", plan.passes.at(0), variant, inputs,
                       {{Arg::Ids, want.size() * 4}, {Arg::Y, want_values.size()}},
                       [&](const std::map<Arg, Bytes>& out) {
                         Comparison c = compare_ids(out.at(Arg::Ids), want, k);
                         return c.ok ? compare_values(out.at(Arg::Y), want_values, dt, k) : c;
                       });
}

struct SampleOptions {
  double temperature = 1.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
};

// Without a failing row: the ids equal and the status says OK. With one: the status, read by the
// host's reader, gives the cpu backend's error.
CaseResult run_sample(DType dt, int64_t rows, int64_t cols, Pattern pat, SampleOptions o, const std::string& name,
                      const std::string& variant, uint32_t max_threads = 1024) {
  const mto::Tensor x = dense(make_rows(pat, rows, cols, seed_of(name)), {rows, cols}, dt);
  mto::PickParams p = mto::check_pick("sample", x, 0);
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.seed = o.seed;
  mto::cpu::ThreadPool pool(1);
  mto::Tensor ids = empty(p.out_shape, DType::Int32);
  std::string cpu_error;
  try {
    mto::cpu::sample(pool, x, p, ids);
  } catch (const mto::Error& e) {
    cpu_error = std::string(e.code()) + ": " + e.what();
  }
  const std::vector<int32_t> want = ints(ids);
  const mto::plan::Dispatch plan = mto::plan::plan_sample(dt, p, mto::Tier::Simdgroup, max_threads);
  return run_plan_case(
      "sample", plan, variant, {{Arg::X, bytes_of(x)}},
      {{Arg::Ids, want.size() * 4}, {Arg::Status, size_t(mto::plan::sample_status_bytes(p))}},
      [&](const std::map<Arg, Bytes>& out) {
        const Bytes& st = out.at(Arg::Status);
        std::vector<int32_t> status(st.size() / 4);
        std::memcpy(status.data(), st.data(), st.size());
        const mto::OpStatus s = mto::plan::sample_status(status.data(), p);
        const std::string gpu_error = s.ok() ? "" : std::string(s.code) + ": " + s.message;
        if (gpu_error != cpu_error) {
          Comparison c;
          c.ok = false;
          c.mismatches = 1;
          c.first_mismatch = "status: kernel '" + gpu_error + "', cpu '" + cpu_error + "'";
          return c;
        }
        return cpu_error.empty() ? compare_ids(out.at(Arg::Ids), want, 1) : Comparison{};
      });
}

// What plan_sample / plan_top_k leave to the cpu backend, and the modes they pick.
CaseResult plan_rules() {
  CaseResult r;
  r.op = "plan";
  auto fail = [&](const std::string& m) {
    r.error_kind = "mismatch";
    r.message = m;
    return r;
  };
  auto params = [](int64_t rows, int64_t cols) {
    mto::PickParams p;
    p.rows = rows;
    p.cols = cols;
    return p;
  };
  auto code_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const mto::Error& e) {
      return e.code();
    }
    return "";
  };
  mto::PickParams p = params(2, 1000);
  p.k = 257;
  const mto::plan::TopKPlan wide_k = mto::plan::plan_top_k(DType::Float32, p, mto::Tier::Simdgroup);
  if (wide_k.passes.at(0).kernel != "pick_topk_wide_f32" || wide_k.scratch_bytes != 2 * 257 * 4)
    return fail("topK with k = 257 should run pick_topk_wide with an int32 [rows, k] scratch");
  p.k = 1001;
  if (code_of([&] { mto::plan::plan_top_k(DType::Float32, p, mto::Tier::Simdgroup); }) != "E_ARG")
    return fail("topK with k > cols should be refused (E_ARG)");
  p.k = 256;
  const mto::plan::TopKPlan narrow_k = mto::plan::plan_top_k(DType::Float32, p, mto::Tier::TensorOps);
  if (narrow_k.passes.at(0).kernel != "pick_topk_f32" || narrow_k.scratch_bytes != 0)
    return fail("topK with k = 256 should run pick_topk, without scratch, on every metal tier");
  // A pipeline limit: pick_topk's 32 threads keep 128 ranks, fewer than k = 256: the wide kernel.
  const mto::plan::Dispatch limited = mto::plan::plan_top_k(DType::Float32, p, mto::Tier::Simdgroup, 63).passes.at(0);
  if (limited.kernel != "pick_topk_wide_f32" || limited.threads_per_threadgroup[0] != 32)
    return fail("topK with k = 256 under a 63-thread pipeline limit should run pick_topk_wide on 32 threads");
  if (code_of([&] { mto::plan::plan_top_k(DType::Float32, p, mto::Tier::Simdgroup, 31); }) != "E_BACKEND")
    return fail("a pipeline limit below one SIMD-group should leave topK to the cpu (E_BACKEND)");
  if (code_of([&] { mto::plan::plan_argmax(DType::Int32, p, mto::Tier::Simdgroup); }) != "E_DTYPE")
    return fail("argmax of int32 x should be refused with E_DTYPE");
  if (code_of([&] { mto::plan::plan_argmax(DType::Float32, p, mto::Tier::Cpu); }) != "E_BACKEND")
    return fail("the cpu tier has no kernels (E_BACKEND)");
  mto::PickParams s = params(2, 1000);
  s.top_p = 0.9;  // topP alone on a row wider than PICK_MAX_K: the whole row ranked
  if (mto::plan::plan_sample(DType::Float32, s, mto::Tier::Simdgroup).kernel != "pick_sample_wide_f32")
    return fail("sample with topP alone on 1000 columns should run pick_sample_wide");
  s.top_k = 300;
  if (mto::plan::plan_sample(DType::Float32, s, mto::Tier::Simdgroup).kernel != "pick_sample_wide_f32")
    return fail("sample with topK = 300 should run pick_sample_wide");
  auto mode = [&](const mto::PickParams& q) {
    PickKernelParams kp;
    const mto::plan::Dispatch d = mto::plan::plan_sample(DType::Float16, q, mto::Tier::Simdgroup);
    std::memcpy(&kp, d.params.data(), sizeof kp);
    return kp.mode;
  };
  s.top_k = 0;
  s.top_p = 1;
  if (mode(s) != PICK_SAMPLE_INDEX) return fail("sample without topK/topP should walk the row in index order");
  s.top_k = 40;
  if (mode(s) != PICK_SAMPLE_RANKED) return fail("sample with topK = 40 should rank 40 candidates");
  mto::PickParams narrow = params(1, 200);
  narrow.top_p = 0.5;
  if (mode(narrow) != PICK_SAMPLE_RANKED) return fail("topP alone on 200 columns should rank the whole row");
  narrow.temperature = 0;
  if (mode(narrow) != PICK_SAMPLE_ARGMAX) return fail("temperature 0 should be argmax");
  const mto::plan::Dispatch wide = mto::plan::plan_argmax(DType::Float32, params(1, 128256), mto::Tier::Simdgroup);
  if (wide.threads_per_threadgroup[0] != PICK_MAX_THREADS || wide.kernel != "pick_argmax_f32")
    return fail("a vocabulary row should take " + std::to_string(PICK_MAX_THREADS) + " threads");
  if (mto::plan::plan_argmax(DType::BFloat16, params(3, 50), mto::Tier::Simdgroup).threads_per_threadgroup[0] != 32)
    return fail("a 50-wide row should take 32 threads");
  // Within a pipeline's limit: the largest power of two below it (the bitonic sort's sizes).
  if (mto::plan::plan_argmax(DType::Float32, params(1, 128256), mto::Tier::Simdgroup, 790).threads_per_threadgroup[0] != 512 ||
      mto::plan::plan_argmax(DType::Float32, params(1, 128256), mto::Tier::Simdgroup, 96).threads_per_threadgroup[0] != 64)
    return fail("argmax under a 790 (96) thread limit should take 512 (64) threads");
  mto::PickParams vocab = params(1, 128256);
  vocab.top_p = 0.9;
  const mto::plan::Dispatch wide_s = mto::plan::plan_sample(DType::Float32, vocab, mto::Tier::Simdgroup);
  if (wide_s.threads_per_threadgroup[0] != PICK_WIDE_MAX_THREADS ||
      mto::plan::plan_sample(DType::Float32, vocab, mto::Tier::Simdgroup, 800).threads_per_threadgroup[0] != 800)
    return fail("pick_sample_wide should take " + std::to_string(PICK_WIDE_MAX_THREADS) +
                " threads on a vocabulary row, 800 under an 800-thread limit");
  r.ok = true;
  return r;
}

}  // namespace

std::vector<Case> pick_cases() {
  std::vector<Case> cases;
  const DType dtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
  auto shape = [](int64_t rows, int64_t cols) { return "/" + std::to_string(rows) + "x" + std::to_string(cols); };

  // argmax: widths that one thread, a few or many loads per thread cover.
  for (DType dt : dtypes) {
    for (int64_t cols : {1, 5, 50, 1001, 5003}) {
      for (Pattern pat : {Pattern::Normal, Pattern::Special, Pattern::Constant, Pattern::Tiny}) {
        const int64_t rows = pat == Pattern::Special ? 5 : 3;
        if ((pat == Pattern::Special || pat == Pattern::Tiny) && cols < 5) continue;
        const std::string name = std::string("pick/argmax/") + tag(dt) + shape(rows, cols) + pattern_name(pat);
        cases.push_back({name, [=](const std::string& v) { return run_argmax(dt, rows, cols, pat, name, v); }});
      }
    }
  }
  {
    const std::string name = "pick/argmax/f32/1x128256";
    cases.push_back({name, [=](const std::string& v) { return run_argmax(DType::Float32, 1, 128256, Pattern::Normal, name, v); }});
    const std::string asc = "pick/argmax/bf16/2x128256/ascending";
    cases.push_back({asc, [=](const std::string& v) { return run_argmax(DType::BFloat16, 2, 128256, Pattern::Ascending, asc, v); }});
  }

  // topK.
  struct TopK {
    int64_t rows, cols, k;
    Pattern pat;
  };
  const TopK topks[] = {
      {3, 1, 1, Pattern::Normal},       {3, 7, 7, Pattern::Normal},         {4, 50, 5, Pattern::Normal},
      {5, 50, 50, Pattern::Special},    {2, 300, 64, Pattern::Normal},      {2, 1001, 256, Pattern::Normal},
      {5, 1001, 8, Pattern::Special},   {2, 5003, 1, Pattern::Normal},      {2, 5003, 64, Pattern::Constant},
      {2, 5003, 40, Pattern::Ascending}, {2, 3000, 8, Pattern::Stride},     {1, 20480, 256, Pattern::Bisect},
      {3, 50, 3, Pattern::Tiny},
      // The exact path's bisection meets a count of k - 1 (the 252 elements at 200, above every 150).
      {1, 20480, 253, Pattern::Bisect},
      // Every one of the 512 threads sees PICK_KEEP + 1 elements, thread 0 the five largest: the
      // one it drops belongs, which only its count of elements seen tells.
      {2, 2560, 8, Pattern::Stride},
  };
  for (DType dt : dtypes) {
    for (const TopK& t : topks) {
      if (dt != DType::Float32 && t.pat == Pattern::Bisect) continue;
      const std::string name = std::string("pick/topk/") + tag(dt) + shape(t.rows, t.cols) + "/k" +
                               std::to_string(t.k) + pattern_name(t.pat);
      cases.push_back({name, [=](const std::string& v) { return run_top_k(dt, t.rows, t.cols, t.k, t.pat, name, v); }});
    }
  }
  {
    const std::string name = "pick/topk/f32/1x128256/k50";
    cases.push_back({name, [=](const std::string& v) { return run_top_k(DType::Float32, 1, 128256, 50, Pattern::Normal, name, v); }});
  }
  // topK past PICK_MAX_K (pick_topk_wide): k just above it, k = cols (the whole row sorted, NaN,
  // +-inf, -0 and +0 included), ties everywhere (the first k indices), a row the k best end.
  const TopK wide_topks[] = {
      {2, 300, 257, Pattern::Normal},     {2, 1001, 1000, Pattern::Normal},   {5, 1001, 1001, Pattern::Special},
      {5, 3000, 500, Pattern::Special},   {2, 5003, 300, Pattern::Constant},  {2, 5003, 2000, Pattern::Ascending},
      {2, 3000, 600, Pattern::Stride},    {3, 300, 260, Pattern::Tiny},
  };
  for (DType dt : dtypes) {
    for (const TopK& t : wide_topks) {
      const std::string name = std::string("pick/topk/") + tag(dt) + shape(t.rows, t.cols) + "/k" +
                               std::to_string(t.k) + pattern_name(t.pat);
      cases.push_back({name, [=](const std::string& v) { return run_top_k(dt, t.rows, t.cols, t.k, t.pat, name, v); }});
    }
  }
  {
    // A vocabulary row: float32, and bfloat16 (whose 8-bit mantissas make ties of most values).
    const std::string f32 = "pick/topk/f32/1x128256/k1000";
    cases.push_back({f32, [=](const std::string& v) { return run_top_k(DType::Float32, 1, 128256, 1000, Pattern::Normal, f32, v); }});
    const std::string bf16 = "pick/topk/bf16/1x128256/k257";
    cases.push_back({bf16, [=](const std::string& v) { return run_top_k(DType::BFloat16, 1, 128256, 257, Pattern::Normal, bf16, v); }});
    // Plans made for a pipeline limit: 32 threads keep fewer ranks than k = 256 (the wide kernel),
    // and 64 threads of pick_topk and pick_argmax.
    const std::string lim = "pick/topk/f32/3x1001/k256/limit63";
    cases.push_back({lim, [=](const std::string& v) { return run_top_k(DType::Float32, 3, 1001, 256, Pattern::Normal, lim, v, 63); }});
    const std::string lim96 = "pick/topk/f16/3x5003/k64/constant/limit96";
    cases.push_back({lim96, [=](const std::string& v) { return run_top_k(DType::Float16, 3, 5003, 64, Pattern::Constant, lim96, v, 96); }});
    // k = threads * PICK_KEEP (64 threads): the bisection must stop at a count of exactly k.
    const std::string bis64 = "pick/topk/f32/1x20480/k256/bisect/limit64";
    cases.push_back({bis64, [=](const std::string& v) { return run_top_k(DType::Float32, 1, 20480, 256, Pattern::Bisect, bis64, v, 64); }});
    const std::string arg96 = "pick/argmax/f32/1x128256/limit96";
    cases.push_back({arg96, [=](const std::string& v) { return run_argmax(DType::Float32, 1, 128256, Pattern::Normal, arg96, v, 96); }});
  }

  // sample: every mode, draws compared id for id over many rows (each its own uniform number).
  struct Sample {
    int64_t rows, cols;
    Pattern pat;
    SampleOptions o;
    const char* what;
  };
  const Sample samples[] = {
      {9, 50, Pattern::Normal, {1.0, 0, 1.0, 7}, "t1"},
      {9, 1001, Pattern::Normal, {0.7, 0, 1.0, 8}, "t0.7"},
      {7, 5003, Pattern::Temperature, {0.05, 0, 1.0, 9}, "t0.05"},
      {5, 3000, Pattern::Normal, {2.5, 0, 1.0, 1}, "t2.5"},
      {9, 1001, Pattern::Normal, {1.0, 20, 1.0, 12345}, "k20"},
      {9, 1001, Pattern::Normal, {0.8, 40, 0.8, 3}, "k40.p0.8"},
      {9, 200, Pattern::Normal, {1.0, 0, 0.9, 4}, "p0.9"},
      {6, 5003, Pattern::Normal, {1.3, 256, 0.95, 5}, "k256.p0.95"},
      {4, 3000, Pattern::Stride, {1.0, 8, 1.0, 6}, "k8"},
      {3, 3000, Pattern::Constant, {1.0, 1, 1.0, 2}, "k1"},
      {3, 1001, Pattern::Normal, {0.0, 0, 1.0, 2}, "t0"},
      {2, 1, Pattern::Normal, {1.0, 0, 1.0, 2}, "t1"},
      {5, 50, Pattern::Special, {1.0, 0, 1.0, 2}, "t1"},      // row 1 holds NaN: E_ARG
      {5, 50, Pattern::Special, {0.0, 5, 1.0, 2}, "t0.k5"},   // NaN fails temperature 0 too
      {1, 4096, Pattern::Negligible, {1.0, 0, 1.0, kSmallDrawSeed}, "t1"},
      {1, 40, Pattern::Threshold, {kLog2e, 0, 1.0, threshold_seed(false)}, "below"},
      {1, 40, Pattern::Threshold, {kLog2e, 0, 1.0, threshold_seed(true)}, "above"},
      {64, 40, Pattern::FlushEdge, {0x1p-126, 0, 1.0, 10}, "t2^-126"},
      {16, 50, Pattern::Boundary, {kLog2e, 40, kTopPPastFirst, 32}, "k40.p-past-first"},
      // The same draws in ranked mode (topK 40: the candidates sorted, then walked).
      {1, 40, Pattern::Threshold, {kLog2e, 40, 1.0, threshold_seed(false)}, "k40.below"},
      {1, 40, Pattern::Threshold, {kLog2e, 40, 1.0, threshold_seed(true)}, "k40.above"},
      {16, 40, Pattern::Threshold, {kCutTemperature, 40, top_p_at_first(), 34}, "k40.p-at-first"},
      // top_p rounds to 2^32 in 32.32 fixed point (its high word 1): the cut at the whole weight.
      {9, 200, Pattern::Normal, {1.0, 40, 1.0 - 0x1p-40, 33}, "k40.p1-2^-40"},
      // Index order: the draw at the end of the narrowing's first part, and a row one element past
      // 16 parts of 256 whose last element holds most of the weight (the parts must reach it).
      {1, 160, Pattern::PartEdge, {kLog2e, 0, 1.0, threshold_seed(false)}, "below"},
      {1, 160, Pattern::PartEdge, {kLog2e, 0, 1.0, threshold_seed(true)}, "above"},
      {3, 4097, Pattern::Ascending, {0.3, 0, 1.0, 35}, "t0.3"},
  };
  for (DType dt : dtypes) {
    for (const Sample& s : samples) {
      const std::string name = std::string("pick/sample/") + tag(dt) + shape(s.rows, s.cols) + "/" + s.what +
                               pattern_name(s.pat);
      cases.push_back({name, [=](const std::string& v) { return run_sample(dt, s.rows, s.cols, s.pat, s.o, name, v); }});
    }
  }
  // Rows without a distribution: +inf first, all -inf (ranked and index order).
  {
    for (Pattern pat : {Pattern::PosInf, Pattern::NegInf}) {
      for (int64_t top_k : {0, 3}) {
        const std::string name = std::string("pick/sample/f32/4x50/") + (top_k ? "k3" : "t1") + pattern_name(pat);
        cases.push_back({name, [=](const std::string& v) {
                           return run_sample(DType::Float32, 4, 50, pat, {1.0, top_k, 1.0, 4}, name, v);
                         }});
      }
    }
    const std::string vocab = "pick/sample/f32/1x128256/t1";
    cases.push_back({vocab, [=](const std::string& v) {
                       return run_sample(DType::Float32, 1, 128256, Pattern::Normal, {1.0, 0, 1.0, 99}, vocab, v);
                     }});
    const std::string vocab_k = "pick/sample/f16/2x128256/k50.p0.9";
    cases.push_back({vocab_k, [=](const std::string& v) {
                       return run_sample(DType::Float16, 2, 128256, Pattern::Normal, {0.9, 50, 0.9, 98}, vocab_k, v);
                     }});
  }
  // More candidates than pick_sample ranks (pick_sample_wide): topP alone on wide rows, topK past
  // PICK_MAX_K with and without topP, ties across the k-th and the cut (constant rows), weights
  // that underflow (low temperature), top_p so small it rounds to 0 (the best element), rows
  // without a distribution.
  const Sample wide_samples[] = {
      {9, 1001, Pattern::Normal, {1.0, 0, 0.9, 21}, "p0.9"},
      {6, 5003, Pattern::Normal, {0.8, 300, 1.0, 22}, "k300"},
      {6, 5003, Pattern::Normal, {1.2, 1000, 0.5, 23}, "k1000.p0.5"},
      {7, 5003, Pattern::Temperature, {0.05, 0, 0.95, 24}, "p0.95"},
      {9, 3000, Pattern::Constant, {1.0, 0, 0.5, 25}, "p0.5"},
      {4, 3000, Pattern::Constant, {1.0, 700, 0.3, 26}, "k700.p0.3"},
      {5, 3000, Pattern::Stride, {1.0, 400, 0.99, 29}, "k400.p0.99"},
      {4, 3000, Pattern::Normal, {1.0, 0, 1e-12, 28}, "p1e-12"},
      {5, 1001, Pattern::Special, {1.0, 0, 0.9, 27}, "p0.9"},      // row 1 holds NaN: E_ARG
      {4, 600, Pattern::PosInf, {1.0, 0, 0.8, 4}, "p0.8"},
      {4, 600, Pattern::NegInf, {1.0, 400, 1.0, 4}, "k400"},
      {1, 301, Pattern::Boundary, {kLog2e, 300, 1.0, kBoundarySeed}, "k300"},
      // The radix walk's sums at the first element's boundary: the weights have bits in each part
      // pick_simd_sum_wide adds separately (2^32 in the high half, the second's in both 16-bit parts).
      {1, 301, Pattern::Threshold, {kLog2e, 300, 1.0, threshold_seed(false)}, "k300.below"},
      {1, 301, Pattern::Threshold, {kLog2e, 300, 1.0, threshold_seed(true)}, "k300.above"},
      {5, 1001, Pattern::FarBelow, {1e30, 0, 0.9, 30}, "p0.9"},
      {5, 1001, Pattern::FarBelow, {1e30, 300, 1.0, 31}, "k300"},
      {4, 600, Pattern::Normal, {1.0, 0, 1.0 - 0x1p-40, 36}, "p1-2^-40"},  // top_p's high word 1
  };
  for (DType dt : dtypes) {
    for (const Sample& s : wide_samples) {
      const std::string name = std::string("pick/sample/") + tag(dt) + shape(s.rows, s.cols) + "/" + s.what +
                               pattern_name(s.pat);
      cases.push_back({name, [=](const std::string& v) { return run_sample(dt, s.rows, s.cols, s.pat, s.o, name, v); }});
    }
  }
  {
    const std::string vocab_p = "pick/sample/f32/1x128256/p0.9";
    cases.push_back({vocab_p, [=](const std::string& v) {
                       return run_sample(DType::Float32, 1, 128256, Pattern::Normal, {1.0, 0, 0.9, 97}, vocab_p, v);
                     }});
    const std::string vocab_kp = "pick/sample/bf16/2x128256/k1000.p0.95";
    cases.push_back({vocab_kp, [=](const std::string& v) {
                       return run_sample(DType::BFloat16, 2, 128256, Pattern::Normal, {0.7, 1000, 0.95, 96}, vocab_kp, v);
                     }});
    const std::string lim = "pick/sample/f32/6x5003/k256.p0.95/limit63";
    cases.push_back({lim, [=](const std::string& v) {
                       return run_sample(DType::Float32, 6, 5003, Pattern::Normal, {1.3, 256, 0.95, 5}, lim, v, 63);
                     }});
    const std::string lim96 = "pick/sample/f32/8x1001/k20/limit96";
    cases.push_back({lim96, [=](const std::string& v) {
                       return run_sample(DType::Float32, 8, 1001, Pattern::Normal, {1.0, 20, 1.0, 12345}, lim96, v, 96);
                     }});
  }
  cases.push_back({"plan/pick", [](const std::string&) { return plan_rules(); }});
  return cases;
}

}  // namespace mtoh_driver
