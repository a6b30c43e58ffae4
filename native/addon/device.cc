#include "device.h"
#include "device_open.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "async_test_backend.h"
#include "core/error.h"
#include "core/ops.h"
#include "errors.h"
#include "internal.h"
#include "js_completion.h"
#include "tensors.h"
#include "typed_arrays.h"

namespace mto::addon {
namespace {

// [{ library, reason }] (dev.info.fallbacks).
Napi::Array fallbacks_to_js(Napi::Env env, const std::vector<LibraryFallback>& fallbacks) {
  Napi::Array a = Napi::Array::New(env, fallbacks.size());
  for (size_t i = 0; i < fallbacks.size(); ++i) {
    Napi::Object f = Napi::Object::New(env);
    f.Set("library", fallbacks[i].library);
    f.Set("reason", fallbacks[i].reason);
    a.Set(uint32_t(i), f);
  }
  return a;
}

DType read_dtype(Napi::Value v, const char* arg) {
  DType t;
  if (!v.IsString() || !parse_dtype(v.As<Napi::String>().Utf8Value(), &t)) {
    throw_error(v.Env(), code::DType, std::string(arg) + " must be one of 'float32', 'float16', "
                                      "'bfloat16', 'bool'; got " + describe_value(v));
  }
  return t;
}

Format read_format(Napi::Value v) {
  Format f;
  if (!v.IsString() || !parse_format(v.As<Napi::String>().Utf8Value(), &f)) {
    throw_error(v.Env(), code::Format,
                "format must be one of 'mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', "
                "'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8'; got " +
                    describe_value(v));
  }
  return f;
}

// A typed array of `type` holding exactly `bytes` (checked before anything is allocated).
TypedBytes plane_of(Napi::Value v, const char* arg, napi_typedarray_type type, const char* type_name,
                    size_t elem_size, size_t bytes) {
  TypedBytes t = typed_bytes_of(v, type, arg, type_name);
  if (t.bytes != bytes) {
    throw_error(v.Env(), code::Shape, std::string(arg) + " has " + std::to_string(t.length) +
                                          " elements; the shape needs " +
                                          std::to_string(bytes / elem_size));
  }
  return t;
}

std::string hex16(uint16_t v) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%04x", unsigned(v));
  return b;
}

// Affine groups are finite float16 scale and bias pairs, or the NaN group (both NaN: what the
// quantizer writes for a group holding NaN or infinity; it decodes to NaN, as an MX block with
// scale byte 0xFF). An infinite scale or bias, or a lone NaN, would silently poison every product.
void check_affine_groups(Napi::Env env, const TypedBytes& scales, const TypedBytes& biases) {
  const auto* s = reinterpret_cast<const uint16_t*>(scales.data);
  const auto* b = reinterpret_cast<const uint16_t*>(biases.data);
  auto is_nan = [](uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0; };
  auto finite = [](uint16_t h) { return (h & 0x7c00) != 0x7c00; };
  for (size_t i = 0; i < scales.length; ++i) {
    if ((finite(s[i]) && finite(b[i])) || (is_nan(s[i]) && is_nan(b[i]))) continue;
    throw_error(env, code::Format,
                "group " + std::to_string(i) + " has scale " + hex16(s[i]) + " and bias " +
                    hex16(b[i]) + " (float16 bits); accepted: a finite scale and bias, or both "
                    "NaN (a group that decodes to NaN)");
  }
}

}  // namespace

Napi::Function NativeDevice::Init(Napi::Env env) {
  return DefineClass(env, "NativeDevice", {});  // the methods: bind_methods (device_methods.cc)
}

NativeDevice::NativeDevice(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeDevice>(info) {
  // open()'s path: the backends were made on a pool thread (device_open.cc).
  if (OpenedDevice* opened = info.Length() > 0 ? opened_device_of(info[0]) : nullptr) {
    if (!opened->cpu) throw_error(info.Env(), code::Arg, "this opened-device handle was already used");
    cpu_ = std::move(opened->cpu);
    backend_ = std::move(opened->opened.backend);
    fallback_reason_ = std::move(opened->opened.fallback_reason);
    guard(info.Env(), [&] { stream_ = Stream::make(backend_, cpu_); });
    bind_methods(info.This().As<Napi::Object>());
    return;
  }
  // (threads, backend, tier[, test script]): opens on the JS thread (tests only).
  int threads = 0;
  if (info.Length() > 0 && info[0].IsNumber()) threads = info[0].As<Napi::Number>().Int32Value();
  TierRequest request;
  if (info.Length() > 1 && info[1].IsString()) request.backend = info[1].As<Napi::String>().Utf8Value();
  if (info.Length() > 2 && info[2].IsString()) request.tier = info[2].As<Napi::String>().Utf8Value();
  // Tests only (test/async-path.test.ts, test/stream.test.ts): a 4th argument
  // { asyncTestBackend: true, failOps?: number[], failBatches?: number[], failCode?, delayUs?,
  // compileUs?, compileFail?, tier?, failLibraries?, commitOps? } (async_test_backend.h).
  const bool async_test = info.Length() > 3 && info[3].IsObject() &&
                          info[3].As<Napi::Object>().Get("asyncTestBackend").ToBoolean().Value();
  AsyncTestScript script;
  if (async_test) {
    Napi::Object o = info[3].As<Napi::Object>();
    auto numbers = [&](const char* key, std::set<int64_t>& out) {
      Napi::Value v = o.Get(key);
      if (!v.IsArray()) return;
      Napi::Array a = v.As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); ++i) out.insert(int64_t(a.Get(i).ToNumber().DoubleValue()));
    };
    numbers("failOps", script.fail_ops);
    numbers("failBatches", script.fail_batches);
    if (o.Get("failCode").IsString() && o.Get("failCode").As<Napi::String>().Utf8Value() == "E_BACKEND") {
      script.fail_code = code::Backend;
    }
    if (o.Get("delayUs").IsNumber()) script.delay_us = o.Get("delayUs").As<Napi::Number>().Int64Value();
    if (o.Get("commitOps").IsNumber()) {
      const int64_t n = o.Get("commitOps").As<Napi::Number>().Int64Value();
      if (n < 1 || n > 100000) throw_error(info.Env(), code::Arg, "asyncTestBackend: commitOps must be from 1 to 100000");
      script.commit_ops = int(n);
    }
    if (o.Get("compileUs").IsNumber()) script.compile_us = o.Get("compileUs").As<Napi::Number>().Int64Value();
    script.compile_fail = o.Get("compileFail").ToBoolean().Value();
    if (o.Get("tier").IsString() && !parse_tier(o.Get("tier").As<Napi::String>().Utf8Value(), &script.tier)) {
      throw_error(info.Env(), code::Arg, "asyncTestBackend: unknown tier");
    }
    Napi::Value fail = o.Get("failLibraries");
    if (fail.IsArray()) {
      Napi::Array a = fail.As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); ++i) script.fail_libraries.insert(a.Get(i).ToString().Utf8Value());
    }
  }
  guard(info.Env(), [&] {
    cpu_ = make_cpu_backend(threads);
    OpenedBackend opened = open_backend(request, cpu_);
    backend_ = async_test ? make_async_test_backend(cpu_, script) : opened.backend;
    fallback_reason_ = opened.fallback_reason;
    stream_ = Stream::make(backend_, cpu_);
  });
  bind_methods(info.This().As<Napi::Object>());
}

NativeDevice::~NativeDevice() {
  if (link_) link_->device = nullptr;
  if (stream_) stream_->flush();
}

void NativeDevice::require_open(Napi::Env env) const {
  if (!backend_) {
    throw_error(env, code::Disposed, "the device was closed (dev.close()); open() a new one");
  }
}

Napi::Value NativeDevice::Close(const Napi::CallbackInfo& info) {
  if (stream_) stream_->flush();  // nothing stays in an open batch (lib/ has synchronized first)
  stream_.reset();
  backend_.reset();
  cpu_.reset();
  return info.Env().Undefined();
}

Napi::Value NativeDevice::Synchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    return when_done(env, stream_->tail(), /*reject_failed=*/false);
  });
}

Napi::Value NativeDevice::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  require_open(env);
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
  if (!b.os_version.empty()) {
    o.Set("macosVersion", b.os_version);
    o.Set("macosVersionFrom", b.os_source);
  }
  if (b.gpu_cores > 0) {
    o.Set("gpuCores", b.gpu_cores);
    o.Set("gpuCoresFrom", b.gpu_cores_source);
  }
  if (!fallback_reason_.empty()) o.Set("fallbackReason", fallback_reason_);
  if (!b.fallbacks.empty()) o.Set("fallbacks", fallbacks_to_js(env, b.fallbacks));
  o.Set("threads", cpu_->info().threads);
  return o;
}

Napi::Value NativeDevice::Fallbacks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  require_open(env);
  return fallbacks_to_js(env, backend_->info().fallbacks);
}

Napi::Value NativeDevice::BufferStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  require_open(env);
  SizeClassPool::Stats s;
  if (!backend_->buffer_stats(&s)) return env.Null();
  return pool_stats_to_js(env, s);
}

Napi::Value NativeDevice::Tensor(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    Shape shape = read_shape(info[1], "shape");
    DType dtype = read_dtype(info[2], "dtype");
    const TypedBytes a = typed_bytes(info[0], "data", "a TypedArray");
    const size_t n = size_t(shape_numel(shape));
    if (a.length != n) {
      throw_error(env, code::Shape, "data has " + std::to_string(a.length) + " elements; shape " +
                                        shape_string(shape) + " needs " + std::to_string(n));
    }
    const bool f32 = a.type == napi_float32_array && is_float(dtype);
    const bool bits = (a.type == napi_uint16_array &&
                       (dtype == DType::Float16 || dtype == DType::BFloat16)) ||
                      (a.type == napi_uint8_array && dtype == DType::Bool) ||
                      (a.type == napi_int32_array && dtype == DType::Int32);
    if (!f32 && !bits) {
      throw_error(env, code::DType,
                  std::string("data of this TypedArray type cannot make a '") + dtype_name(dtype) +
                      "' tensor; accepted: Float32Array (any float dtype), Uint16Array of raw "
                      "bits (float16, bfloat16), Uint8Array (bool), Int32Array (int32)");
    }
    TensorPtr t = make_tensor(shape, dtype, allocator_of(backend_));
    if (n == 0) return NativeTensor::Wrap(env, t);  // empty: an empty array's data may be null
    if (f32) from_float32(dtype, reinterpret_cast<const float*>(a.data), t->buffer->data(), n);
    else std::memcpy(t->buffer->data(), a.data, t->bytes());  // raw bits of the storage type
    return NativeTensor::Wrap(env, t);
  });
}

namespace {
// Whether every bias is exactly -affine_centre(f) times its scale, bit for bit (GGUF's Q4_0 and
// Q8_0 as imported: QTensor::centred_biases). In chunks through the vector float16 conversion.
bool centred_biases(Format f, const uint16_t* scales, const uint16_t* biases, size_t n) {
  const float centre = affine_centre(f);
  float s[1024], b[1024];
  for (size_t i = 0; i < n; i += 1024) {
    const size_t m = std::min<size_t>(1024, n - i);
    half_to_float_n(scales + i, s, m);
    half_to_float_n(biases + i, b, m);
    uint32_t differ = 0;
    for (size_t j = 0; j < m; ++j) differ |= float_bits(b[j]) ^ float_bits(-centre * s[j]);
    if (differ) return false;
  }
  return true;
}
}  // namespace

Napi::Value NativeDevice::FromQuantized(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    Format f = read_format(info[0]);
    Shape shape = read_shape(info[1], "shape");
    int block = info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 0;
    check_quantize(shape, f, block);
    const bool affine = format_info(f).affine;
    // Every plane's length is checked before anything is allocated: a wrong shape is E_SHAPE,
    // never a huge allocation first.
    const int64_t cols = shape.back(), rows = shape_rows(shape);
    const TypedBytes codes = plane_of(info[3], "codes", napi_uint8_array, "a Uint8Array", 1,
                                      size_t(rows) * row_code_bytes(f, cols));
    const size_t scale_bytes = size_t(rows) * row_scale_bytes(f, cols, block);
    const TypedBytes scales =
        affine ? plane_of(info[4], "scales", napi_uint16_array, "a Uint16Array of float16 bits", 2,
                          scale_bytes)
               : plane_of(info[4], "scales", napi_uint8_array, "a Uint8Array of E8M0 bytes", 1,
                          scale_bytes);
    TypedBytes biases;
    if (affine) {
      biases = plane_of(info[5], "biases", napi_uint16_array, "a Uint16Array of float16 bits", 2,
                        scale_bytes);
      check_affine_groups(env, scales, biases);
    }
    QTensorPtr q = make_qtensor(shape, f, block, allocator_of(backend_));
    backend_->attach_device_view(*q);
    // An empty tensor's planes are empty too, and an empty array's data may be null.
    if (codes.bytes) std::memcpy(q->codes->data(), codes.data, codes.bytes);
    if (scales.bytes) std::memcpy(q->scales->data(), scales.data, scales.bytes);
    if (affine && biases.bytes) std::memcpy(q->biases->data(), biases.data, biases.bytes);
    if (f == Format::MXFP8_E4M3) {  // no NaN code: the cpu kernels need not look for one
      // One pass without an early exit, so that the compiler vectorises it.
      const auto* c = static_cast<const uint8_t*>(q->codes->data());
      uint8_t nan_code = 0;
      for (size_t i = 0; i < q->codes->bytes(); ++i) nan_code |= uint8_t((c[i] | 0x80) == 0xFF);
      q->fp8_nan_codes = nan_code != 0;
    }
    if (affine) q->centred_biases = centred_biases(f, static_cast<const uint16_t*>(q->scales->data()),
                                                   static_cast<const uint16_t*>(q->biases->data()),
                                                   scales.bytes / 2);
    return NativeQTensor::Wrap(env, q);
  });
}

}  // namespace mto::addon
