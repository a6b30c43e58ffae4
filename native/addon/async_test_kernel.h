// The async test backend's stand-in for Metal's side of users' kernels (core/user_kernel.h), so
// that Linux tests drive what the metal backend's users' kernels go through outside Metal itself:
// lib/'s binding of every [[buffer(n)]] (kernels/runners.ts metalRunner), the addon's
// compileKernel / runKernel (ops_kernel.cc), the stream, and output init fills. Never chosen by
// open().
#pragma once
#include <string>

#include "core/backend.h"

namespace mto::addon {

// What a stand-in program allows per threadgroup (a pipeline's maxTotalThreadsPerThreadgroup).
constexpr uint32_t kTestKernelMaxThreads = 256;

// "Compiles" on a thread of its own, as Metal's completion handlers come: a source containing
// `#error` fails with E_KERNEL and a message in the compiler's format at the user's line
// (NAME.metal:LINE); any other source gives a program.
void test_compile_user_kernel(const std::string& name, const std::string& source, UserKernelCompiled done);

// "Runs" a launch: fills the outputs that have an init value, then writes a record of the launch
// into the buffer of the last argument bound to a buffer (the last output), as int32: the 3
// threadgroup counts, the 3 threadgroup sizes, the number of arguments, then per argument its
// index, 0 for a buffer or 1 for bytes, its length in bytes and its first 4 bytes (zero-padded).
void test_run_user_kernel(const UserKernelLaunch& launch);

}  // namespace mto::addon
