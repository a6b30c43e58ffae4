// binding._internal.hazards, .argAccess, .stridedRange and .encoderOrder (tests only: test/hazards.test.ts): the
// concurrent encoder's barrier rule (core/hazards.h) and the read/write role of each plan argument
// (core/dispatch_plan.h arg_access), driven from JS.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dispatch_plan.h"
#include "core/error.h"
#include "core/hazards.h"
#include "errors.h"
#include "internal.h"

namespace mto::addon {
namespace {

// [[buffer, offset, length], ...] -> ranges; buffer a small integer naming a buffer, length -1 for
// the whole buffer (kWholeBuffer).
std::vector<BufferRange> ranges_of(const Napi::Value& v) {
  std::vector<BufferRange> out;
  if (!v.IsArray()) return out;
  const Napi::Array a = v.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const Napi::Array r = a.Get(i).As<Napi::Array>();
    BufferRange b;
    // Identities only (never dereferenced): buffer n is the address n + 1.
    b.buffer = reinterpret_cast<const void*>(uintptr_t(r.Get(0u).As<Napi::Number>().Int64Value()) + 1);
    b.offset = uint64_t(r.Get(1u).As<Napi::Number>().Int64Value());
    const int64_t length = r.Get(2u).As<Napi::Number>().Int64Value();
    b.length = length < 0 ? kWholeBuffer : uint64_t(length);
    out.push_back(b);
  }
  return out;
}

}  // namespace

// hazards([{ reads, writes } | 'commit', ...], order = 'concurrent') -> boolean[]: each dispatch
// through one BarrierPlanner of that order (what CommandStream asks), true where a barrier is
// encoded before it; 'commit' ends the batch (end_batch) and yields false.
Napi::Value Hazards(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    const Napi::Array in = info[0].As<Napi::Array>();
    const bool serial = info[1].IsString() && info[1].As<Napi::String>().Utf8Value() == "serial";
    BarrierPlanner planner(serial ? EncoderOrder::Serial : EncoderOrder::Concurrent);
    Napi::Array out = Napi::Array::New(env, in.Length());
    for (uint32_t i = 0; i < in.Length(); ++i) {
      const Napi::Value item = in.Get(i);
      if (item.IsString()) {
        planner.end_batch();
        out.Set(i, false);
        continue;
      }
      const Napi::Object d = item.As<Napi::Object>();
      out.Set(i, planner.before_dispatch(ranges_of(d.Get("reads")), ranges_of(d.Get("writes"))));
    }
    return out;
  });
}

// argAccess() -> { [arg name]: 'none' | 'read' | 'write' } for every plan::Arg.
Napi::Value ArgAccess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  for (size_t i = 0; i < plan::kArgCount; ++i) {
    const plan::Arg a = plan::Arg(i);
    const plan::Access access = plan::arg_access(a);
    o.Set(plan::arg_name(a), access == plan::Access::None ? "none" : access == plan::Access::Read ? "read" : "write");
  }
  return o;
}

// stridedRange(dims, strides, offset, elementBytes) -> [offset, length] (length -1: whole buffer):
// the byte span a strided copy's elements reach (core/hazards.h strided_range).
Napi::Value StridedRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto ints = [](const Napi::Value& v) {
    std::vector<int64_t> out;
    const Napi::Array a = v.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(a.Get(i).As<Napi::Number>().Int64Value());
    return out;
  };
  const BufferRange r = strided_range(nullptr, ints(info[0]), ints(info[1]), info[2].As<Napi::Number>().Int64Value(),
                                      uint64_t(info[3].As<Napi::Number>().Int64Value()));
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, double(r.offset));
  out.Set(1u, r.length == kWholeBuffer ? -1.0 : double(r.length));
  return out;
}

// encoderOrder(env | undefined) -> 'concurrent' | 'serial' (METAL_TENSOROPS_SERIAL_ENCODER).
Napi::Value EncoderOrderOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    const std::string s = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
    const EncoderOrder order = encoder_order(info[0].IsString() ? s.c_str() : nullptr);
    return Napi::String::New(env, order == EncoderOrder::Serial ? "serial" : "concurrent");
  });
}

}  // namespace mto::addon
