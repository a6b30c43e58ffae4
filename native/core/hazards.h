// Which dispatches of a concurrent compute encoder need a memory barrier before them
// (docs/design/STREAM.md, "Barriers"). The metal backend encodes each batch into one concurrent
// encoder (Metal 3: MTLDispatchTypeConcurrent; Metal 4: an MTL4ComputeCommandEncoder, which orders
// nothing by itself), where dispatches may overlap unless a barrier separates them. The tracker
// records, since the last barrier, the byte ranges of each buffer that the dispatches encoded
// after it read and wrote; a new dispatch needs a barrier when it reads a range written since then
// (read after write), writes a range read (write after read) or written (write after write) since
// then. Read-read never needs one, nor do disjoint ranges of one buffer (a KV cache written at one
// slot while attention reads earlier ones). A range whose extent is unknown is the whole buffer
// (offset 0, kWholeBuffer). The rule of ggml-metal's memory ranges (ggml_mem_ranges_check: a new
// source overlapping a recorded destination, or a new destination overlapping any recorded range)
// and of MLX's concurrent encoder (a barrier before a dispatch that uses a previous output, by
// whole buffer there).
// Backend-neutral C++, compiled on every platform: tested through `_internal.hazards`
// (test/hazards.test.ts).
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace mto {

// Bytes [offset, offset + length) of the buffer `buffer` (an identity only: the MTLBuffer's
// address, never dereferenced). length kWholeBuffer: to the buffer's end, whatever it is.
struct BufferRange {
  const void* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
};
inline constexpr uint64_t kWholeBuffer = UINT64_MAX;

// True when the two ranges are of one buffer and share a byte (an empty range shares none).
bool ranges_overlap(const BufferRange& a, const BufferRange& b);

// The bytes of `buffer` that elements offset + idx . strides (idx over `dims`) of `element_bytes`
// each span, from the lowest element to the highest: a strided copy's destination (a KV cache
// written at one slot). Empty (length 0) when a dimension is 0; the whole buffer when the span
// cannot be computed (a negative start or a size past 2^63).
BufferRange strided_range(const void* buffer, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                          int64_t offset, uint64_t element_bytes);

// How the command stream orders dispatches of one batch: Concurrent (barriers only where the
// tracker finds a conflict) or Serial (a barrier before every dispatch but the batch's first, the
// encoder's old behaviour, for debugging). From METAL_TENSOROPS_SERIAL_ENCODER ("1": Serial;
// unset, empty or "0": Concurrent); throws Error(E_ARG) for any other value.
enum class EncoderOrder : uint8_t { Concurrent, Serial };
EncoderOrder encoder_order(const char* env_serial);

class HazardTracker {
 public:
  // Whether a dispatch that reads `reads` and writes `writes` must wait, behind a barrier, for
  // the dispatches recorded since the last barrier.
  bool needs_barrier(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes) const;
  // Records a dispatch encoded after the last barrier.
  void record(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes);
  // A barrier was encoded (or a new encoder began): nothing recorded before it can conflict.
  void clear();
  // needs_barrier, then clear() when it did, then record: what the encoder does per dispatch.
  // Returns whether to encode a barrier before the dispatch.
  bool add(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes);
  bool empty() const { return ranges_.empty(); }

 private:
  struct Ranges {
    std::vector<BufferRange> reads, writes;
  };
  static bool any_overlap(const std::vector<BufferRange>& recorded, const BufferRange& r);
  std::unordered_map<const void*, Ranges> ranges_;
};

// What the command stream asks per dispatch of a batch (native/metal/encode.mm): whether to
// encode a barrier before it, by the tracker (Concurrent) or before every dispatch but the
// batch's first (Serial). end_batch() when the batch's encoder ends: the next batch is ordered
// after it by the queue.
class BarrierPlanner {
 public:
  explicit BarrierPlanner(EncoderOrder order) : order_(order) {}
  bool before_dispatch(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes);
  void end_batch();

 private:
  EncoderOrder order_;
  HazardTracker hazards_;
  bool dispatched_ = false;
};

}  // namespace mto
