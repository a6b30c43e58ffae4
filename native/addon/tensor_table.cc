#include "tensor_table.h"

#include <cmath>

namespace mto::addon {

// ---- HandleReads ----

HandleReads::~HandleReads() { finish_all(); }

void HandleReads::finish_all() {
  for (auto& [id, read] : open_) {
    for (const auto& t : read.tokens) t->finish();
  }
  open_.clear();
}

uint32_t HandleReads::begin(const std::vector<BufferPtr>& buffers, EventPtr ready) {
  Open read;
  for (const BufferPtr& b : buffers) {
    if (b) read.tokens.push_back(b->begin_read());
  }
  read.ready = std::move(ready);
  const uint32_t id = next_++;
  open_.emplace(id, std::move(read));
  return id;
}

const EventPtr& HandleReads::ready(const Napi::CallbackInfo& info, size_t index, const EventPtr& current) const {
  if (info.Length() <= index || !info[index].IsNumber()) return current;
  auto it = open_.find(info[index].As<Napi::Number>().Uint32Value());
  return it == open_.end() ? current : it->second.ready;
}

void HandleReads::end(uint32_t id) {
  auto it = open_.find(id);
  if (it == open_.end()) return;
  for (const auto& t : it->second.tokens) t->finish();
  open_.erase(it);
}

// ---- TensorSlot ----

Shape TensorSlot::shape() const {
  if (dense) return dense->shape;
  if (quant) return quant->shape;
  return Shape(disposed_dims, disposed_dims + disposed_rank);
}

HandleReads& TensorSlot::open_reads() {
  if (!reads) reads = std::make_unique<HandleReads>();
  return *reads;
}

// ---- TensorTable ----

// Called on the JS thread only, also from release() (a FinalizationRegistry callback): it must
// not throw, so it calls Node-API directly and ignores a failure.
void TensorTable::account(Napi::Env env, int64_t delta) {
  live_ += delta;
  const bool grew = live_ - reported_ >= kReportBytes;
  const bool fell = live_ < reported_ / 2 && reported_ - live_ >= kReportBytes;
  if (!grew && !fell) return;
  int64_t total = 0;
  (void)napi_adjust_external_memory(env, live_ - reported_, &total);
  reported_ = live_;
}

uint32_t TensorTable::claim() {
  if (!free_.empty()) {
    const uint32_t id = free_.back();
    free_.pop_back();
    return id;
  }
  if ((size_ >> kChunkBits) == chunks_.size()) chunks_.push_back(std::make_unique<TensorSlot[]>(kChunk));
  return size_++;
}

uint32_t TensorTable::add(Napi::Env env, TensorPtr t, bool view) {
  const int64_t bytes = view ? 0 : int64_t(t->bytes());
  const uint32_t id = claim();
  TensorSlot& s = at(id);
  s.used = true;
  s.quantized = false;
  s.dense = std::move(t);
  s.reported = bytes;
  account(env, bytes);
  return id;
}

uint32_t TensorTable::add(Napi::Env env, QTensorPtr q) {
  const int64_t bytes = int64_t(q->bytes());
  const uint32_t id = claim();
  TensorSlot& s = at(id);
  s.used = true;
  s.quantized = true;
  s.quant = std::move(q);
  s.reported = bytes;
  account(env, bytes);
  return id;
}

TensorSlot* TensorTable::find(Napi::Env env, napi_value id) {
  double d = -1;
  if (napi_get_value_double(env, id, &d) != napi_ok) return nullptr;
  if (!(d >= 0 && d < double(size_)) || std::floor(d) != d) return nullptr;
  TensorSlot& s = at(uint32_t(d));
  return s.used ? &s : nullptr;
}

bool TensorTable::dispose(Napi::Env env, TensorSlot& s) {
  if (s.disposed()) return false;
  const Shape& shape = s.quantized ? s.quant->shape : s.dense->shape;
  s.disposed_rank = uint8_t(shape.size());  // at most 8 (check_shape)
  for (size_t i = 0; i < shape.size() && i < 8; ++i) s.disposed_dims[i] = shape[i];
  if (!s.quantized) s.dtype = s.dense->dtype;
  s.dense.reset();
  s.quant.reset();
  account(env, -s.reported);
  s.reported = 0;
  return true;
}

void TensorTable::release(Napi::Env env, double id) {
  if (!(id >= 0 && id < double(size_)) || std::floor(id) != id) return;
  TensorSlot& s = at(uint32_t(id));
  if (!s.used) return;
  dispose(env, s);
  s = TensorSlot();  // finishes the reads still open
  free_.push_back(uint32_t(id));
}

}  // namespace mto::addon
