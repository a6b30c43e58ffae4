// The model ops of NativeDevice (core/ops.h, docs/design/API.md "The op set a model needs"), as
// ops.cc's: validate at the call, allocate the output, queue, return its handle. lib/ops/ checks
// the arguments first; these checks repeat what reaches native code.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/ops.h"
#include "device.h"
#include "errors.h"
#include "tensors.h"

namespace mto::addon {
namespace {

// One napi_typeof (IsUndefined() || IsNull() makes two): an op reads several optional arguments.
bool is_absent(Napi::Value v) {
  const napi_valuetype t = v.Type();
  return t == napi_undefined || t == napi_null;
}

TensorPtr optional_tensor(Napi::Value v, const char* arg) {
  return is_absent(v) ? nullptr : NativeTensor::Get(v, arg);
}

std::string read_string(Napi::Value v, const char* arg) {
  if (!v.IsString()) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a string; got " + describe_value(v));
  return v.As<Napi::String>().Utf8Value();
}

// An integer argument in [lo, hi].
int64_t read_int(Napi::Value v, const char* arg, double lo, double hi) {
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!(d >= lo && d <= hi) || std::floor(d) != d) {
    throw_error(v.Env(), code::Arg, std::string(arg) + " must be an integer in [" + std::to_string(int64_t(lo)) +
                                        ", " + std::to_string(int64_t(hi)) + "]; got " + describe_value(v));
  }
  return int64_t(d);
}

double read_number(Napi::Value v, const char* arg) {
  if (!v.IsNumber()) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a number; got " + describe_value(v));
  return v.As<Napi::Number>().DoubleValue();
}

constexpr double kMaxIndex = 9007199254740991.0;  // 2^53 - 1

}  // namespace

Napi::Value NativeDevice::Unary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    const std::string name = read_string(info[0], "op");
    UnaryOp op;
    if (name == "silu") op = UnaryOp::Silu;
    else if (name == "gelu") op = UnaryOp::Gelu;
    else if (name == "gelu_tanh") op = UnaryOp::GeluTanh;
    else throw_error(env, code::Arg, "op must be 'silu', 'gelu' or 'gelu_tanh'; got " + describe_value(info[0]));
    TensorPtr x = NativeTensor::Get(info[1], "x");
    ElementwiseParams p = check_unary(name.c_str(), *x);
    TensorPtr out = make_tensor(x->shape, p.out_dtype, allocator_of(backend_));
    out->event = submit(env, double(x->numel()), {x->ready_event()},
                        on_host_if(out->numel() == 0, [op, x, p, out](Backend& b, Completion done) {
                          return b.unary(op, *x, p, *out, std::move(done));
                        }));
    return NativeTensor::Wrap(env, out);
  });
}

Napi::Value NativeDevice::Binary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    const std::string name = read_string(info[0], "op");
    BinaryOp op;
    if (name == "add") op = BinaryOp::Add;
    else if (name == "mul") op = BinaryOp::Mul;
    else if (name == "swiglu") op = BinaryOp::Swiglu;
    else if (name == "swiglu_oai") op = BinaryOp::SwigluOai;
    else throw_error(env, code::Arg, "op must be 'add', 'mul', 'swiglu' or 'swiglu_oai'; got " + describe_value(info[0]));
    const bool gated = op == BinaryOp::Swiglu || op == BinaryOp::SwigluOai;
    TensorPtr a = NativeTensor::Get(info[1], gated ? "gate" : "a");
    TensorPtr b = NativeTensor::Get(info[2], gated ? "up" : "b");
    ElementwiseParams p = op == BinaryOp::SwigluOai
                              ? check_swiglu_oai(*a, *b, read_number(info[3], "alpha"), read_number(info[4], "limit"))
                              : check_binary(name.c_str(), *a, *b);
    TensorPtr out = make_tensor(p.bc.out_shape, p.out_dtype, allocator_of(backend_));
    out->event = submit(env, double(out->numel()), {a->ready_event(), b->ready_event()},
                        on_host_if(out->numel() == 0, [op, a, b, p, out](Backend& be, Completion done) {
                          return be.binary(op, *a, *b, p, *out, std::move(done));
                        }));
    return NativeTensor::Wrap(env, out);
  });
}

Napi::Value NativeDevice::Norm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    const bool layer = info[0].ToBoolean().Value();
    TensorPtr x = NativeTensor::Get(info[1], "x");
    TensorPtr weight = optional_tensor(info[2], "weight");
    TensorPtr bias = optional_tensor(info[3], "bias");
    NormParams p = check_norm(layer, *x, weight.get(), bias.get(), read_number(info[4], "eps"));
    TensorPtr out = make_tensor(x->shape, p.out_dtype, allocator_of(backend_));
    out->event = submit(env, double(x->numel()),
                        {x->ready_event(), weight ? weight->ready_event() : nullptr, bias ? bias->ready_event() : nullptr},
                        on_host_if(out->numel() == 0, [x, weight, bias, p, out](Backend& b, Completion done) {
                          return b.norm(*x, weight.get(), bias.get(), p, *out, std::move(done));
                        }));
    return NativeTensor::Wrap(env, out);
  });
}

// (x, positions|null, freqs|null, layout, style, base, offset, dims|null)
Napi::Value NativeDevice::Rope(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr x = NativeTensor::Get(info[0], "x");
    TensorPtr positions = optional_tensor(info[1], "positions");
    TensorPtr freqs = optional_tensor(info[2], "freqs");
    const std::string layout = read_string(info[3], "layout");
    const std::string style = read_string(info[4], "style");
    if (layout != "bhld" && layout != "blhd") throw_error(env, code::Arg, "layout must be 'bhld' or 'blhd'; got '" + layout + "'");
    if (style != "neox" && style != "interleaved") {
      throw_error(env, code::Arg, "style must be 'neox' or 'interleaved'; got '" + style + "'");
    }
    const double base = read_number(info[5], "base");
    const int64_t offset = read_int(info[6], "offset", 0, 2147483647.0);
    std::optional<int64_t> dims;
    if (!is_absent(info[7])) dims = read_int(info[7], "dims", 0, kMaxIndex);
    RopeParams p = check_rope(*x, positions.get(), freqs.get(), layout == "blhd", style == "neox", base, offset, dims);
    TensorPtr out = make_tensor(x->shape, p.out_dtype, allocator_of(backend_));
    out->event = submit(env, double(x->numel()),
                        {x->ready_event(), positions ? positions->ready_event() : nullptr,
                         freqs ? freqs->ready_event() : nullptr},
                        on_host_if(out->numel() == 0, [x, positions, freqs, p, out](Backend& b, Completion done) {
                          return b.rope(*x, positions.get(), freqs.get(), p, *out, std::move(done));
                        }));
    return NativeTensor::Wrap(env, out);
  });
}

Napi::Value NativeDevice::Softmax(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr x = NativeTensor::Get(info[0], "x");
    RowsParams p = check_softmax(*x);
    TensorPtr out = make_tensor(x->shape, p.out_dtype, allocator_of(backend_));
    out->event = submit(env, double(x->numel()), {x->ready_event()},
                        on_host_if(out->numel() == 0, [x, p, out](Backend& b, Completion done) {
                          return b.softmax(*x, p, *out, std::move(done));
                        }));
    return NativeTensor::Wrap(env, out);
  });
}

// (kind, x, k | options): 'argmax' (x), 'topk' (x, k) -> [values, ids],
// 'sample' (x, temperature, topK, topP, seed).
Napi::Value NativeDevice::Pick(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    const std::string kind = read_string(info[0], "op");
    TensorPtr x = NativeTensor::Get(info[1], kind == "sample" ? "logits" : "x");
    if (kind == "topk") {
      PickParams p = check_pick("topK", *x, read_int(info[2], "k", 1, kMaxIndex));
      TensorPtr values = make_tensor(p.out_shape, p.values_dtype, allocator_of(backend_));
      TensorPtr ids = make_tensor(p.out_shape, DType::Int32, allocator_of(backend_));
      values->event = ids->event = submit(env, double(x->numel()), {x->ready_event()},
                                          on_host_if(ids->numel() == 0, [x, p, values, ids](Backend& b, Completion done) {
                                            return b.top_k(*x, p, *values, *ids, std::move(done));
                                          }));
      Napi::Array out = Napi::Array::New(env, 2);
      out.Set(uint32_t(0), NativeTensor::Wrap(env, values));
      out.Set(uint32_t(1), NativeTensor::Wrap(env, ids));
      return out;
    }
    if (kind != "argmax" && kind != "sample") {
      throw_error(env, code::Arg, "op must be 'argmax', 'topk' or 'sample'; got '" + kind + "'");
    }
    PickParams p = check_pick(kind.c_str(), *x, 1);
    if (kind == "sample") {
      p.temperature = read_number(info[2], "temperature");
      p.top_k = read_int(info[3], "topK", 0, kMaxIndex);
      p.top_p = read_number(info[4], "topP");
      p.seed = uint64_t(read_int(info[5], "seed", 0, kMaxIndex));
      if (!(p.temperature >= 0) || !std::isfinite(p.temperature)) {
        throw_error(env, code::Arg, "temperature must be a finite number >= 0; got " + describe_value(info[2]));
      }
      if (!(p.top_p > 0 && p.top_p <= 1)) throw_error(env, code::Arg, "topP must be in (0, 1]; got " + describe_value(info[4]));
    }
    TensorPtr ids = make_tensor(p.out_shape, DType::Int32, allocator_of(backend_));
    const bool sample = kind == "sample";
    ids->event = submit(env, double(x->numel()), {x->ready_event()},
                        on_host_if(ids->numel() == 0, [x, p, ids, sample](Backend& b, Completion done) {
                          return sample ? b.sample(*x, p, *ids, std::move(done)) : b.argmax(*x, p, *ids, std::move(done));
                        }));
    return NativeTensor::Wrap(env, ids);
  });
}

Napi::Value NativeDevice::Embedding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    HeldOperand table = unwrap_operand(info[0], "table");
    TensorPtr ids = NativeTensor::Get(info[1], "ids");
    EmbeddingParams p = check_embedding(Operand{table.dense.get(), table.quant.get()}, *ids);
    TensorPtr out = make_tensor(p.out_shape, p.out_dtype, allocator_of(backend_));
    EventPtr table_event = table.dense ? table.dense->ready_event() : table.quant->ready_event();
    out->event = submit(env, double(out->numel()), {table_event, ids->ready_event()},
                        // An empty output (ids still checked) or a table without rows: no kernel.
                        on_host_if(out->numel() == 0 || p.vocab == 0, [table, ids, p, out](Backend& b, Completion done) {
                          return b.embedding(Operand{table.dense.get(), table.quant.get()}, *ids, p, *out, std::move(done));
                        }));
    return NativeTensor::Wrap(env, out);
  });
}

// (x, w, groupSizes, outDtype|null, int8Activations)
Napi::Value NativeDevice::GroupedLinear(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    HeldOperand x = unwrap_operand(info[0], "x");
    HeldOperand w = unwrap_operand(info[1], "w");
    TensorPtr sizes = NativeTensor::Get(info[2], "groupSizes");
    std::optional<DType> out_dtype;
    if (!is_absent(info[3])) {
      DType t;
      if (!info[3].IsString() || !parse_dtype(info[3].As<Napi::String>().Utf8Value(), &t) || !is_float(t)) {
        throw_error(env, code::DType, "outDtype must be 'float32', 'float16' or 'bfloat16'; got " + describe_value(info[3]));
      }
      out_dtype = t;
    }
    const Operand xo{x.dense.get(), x.quant.get()}, wo{w.dense.get(), w.quant.get()};
    GroupedLinearParams p = check_grouped_linear(xo, wo, *sizes, out_dtype);
    p.int8_activations = info[4].IsBoolean() && info[4].As<Napi::Boolean>().Value();  // lib/ checked it
    TensorPtr y = make_tensor(p.out_shape, p.out_dtype, allocator_of(backend_));
    EventPtr w_event = w.dense ? w.dense->ready_event() : w.quant->ready_event();
    y->event = submit(env, double(p.T) * double(p.N) * double(std::max<int64_t>(p.K, 1)), {x.dense->ready_event(), w_event, sizes->ready_event()},
                      // No rows, outputs or experts, or K = 0 (zeros): no kernel; the sizes are checked.
                      on_host_if(y->numel() == 0 || p.K == 0 || p.E == 0, [x, w, sizes, p, y](Backend& b, Completion done) {
                        return b.grouped_linear(Operand{x.dense.get(), nullptr}, Operand{w.dense.get(), w.quant.get()},
                                                *sizes, p, *y, std::move(done));
                      }));
    return NativeTensor::Wrap(env, y);
  });
}

// (ids, groups) -> [sizes, rows, positions]
Napi::Value NativeDevice::GroupRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr ids = NativeTensor::Get(info[0], "ids");
    const GroupRowsParams p = check_group_rows(*ids, read_int(info[1], "groups", 1, INT32_MAX));
    TensorPtr sizes = make_tensor({p.groups}, DType::Int32, allocator_of(backend_));
    TensorPtr rows = make_tensor({p.rows * p.k}, DType::Int32, allocator_of(backend_));
    TensorPtr positions = make_tensor(ids->shape, DType::Int32, allocator_of(backend_));
    sizes->event = rows->event = positions->event =
        submit(env, double(ids->numel()), {ids->ready_event()}, [ids, p, sizes, rows, positions](Backend& b, Completion done) {
          return b.group_rows(*ids, p, *sizes, *rows, *positions, std::move(done));
        });
    Napi::Array out = Napi::Array::New(env, 3);
    out.Set(uint32_t(0), NativeTensor::Wrap(env, sizes));
    out.Set(uint32_t(1), NativeTensor::Wrap(env, rows));
    out.Set(uint32_t(2), NativeTensor::Wrap(env, positions));
    return out;
  });
}

// (kind, x | tensors[], ...): 'transpose' (x, perm[]), 'slice' (x, axis, start, end),
// 'concat' (tensors[], axis).
Napi::Value NativeDevice::Layout(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    const std::string kind = read_string(info[0], "op");
    std::vector<TensorPtr> srcs;
    std::vector<CopyPart> parts;
    Shape out_shape;
    if (kind == "concat") {
      if (!info[1].IsArray()) throw_error(env, code::Arg, "tensors must be an array of Tensors; got " + describe_value(info[1]));
      Napi::Array a = info[1].As<Napi::Array>();
      std::vector<const mto::Tensor*> raw;
      for (uint32_t i = 0; i < a.Length(); ++i) {
        srcs.push_back(NativeTensor::Get(a.Get(i), ("tensors[" + std::to_string(i) + "]").c_str()));
        raw.push_back(srcs.back().get());
      }
      parts = plan_concat(raw, read_int(info[2], "axis", -kMaxIndex, kMaxIndex), &out_shape);
    } else {
      srcs.push_back(NativeTensor::Get(info[1], "x"));
      if (kind == "transpose") {
        if (!info[2].IsArray()) throw_error(env, code::Arg, "perm must be an array of axes; got " + describe_value(info[2]));
        Napi::Array a = info[2].As<Napi::Array>();
        std::vector<int64_t> perm;
        for (uint32_t i = 0; i < a.Length(); ++i) perm.push_back(read_int(a.Get(i), "perm[i]", -kMaxIndex, kMaxIndex));
        parts = plan_transpose(*srcs[0], perm, &out_shape);
      } else if (kind == "slice") {
        parts = plan_slice(*srcs[0], read_int(info[2], "axis", -kMaxIndex, kMaxIndex),
                           read_int(info[3], "start", -kMaxIndex, kMaxIndex), read_int(info[4], "end", -kMaxIndex, kMaxIndex),
                           &out_shape);
      } else {
        throw_error(env, code::Arg, "op must be 'transpose', 'slice' or 'concat'; got '" + kind + "'");
      }
    }
    TensorPtr out = make_tensor(out_shape, srcs[0]->dtype, allocator_of(backend_));
    EventList inputs;
    for (const TensorPtr& s : srcs) inputs.push_back(s->ready_event());
    // concat's empty inputs copy nothing: no part of theirs reaches a kernel.
    std::vector<TensorPtr> copied;
    std::vector<CopyPart> nonempty;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (shape_numel(parts[i].dims) == 0) continue;
      copied.push_back(srcs[i]);
      nonempty.push_back(parts[i]);
    }
    out->event = submit(env, double(out->numel()), std::move(inputs),
                        on_host_if(out->numel() == 0, [copied, nonempty, out](Backend& b, Completion done) {
                          std::vector<const mto::Tensor*> raw;
                          for (const TensorPtr& s : copied) raw.push_back(s.get());
                          return b.copy(raw, nonempty, *out, std::move(done));
                        }));
    return NativeTensor::Wrap(env, out);
  });
}

// (dst, src, axis, offset): src into dst in place, after every op queued before (one may still
// read dst's old values, on another queue) and every read of dst started before, and before
// every op queued after.
Napi::Value NativeDevice::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    if (NativeQTensor::Is(info[0])) {
      write_quantized(env, NativeQTensor::Get(info[0], "dst"), info[1], read_int(info[2], "axis", -kMaxIndex, kMaxIndex),
                      read_int(info[3], "offset", -kMaxIndex, kMaxIndex));
      return env.Undefined();
    }
    TensorPtr dst = NativeTensor::Get(info[0], "dst");
    TensorPtr src = NativeTensor::Get(info[1], "src");
    std::vector<CopyPart> parts = plan_write(*dst, *src, read_int(info[2], "axis", -kMaxIndex, kMaxIndex),
                                             read_int(info[3], "offset", -kMaxIndex, kMaxIndex));
    if (src->numel() == 0) return env.Undefined();  // writes nothing: nothing to order either
    EventPtr event = submit(env, double(src->numel()), {src->ready_event(), dst->ready_event(), stream_->tail()},
                            [src, parts, dst](Backend& b, Completion done) {
                              return b.copy({src.get()}, parts, *dst, std::move(done));
                            },
                            dst->buffer->reads_in_flight());
    dst->buffer->last_write = event;
    return env.Undefined();
  });
}

namespace {

// One plane of a quantized tensor seen as bytes: [..., row bytes] (the planes are row-major with
// the same bytes per row of the last axis), for plan_write.
Tensor plane_bytes(const QTensor& q, const BufferPtr& plane) {
  Tensor t;
  t.shape = q.shape;
  t.shape.back() = int64_t(plane->bytes()) / q.rows();
  t.dtype = DType::Bool;  // one byte an element
  t.buffer = plane;
  return t;
}

}  // namespace

// A quantized destination (a mxfp8 KV cache): src (dense, quantized here to dst's format, or
// already in it) goes in plane by plane. Along the last axis only whole blocks can be written.
void NativeDevice::write_quantized(Napi::Env env, const QTensorPtr& dst, Napi::Value src_value, int64_t axis,
                                   int64_t offset) {
  const int64_t rank = int64_t(dst->shape.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  QTensorPtr src;
  const bool from_quantized = NativeQTensor::Is(src_value);
  if (from_quantized) {
    src = NativeQTensor::Get(src_value, "src");
    if (src->format != dst->format || src->block != dst->block) {
      throw_error(env, code::Format, std::string("write: src is ") + format_info(src->format).name + " (block " +
                                         std::to_string(src->block) + "), dst " + format_info(dst->format).name +
                                         " (block " + std::to_string(dst->block) + "); they must match");
    }
  } else {
    TensorPtr x = NativeTensor::Get(src_value, "src");
    if (!is_float(x->dtype)) {
      throw_error(env, code::DType, std::string("write: src has dtype '") + dtype_name(x->dtype) +
                                        "'; a quantized dst takes a float src (quantized on the way) or its own format");
    }
    check_quantize(x->shape, dst->format, dst->block);
    src = make_qtensor(x->shape, dst->format, dst->block, allocator_of(backend_));
    src->event = submit(env, double(x->numel()), {x->ready_event()},
                        [x, src](Backend& b, Completion done) { return b.quantize(*x, *src, std::move(done)); });
  }
  if (ax == rank - 1 && (offset % dst->block != 0 || src->shape.back() % dst->block != 0)) {
    throw_error(env, code::Arg, "write: along the last axis of a quantized dst, offset (" + std::to_string(offset) +
                                    ") and src's length (" + std::to_string(src->shape.back()) +
                                    ") must be multiples of its block size " + std::to_string(dst->block));
  }
  // Checks shapes and the offset on the logical tensors first (the messages users see).
  mto::Tensor dl, sl;
  dl.shape = dst->shape;
  sl.shape = src->shape;
  plan_write(dl, sl, axis, offset);
  if (shape_numel(src->shape) == 0) return;  // writes nothing (a non-empty dst then has no empty plane)
  std::vector<std::pair<BufferPtr, BufferPtr>> planes = {{src->codes, dst->codes}, {src->scales, dst->scales}};
  if (dst->biases) planes.emplace_back(src->biases, dst->biases);
  // A NaN code arriving in an E4M3 dst: its kernels must look for one from now on (a src quantized
  // from floats here has none; the quantizers never write one).
  if (from_quantized && src->fp8_nan_codes.get()) dst->fp8_nan_codes.set(true);
  // Biases arriving that are not centred (any src quantized here: the affine quantizer's are not).
  if (!from_quantized || !src->centred_biases.get()) dst->centred_biases.set(false);
  EventPtr last = dst->ready_event();
  EventPtr tail = stream_->tail();
  for (const auto& [sp, dp] : planes) {
    mto::Tensor d = plane_bytes(*dst, dp), s = plane_bytes(*src, sp);
    // Along the last axis the offset scales with the plane's bytes per element.
    const int64_t o = ax == rank - 1 ? offset * d.shape.back() / dst->shape.back() : offset;
    std::vector<CopyPart> parts = plan_write(d, s, axis, o);
    auto dt = std::make_shared<mto::Tensor>(d);
    auto st = std::make_shared<mto::Tensor>(s);
    last = submit(env, double(s.numel()), {src->ready_event(), last, tail},
                  [st, dt, parts, src, dst](Backend& b, Completion done) {
                    return b.copy({st.get()}, parts, *dt, std::move(done));
                  },
                  dp->reads_in_flight());
  }
  dst->codes->last_write = last;  // QTensor::ready_event
}

}  // namespace mto::addon
