// Tests of the harness itself (test/msl/selftest/selftest.metal): shim features against known
// answers, and misuse that must be reported with a given kind. A misuse case passes when the
// harness reports exactly that kind (in either pass).
#include <cmath>
#include <cstring>

#include "cases.h"

namespace mtoh_driver {
namespace {

using mto::plan::Arg;

mto::plan::Dispatch selftest_plan(const char* kernel, uint32_t groups, uint32_t threads,
                                  std::vector<mto::plan::BufferSlot> buffers) {
  mto::plan::Dispatch d;
  d.library = "selftest";
  d.kernel = kernel;
  d.threadgroups[0] = groups;
  d.threads_per_threadgroup[0] = threads;
  d.buffers = std::move(buffers);
  return d;
}

template <class T>
Comparison expect_values(const Bytes& got, const std::vector<T>& want) {
  Comparison c;
  for (size_t i = 0; i < want.size(); ++i) {
    T g;
    std::memcpy(&g, got.data() + i * sizeof(T), sizeof(T));
    if (g == want[i]) continue;
    if (c.mismatches++ == 0)
      c.first_mismatch = "element " + std::to_string(i) + ": got " + std::to_string(double(g)) +
                         ", expected " + std::to_string(double(want[i]));
  }
  c.ok = c.mismatches == 0;
  return c;
}

Case feature(const std::string& name, std::function<CaseResult(const std::string&)> run) {
  return {"harness/" + name, std::move(run)};
}

}  // namespace

std::vector<Case> selftest_cases() {
  std::vector<Case> cases;
  cases.push_back(feature("simd_functions", [](const std::string& variant) {
    std::vector<float> want;
    for (int s = 0; s < 2; ++s)
      for (int l = 0; l < 32; ++l) {
        const float v = float(l + 1);
        want.insert(want.end(), {528.0f, 32.0f, 1.0f, float(l * (l + 1) / 2), float(32 - l), float((l ^ 1) + 1),
                                 l + 3 < 32 ? v + 3 : v, l >= 3 ? v - 3 : v, 8.0f, 496.0f, 1056.0f, 1.0f});
      }
    const auto plan = selftest_plan("simd_functions", 1, 64, {{0, Arg::Y}});
    return run_plan_case("harness", plan, variant, {}, {{Arg::Y, want.size() * 4}},
                         [&](const std::map<Arg, Bytes>& out) { return expect_values(out.at(Arg::Y), want); });
  }));
  cases.push_back(feature("threadgroup_sum", [](const std::string& variant) {
    std::vector<uint32_t> want;
    for (uint32_t g = 0; g < 3; ++g) want.push_back(128 * 128 * g + 127 * 128 / 2);
    const auto plan = selftest_plan("threadgroup_sum", 3, 128, {{0, Arg::Y}});
    return run_plan_case("harness", plan, variant, {}, {{Arg::Y, want.size() * 4}},
                         [&](const std::map<Arg, Bytes>& out) { return expect_values(out.at(Arg::Y), want); });
  }));
  cases.push_back(feature("simdgroup_matrix", [](const std::string& variant) {
    std::vector<float> a(64), b(64), want(64);
    for (int i = 0; i < 64; ++i) {
      a[size_t(i)] = float((i * 7) % 11) - 5.0f;
      b[size_t(i)] = float((i * 5) % 13) - 6.0f;
    }
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        float s = r == c ? 1.0f : 0.0f;
        for (int k = 0; k < 8; ++k) s += a[size_t(r * 8 + k)] * b[size_t(c * 8 + k)];
        want[size_t(r * 8 + c)] = s;
      }
    const auto plan = selftest_plan("matrix_ops", 1, 32, {{0, Arg::X}, {1, Arg::WCodes}, {2, Arg::Y}});
    return run_plan_case("harness", plan, variant, {{Arg::X, to_bytes(a)}, {Arg::WCodes, to_bytes(b)}},
                         {{Arg::Y, 256}},
                         [&](const std::map<Arg, Bytes>& out) { return expect_values(out.at(Arg::Y), want); });
  }));
  cases.push_back(feature("vectors", [](const std::string& variant) {
    const std::vector<float> want = {21.0f, 1.0f, 3.0f, 9.0f, 12.0f};
    const auto plan = selftest_plan("vectors", 1, 1, {{0, Arg::Y}});
    return run_plan_case("harness", plan, variant, {}, {{Arg::Y, want.size() * 4}},
                         [&](const std::map<Arg, Bytes>& out) { return expect_values(out.at(Arg::Y), want); });
  }));

  const std::map<Arg, size_t> out256 = {{Arg::Y, 256 * 4}};
  cases.push_back(catches_misuse("divergent_simd", selftest_plan("misuse_divergent_simd", 1, 32, {{0, Arg::Y}}), {}, out256));
  cases.push_back(catches_misuse("divergent_simdgroup_matrix",
                         selftest_plan("misuse_divergent_matrix", 1, 32, {{0, Arg::Y}}), {}, out256));
  cases.push_back(catches_misuse("divergent_simdgroup_matrix",
                         selftest_plan("misuse_matrix_pointer", 1, 32, {{0, Arg::X}, {1, Arg::Y}}),
                         {{Arg::X, Bytes(65 * 4, 0)}}, {{Arg::Y, 64 * 4}}));
  cases.push_back(catches_misuse("threadgroup_memory_limit",
                         selftest_plan("misuse_threadgroup_limit", 1, 64, {{0, Arg::Y}}), {}, out256));
  cases.push_back(catches_misuse("simd_inactive_lane", selftest_plan("misuse_inactive_lane", 1, 32, {{0, Arg::Y}}), {}, out256));
  cases.push_back(catches_misuse("simd_nonuniform_argument",
                         selftest_plan("misuse_nonuniform_delta", 1, 32, {{0, Arg::Y}}), {}, out256));
  cases.push_back(catches_misuse("out_of_bounds", selftest_plan("misuse_underflow", 1, 32, {{0, Arg::X}, {1, Arg::Y}}),
                         {{Arg::X, Bytes(32 * 4, 0)}}, {{Arg::Y, 32 * 4}}));
  cases.push_back(catches_misuse("out_of_bounds", selftest_plan("misuse_threadgroup_overrun", 1, 128, {{0, Arg::Y}}), {},
                         {{Arg::Y, 128 * 4}}));
  {
    auto plan = selftest_plan("misuse_matrix_past_array", 1, 32, {{0, Arg::Y}, {1, Arg::Params}});
    plan.params = {2, 0, 0, 0};  // n = 2: m[2] is one past the end
    cases.push_back(catches_misuse("simdgroup_matrix_bounds", plan, {}, out256));
  }
  cases.push_back(catches_misuse("divergent_simdgroup_matrix",
                         selftest_plan("misuse_missing_simd_barrier", 1, 32, {{0, Arg::Y}}), {}, out256));
  // A declared buffer the plan leaves unbound, and a constant argument bound with too few bytes.
  cases.push_back(catches_misuse("binding", selftest_plan("misuse_params_size", 1, 1, {{1, Arg::Y}}), {}, {{Arg::Y, 4}}));
  {
    auto plan = selftest_plan("misuse_params_size", 1, 1, {{0, Arg::Params}, {1, Arg::Y}});
    plan.params.assign(8, 0);
    Case c = catches_misuse("binding", plan, {}, {{Arg::Y, 4}});
    c.name += "/params_too_small";
    cases.push_back(c);
  }
  // [[max_total_threads_per_threadgroup(32)]]: 32 threads run, 64 are refused as Metal refuses them.
  cases.push_back(feature("thread_limit_kept", [](const std::string& variant) {
    std::vector<uint32_t> want(32);
    for (uint32_t i = 0; i < 32; ++i) want[i] = i;
    const auto plan = selftest_plan("misuse_thread_limit", 1, 32, {{0, Arg::Y}});
    return run_plan_case("harness", plan, variant, {}, {{Arg::Y, 32 * 4}},
                         [&](const std::map<Arg, Bytes>& out) { return expect_values(out.at(Arg::Y), want); });
  }));
  cases.push_back(catches_misuse("binding", selftest_plan("misuse_thread_limit", 1, 64, {{0, Arg::Y}}), {}, {{Arg::Y, 64 * 4}}));
  return cases;
}

}  // namespace mtoh_driver
