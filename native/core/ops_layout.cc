// The layout ops as strided copies (core/ops.h CopyPart): transpose, slice, concat, write.
#include <string>

#include "error.h"
#include "ops.h"

namespace mto {
namespace {

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t n = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = n;
    n *= s[i];
  }
  return st;
}

int64_t check_axis(const char* op, int64_t axis, size_t rank) {
  const int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) {
    throw Error(code::Arg, std::string(op) + ": axis must be in [" + std::to_string(-r) + ", " +
                               std::to_string(r - 1) + "] for rank " + std::to_string(r) + "; got " +
                               std::to_string(axis));
  }
  return axis < 0 ? axis + r : axis;
}

// Merges adjacent dimensions that are linear in both src and dst, so that the innermost run is
// as long as it can be (a slice of rows is one run per row, a write into a cache one per head).
CopyPart simplify(CopyPart p) {
  CopyPart out;
  out.src_offset = p.src_offset;
  out.dst_offset = p.dst_offset;
  for (size_t k = 0; k < p.dims.size(); ++k) {
    if (p.dims[k] == 1) continue;
    out.dims.push_back(p.dims[k]);
    out.src_strides.push_back(p.src_strides[k]);
    out.dst_strides.push_back(p.dst_strides[k]);
    while (out.dims.size() >= 2) {
      const size_t o = out.dims.size() - 2, n = out.dims.size() - 1;
      if (out.src_strides[o] != out.src_strides[n] * out.dims[n] ||
          out.dst_strides[o] != out.dst_strides[n] * out.dims[n]) {
        break;
      }
      out.dims[o] *= out.dims[n];
      out.src_strides[o] = out.src_strides[n];
      out.dst_strides[o] = out.dst_strides[n];
      out.dims.pop_back();
      out.src_strides.pop_back();
      out.dst_strides.pop_back();
    }
  }
  if (out.dims.empty()) {
    out.dims = {1};
    out.src_strides = {1};
    out.dst_strides = {1};
  }
  return out;
}

}  // namespace

std::vector<CopyPart> plan_transpose(const Tensor& x, const std::vector<int64_t>& perm, Shape* out_shape) {
  const size_t rank = x.shape.size();
  if (perm.size() != rank) {
    throw Error(code::Arg, "transpose: perm must list every axis of x once (" + std::to_string(rank) +
                               " axes); got " + std::to_string(perm.size()) + " entries");
  }
  std::vector<bool> seen(rank, false);
  const std::vector<int64_t> xs = contiguous_strides(x.shape);
  CopyPart p;
  out_shape->clear();
  for (int64_t a : perm) {
    const int64_t ax = check_axis("transpose", a, rank);
    if (seen[size_t(ax)]) {
      throw Error(code::Arg, "transpose: perm lists axis " + std::to_string(ax) + " twice; it must be a permutation of 0.." +
                                 std::to_string(int64_t(rank) - 1));
    }
    seen[size_t(ax)] = true;
    out_shape->push_back(x.shape[size_t(ax)]);
    p.src_strides.push_back(xs[size_t(ax)]);
  }
  p.dims = *out_shape;
  p.dst_strides = contiguous_strides(*out_shape);
  return {simplify(p)};
}

std::vector<CopyPart> plan_slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, Shape* out_shape) {
  const int64_t ax = check_axis("slice", axis, x.shape.size());
  const int64_t n = x.shape[size_t(ax)];
  if (start < 0 || end > n || start > end) {  // start == end: an empty slice, as x[2:2] in NumPy
    throw Error(code::Arg, "slice: need 0 <= start <= end <= " + std::to_string(n) + " (x's axis " +
                               std::to_string(ax) + "); got start " + std::to_string(start) + ", end " +
                               std::to_string(end));
  }
  *out_shape = x.shape;
  (*out_shape)[size_t(ax)] = end - start;
  CopyPart p;
  p.dims = *out_shape;
  p.src_strides = contiguous_strides(x.shape);
  p.dst_strides = contiguous_strides(*out_shape);
  p.src_offset = start * p.src_strides[size_t(ax)];
  return {simplify(p)};
}

std::vector<CopyPart> plan_concat(const std::vector<const Tensor*>& xs, int64_t axis, Shape* out_shape) {
  if (xs.empty()) throw Error(code::Arg, "concat: needs at least one tensor");
  const Tensor& first = *xs[0];
  const int64_t ax = check_axis("concat", axis, first.shape.size());
  *out_shape = first.shape;
  (*out_shape)[size_t(ax)] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = *xs[i];
    if (t.dtype != first.dtype) {
      throw Error(code::DType, "concat: tensors[" + std::to_string(i) + "] has dtype '" + dtype_name(t.dtype) +
                                   "', tensors[0] '" + dtype_name(first.dtype) + "'; cast them to one dtype");
    }
    bool same = t.shape.size() == first.shape.size();
    for (size_t d = 0; same && d < t.shape.size(); ++d) same = d == size_t(ax) || t.shape[d] == first.shape[d];
    if (!same) {
      throw Error(code::Shape, "concat: tensors[" + std::to_string(i) + "] has shape " + shape_string(t.shape) +
                                   "; every tensor must match tensors[0] " + shape_string(first.shape) +
                                   " except along axis " + std::to_string(ax));
    }
    (*out_shape)[size_t(ax)] += t.shape[size_t(ax)];
  }
  check_shape(*out_shape, "concat's output");
  const std::vector<int64_t> os = contiguous_strides(*out_shape);
  std::vector<CopyPart> parts;
  int64_t at = 0;
  for (const Tensor* t : xs) {
    CopyPart p;
    p.dims = t->shape;
    p.src_strides = contiguous_strides(t->shape);
    p.dst_strides = os;
    p.dst_offset = at * os[size_t(ax)];
    at += t->shape[size_t(ax)];
    parts.push_back(simplify(p));
  }
  return parts;
}

std::vector<CopyPart> plan_write(const Tensor& dst, const Tensor& src, int64_t axis, int64_t offset) {
  if (src.dtype != dst.dtype) {
    throw Error(code::DType, std::string("write: src has dtype '") + dtype_name(src.dtype) + "', dst '" +
                                 dtype_name(dst.dtype) + "'; cast src first");
  }
  const int64_t ax = check_axis("write", axis, dst.shape.size());
  bool same = src.shape.size() == dst.shape.size();
  for (size_t d = 0; same && d < dst.shape.size(); ++d) same = d == size_t(ax) || src.shape[d] == dst.shape[d];
  if (!same) {
    throw Error(code::Shape, "write: src has shape " + shape_string(src.shape) + "; it must match dst " +
                                 shape_string(dst.shape) + " except along axis " + std::to_string(ax));
  }
  const int64_t n = dst.shape[size_t(ax)], len = src.shape[size_t(ax)];
  if (offset < 0 || offset > n - len) {
    throw Error(code::Arg, "write: offset must be in [0, " + std::to_string(n - len) + "] so that src's " +
                               std::to_string(len) + " entries along axis " + std::to_string(ax) +
                               " fit in dst's " + std::to_string(n) + "; got " + std::to_string(offset));
  }
  CopyPart p;
  p.dims = src.shape;
  p.src_strides = contiguous_strides(src.shape);
  p.dst_strides = contiguous_strides(dst.shape);
  p.dst_offset = offset * p.dst_strides[size_t(ax)];
  return {simplify(p)};
}

}  // namespace mto
