// The layout ops on the metal backend (ops.h), mirroring native/cpu/layout.cc: transpose, slice,
// concat and write as strided copies of shaders/copy.metal, one pass per part (concat: one per
// input), all in one op so its completion covers every part. Each pass writes its own elements of
// dst; the encoder's barriers (core/hazards.h) see each pass's source and destination as the byte
// span its strides reach, so the parts of a concat, or a write() into one slot of a cache while
// other slots are read, need no barrier between them unless their spans overlap.
#include "ops.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/hazards.h"
#include "core/plan/layout.h"

namespace mto::metal {

bool copy(MetalContext& ctx, const std::vector<const Tensor*>& srcs, const std::vector<CopyPart>& parts, Tensor& dst,
          Completion done) {
  if (srcs.size() != parts.size() || parts.empty()) return false;
  std::vector<plan::Dispatch> passes;
  try {
    passes = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) {
      std::vector<plan::Dispatch> out;
      for (size_t i = 0; i < parts.size(); ++i) {
        out.push_back(plan::plan_copy(parts[i], srcs[i]->dtype, srcs[i]->numel(), dst.numel(), t));
      }
      return out;
    });
  } catch (const Error&) {
    return false;  // more dimensions than the kernel takes, or an index past 32 bits
  }
  std::vector<ArgTable> tables;
  using plan::Arg;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& src = *srcs[i];
    ArgTable args;
    if (!args.bind(Arg::Src, src.buffer.get()) || !args.bind(Arg::Dst, dst.buffer.get())) return false;
    // write may copy between views of one storage; a dispatch reading what it writes races, so
    // the cpu backend runs that.
    if (args.get(Arg::Src) == args.get(Arg::Dst)) return false;
    const CopyPart& p = parts[i];
    const uint64_t element = dtype_size(dst.dtype);
    const BufferRange s = strided_range(nullptr, p.dims, p.src_strides, p.src_offset, element);
    const BufferRange d = strided_range(nullptr, p.dims, p.dst_strides, p.dst_offset, element);
    args.set_range(Arg::Src, s.offset, s.length);
    args.set_range(Arg::Dst, d.offset, d.length);
    tables.push_back(args);
  }
  return ctx.stream.submit(passes, tables, nullptr, std::move(done));
}

}  // namespace mto::metal
