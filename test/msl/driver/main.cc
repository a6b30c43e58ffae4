// The MSL suite driver: runs the kernels of shaders/ in the harness through the dispatch plans and
// prints one JSON document with a result per case (test/msl/msl.test.ts reads it).
//
//   msl-driver [--variant NAME] [--filter TEXT[,TEXT...]] [--limits MS[,MS...]] [--jobs N] [--fail-fast]
//              [--list]
// --variant runs a planted-fault build of the kernels (test/msl/faults/faults.json); --filter
// keeps the cases whose name contains any of the texts, in the order the texts are given;
// --fail-fast starts no case after one has failed (a mutant needs one failure, not all of them:
// test/msl/mutants.mjs), and reports only the cases that ran. --limits gives each filter's cases a
// time (milliseconds; 0: none): a case past it is reported as failed ("timeout") with the cases
// done, and the driver exits at once (a mutant whose loop never ends costs its case's limit, not
// the time-out of a whole batch of cases). Exit status 0 when every case passed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cases.h"
#include "launch.h"
#include "core/error.h"

namespace {

using Clock = std::chrono::steady_clock;

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

// What one worker is running: the case's index (SIZE_MAX: none) and when it started.
struct Running {
  std::atomic<size_t> index{SIZE_MAX};
  std::atomic<int64_t> since_ns{0};
};

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  using namespace mtoh_driver;
  std::string variant;
  std::vector<std::string> filters, limit_texts;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool list = false, fail_fast = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--variant" && i + 1 < argc) variant = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filters = split(argv[++i]);
    else if (a == "--limits" && i + 1 < argc) limit_texts = split(argv[++i]);
    else if (a == "--jobs" && i + 1 < argc) jobs = unsigned(std::max(1, std::atoi(argv[++i])));
    else if (a == "--fail-fast") fail_fast = true;
    else if (a == "--list") list = true;
    else {
      std::fprintf(stderr, "usage: %s [--variant NAME] [--filter TEXT[,TEXT...]] [--limits MS[,MS...]] [--jobs N] [--fail-fast] [--list]\n", argv[0]);
      return 2;
    }
  }
  if (!limit_texts.empty() && limit_texts.size() != filters.size()) {
    std::fprintf(stderr, "--limits: %zu times for %zu filters; give one per filter\n", limit_texts.size(), filters.size());
    return 2;
  }

  // The kept cases, in the order of the first filter each matches (registration order within).
  std::vector<std::vector<Case>> by_filter(filters.size() + 1);
  std::vector<double> limit_of_filter(filters.size() + 1, 0.0);
  for (size_t f = 0; f < limit_texts.size(); ++f) limit_of_filter[f] = std::atof(limit_texts[f].c_str());
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
  std::vector<double> limit_ms;
  for (size_t f = 0; f < by_filter.size(); ++f) {
    cases.insert(cases.end(), by_filter[f].begin(), by_filter[f].end());
    limit_ms.insert(limit_ms.end(), by_filter[f].size(), limit_of_filter[f]);
  }
  if (list) {
    for (const auto& c : cases) std::printf("%s\n", c.name.c_str());
    return 0;
  }

  const auto t0 = Clock::now();
  std::vector<CaseResult> results(cases.size());
  std::vector<char> ran(cases.size(), 0);
  std::mutex results_lock;  // results and ran, between the workers and the watchdog
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const unsigned workers = unsigned(std::min<size_t>(jobs, cases.size()));
  std::vector<std::unique_ptr<Running>> running;
  for (unsigned j = 0; j < workers; ++j) running.push_back(std::make_unique<Running>());

  auto print_report = [&]() -> int {
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    size_t passed = 0, run = 0;
    std::printf("{\"variant\": \"%s\", \"seconds\": %.3f, \"cases\": [", variant.c_str(), seconds);
    for (size_t i = 0; i < results.size(); ++i) {
      if (!ran[i]) continue;
      passed += results[i].ok ? 1 : 0;
      std::printf("%s\n  %s", run++ ? "," : "", to_json(results[i]).c_str());
    }
    std::printf("\n], \"passed\": %zu, \"failed\": %zu}\n", passed, run - passed);
    std::fflush(stdout);
    return passed == run && run == cases.size() ? 0 : 1;
  };

  auto worker = [&](unsigned slot) {
    for (size_t i; !(fail_fast && failed) && (i = next++) < cases.size();) {
      running[slot]->since_ns = now_ns();
      running[slot]->index = i;
      const auto start = Clock::now();
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
      r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      running[slot]->index = SIZE_MAX;
      if (!r.ok) failed = true;
      std::lock_guard<std::mutex> hold(results_lock);
      results[i] = std::move(r);
      ran[i] = 1;
    }
  };

  // The watchdog: a case past its limit cannot be stopped (it may be a kernel's endless loop on
  // a fiber), so the report is printed as it stands, that case failed, and the process ends.
  std::atomic<bool> done{false};
  std::thread watchdog;
  if (!limit_texts.empty()) {
    watchdog = std::thread([&] {
      while (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        for (const auto& w : running) {
          const size_t i = w->index;
          if (i == SIZE_MAX || limit_ms[i] <= 0) continue;
          const double ms = double(now_ns() - w->since_ns) / 1e6;
          if (ms <= limit_ms[i]) continue;
          std::lock_guard<std::mutex> hold(results_lock);
          CaseResult r;
          r.ok = false;
          r.name = cases[i].name;
          r.error_kind = "timeout";
          r.message = "still running after " + std::to_string(int64_t(ms)) + " ms (limit " +
                      std::to_string(int64_t(limit_ms[i])) + " ms)";
          r.ms = ms;
          results[i] = std::move(r);
          ran[i] = 1;
          print_report();
          std::_Exit(1);
        }
      }
    });
  }
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < workers; ++j) threads.emplace_back(worker, j);
  for (auto& t : threads) t.join();
  done = true;
  if (watchdog.joinable()) watchdog.join();
  return print_report();
}
