// The environment's tensors as JavaScript names them: a plain number, an index into this table,
// instead of a wrapped native object. Making an ObjectWrap object for every op's output
// (napi_new_instance, napi_wrap's reference and finalizer) and checking each input with
// napi_instanceof cost over half of the JS thread's ~7 us of queueing an op (perf, 1 x 256
// linear); a number costs nothing to make or check. lib/tensor.ts holds the number in a plain JS
// object, with a FinalizationRegistry as the safety net that a native finalizer was.
//
// A slot belongs to one JS object for that object's whole life: dispose() drops the storage at
// once (queued ops hold their own references), but the slot is freed only by release(), which
// the FinalizationRegistry calls once the object is collected. So an id is never reused while
// something can still pass it, and a disposed tensor keeps reporting its shape and dtype.
#pragma once
#include <napi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/stream.h"
#include "core/tensor.h"

namespace mto::addon {

// The reads of one tensor's storage that JS has started and not finished (JS thread only):
// begin() registers one on each buffer (core/tensor.h ReadToken) with the event the values of
// that moment wait for, and returns its id; ready(id) is the event the read and its copies wait
// for (a write queued after the read changes the tensor's, and waits for the read); end(id)
// finishes it, once the copy is done or the read failed. Reads still open when the slot is freed
// (the JS object collected, or its environment gone) are finished then.
class HandleReads {
 public:
  HandleReads() = default;
  HandleReads(const HandleReads&) = delete;
  HandleReads& operator=(const HandleReads&) = delete;
  ~HandleReads();
  uint32_t begin(const std::vector<BufferPtr>& buffers, EventPtr ready);
  // The event of read `id` (info[index]), or `current` when no such read is open.
  const EventPtr& ready(const Napi::CallbackInfo& info, size_t index, const EventPtr& current) const;
  void end(uint32_t id);
  void finish_all();

 private:
  struct Open {
    std::vector<std::shared_ptr<ReadToken>> tokens;
    EventPtr ready;
  };
  std::map<uint32_t, Open> open_;
  uint32_t next_ = 1;
};

struct TensorSlot {
  // The storage: null once disposed (queued ops keep their own references).
  TensorPtr dense;
  QTensorPtr quant;
  int64_t reported = 0;  // bytes counted as V8 external memory (0 for a view)
  std::unique_ptr<HandleReads> reads;  // made by the first read
  // What a disposed tensor still reports, copied from the storage at dispose. Inline (ranks are
  // at most 8) so that dispose allocates nothing.
  int64_t disposed_dims[8] = {};
  uint8_t disposed_rank = 0;
  DType dtype = DType::Float32;
  bool used = false;       // held by a live (or not yet collected) JS object
  bool quantized = false;  // a QuantizedTensor; else a Tensor

  bool disposed() const { return !dense && !quant; }
  Shape shape() const;  // also once disposed
  HandleReads& open_reads();
};

class TensorTable {
 public:
  TensorTable() = default;
  TensorTable(const TensorTable&) = delete;
  TensorTable& operator=(const TensorTable&) = delete;
  // The environment is going away (the addon's instance data is freed): storage is dropped and
  // open reads finished, without telling V8 (nothing is left to account for).
  ~TensorTable() = default;

  // A new slot holding t, its bytes reported to V8 unless `view` (a reshape shares the storage of
  // a tensor that reports it already). Returns the id.
  uint32_t add(Napi::Env env, TensorPtr t, bool view = false);
  uint32_t add(Napi::Env env, QTensorPtr q);

  // The used slot `id` names, or null (not a number, out of range, or free).
  TensorSlot* find(Napi::Env env, napi_value id);
  // Drops the storage now (dispose()): false when it was already disposed.
  bool dispose(Napi::Env env, TensorSlot& slot);
  // The JS object naming `id` was collected: drops what the slot still holds and frees it. Never
  // throws (it runs from a FinalizationRegistry callback); an id that names no slot is ignored.
  void release(Napi::Env env, double id);

 private:
  // Slots in chunks that never move, so a reference to one stays valid while another is added;
  // a chunk holds many (std::deque's 512-byte blocks would allocate every third slot). Slots of
  // disposed tensors stay taken until their objects are collected, so a decode loop holds tens
  // of thousands between two full collections.
  static constexpr uint32_t kChunkBits = 10;
  static constexpr uint32_t kChunk = 1u << kChunkBits;
  std::vector<std::unique_ptr<TensorSlot[]>> chunks_;
  uint32_t size_ = 0;  // slots handed out so far (the used ones and the free_ ones)
  std::vector<uint32_t> free_;
  // The bytes of live tensors, and what V8 has been told of them. V8 only paces garbage
  // collection by the figure: an increase past the last full collection's figure plus 64 MiB
  // starts a major collection. So growth is reported once it reaches kReportBytes (a call per
  // tensor was ~5% of the JS thread's cost of queueing a small op), but a drop only once the live
  // bytes fall below half of what was reported: a loop that makes and disposes outputs of 64 MiB
  // and more (add then rmsNorm over 4096 x 4096) otherwise went down and up by that much every
  // step and had a major collection every step (94 in 100 steps, 5-13 ms each on 2 cores), while
  // what it held never grew. V8 is then told at most twice what tensors hold.
  static constexpr int64_t kReportBytes = int64_t(1) << 20;
  int64_t live_ = 0;
  int64_t reported_ = 0;
  void account(Napi::Env env, int64_t delta);
  TensorSlot& at(uint32_t id) { return chunks_[id >> kChunkBits][id & (kChunk - 1)]; }
  uint32_t claim();
};

}  // namespace mto::addon
