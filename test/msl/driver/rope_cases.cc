// Rotary position embedding (shaders/rope.metal) against the cpu backend's (native/cpu/rope.cc,
// angles in double): neox and interleaved pairs, bhld and blhd layouts, float32/float16/bfloat16
// x, partial dims (features past dims pass through), positions from an offset (0 to 2^31 - 40)
// or an int32 tensor (up to 4096, and anywhere in int32, negative too), frequencies from base
// (10000, 500000) or an explicit float32 tensor. Tolerance 2e-5 (1 + |ref|) plus one unit in the
// last place for 16-bit y; the suite's measured worst ratios are in msl.test.ts's report (the
// angle is exact to ~1e-7 rad at any position: rope.metal's header). Also plan/rope.
#include <cmath>
#include <cstring>
#include <optional>

#include "cases.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/plan/rope.h"
#include "cpu/ops.h"
#include "data.h"
#include "model_data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;
using namespace model;

constexpr double kTolerance = 5e-6;

enum class Pos { Offset, Small, Wide };  // offset + l; positions in [0, 4096); anywhere in int32

struct RopeCase {
  DType dt;
  bool neox, blhd;
  int64_t B, H, L, D, dims;
  Pos pos = Pos::Offset;
  int64_t offset = 0;
  bool freqs = false;
  double base = 10000;
  bool edges = false;  // x holds 0, -0, +-1e30, +-inf, NaN
};

std::string case_name(const RopeCase& c) {
  std::string n = std::string("rope/") + (c.neox ? "neox/" : "interleaved/") + (c.blhd ? "blhd/" : "bhld/") + tag(c.dt) +
                  "/" + std::to_string(c.B) + "." + std::to_string(c.H) + "." + std::to_string(c.L) + "." +
                  std::to_string(c.D) + "/d" + std::to_string(c.dims);
  n += c.pos == Pos::Offset ? "/off" + std::to_string(c.offset) : c.pos == Pos::Small ? "/pos4096" : "/posint32";
  if (c.freqs) n += "/freqs";
  else if (c.base != 10000) n += "/base" + std::to_string(int64_t(c.base));
  if (c.edges) n += "/edges";
  return n;
}

CaseResult run_case(const RopeCase& c, const std::string& name, const std::string& variant) {
  const uint64_t seed = seed_of(name);
  const mto::Shape shape = c.blhd ? mto::Shape{c.B, c.L, c.H, c.D} : mto::Shape{c.B, c.H, c.L, c.D};
  const mto::Tensor x = tensor_of(data_with_extremes(mto::shape_numel(shape), seed, 1.0f, c.edges), shape, c.dt);
  std::optional<mto::Tensor> positions, freqs;
  if (c.pos != Pos::Offset) {
    Rng rng(seed + 1);
    std::vector<int32_t> v(size_t(c.L));
    for (auto& p : v) {
      if (c.pos == Pos::Small) p = rng.range(0, 4095);
      else p = int32_t(rng.next());  // the whole int32 range
    }
    if (c.pos == Pos::Wide && c.L >= 3) {
      v[0] = 2147483647;
      v[1] = -2147483647 - 1;
      v[2] = 0;
    }
    positions = empty_tensor({c.L}, DType::Int32);
    std::memcpy(positions->buffer->data(), v.data(), v.size() * 4);
  }
  if (c.freqs) {
    Rng rng(seed + 2);
    std::vector<float> f(size_t(c.dims / 2));
    // Radians per position, some above 1; every fourth above pi in magnitude (either sign), where
    // the reduction of f / (2 pi) to a fraction of a turn has whole turns to drop.
    for (size_t i = 0; i < f.size(); ++i) f[i] = i % 4 == 3 ? (rng.uniform() * 90.0f + 3.5f) * (i % 8 == 3 ? 1.0f : -1.0f) : rng.uniform() * 1.5f;
    freqs = tensor_of(f, {c.dims / 2}, DType::Float32);
  }
  const mto::RopeParams p = mto::check_rope(x, positions ? &*positions : nullptr, freqs ? &*freqs : nullptr, c.blhd,
                                            c.neox, c.base, c.offset, c.dims);
  mto::Tensor out = empty_tensor(shape, p.out_dtype);
  mto::cpu::ThreadPool pool(1);
  mto::cpu::rope(pool, x, positions ? &*positions : nullptr, freqs ? &*freqs : nullptr, p, out);
  const std::vector<float> ref = floats_of(out);
  const mto::plan::Dispatch plan = mto::plan::plan_rope(p, c.dt, p.out_dtype, mto::Tier::Simdgroup);
  std::map<Arg, Bytes> inputs = {{Arg::X, bytes_of(x)}};
  if (positions) inputs[Arg::Positions] = bytes_of(*positions);
  if (freqs) inputs[Arg::Freqs] = bytes_of(*freqs);
  return run_plan_case("rope", plan, variant, inputs, {{Arg::Y, out.bytes()}}, [&](const std::map<Arg, Bytes>& o) {
    return compare_outputs(o.at(Arg::Y), p.out_dtype, ref, kTolerance, c.D, "y");
  });
}

CaseResult plan_rules() {
  namespace plan = mto::plan;
  using mto::Tier;
  mto::RopeParams p;
  p.B = 1;
  p.H = 2;
  p.L = 3;
  p.D = 1024;
  p.dims = 1024;
  const DType f32 = DType::Float32;
  std::vector<std::pair<std::string, std::string>> checks = {
      {"512 pairs from base", expect_error(mto::code::Shape, [&] { plan::plan_rope(p, f32, f32, Tier::Simdgroup); })},
      {"the cpu tier", expect_error(mto::code::Backend, [&] { plan::plan_rope(p, f32, f32, Tier::Cpu); })},
  };
  mto::RopeParams far = p;
  far.dims = 64;
  far.offset = 2147483647 - 1;
  checks.push_back({"offset + L past int32", expect_error(mto::code::Shape, [&] { plan::plan_rope(far, f32, f32, Tier::Simdgroup); })});
  checks.push_back({"y of another dtype", expect_error(mto::code::DType, [&] {
                      plan::plan_rope(far, DType::Float16, f32, Tier::Simdgroup);
                    })});
  mto::RopeParams with_freqs = p;
  with_freqs.has_freqs = true;
  const plan::Dispatch d = plan::plan_rope(with_freqs, DType::BFloat16, DType::BFloat16, Tier::TensorOps);
  checks.push_back({"512 pairs with freqs run", d.kernel == "rope_rows_bf16" ? "" : "got " + d.kernel});
  return rule_checks(checks);
}

}  // namespace

std::vector<Case> rope_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/rope", [](const std::string&) { return plan_rules(); }});
  auto add = [&](const RopeCase& c) {
    const std::string name = case_name(c);
    cases.push_back({name, [=](const std::string& v) { return run_case(c, name, v); }});
  };
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (bool neox : {true, false}) {
      for (bool blhd : {false, true}) {
        add({dt, neox, blhd, 2, 3, 37, 64, 64, Pos::Offset, 0});
      }
      add({dt, neox, false, 1, 2, 7, 80, 32, Pos::Small});             // features 32..79 pass through
      add({dt, neox, true, 1, 3, 5, 64, 64, Pos::Offset, 0, false, 10000, true});  // edge values in x
    }
  }
  for (bool neox : {true, false}) {
    add({DType::Float32, neox, false, 1, 1, 1, 2, 2});                   // one pair
    add({DType::Float32, neox, false, 1, 2, 37, 128, 128, Pos::Offset, 4059});  // up to position 4095
    add({DType::Float32, neox, true, 1, 2, 33, 128, 96, Pos::Offset, 100000});
    add({DType::Float32, neox, false, 1, 2, 37, 128, 128, Pos::Offset, 2147483647 - 40, false, 500000});
    add({DType::Float32, neox, false, 2, 3, 33, 64, 64, Pos::Small});
    add({DType::Float32, neox, true, 1, 2, 33, 128, 128, Pos::Wide});
    add({DType::Float32, neox, false, 2, 3, 33, 64, 64, Pos::Small, 0, true});   // explicit freqs
    add({DType::Float32, neox, true, 1, 2, 33, 128, 64, Pos::Wide, 0, true});
    add({DType::BFloat16, neox, false, 1, 2, 9, 640, 640, Pos::Offset, 7, true});  // 320 pairs: freqs only
    add({DType::Float16, neox, false, 1, 4, 33, 64, 64, Pos::Offset, 1000, false, 500000});
  }
  return cases;
}

}  // namespace mtoh_driver
