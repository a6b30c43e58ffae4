// `_internal.scalePlaneLayout(format, block, shape, tier)`: core/scale_plane.h's decision, and
// `_internal.quantizedView(q)`: the device view a backend attached to a QuantizedTensor ("buffers"
// when none). Linux runs only the cpu backend, which never attaches one; a Mac on tensorops-mx
// reports "mtltensor-scale-plane" for the tensors the layout admits.
#include "core/capabilities.h"
#include "core/error.h"
#include "core/scale_plane.h"
#include "errors.h"
#include "internal.h"
#include "tensors.h"

namespace mto::addon {

Napi::Value ScalePlaneLayoutOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Format f;
    Tier tier;
    if (!info[0].IsString() || !parse_format(info[0].As<Napi::String>().Utf8Value(), &f)) {
      throw Error(code::Format, "scalePlaneLayout: unknown format " + info[0].ToString().Utf8Value());
    }
    if (!info[3].IsString() || !parse_tier(info[3].As<Napi::String>().Utf8Value(), &tier)) {
      throw Error(code::Arg, "scalePlaneLayout: unknown tier " + info[3].ToString().Utf8Value());
    }
    const int block = info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : 0;
    const ScalePlaneLayout l = scale_plane_layout(f, block, read_shape(info[2], "shape"), tier);
    Napi::Object o = Napi::Object::New(env);
    o.Set("ok", l.ok);
    if (!l.ok) {
      o.Set("reason", l.reason);
      return o;
    }
    o.Set("dataType", double(static_cast<int>(l.data)));
    Napi::Array dims = Napi::Array::New(env, 2), strides = Napi::Array::New(env, 2);
    dims.Set(0u, double(l.cols));
    dims.Set(1u, double(l.rows));
    strides.Set(0u, 1.0);
    strides.Set(1u, double(l.row_stride));
    o.Set("dimensions", dims);
    o.Set("strides", strides);
    return o;
  });
}

Napi::Value QuantizedView(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr q = NativeQTensor::Get(info[0], "q");
    return Napi::String::New(env, q->device_view ? q->device_view->kind() : "buffers");
  });
}

}  // namespace mto::addon
