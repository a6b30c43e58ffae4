// Host-bound tensor arguments (test/msl/selftest/tensor_handle_selftest.metal, MSL 4.1): a plan's
// tensor slot (dispatch_plan.h TensorSlot) reaches the kernel as a handle over its planes, with
// the descriptor the host made the MTLTensor with, and matmul2d reads it as it reads an inline
// view over the same planes (known answer, exact); a binding that does not match the kernel's
// declaration is reported as `binding`: a tensor where a pointer is declared, a plain buffer where
// a tensor is, another data type, no scale plane, other scale blocks, planes too short for the
// extents.
#include <cmath>
#include <cstring>

#include "cases.h"

namespace mtoh_driver {
namespace {

using mto::plan::Arg;

constexpr int kN = 32, kK = 128, kM = 16;

mto::plan::TensorSlot weight_slot(uint32_t index) {
  mto::plan::TensorSlot t;
  t.index = index;
  t.data_type = 142;  // MTLTensorDataTypeMetalFloat8E4M3
  t.dims[0] = kK;
  t.dims[1] = kN;
  t.strides[0] = 1;
  t.strides[1] = kK;
  return t;
}

mto::plan::Dispatch plan_of(const char* kernel, std::vector<mto::plan::BufferSlot> buffers,
                            std::vector<mto::plan::TensorSlot> tensors) {
  mto::plan::Dispatch d;
  d.library = "tensor_handle_selftest";
  d.kernel = kernel;
  d.threads_per_threadgroup[0] = 32;
  d.buffers = std::move(buffers);
  d.tensors = std::move(tensors);
  return d;
}

// E4M3 codes of exactly representable values and E8M0 scales around 1: every product and sum of
// the known answer is exact in float32.
struct Weight {
  Bytes codes, scales;
  std::vector<float> values;  // decoded and scaled, [N, K]
};

Weight make_weight() {
  const unsigned char code[5] = {0x00, 0x30, 0x38, 0x40, 0xB8};  // 0, 0.5, 1, 2, -1
  const float value[5] = {0.0f, 0.5f, 1.0f, 2.0f, -1.0f};
  Weight w;
  w.codes.resize(size_t(kN * kK));
  w.scales.resize(size_t(kN * kK / 32));
  w.values.resize(size_t(kN * kK));
  for (int b = 0; b < kN * kK / 32; ++b) w.scales[size_t(b)] = static_cast<unsigned char>(125 + (b * 7) % 5);
  for (int i = 0; i < kN * kK; ++i) {
    const int c = (i * 13 + i / 7) % 5;
    w.codes[size_t(i)] = code[c];
    w.values[size_t(i)] = value[c] * std::ldexp(1.0f, int(w.scales[size_t(i / 32)]) - 127);
  }
  return w;
}

Case known_answer() {
  return {"harness/tensor_handle/matmul_scale_plane", [](const std::string& variant) {
            const Weight w = make_weight();
            std::vector<float> xf(size_t(kM * kK));
            for (size_t i = 0; i < xf.size(); ++i) xf[i] = float(int((i * 5) % 9) - 4) * 0.25f;
            std::vector<_Float16> xh(xf.size());
            for (size_t i = 0; i < xf.size(); ++i) xh[i] = _Float16(xf[i]);
            std::vector<float> want(size_t(2 * kM * kN));
            for (int m = 0; m < kM; ++m)
              for (int n = 0; n < kN; ++n) {
                float s = 0.0f;
                for (int k = 0; k < kK; ++k) s += xf[size_t(m * kK + k)] * w.values[size_t(n * kK + k)];
                want[size_t(m * kN + n)] = want[size_t(kM * kN + m * kN + n)] = s;
              }
            const auto plan = plan_of("th_matmul", {{0, Arg::X}, {2, Arg::Codes}, {3, Arg::Scales}, {4, Arg::Y}},
                                      {weight_slot(1)});
            return run_plan_case("harness", plan, variant,
                                 {{Arg::X, to_bytes(xh)},
                                  {Arg::WCodes, w.codes},
                                  {Arg::WScales, w.scales},
                                  {Arg::Codes, w.codes},
                                  {Arg::Scales, w.scales}},
                                 {{Arg::Y, want.size() * 4}}, [&](const std::map<Arg, Bytes>& out) {
                                   Comparison c;
                                   std::vector<float> got(want.size());
                                   std::memcpy(got.data(), out.at(Arg::Y).data(), got.size() * 4);
                                   for (size_t i = 0; i < want.size(); ++i) {
                                     if (got[i] == want[i]) continue;
                                     if (c.mismatches++ == 0)
                                       c.first_mismatch = std::string(i < want.size() / 2 ? "tensor" : "inline view") +
                                                          " element " + std::to_string(i % (want.size() / 2)) +
                                                          ": got " + std::to_string(got[i]) + ", expected " +
                                                          std::to_string(want[i]);
                                   }
                                   c.ok = c.mismatches == 0;
                                   return c;
                                 });
          }};
}

// th_take with `edit` applied to its tensor slot (and the planes cut to `codes` / `scales` bytes).
Case binding_misuse(const std::string& what, void (*edit)(mto::plan::TensorSlot&), size_t codes = kN * kK,
                    size_t scales = kN * kK / 32) {
  mto::plan::TensorSlot t = weight_slot(0);
  edit(t);
  Case c = catches_misuse("binding", plan_of("th_take", {{1, Arg::Y}}, {t}),
                          {{Arg::WCodes, Bytes(codes, 0x38)}, {Arg::WScales, Bytes(scales, 127)}}, {{Arg::Y, 8}});
  c.name += "/" + what;
  return c;
}

}  // namespace

std::vector<Case> tensor_handle_cases() {
  std::vector<Case> cases;
  cases.push_back(known_answer());
  cases.push_back(binding_misuse("e5m2_bound_for_e4m3", [](mto::plan::TensorSlot& t) { t.data_type = 141; }));
  cases.push_back(binding_misuse("no_scale_plane", [](mto::plan::TensorSlot& t) { t.scale_type = 0; }));
  cases.push_back(binding_misuse("blocks_along_rows", [](mto::plan::TensorSlot& t) {
    t.block[0] = 1;
    t.block[1] = 32;
  }));
  cases.push_back(binding_misuse("short_data_plane", [](mto::plan::TensorSlot&) {}, kN * kK - 1));
  cases.push_back(binding_misuse("short_scale_plane", [](mto::plan::TensorSlot&) {}, kN * kK, kN * kK / 32 - 1));
  {
    // A plain buffer where the kernel declares a tensor.
    Case c = catches_misuse("binding", plan_of("th_take", {{0, Arg::WCodes}, {1, Arg::Y}}, {}),
                            {{Arg::WCodes, Bytes(kN * kK, 0)}}, {{Arg::Y, 8}});
    c.name += "/buffer_for_tensor";
    cases.push_back(c);
  }
  {
    // A tensor where the kernel declares a pointer.
    Case c = catches_misuse("binding", plan_of("th_pointer", {{1, Arg::Y}}, {weight_slot(0)}),
                            {{Arg::WCodes, Bytes(kN * kK, 0)}, {Arg::WScales, Bytes(kN * kK / 32, 127)}},
                            {{Arg::Y, 8}});
    c.name += "/tensor_for_pointer";
    cases.push_back(c);
  }
  return cases;
}

}  // namespace mtoh_driver
