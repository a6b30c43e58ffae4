// What crosses the boundary between host code and kernels, for both languages: fixed-width scalar
// types for parameter structs, and the macro that names a kernel instance in the Metal library.
//
// Parameter structs hold only 4-byte integers, so their layout is the same in MSL and in C++
// (each plan in native/core/plan/ static_asserts its size). Buffer indices are macros, not
// constants, so they expand to plain integer literals inside [[buffer(n)]].
#ifndef MTO_SHADERS_KERNEL_ABI_H
#define MTO_SHADERS_KERNEL_ABI_H

#if defined(__METAL_VERSION__)
#include <metal_stdlib>
typedef int mto_i32;
#else
#include <cstdint>
typedef std::int32_t mto_i32;
#endif

// MTO_KERNEL_INSTANCE("host_name", function, template arguments...) instantiates a templated
// [[kernel]] under the name the host asks the library for. The MSL-on-CPU harness (test/msl)
// compiles kernels as C++, where an explicit instantiation cannot carry attributes: there the
// shim's MTOH_KERNEL_INSTANCE instantiates the kernel and registers it under the same name.
//
// One kernel at a time: a library compiled with MTO_ONE_KERNEL defined instantiates none of its
// kernels; the host appends the one MTO_KERNEL_INSTANCE_ONE line it needs (the list:
// scripts/kernel-instances.mjs), so Metal generates code for that kernel alone
// (native/metal/shader_library.mm).
#if defined(MTOH_HARNESS)
#define MTO_KERNEL_INSTANCE_ONE(name, func, ...) MTOH_KERNEL_INSTANCE(name, func, __VA_ARGS__)
#else
#define MTO_KERNEL_INSTANCE_ONE(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#endif
#if defined(MTO_ONE_KERNEL)
#define MTO_KERNEL_INSTANCE(name, func, ...)
#else
#define MTO_KERNEL_INSTANCE(name, func, ...) MTO_KERNEL_INSTANCE_ONE(name, func, __VA_ARGS__)
#endif

// MTO_COST_LOOP(tag, elements, bytes), a statement at the top of a kernel's hot loop body, marks
// it for the kernel cost report (scripts/report-kernels.mjs): `elements` are the weight (or K/V)
// elements and `bytes` the bytes of device memory one lane handles per iteration, `tag` tells
// apart copies of one loop (qlinear_decode.h: the rows of x). It expands to nothing here, in
// Metal and in the harness; the report compiles the harness build for arm64 with the macro
// defined as an assembly comment that carries the three numbers.
#ifndef MTO_COST_LOOP
#define MTO_COST_LOOP(tag, elements, bytes)
#endif

#endif  // MTO_SHADERS_KERNEL_ABI_H
