// Prints, as JSON, the dispatch geometry the backend-neutral plans (native/core/dispatch_plan.h)
// give the kernel cost report's reference shapes: the same plans the Metal host encodes and the
// MSL harness runs. Built and run by scripts/report-kernels.mjs on the host; reads nothing.
//
// Input (argv): "linear <format> <x dtype> <M> <N> <K> <cores>" or "attention <q dtype> <dense|mxfp8>
// <B> <Hq> <Hkv> <Lq> <Lk> <D> <cores>", one shape per argument group, separated by "--"; cores is
// the GPU's core count of the DeviceProfile the plan gets (the linear plans read none). Output: a JSON array, per shape its passes with library,
// kernel, threadgroups (x * y * z) and threads per threadgroup.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/dispatch_plan.h"
#include "core/formats.h"

namespace {

using mto::DType;
using mto::Format;
using mto::Tier;

void print_pass(const mto::plan::Dispatch& d, bool last) {
  const unsigned long long groups = 1ull * d.threadgroups[0] * d.threadgroups[1] * d.threadgroups[2];
  const unsigned threads = d.threads_per_threadgroup[0] * d.threads_per_threadgroup[1] * d.threads_per_threadgroup[2];
  std::printf("{\"library\":\"%s\",\"kernel\":\"%s\",\"grid\":[%u,%u,%u],\"threadgroups\":%llu,\"threads\":%u}%s",
              d.library.c_str(), d.kernel.c_str(), d.threadgroups[0], d.threadgroups[1], d.threadgroups[2], groups,
              threads, last ? "" : ",");
}

Format format_named(const std::string& name) {
  Format f;
  if (mto::parse_format(name, &f)) return f;
  std::fprintf(stderr, "plans: unknown format %s\n", name.c_str());
  std::exit(2);
}

DType dtype_named(const std::string& name) {
  if (name == "f32") return DType::Float32;
  if (name == "f16") return DType::Float16;
  std::fprintf(stderr, "plans: unknown dtype %s\n", name.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::vector<std::string>> shapes(1);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) shapes.emplace_back();
    else shapes.back().push_back(argv[i]);
  }
  std::printf("[");
  for (size_t s = 0; s < shapes.size(); ++s) {
    const std::vector<std::string>& a = shapes[s];
    auto num = [&](size_t i) { return std::atoll(a.at(i).c_str()); };
    std::printf("{\"passes\":[");
    if (a.at(0) == "linear") {
      const Format f = format_named(a.at(1));
      const DType x = dtype_named(a.at(2));
      const int block = mto::format_info(f).affine ? 64 : 32;
      print_pass(mto::plan::plan_linear(f, block, x, x, num(3), num(4), num(5), false, Tier::Simdgroup), true);
    } else {
      const DType q = dtype_named(a.at(1));
      mto::AttentionParams p;
      p.B = num(3);
      p.Hq = num(4);
      p.Hkv = num(5);
      p.Lq = num(6);
      p.Lk = num(7);
      p.D = num(8);
      p.scale = 1.0f;
      const mto::plan::AttentionPlan plan =
          mto::plan::plan_attention(p, q, q, a.at(2) == "mxfp8", Format::MXFP8_E4M3, DType::Bool, Tier::Simdgroup,
                                    mto::DeviceProfile{int(num(9)), 0});
      for (size_t i = 0; i < plan.passes.size(); ++i) print_pass(plan.passes[i], i + 1 == plan.passes.size());
    }
    std::printf("]}%s", s + 1 == shapes.size() ? "" : ",");
  }
  std::printf("]\n");
  return 0;
}
