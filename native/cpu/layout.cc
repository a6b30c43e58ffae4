// Strided copies (core/ops.h CopyPart): transpose, slice, concat and write, for any dtype; the
// innermost run is a memcpy where both sides are contiguous.
#include <cstring>
#include <vector>

#include "ops.h"
#include "rows.h"

namespace mto::cpu {

void copy(ThreadPool& pool, const Tensor& src, const CopyPart& p, Tensor& dst) {
  const size_t es = dtype_size(src.dtype);
  const size_t rank = p.dims.size();
  const int64_t inner = p.dims.back();
  int64_t outer = 1;
  for (size_t k = 0; k + 1 < rank; ++k) outer *= p.dims[k];
  const auto* s = static_cast<const uint8_t*>(src.buffer->data());
  auto* d = static_cast<uint8_t*>(dst.buffer->data());
  const int64_t ss = p.src_strides.back(), ds = p.dst_strides.back();
  pool.parallel_for(outer, std::max<int64_t>(1, kParallelGrain / inner), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t rest = o, si = p.src_offset, di = p.dst_offset;
      for (size_t k = rank - 1; k-- > 0;) {
        const int64_t i = rest % p.dims[k];
        rest /= p.dims[k];
        si += i * p.src_strides[k];
        di += i * p.dst_strides[k];
      }
      if (ss == 1 && ds == 1) {
        std::memcpy(d + size_t(di) * es, s + size_t(si) * es, size_t(inner) * es);
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          std::memcpy(d + size_t(di + i * ds) * es, s + size_t(si + i * ss) * es, es);
        }
      }
    }
  });
}

}  // namespace mto::cpu
