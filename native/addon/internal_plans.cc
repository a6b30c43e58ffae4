// `_internal.planLibraries()`: every distinct (library, kernel) the dispatch plans
// (core/dispatch_plan.h) can choose, over every metal tier, op, format, input and output dtype
// (linear: any output dtype; matmul and attention: their inputs') and the shapes that switch
// kernels (decode vs tiled, prefill vs decode vs split decode); the model ops' plans
// (core/plan/*.h) over every dtype and dtype pair, contiguous and strided broadcasts. Tests check each against the
// embedded shader set: the library exists, and its MSL version is one the requested tier provides
// (the tier's probe compiled at that version, so the library compiles there too).
#include <set>
#include <string>
#include <tuple>

#include "core/dispatch_plan.h"
#include "core/error.h"
#include "core/library_fallback.h"
#include "core/plan/elementwise.h"
#include "core/plan/layout.h"
#include "core/plan/norm.h"
#include "core/plan/rope.h"
#include "core/plan/softmax.h"
#include "core/plan/embedding.h"
#include "core/plan/grouped_linear.h"
#include "core/plan/group_rows.h"
#include "core/plan/pick.h"
#include "errors.h"
#include "internal.h"

namespace mto::addon {
namespace {

using Row = std::tuple<std::string, std::string, std::string, std::string>;  // op, tier, library, kernel

// Runs `plan` and records its dispatches; a request no kernel covers (the plan throws) is skipped.
template <class F>
void record(std::set<Row>& rows, const char* op, Tier tier, F plan) {
  try {
    for (const plan::Dispatch& d : plan()) rows.emplace(op, tier_name(tier), d.library, d.kernel);
  } catch (const Error&) {
  }
}

}  // namespace

Napi::Value PlanLibraries(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Tier tiers[] = {Tier::Simdgroup, Tier::TensorOps, Tier::TensorOpsMx};
  const DType dtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
  const Format formats[] = {Format::MXFP8_E4M3, Format::MXFP8_E5M2, Format::MXFP6_E3M2, Format::MXFP6_E2M3,
                            Format::MXFP4,      Format::MXINT8,     Format::MXINT4,     Format::MXINT2,
                            Format::AFFINE4,    Format::AFFINE8};
  std::set<Row> rows;
  for (Tier t : tiers) {
    for (DType x : dtypes) {
      for (Format f : formats) {
        record(rows, "quantize", t, [&] { return std::vector<plan::Dispatch>{plan::plan_quantize(f, x, 4, 256)}; });
        for (int64_t M : {1, 64}) {  // decode, tiled
          for (DType y : dtypes) {
            record(rows, "linear", t, [&] {
              return std::vector<plan::Dispatch>{plan::plan_linear(f, 32, x, y, M, 64, 256, true, t)};
            });
          }
        }
      }
      record(rows, "matmul", t, [&] {
        return std::vector<plan::Dispatch>{plan::plan_matmul(x, x, x, 2, 64, 64, 64, false, t)};
      });
      for (bool kv_quantized : {false, true}) {
        for (Format kv : {Format::MXFP8_E4M3, Format::MXFP8_E5M2}) {
          // prefill, decode, split decode (long keys, few threadgroups)
          for (auto [Lq, Lk] : {std::pair<int64_t, int64_t>{64, 64}, {1, 64}, {1, 8192}}) {
            AttentionParams p;
            p.B = 1; p.Hq = 2; p.Hkv = 1; p.Lq = Lq; p.Lk = Lk; p.D = 64; p.scale = 0.125f;
            record(rows, "attention", t, [&] {
              return plan::plan_attention(p, x, x, kv_quantized, kv, DType::Bool, t).passes;
            });
          }
        }
      }
    }
  }
  for (Tier t : tiers) {
    using Plans = std::vector<plan::Dispatch>;
    for (DType x : dtypes) {
      const Broadcast same = broadcast_shapes("x", {64}, "x", {64});
      for (UnaryOp op : {UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::GeluTanh}) {
        record(rows, "unary", t, [&] { return Plans{plan::plan_unary(op, x, x, same, t)}; });
      }
      for (DType b : dtypes) {
        for (const Broadcast& bc : {same, broadcast_shapes("a", {8, 64}, "b", {64})}) {  // contiguous, strided
          record(rows, "binary", t, [&] {
            return Plans{plan::plan_binary(BinaryOp::Add, x, b, x == b ? x : DType::Float32, bc, t)};
          });
        }
      }
      NormParams np;
      np.rows = 2;
      np.cols = 64;
      record(rows, "norm", t, [&] { return Plans{plan::plan_norm(np, x, x, x, std::nullopt, t)}; });
      RopeParams rp;
      rp.B = rp.H = 1;
      rp.L = 4;
      rp.D = rp.dims = 64;
      record(rows, "rope", t, [&] { return Plans{plan::plan_rope(rp, x, x, t)}; });
      RowsParams sp;
      sp.rows = 2;
      sp.cols = 64;
      record(rows, "softmax", t, [&] { return Plans{plan::plan_softmax(sp, x, x, t)}; });
    }
    CopyPart part;
    part.dims = {4, 8};
    part.src_strides = {1, 4};
    part.dst_strides = {8, 1};
    for (DType e : {DType::Bool, DType::Float16, DType::Float32}) {  // 1-, 2- and 4-byte elements
      record(rows, "copy", t, [&] { return Plans{plan::plan_copy(part, e, 32, 32, t)}; });
    }
  }
  // argmax, topK, sample (each mode), embedding (dense and every format), groupedLinear; groupRows below.
  for (Tier t : tiers) {
    for (DType x : dtypes) {
      PickParams pick;
      pick.rows = 2;
      pick.cols = 1000;
      pick.k = 8;
      record(rows, "argmax", t, [&] { return std::vector<plan::Dispatch>{plan::plan_argmax(x, pick, t)}; });
      record(rows, "topK", t, [&] { return plan::plan_top_k(x, pick, t).passes; });
      record(rows, "sample", t, [&] { return std::vector<plan::Dispatch>{plan::plan_sample(x, pick, t)}; });
      PickParams wide = pick;  // the wide kernels: k above PICK_MAX_K, topP alone on a wide row
      wide.k = 300;
      wide.top_p = 0.9;
      record(rows, "topK", t, [&] { return plan::plan_top_k(x, wide, t).passes; });
      record(rows, "sample", t, [&] { return std::vector<plan::Dispatch>{plan::plan_sample(x, wide, t)}; });
      EmbeddingParams emb;
      emb.vocab = 10;
      emb.dim = 256;
      emb.count = 3;
      record(rows, "embedding", t, [&] {
        return std::vector<plan::Dispatch>{plan::plan_embedding(emb, false, x, Format::MXFP4, 32, t)};
      });
      for (Format f : formats) {
        record(rows, "embedding", t, [&] {
          return std::vector<plan::Dispatch>{plan::plan_embedding(emb, true, DType::Float32, f, 32, t)};
        });
        for (DType y : dtypes) {
          for (int64_t T : {4, 100}) {  // decode, tiled
            GroupedLinearParams g;
            g.T = T;
            g.E = 8;
            g.N = 64;
            g.K = 256;
            record(rows, "groupedLinear", t, [&] { return plan::plan_grouped_linear(g, f, 32, x, y, t).passes; });
          }
        }
      }
    }
  }
  for (Tier t : tiers) {
    for (DType w : dtypes) {  // groupedLinear with dense w: the tiled pass
      for (DType x : dtypes) {
        for (DType y : dtypes) {
          GroupedLinearParams g;
          g.T = 4;
          g.E = 8;
          g.N = 64;
          g.K = 100;
          record(rows, "groupedLinear", t, [&] { return plan::plan_grouped_linear_dense(g, w, x, y, t).passes; });
        }
      }
    }
    GroupRowsParams g;
    g.rows = 4;
    g.k = 2;
    g.groups = 8;
    record(rows, "groupRows", t, [&] { return plan::plan_group_rows(g, t).passes; });
  }
  Napi::Array out = Napi::Array::New(env, rows.size());
  uint32_t i = 0;
  for (const auto& [op, tier, library, kernel] : rows) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("op", op);
    o.Set("tier", tier);
    o.Set("library", library);
    o.Set("kernel", kernel);
    out.Set(i++, o);
  }
  return out;
}

// planAvoiding(op, tier, unusable: string[]) -> { tier, libraries: string[] }: core/
// library_fallback.h's plan_avoiding for a representative request of `op` ('linear' prefill: mxfp4
// weights, float16 x, M 64; 'linear-decode' M 1; 'matmul' float16; 'attention' prefill Lq 64;
// 'attention-decode' Lq 1; 'softmax') planned at `tier` with the libraries in `unusable` marked
// unusable: the tier whose plan was taken and its libraries, or E_BACKEND when none is usable.
Napi::Value PlanAvoiding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Tier tier;
    if (!info[0].IsString() || !info[1].IsString() || !parse_tier(info[1].As<Napi::String>().Utf8Value(), &tier)) {
      throw Error(code::Arg, "planAvoiding(op, tier, unusable)");
    }
    const std::string op = info[0].As<Napi::String>().Utf8Value();
    UnusableLibraries unusable;
    if (info[2].IsArray()) {
      Napi::Array a = info[2].As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); ++i) unusable.mark(a.Get(i).ToString().Utf8Value(), "marked by the test");
    }
    Tier planned = Tier::Cpu;
    auto at = [&](Tier t) {
      planned = t;
      return t;
    };
    AttentionParams ap;
    ap.B = 1; ap.Hq = 2; ap.Hkv = 1; ap.Lq = op == "attention-decode" ? 1 : 64; ap.Lk = 64; ap.D = 64; ap.scale = 0.125f;
    RowsParams rows;
    rows.rows = 2;
    rows.cols = 64;
    std::vector<plan::Dispatch> passes;
    if (op == "linear" || op == "linear-decode") {
      passes = {plan_avoiding(unusable, tier, [&](Tier t) {
        return plan::plan_linear(Format::MXFP4, 32, DType::Float16, DType::Float16, op == "linear" ? 64 : 1, 64, 256,
                                 false, at(t));
      })};
    } else if (op == "matmul") {
      passes = {plan_avoiding(unusable, tier, [&](Tier t) {
        return plan::plan_matmul(DType::Float16, DType::Float16, DType::Float16, 1, 64, 64, 64, false, at(t));
      })};
    } else if (op == "attention" || op == "attention-decode") {
      passes = plan_avoiding(unusable, tier, [&](Tier t) {
        return plan::plan_attention(ap, DType::Float16, DType::Float16, false, Format::MXFP8_E4M3, DType::Bool, at(t));
      }).passes;
    } else if (op == "softmax") {
      passes = {plan_avoiding(unusable, tier,
                              [&](Tier t) { return plan::plan_softmax(rows, DType::Float32, DType::Float32, at(t)); })};
    } else {
      throw Error(code::Arg, "planAvoiding: unknown op '" + op + "'");
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("tier", tier_name(planned));
    Napi::Array libraries = Napi::Array::New(env, passes.size());
    for (size_t i = 0; i < passes.size(); ++i) libraries.Set(uint32_t(i), passes[i].library);
    o.Set("libraries", libraries);
    return o;
  });
}

}  // namespace mto::addon
