// The async test backend's users' kernels (async_test_kernel.h).
#include "async_test_kernel.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"

namespace mto::addon {

void test_compile_user_kernel(const std::string& name, const std::string& source, UserKernelCompiled done) {
  std::thread([name, source, done] {
    // The line of the `#error` in the body: lines after the body's `#line 1 "NAME.metal"`.
    const std::string marker = "#line 1 \"" + name + ".metal\"\n";
    const size_t body = source.find(marker), at = source.find("#error");
    if (at != std::string::npos) {
      int line = 1;
      for (size_t i = body == std::string::npos ? 0 : body + marker.size(); i < at; ++i) line += source[i] == '\n';
      done(nullptr, OpStatus{code::Kernel, "kernel '" + name + "' does not compile:\n" + name + ".metal:" +
                                               std::to_string(line) + ":3: error: #error (the test backend's compiler)"});
      return;
    }
    auto program = std::make_shared<UserKernelProgram>();
    program->max_threads = kTestKernelMaxThreads;
    program->simd_width = 32;
    done(std::move(program), OpStatus{});
  }).detach();
}

void test_run_user_kernel(const UserKernelLaunch& launch) {
  for (const UserKernelArg& a : launch.args) {
    if (a.fill.empty() || !a.buffer) continue;
    uint8_t* p = static_cast<uint8_t*>(a.buffer->data());
    for (size_t at = 0; at + a.fill.size() <= a.buffer->bytes(); at += a.fill.size()) std::memcpy(p + at, a.fill.data(), a.fill.size());
  }
  std::vector<int32_t> record;
  for (uint32_t v : launch.threadgroups) record.push_back(int32_t(v));
  for (uint32_t v : launch.threads) record.push_back(int32_t(v));
  record.push_back(int32_t(launch.args.size()));
  const UserKernelArg* last = nullptr;
  for (const UserKernelArg& a : launch.args) {
    if (a.scaled) {
      // A scale-plane tensor: kind 2, the codes' bytes and the scale plane's.
      record.insert(record.end(), {int32_t(a.index), 2, int32_t(a.scaled->codes->bytes()), int32_t(a.scaled->scales->bytes())});
      continue;
    }
    const uint8_t* data = a.buffer ? static_cast<const uint8_t*>(a.buffer->data()) : a.bytes.data();
    const size_t bytes = a.buffer ? a.buffer->bytes() : a.bytes.size();
    int32_t first = 0;
    std::memcpy(&first, data, bytes < 4 ? bytes : 4);
    record.insert(record.end(), {int32_t(a.index), a.buffer ? 0 : 1, int32_t(bytes), first});
    if (a.buffer) last = &a;
  }
  for (const UserKernelThreadgroupMemory& m : launch.threadgroup_memory) record.insert(record.end(), {int32_t(m.index), int32_t(m.bytes)});
  if (!last) return;
  std::memcpy(last->buffer->data(), record.data(), std::min(last->buffer->bytes(), record.size() * sizeof(int32_t)));
}

}  // namespace mto::addon
