// Tensors across the JS boundary. JS names a tensor by its id in the environment's TensorTable
// (tensor_table.h says why a number and not a wrapped object); the ops read their operands with
// NativeTensor::Get / NativeQTensor::Get and return new tensors' ids with Wrap. The functions JS
// calls on a tensor (shape, reads, reshape, dispose, release) take the id as their first argument
// and are exported as the addon's `tensors` object (lib/native.ts NativeTensors).
#pragma once
#include <napi.h>

#include "core/stream.h"
#include "core/tensor.h"

namespace mto::addon {

struct NativeTensor {
  // A new id for t. `view`: t shares the storage of a tensor that reports it as external memory
  // already.
  static Napi::Value Wrap(Napi::Env env, TensorPtr t, bool view = false);
  // The outputs of one op (each takes its event) as a JS array of new ids.
  static Napi::Array WrapOutputs(Napi::Env env, const std::vector<TensorPtr>& outputs, const EventPtr& event);
  // The storage of the dense tensor v names; throws E_ARG ("`arg` must be a Tensor") or
  // E_DISPOSED naming `arg`.
  static TensorPtr Get(Napi::Value v, const char* arg);
  static bool Is(Napi::Value v);
};

struct NativeQTensor {
  static Napi::Value Wrap(Napi::Env env, QTensorPtr t);
  static QTensorPtr Get(Napi::Value v, const char* arg);
  static bool Is(Napi::Value v);
};

// The `tensors` object of functions over ids.
Napi::Object InitTensors(Napi::Env env);

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
