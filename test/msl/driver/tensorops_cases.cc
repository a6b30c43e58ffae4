// The TensorOps shim itself (test/msl/selftest/tensorops_selftest.metal, MSL 4.0): tensor views,
// slices, matmul2d on tensors and cooperative tensors, reduce_rows + map_iterator, the left-input
// reuse (whichever way MTOH_COOP_LEFT_COMPATIBLE makes is_compatible_as_left_input answer), and
// misuse reported with its kind. The cooperative layouts are scrambled by MTOH_COOP_SEED; the
// suite runs these cases under several seeds.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cases.h"

namespace mtoh_driver {
namespace {

using mto::plan::Arg;

mto::plan::Dispatch plan_of(const char* kernel, uint32_t gx, uint32_t gy, uint32_t threads,
                            std::vector<mto::plan::BufferSlot> buffers) {
  mto::plan::Dispatch d;
  d.library = "tensorops_selftest";
  d.kernel = kernel;
  d.threadgroups[0] = gx;
  d.threadgroups[1] = gy;
  d.threads_per_threadgroup[0] = threads;
  d.buffers = std::move(buffers);
  return d;
}

template <class T>
std::vector<T> from_bytes(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

// Float results within a tight relative tolerance (the shim accumulates in float like the reference).
Comparison near(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  Comparison c;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i]));
    const double t = tol * (1.0 + std::fabs(double(want[i])));
    if (std::isfinite(err)) {
      c.max_abs_err = std::max(c.max_abs_err, err);
      c.worst_ratio = std::max(c.worst_ratio, err / t);
    }
    if (err <= t) continue;
    if (c.mismatches++ == 0)
      c.first_mismatch = "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", expected " +
                         std::to_string(want[i]);
  }
  c.ok = c.mismatches == 0;
  return c;
}

std::vector<float> pattern(size_t n, int mul, int mod, float bias, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (float(int((i * size_t(mul)) % size_t(mod))) + bias) * scale;
  return v;
}

Case feature(const std::string& name, std::function<CaseResult(const std::string&)> run) {
  return {"harness/tensorops/" + name, std::move(run)};
}

}  // namespace

std::vector<Case> tensorops_cases() {
  std::vector<Case> cases;

  cases.push_back(feature("matmul_device_slices", [](const std::string& variant) {
    const int M = 20, N = 40, K = 48;  // edge tiles in M (16) and N (32)
    const std::vector<float> a = pattern(size_t(M * K), 7, 11, -5.0f, 0.25f);
    const std::vector<float> w = pattern(size_t(N * K), 5, 13, -6.0f, 0.5f);
    std::vector<float> want(size_t(M * N));
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += a[size_t(m * K + k)] * w[size_t(n * K + k)];
        want[size_t(m * N + n)] = s;
      }
    auto plan = plan_of("tops_matmul_device", 2, 2, 64, {{0, Arg::X}, {1, Arg::WCodes}, {2, Arg::Y}, {3, Arg::Params}});
    const int32_t shape[4] = {M, N, K, 0};
    plan.params.assign(reinterpret_cast<const uint8_t*>(shape), reinterpret_cast<const uint8_t*>(shape) + 16);
    return run_plan_case("harness", plan, variant, {{Arg::X, to_bytes(a)}, {Arg::WCodes, to_bytes(w)}},
                         {{Arg::Y, want.size() * 4}},
                         [&](const std::map<Arg, Bytes>& out) { return near(from_bytes<float>(out.at(Arg::Y)), want); });
  }));

  cases.push_back(feature("reduce_rows_map_iterator", [](const std::string& variant) {
    // Rows 0..15 hold only negative values: a max with the default (sum) identity 0 would be wrong.
    std::vector<float> s = pattern(32 * 16, 7, 17, -8.0f, 0.375f);
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) s[size_t(r * 16 + c)] = -1.0f - std::fabs(s[size_t(r * 16 + c)]);
    std::vector<float> want_p(32 * 16), want_max(32);
    for (int r = 0; r < 32; ++r) {
      float mx = -INFINITY;
      for (int c = 0; c < 16; ++c) mx = std::max(mx, s[size_t(r * 16 + c)]);
      want_max[size_t(r)] = mx;
      for (int c = 0; c < 16; ++c) want_p[size_t(r * 16 + c)] = std::exp(s[size_t(r * 16 + c)] - mx);
    }
    const auto plan = plan_of("tops_row_softmax", 1, 1, 128, {{0, Arg::X}, {1, Arg::Y}, {2, Arg::Scales}});
    return run_plan_case("harness", plan, variant, {{Arg::X, to_bytes(s)}},
                         {{Arg::Y, want_p.size() * 4}, {Arg::Scales, want_max.size() * 4}},
                         [&](const std::map<Arg, Bytes>& out) {
                           Comparison c = near(from_bytes<float>(out.at(Arg::Scales)), want_max, 0);
                           return c.ok ? near(from_bytes<float>(out.at(Arg::Y)), want_p) : c;
                         });
  }));

  cases.push_back(feature("left_input_reuse", [](const std::string& variant) {
    const std::vector<float> a = pattern(16 * 32, 7, 11, -5.0f, 0.25f);
    const std::vector<float> b1 = pattern(32 * 32, 5, 13, -6.0f, 0.125f);
    const std::vector<float> b2 = pattern(32 * 16, 3, 7, -3.0f, 0.5f);
    std::vector<float> c1(16 * 32), want(16 * 16);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 32; ++n) {
        float s = 0.0f;
        for (int k = 0; k < 32; ++k) s += a[size_t(m * 32 + k)] * b1[size_t(k * 32 + n)];
        c1[size_t(m * 32 + n)] = s;
      }
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        float s = 0.0f;
        for (int k = 0; k < 32; ++k) s += c1[size_t(m * 32 + k)] * b2[size_t(k * 16 + n)];
        want[size_t(m * 16 + n)] = s;
      }
    const char* env = std::getenv("MTOH_COOP_LEFT_COMPATIBLE");
    const int32_t want_path = env && env[0] == '0' ? 0 : 1;
    const auto plan = plan_of("tops_left_input", 1, 1, 32,
                              {{0, Arg::X}, {1, Arg::WCodes}, {2, Arg::WScales}, {3, Arg::Y}, {4, Arg::Scales}});
    return run_plan_case("harness", plan, variant,
                         {{Arg::X, to_bytes(a)}, {Arg::WCodes, to_bytes(b1)}, {Arg::WScales, to_bytes(b2)}},
                         {{Arg::Y, want.size() * 4}, {Arg::Scales, 4}}, [&](const std::map<Arg, Bytes>& out) {
                           Comparison c = near(from_bytes<float>(out.at(Arg::Y)), want);
                           const int32_t path = from_bytes<int32_t>(out.at(Arg::Scales))[0];
                           if (c.ok && path != want_path) {
                             c.ok = false;
                             c.mismatches = 1;
                             c.first_mismatch = "took the " + std::string(path ? "direct" : "threadgroup") +
                                                " path; is_compatible_as_left_input should have answered " +
                                                (want_path ? "true" : "false");
                           }
                           return c;
                         });
  }));

  const Bytes zeros(64 * 64 * 4, 0);
  cases.push_back(catches_misuse("tensorops_invalid_element",
                         plan_of("tops_misuse_invalid_element", 1, 1, 32, {{0, Arg::Y}}), {}, {{Arg::Y, 16 * 16 * 4}}));
  cases.push_back(catches_misuse("tensorops_invalid_element",
                         plan_of("tops_misuse_past_capacity", 1, 1, 32, {{0, Arg::Y}}), {}, {{Arg::Y, 16 * 16 * 4}}));
  cases.push_back(catches_misuse("tensorops_constraint", plan_of("tops_misuse_k_mismatch", 1, 1, 32, {{0, Arg::X}, {1, Arg::Y}}),
                         {{Arg::X, zeros}}, {{Arg::Y, 16 * 16 * 4}}));
  {
    Case c = catches_misuse("tensorops_constraint", plan_of("tops_misuse_static_k", 1, 1, 32, {{0, Arg::X}, {1, Arg::Y}}),
                    {{Arg::X, zeros}}, {{Arg::Y, 16 * 16 * 4}});
    cases.push_back(c);
  }
  cases.push_back(catches_misuse("tensor_slice", plan_of("tops_misuse_slice", 1, 1, 32, {{0, Arg::X}, {1, Arg::Y}}),
                         {{Arg::X, zeros}}, {{Arg::Y, 4}}));
  cases.push_back(catches_misuse("divergent_simdgroup_matrix",
                         plan_of("tops_misuse_divergent_run", 1, 1, 32, {{0, Arg::X}, {1, Arg::Y}}), {{Arg::X, zeros}},
                         {{Arg::Y, 16 * 16 * 4}}));
  {
    // execution_simdgroups<2> dispatched with one SIMD-group.
    auto plan = plan_of("tops_matmul_device", 1, 1, 32, {{0, Arg::X}, {1, Arg::WCodes}, {2, Arg::Y}, {3, Arg::Params}});
    const int32_t shape[4] = {16, 32, 32, 0};
    plan.params.assign(reinterpret_cast<const uint8_t*>(shape), reinterpret_cast<const uint8_t*>(shape) + 16);
    cases.push_back(catches_misuse("tensorops_scope", plan, {{Arg::X, zeros}, {Arg::WCodes, zeros}}, {{Arg::Y, 16 * 32 * 4}}));
  }
  return cases;
}

}  // namespace mtoh_driver
