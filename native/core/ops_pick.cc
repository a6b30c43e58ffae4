// Shape and dtype rules of the ops that pick from or gather by indices (core/ops.h): argmax,
// topK, sample, embedding, groupedLinear.
#include <cmath>
#include <string>

#include "../../shaders/pick_sample.h"
#include "error.h"
#include "ops.h"

namespace mto {
namespace {

void require_int32(const char* op, const char* arg, DType t) {
  if (t != DType::Int32) {
    throw Error(code::DType, std::string(op) + ": " + arg + " must be an int32 tensor; got dtype '" + dtype_name(t) + "'");
  }
}

}  // namespace

PickParams check_pick(const char* op, const Tensor& x, int64_t k) {
  require_float(std::string(op) + ": x", x.dtype);
  if (x.shape.empty()) throw Error(code::Shape, std::string(op) + ": x must have rank >= 1 (it picks along the last axis); got a scalar");
  PickParams p;
  p.cols = x.shape.back();
  // As PyTorch's argmax and topk: nothing to pick from an empty row, even with no rows.
  if (p.cols == 0) {
    throw Error(code::Shape, std::string(op) + ": x's last axis (dimension " + std::to_string(x.shape.size() - 1) +
                                 ", the one it picks along) is 0 in shape " + shape_string(x.shape) +
                                 "; it must be at least 1");
  }
  p.rows = shape_rows(x.shape);  // 0 rows: an empty output
  p.values_dtype = x.dtype;
  p.out_shape = Shape(x.shape.begin(), x.shape.end() - 1);
  if (std::string(op) == "topK") {
    if (k < 1 || k > p.cols) {
      throw Error(code::Arg, "topK: k must be in [1, " + std::to_string(p.cols) + "] (x's last dimension); got " +
                                 std::to_string(k));
    }
    p.k = k;
    p.out_shape.push_back(k);
  } else if (p.out_shape.empty()) {
    p.out_shape.push_back(1);
  }
  return p;
}

double sample_uniform(uint64_t seed, int64_t row) {
  // splitmix64 of (seed, row): counter-based, so a row's number needs no state.
  return double(mto_sample_bits(seed, uint64_t(row))) * 0x1.0p-53;
}

float sample_log2e_over_t(double temperature) {
  return mto_sample_flush(float(1.4426950408889634 / temperature));
}

uint64_t sample_top_p_q32(double top_p) { return uint64_t(std::llround(top_p * 0x1.0p32)); }

EmbeddingParams check_embedding(const Operand& table, const Tensor& ids) {
  require_int32("embedding", "ids", ids.dtype);
  const Shape& ts = table.shape();
  if (ts.size() != 2) {
    throw Error(code::Shape, "embedding: table must have shape [V, D]; got " + shape_string(ts));
  }
  if (table.dense && !is_float(table.dense->dtype)) {
    throw Error(code::DType, std::string("embedding: table has dtype '") + dtype_name(table.dense->dtype) +
                                 "'; accepted: a float dtype or a quantized table");
  }
  EmbeddingParams p;
  p.vocab = ts[0];
  p.dim = ts[1];
  p.count = ids.numel();
  p.out_shape = ids.shape;
  p.out_shape.push_back(p.dim);
  check_shape(p.out_shape, "embedding's output");
  p.out_dtype = table.dense ? table.dense->dtype : DType::Float32;
  return p;
}

void check_embedding_ids(const Tensor& ids, const EmbeddingParams& p) {
  const int32_t* id = p.count ? ids.data<int32_t>() : nullptr;
  for (int64_t i = 0; i < p.count; ++i) {
    if (id[i] < 0 || id[i] >= p.vocab) {
      throw Error(code::Arg, "embedding: ids holds " + std::to_string(id[i]) + " at flat index " + std::to_string(i) +
                                 (p.vocab > 0 ? "; the table has rows 0.." + std::to_string(p.vocab - 1)
                                              : std::string("; the table has no rows")));
    }
  }
}

GroupRowsParams check_group_rows(const Tensor& ids, int64_t groups) {
  require_int32("groupRows", "ids", ids.dtype);
  if (ids.shape.size() != 1 && ids.shape.size() != 2) {
    throw Error(code::Shape, "groupRows: ids must have shape [T, k] or [T]; got " + shape_string(ids.shape));
  }
  if (groups < 1 || groups > INT32_MAX) {
    throw Error(code::Arg, "groupRows: groups must be an integer in [1, " + std::to_string(INT32_MAX) + "]; got " +
                               std::to_string(groups));
  }
  GroupRowsParams p;
  p.rows = ids.shape[0];
  p.k = ids.shape.size() == 2 ? ids.shape[1] : 1;
  p.groups = groups;
  return p;
}

void check_group_ids(const Tensor& ids, const GroupRowsParams& p) {
  const int64_t n = p.rows * p.k;
  const int32_t* id = n ? ids.data<int32_t>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] < 0 || id[i] >= p.groups) {
      throw Error(code::Arg, "groupRows: ids holds " + std::to_string(id[i]) + " at flat index " + std::to_string(i) +
                                 "; the groups are 0.." + std::to_string(p.groups - 1));
    }
  }
}

void check_group_sizes(const Tensor& group_sizes, const GroupedLinearParams& p) {
  const int32_t* g = p.E ? group_sizes.data<int32_t>() : nullptr;
  int64_t sum = 0;
  for (int64_t e = 0; e < p.E; ++e) {
    if (g[e] < 0) {
      throw Error(code::Arg, "groupedLinear: groupSizes[" + std::to_string(e) + "] is " + std::to_string(g[e]) +
                                 "; sizes must be >= 0");
    }
    sum += g[e];
  }
  if (sum != p.T) {
    throw Error(code::Arg, "groupedLinear: groupSizes add up to " + std::to_string(sum) + "; x has " +
                               std::to_string(p.T) + " rows");
  }
}

GroupedLinearParams check_grouped_linear(const Operand& x, const Operand& w, const Tensor& group_sizes,
                                         std::optional<DType> out_dtype) {
  require_int32("groupedLinear", "groupSizes", group_sizes.dtype);
  if (!x.dense) throw Error(code::Arg, "groupedLinear: x must be a dense Tensor [T, K]");
  const Shape& ws = w.shape();
  if (ws.size() != 3) {
    throw Error(code::Shape, "groupedLinear: w must have shape [E, N, K] (one [N, K] matrix per expert); got " +
                                 shape_string(ws));
  }
  if (x.shape().size() != 2) {
    throw Error(code::Shape, "groupedLinear: x must have shape [T, K]; got " + shape_string(x.shape()));
  }
  if (group_sizes.shape.size() != 1 || group_sizes.shape[0] != ws[0]) {
    throw Error(code::Shape, "groupedLinear: groupSizes must have shape [E] = [" + std::to_string(ws[0]) +
                                 "] (one size per expert of w); got " + shape_string(group_sizes.shape));
  }
  // The shape and dtype rules of linear for one expert's [N, K] matrix.
  QTensor qe;
  Tensor de;
  Operand one = w;
  if (w.quant) {
    qe = *w.quant;
    qe.shape = {ws[1], ws[2]};
    one.quant = &qe;
  } else {
    de = *w.dense;
    de.shape = {ws[1], ws[2]};
    one.dense = &de;
  }
  const LinearParams lp = check_linear(x, one, nullptr, out_dtype);
  GroupedLinearParams p;
  p.T = lp.M;
  p.E = ws[0];
  p.N = lp.N;
  p.K = lp.K;
  p.out_shape = lp.out_shape;
  p.out_dtype = lp.out_dtype;
  return p;
}

}  // namespace mto
