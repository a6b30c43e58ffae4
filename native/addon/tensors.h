// JS handles for native tensors. They own a shared_ptr to the storage: dispose() drops it at once
// (an op still running keeps its own reference, so nothing is freed under it) and the finalizer
// drops it if the user never called dispose(). Bytes are reported to V8 as external memory.
#pragma once
#include <napi.h>

#include <map>
#include <memory>
#include <vector>

#include "core/stream.h"
#include "core/tensor.h"

namespace mto::addon {

// The reads of one handle's storage that JS has started and not finished (JS thread only):
// beginRead() registers one on each buffer (core/tensor.h ReadToken) with the event the values
// of that moment wait for, and returns its id; whenReady(id) and the copies read with that
// event (a write queued after the read changes the tensor's, and waits for the read); endRead(id)
// finishes it, once the copy is done or the read failed. A handle collected with reads open
// finishes them.
class HandleReads {
 public:
  ~HandleReads();
  uint32_t begin(const std::vector<BufferPtr>& buffers, EventPtr ready);
  // The event of read `id` (info[index]), or `current` when no such read is open.
  const EventPtr& ready(const Napi::CallbackInfo& info, size_t index, const EventPtr& current) const;
  void end(uint32_t id);

 private:
  struct Open {
    std::vector<std::shared_ptr<ReadToken>> tokens;
    EventPtr ready;
  };
  std::map<uint32_t, Open> open_;
  uint32_t next_ = 1;
};

class NativeTensor : public Napi::ObjectWrap<NativeTensor> {
 public:
  static Napi::Function Init(Napi::Env env);
  // `view`: t shares the storage of a tensor that reports it as external memory already.
  static Napi::Object Wrap(Napi::Env env, TensorPtr t, bool view = false);
  // Unwraps a JS value that must be a live NativeTensor; `arg` names it in errors.
  static TensorPtr Get(Napi::Value v, const char* arg);
  static bool Is(Napi::Value v);

  explicit NativeTensor(const Napi::CallbackInfo& info);
  ~NativeTensor() override;

 private:
  // whenReady(): undefined, a throw (the op that writes the tensor failed) or a Promise settled
  // once that op ran. Reads copy into a typed array that lib/ allocated (typed_arrays.h says why),
  // once the tensor is ready.
  Napi::Value WhenReady(const Napi::CallbackInfo& info);
  Napi::Value Reshape(const Napi::CallbackInfo& info);  // (shape): a view, same storage and op
  Napi::Value ReadInto(const Napi::CallbackInfo& info);       // (out: storage-type array)
  Napi::Value ToFloat32Into(const Napi::CallbackInfo& info);  // (out: Float32Array)
  Napi::Value BeginRead(const Napi::CallbackInfo& info);      // () -> id
  Napi::Value EndRead(const Napi::CallbackInfo& info);        // (id)
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Disposed(const Napi::CallbackInfo& info);
  Napi::Value Bytes(const Napi::CallbackInfo& info);
  Napi::Value ShapeJs(const Napi::CallbackInfo& info);
  Napi::Value DTypeJs(const Napi::CallbackInfo& info);
  void Release();

  // Kept past dispose() so a disposed tensor still reports what it was.
  Shape shape_;
  DType dtype_ = DType::Float32;
  TensorPtr tensor_;
  int64_t reported_ = 0;
  HandleReads reads_;
};

class NativeQTensor : public Napi::ObjectWrap<NativeQTensor> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::Object Wrap(Napi::Env env, QTensorPtr t);
  static QTensorPtr Get(Napi::Value v, const char* arg);
  static bool Is(Napi::Value v);

  explicit NativeQTensor(const Napi::CallbackInfo& info);
  ~NativeQTensor() override;

 private:
  Napi::Value WhenReady(const Napi::CallbackInfo& info);     // as NativeTensor's
  Napi::Value PlaneLengths(const Napi::CallbackInfo& info);  // { codes, scales, biases } elements
  Napi::Value CodesInto(const Napi::CallbackInfo& info);     // (out: Uint8Array)
  Napi::Value ScalesInto(const Napi::CallbackInfo& info);    // (out: Uint8Array | Uint16Array)
  Napi::Value BiasesInto(const Napi::CallbackInfo& info);    // (out: Uint16Array)
  Napi::Value BeginRead(const Napi::CallbackInfo& info);     // as NativeTensor's, for every plane
  Napi::Value EndRead(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Disposed(const Napi::CallbackInfo& info);
  Napi::Value Bytes(const Napi::CallbackInfo& info);
  Napi::Value ShapeJs(const Napi::CallbackInfo& info);
  Napi::Value FormatJs(const Napi::CallbackInfo& info);
  Napi::Value BlockSize(const Napi::CallbackInfo& info);
  void Release();

  Shape shape_;
  Format format_ = Format::MXFP4;
  int block_ = 32;
  QTensorPtr tensor_;
  int64_t reported_ = 0;
  HandleReads reads_;
};

// Either kind of tensor as an op operand; throws E_DISPOSED / E_ARG naming `arg`.
struct HeldOperand {
  TensorPtr dense;
  QTensorPtr quant;
};
HeldOperand unwrap_operand(Napi::Value v, const char* arg);

// Reads a JS array of non-negative integers as a shape; throws E_SHAPE naming `arg`.
Shape read_shape(Napi::Value v, const char* arg);
Napi::Array shape_to_js(Napi::Env env, const Shape& s);

}  // namespace mto::addon
