#include "device.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "async_test_backend.h"
#include "core/error.h"
#include "core/ops.h"
#include "errors.h"
#include "internal.h"
#include "tensors.h"

namespace mto::addon {
namespace {

DType read_dtype(Napi::Value v, const char* arg) {
  DType t;
  if (!v.IsString() || !parse_dtype(v.As<Napi::String>().Utf8Value(), &t)) {
    throw_error(v.Env(), code::DType, std::string(arg) + " must be one of 'float32', 'float16', "
                                      "'bfloat16', 'bool'; got " + v.ToString().Utf8Value());
  }
  return t;
}

Format read_format(Napi::Value v) {
  Format f;
  if (!v.IsString() || !parse_format(v.As<Napi::String>().Utf8Value(), &f)) {
    throw_error(v.Env(), code::Format,
                "format must be one of 'mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', "
                "'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8'; got " +
                    v.ToString().Utf8Value());
  }
  return f;
}

// Copies a typed array's bytes into `dst`, checking its byte length is exactly `bytes`.
void copy_plane(Napi::Value v, const char* arg, napi_typedarray_type type, const char* type_name,
                size_t elem_size, void* dst, size_t bytes) {
  Napi::Env env = v.Env();
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type) {
    throw_error(env, code::Arg, std::string(arg) + " must be a " + type_name);
  }
  Napi::TypedArray a = v.As<Napi::TypedArray>();
  if (a.ByteLength() != bytes) {
    throw_error(env, code::Shape, std::string(arg) + " has " + std::to_string(a.ElementLength()) +
                                      " elements; the shape needs " +
                                      std::to_string(bytes / elem_size));
  }
  const uint8_t* src = static_cast<const uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset();
  std::memcpy(dst, src, bytes);
}

std::string hex16(uint16_t v) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%04x", unsigned(v));
  return b;
}

}  // namespace

Napi::Function NativeDevice::Init(Napi::Env env) {
  return DefineClass(env, "NativeDevice",
                     {InstanceMethod("info", &NativeDevice::Info),
                      InstanceMethod("bufferStats", &NativeDevice::BufferStats),
                      InstanceMethod("tensor", &NativeDevice::Tensor),
                      InstanceMethod("fromQuantized", &NativeDevice::FromQuantized),
                      InstanceMethod("quantize", &NativeDevice::Quantize),
                      InstanceMethod("dequantize", &NativeDevice::Dequantize),
                      InstanceMethod("cast", &NativeDevice::Cast),
                      InstanceMethod("linear", &NativeDevice::Linear),
                      InstanceMethod("matmul", &NativeDevice::Matmul),
                      InstanceMethod("attention", &NativeDevice::Attention)});
}

NativeDevice::NativeDevice(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeDevice>(info) {
  int threads = 0;
  if (info.Length() > 0 && info[0].IsNumber()) threads = info[0].As<Napi::Number>().Int32Value();
  TierRequest request;
  if (info.Length() > 1 && info[1].IsString()) request.backend = info[1].As<Napi::String>().Utf8Value();
  if (info.Length() > 2 && info[2].IsString()) request.tier = info[2].As<Napi::String>().Utf8Value();
  // Tests only (test/async-path.test.ts): a 4th argument { asyncTestBackend: true }.
  const bool async_test = info.Length() > 3 && info[3].IsObject() &&
                          info[3].As<Napi::Object>().Get("asyncTestBackend").ToBoolean().Value();
  guard(info.Env(), [&] {
    cpu_ = make_cpu_backend(threads);
    OpenedBackend opened = open_backend(request, cpu_);
    backend_ = async_test ? make_async_test_backend(cpu_) : opened.backend;
    fallback_reason_ = opened.fallback_reason;
  });
}

Napi::Value NativeDevice::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const BackendInfo b = backend_->info();
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", b.backend);
  o.Set("tier", tier_name(b.tier));
  if (!b.name.empty()) o.Set("name", b.name);
  o.Set("neuralAccelerators", b.neural_accelerators);
  if (!b.gpu_family.empty()) o.Set("gpuFamily", b.gpu_family);
  if (b.has_gpu_fields) {
    o.Set("unifiedMemory", b.unified_memory);
    o.Set("recommendedWorkingSetBytes", double(b.recommended_working_set));
  }
  if (!fallback_reason_.empty()) o.Set("fallbackReason", fallback_reason_);
  o.Set("threads", cpu_->info().threads);
  return o;
}

Napi::Value NativeDevice::BufferStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SizeClassPool::Stats s;
  if (!backend_->buffer_stats(&s)) return env.Null();
  return pool_stats_to_js(env, s);
}

Napi::Value NativeDevice::Tensor(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Shape shape = read_shape(info[1], "shape");
    DType dtype = read_dtype(info[2], "dtype");
    if (!info[0].IsTypedArray()) throw_error(env, code::Arg, "data must be a TypedArray");
    Napi::TypedArray a = info[0].As<Napi::TypedArray>();
    const size_t n = size_t(shape_numel(shape));
    if (a.ElementLength() != n) {
      throw_error(env, code::Shape, "data has " + std::to_string(a.ElementLength()) +
                                        " elements; shape " + shape_string(shape) + " needs " +
                                        std::to_string(n));
    }
    TensorPtr t = make_tensor(shape, dtype, allocator_of(backend_));
    const uint8_t* src = static_cast<const uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset();
    const napi_typedarray_type type = a.TypedArrayType();
    if (type == napi_float32_array && dtype != DType::Bool) {
      from_float32(dtype, reinterpret_cast<const float*>(src), t->buffer->data(), n);
    } else if ((type == napi_uint16_array &&
                (dtype == DType::Float16 || dtype == DType::BFloat16)) ||
               (type == napi_uint8_array && dtype == DType::Bool)) {
      std::memcpy(t->buffer->data(), src, t->bytes());  // raw bits of the storage type
    } else {
      throw_error(env, code::DType,
                  std::string("data of this TypedArray type cannot make a '") + dtype_name(dtype) +
                      "' tensor; accepted: Float32Array (any float dtype), Uint16Array of raw "
                      "bits (float16, bfloat16), Uint8Array (bool)");
    }
    return NativeTensor::Wrap(env, t);
  });
}

Napi::Value NativeDevice::FromQuantized(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Format f = read_format(info[0]);
    Shape shape = read_shape(info[1], "shape");
    int block = info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 0;
    check_quantize(shape, f, block);
    QTensorPtr q = make_qtensor(shape, f, block, allocator_of(backend_));
    backend_->attach_device_view(*q);
    copy_plane(info[3], "codes", napi_uint8_array, "Uint8Array", 1, q->codes->data(),
               q->codes->bytes());
    if (f == Format::MXFP8_E4M3) {  // no NaN code: the cpu kernels need not look for one
      // One pass without an early exit, so that the compiler vectorises it.
      const auto* c = static_cast<const uint8_t*>(q->codes->data());
      uint8_t nan_code = 0;
      for (size_t i = 0; i < q->codes->bytes(); ++i) nan_code |= uint8_t((c[i] | 0x80) == 0xFF);
      q->fp8_nan_codes = nan_code != 0;
    }
    if (format_info(f).affine) {
      copy_plane(info[4], "scales", napi_uint16_array, "Uint16Array of float16 bits", 2,
                 q->scales->data(), q->scales->bytes());
      copy_plane(info[5], "biases", napi_uint16_array, "Uint16Array of float16 bits", 2,
                 q->biases->data(), q->biases->bytes());
      // A scale or bias that is not finite would silently poison every product.
      for (const auto* plane : {&q->scales, &q->biases}) {
        const auto* h = static_cast<const uint16_t*>((*plane)->data());
        for (size_t i = 0; i < (*plane)->bytes() / 2; ++i) {
          if ((h[i] & 0x7c00) == 0x7c00) {
            throw_error(env, code::Format,
                        std::string(plane == &q->scales ? "scales" : "biases") + "[" +
                            std::to_string(i) + "] is not a finite float16 (bits " +
                            hex16(h[i]) + "); accepted: finite float16 values");
          }
        }
      }
    } else {
      copy_plane(info[4], "scales", napi_uint8_array, "Uint8Array of E8M0 bytes", 1,
                 q->scales->data(), q->scales->bytes());
      const auto* s = static_cast<const uint8_t*>(q->scales->data());
      for (size_t i = 0; i < q->scales->bytes(); ++i) {
        if (s[i] == 0xFF) {
          throw_error(env, code::Format,
                      "scales[" + std::to_string(i) +
                          "] is 0xFF, the E8M0 NaN; accepted: scale bytes 0 to 254");
        }
      }
    }
    return NativeQTensor::Wrap(env, q);
  });
}

}  // namespace mto::addon
