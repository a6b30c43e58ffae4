// The MSL suite driver: runs the kernels of shaders/ in the harness through the dispatch plans and
// prints one JSON document with a result per case (test/msl/msl.test.ts reads it).
//
//   msl-driver [--variant NAME] [--filter TEXT[,TEXT...]] [--jobs N] [--fail-fast] [--list]
// --variant runs a planted-fault build of the kernels (test/msl/faults/faults.json); --filter
// keeps the cases whose name contains any of the texts, in the order the texts are given;
// --fail-fast starts no case after one has failed (a mutant needs one failure, not all of them:
// test/msl/mutants.mjs), and reports only the cases that ran. Exit status 0 when every case passed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "cases.h"
#include "launch.h"
#include "core/error.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mtoh_driver;
  std::string variant;
  std::vector<std::string> filters;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool list = false, fail_fast = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--variant" && i + 1 < argc) variant = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filters = split(argv[++i]);
    else if (a == "--jobs" && i + 1 < argc) jobs = unsigned(std::max(1, std::atoi(argv[++i])));
    else if (a == "--fail-fast") fail_fast = true;
    else if (a == "--list") list = true;
    else {
      std::fprintf(stderr, "usage: %s [--variant NAME] [--filter TEXT[,TEXT...]] [--jobs N] [--fail-fast] [--list]\n", argv[0]);
      return 2;
    }
  }

  // The kept cases, in the order of the first filter each matches (registration order within).
  std::vector<std::vector<Case>> by_filter(filters.size() + 1);
  for (auto& group : {selftest_cases(), tensorops_cases(), tensor_handle_cases(), table_cases(), plan_cases(), quantize_cases(), linear_cases(),
                       attention_cases(), attention_tensorops_cases(), attention_tensorops_mx_cases(), matmul_cases(), linear_mx_cases(), probe_cases(),
                       elementwise_cases(), norm_cases(), rope_cases(), softmax_cases(), layout_cases(),
                       pick_cases(), embedding_cases(), grouped_linear_cases(), group_rows_cases()})
    for (const auto& c : group) {
      size_t f = 0;
      while (f < filters.size() && c.name.find(filters[f]) == std::string::npos) ++f;
      if (filters.empty() || f < filters.size()) by_filter[f].push_back(c);
    }
  std::vector<Case> cases;
  for (auto& b : by_filter) cases.insert(cases.end(), b.begin(), b.end());
  if (list) {
    for (const auto& c : cases) std::printf("%s\n", c.name.c_str());
    return 0;
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<CaseResult> results(cases.size());
  std::vector<char> ran(cases.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (size_t i; !(fail_fast && failed) && (i = next++) < cases.size();) {
      const auto start = std::chrono::steady_clock::now();
      mtoh::take_libraries_used();  // what an earlier case on this thread left
      CaseResult r;
      try {
        r = cases[i].run(variant);
      } catch (const mto::Error& e) {
        r.ok = false;
        r.error_kind = "plan";
        r.message = std::string(e.code()) + ": " + e.what();
      } catch (const std::exception& e) {
        r.ok = false;
        r.error_kind = "exception";
        r.message = e.what();
      }
      r.name = cases[i].name;
      r.libraries = mtoh::take_libraries_used();
      r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!r.ok) failed = true;
      results[i] = std::move(r);
      ran[i] = 1;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < std::min<size_t>(jobs, cases.size()); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  size_t passed = 0, run = 0;
  std::printf("{\"variant\": \"%s\", \"seconds\": %.3f, \"cases\": [", variant.c_str(), seconds);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!ran[i]) continue;
    passed += results[i].ok ? 1 : 0;
    std::printf("%s\n  %s", run++ ? "," : "", to_json(results[i]).c_str());
  }
  std::printf("\n], \"passed\": %zu, \"failed\": %zu}\n", passed, run - passed);
  return passed == run && run == cases.size() ? 0 : 1;
}
