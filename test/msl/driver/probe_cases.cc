// The tier probes open() compiles (native/metal/probe_sources.h, extracted by test/msl/build.mjs
// as libraries probe_simdgroup, probe_tensorops, probe_tensorops_mx at their MSL versions): each
// must build against the shim, which holds them to the rules the kernels follow (descriptor
// shapes, scopes, identities, MSL 4.1 for cooperative left inputs), and run without a harness
// report, every output element written and finite: "probe/<name>". On a Mac the probe is only
// compiled into a pipeline; running it here checks it uses each API the way the kernels do.
#include <cmath>

#include "cases.h"
#include "core/scale_plane.h"

namespace mtoh_driver {
namespace {

using mto::plan::Arg;

Case probe_case(const char* library, uint32_t threads, std::vector<mto::plan::BufferSlot> slots,
                std::map<Arg, Bytes> inputs, size_t out_floats, std::vector<mto::plan::TensorSlot> tensors = {}) {
  mto::plan::Dispatch d;
  d.library = library;
  d.kernel = "probe";
  d.threads_per_threadgroup[0] = threads;
  d.buffers = std::move(slots);
  d.tensors = std::move(tensors);
  return {std::string("probe/") + library, [=](const std::string& variant) {
            return run_plan_case("probe", d, variant, inputs, {{Arg::Y, out_floats * 4}},
                                 [=](const std::map<Arg, Bytes>& out) {
                                   Comparison c;
                                   const Bytes& y = out.at(Arg::Y);
                                   for (size_t i = 0; i < out_floats; ++i) {
                                     float v;
                                     std::memcpy(&v, &y[i * 4], 4);
                                     if (std::isfinite(v)) continue;
                                     if (c.mismatches++ == 0)
                                       c.first_mismatch = "output element " + std::to_string(i) + " is " +
                                                          std::to_string(v) + ", not a finite value";
                                   }
                                   c.ok = c.mismatches == 0;
                                   return c;
                                 });
          }};
}

// n 16-bit values of a small pattern, as float16 (half) or bfloat16 bits.
Bytes small_values(size_t n, bool bfloat) {
  Bytes b(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const float f = (float(int(i % 7)) - 3.0f) * 0.125f;
    uint16_t bits;
    if (bfloat) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      bits = uint16_t(u >> 16);  // exact: these values need 8 bits of mantissa at most
    } else {
      const _Float16 h = _Float16(f);
      std::memcpy(&bits, &h, 2);
    }
    std::memcpy(&b[i * 2], &bits, 2);
  }
  return b;
}

}  // namespace

std::vector<Case> probe_cases() {
  std::vector<Case> cases;
  // simdgroup: a, b (half 8x8), scale (bfloat), c (float 8x8).
  cases.push_back(probe_case("probe_simdgroup", 32,
                             {{0, Arg::A}, {1, Arg::B}, {2, Arg::Scales}, {3, Arg::Y}},
                             {{Arg::A, small_values(64, false)}, {Arg::B, small_values(64, false)},
                              {Arg::Scales, small_values(1, true)}},
                             64));
  // tensorops: half [2][16 x 32], bfloat [2][16 x 32], out 3136 floats.
  cases.push_back(probe_case("probe_tensorops", 128, {{0, Arg::A}, {1, Arg::B}, {2, Arg::Y}},
                             {{Arg::A, small_values(1024, false)}, {Arg::B, small_values(1024, true)}}, 3136));
  // tensorops-mx: x half [16 x 256], codes [16 x 256] bytes (small finite codes in every format),
  // scales [16 x 8] (E8M0 127 = 1), the same planes as an E4M3 tensor with its scale plane at
  // buffer 4 (as qlinear_tensorops_mx binds its weight), out 3072 floats.
  Bytes codes(16 * 256), scales(16 * 8, 127);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = uint8_t(i % 5);
  mto::plan::TensorSlot th;
  th.index = 4;
  th.data = Arg::Codes;
  th.scales = Arg::Scales;
  th.data_type = int(mto::ScalePlaneData::Fp8E4M3);
  th.dims[0] = 256;
  th.dims[1] = 16;
  th.strides[0] = 1;
  th.strides[1] = 256;
  cases.push_back(probe_case("probe_tensorops_mx", 128,
                             {{0, Arg::X}, {1, Arg::Codes}, {2, Arg::Scales}, {3, Arg::Y}},
                             {{Arg::X, small_values(16 * 256, false)}, {Arg::Codes, codes}, {Arg::Scales, scales}},
                             3072, {th}));
  return cases;
}

}  // namespace mtoh_driver
