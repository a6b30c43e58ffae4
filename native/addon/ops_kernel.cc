// Users' kernels on a backend that compiles MSL (dev.kernel() on metal; core/user_kernel.h):
// compileKernel hands the generated source to the backend, which compiles it off the JS thread,
// and resolves with the program; runKernel queues one run of it like every op (outputs allocated
// at once, run in stream order after the ops that write its inputs). On the cpu backend
// compileKernel answers null and lib/ runs the kernel in the emulator instead (ops_process.cc).
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device.h"
#include "errors.h"
#include "js_completion.h"
#include "tensors.h"

namespace mto::addon {
namespace {

// Marks the externals that hold a program, so a foreign External is refused rather than misread.
constexpr napi_type_tag kProgramTag = {0x6d746f5f6b65726eULL, 0x656c5f70726f6721ULL};

struct ProgramBox {
  UserKernelProgramPtr program;
};

Napi::Value wrap_program(Napi::Env env, UserKernelProgramPtr program) {
  Napi::Object out = Napi::Object::New(env);
  auto ext = Napi::External<ProgramBox>::New(env, new ProgramBox{program},
                                             [](Napi::Env, ProgramBox* box) { delete box; });
  if (napi_type_tag_object(env, ext, &kProgramTag) != napi_ok) throw_error(env, code::Backend, "internal: cannot tag a kernel program");
  out.Set("program", ext);
  out.Set("maxThreads", Napi::Number::New(env, program->max_threads));
  out.Set("simdWidth", Napi::Number::New(env, program->simd_width));
  return out;
}

UserKernelProgramPtr read_program(Napi::Env env, Napi::Value v) {
  bool tagged = false;
  if (v.IsExternal()) napi_check_object_type_tag(env, v, &kProgramTag, &tagged);
  if (!tagged) throw_error(env, code::Arg, "program must be what compileKernel resolved with; got " + describe_value(v));
  return v.As<Napi::External<ProgramBox>>().Data()->program;
}

std::string string_arg(Napi::Value v, const char* arg) {
  if (!v.IsString()) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a string; got " + describe_value(v));
  return v.As<Napi::String>().Utf8Value();
}

uint32_t u32_arg(Napi::Value v, const std::string& arg) {
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(d >= 0 && d <= 4294967295.0) || double(uint32_t(d)) != d) {
    throw_error(v.Env(), code::Arg, arg + " must be an integer in [0, 2^32); got " + describe_value(v));
  }
  return uint32_t(d);
}

std::vector<uint8_t> bytes_arg(Napi::Value v, const std::string& arg) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw_error(v.Env(), code::Arg, arg + " must be a Uint8Array; got " + describe_value(v));
  }
  Napi::Uint8Array a = v.As<Napi::Uint8Array>();
  return std::vector<uint8_t>(a.Data(), a.Data() + a.ElementLength());
}

// One element of an output's init value in its dtype (as emulator/main.cc fills it: RNE).
std::vector<uint8_t> fill_bytes(DType t, double value) {
  std::vector<uint8_t> out;
  auto put = [&out](const void* p, size_t n) { out.assign(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); };
  const float f = float(value);
  const int32_t i = int32_t(value);
  const uint16_t h = t == DType::Float16 ? float_to_half(f) : float_to_bf16(f);
  if (t == DType::Float32) put(&f, 4);
  else if (t == DType::Int32) put(&i, 4);
  else put(&h, 2);
  return out;
}

}  // namespace

// (name, source, tier: 'simdgroup' | 'tensorops' | 'tensorops-mx') -> Promise<{ program, maxThreads, simdWidth }>
// once compiled (rejected with E_KERNEL quoting the compiler, E_BACKEND for a tier the device
// lacks), or null when this device's backend compiles no MSL.
Napi::Value NativeDevice::CompileKernel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    const std::string name = string_arg(info[0], "name");
    const std::string source = string_arg(info[1], "source");
    const std::string tier_text = string_arg(info[2], "tier");
    if (tier_text != "simdgroup" && tier_text != "tensorops" && tier_text != "tensorops-mx") {
      throw_error(env, code::Arg, "tier must be 'simdgroup', 'tensorops' or 'tensorops-mx'; got '" + tier_text + "'");
    }
    const Tier tier = tier_text == "tensorops-mx" ? Tier::TensorOpsMx
                      : tier_text == "tensorops"  ? Tier::TensorOps
                                                  : Tier::Simdgroup;
    // Written by the backend's thread before it settles; read on the JS thread after: the
    // completion channel's queue orders the two.
    auto slot = std::make_shared<UserKernelProgramPtr>();
    JsCompletion completion(env, [slot](Napi::Env e) -> Napi::Value { return wrap_program(e, *slot); });
    Completion settle = completion.completion();
    const bool started = backend_->compile_user_kernel(name, source, tier, [slot, settle](UserKernelProgramPtr p, OpStatus s) {
      if (s.ok() && !p) s = OpStatus{code::Backend, "internal: a kernel compiled to no program"};
      *slot = std::move(p);
      settle(std::move(s));
    });
    if (!started) {
      completion.abandon();
      return env.Null();
    }
    return completion.promise();
  });
}

// (program, geometry: [GX, GY, GZ, TX, TY, TZ] (threadgroups, threads per threadgroup),
//  args: [{ index, tensor, plane?, name? } | { index, bytes: Uint8Array }] (plane: codes, scales,
//        biases, or 'tensor': the quantized tensor as one scale-plane tensor),
//  outputs: [{ index, shape, dtype, init? }],
//  threadgroupMemory?: [{ index, bytes }] (bytes a positive multiple of 16)) -> output ids
Napi::Value NativeDevice::RunKernel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    UserKernelLaunch launch;
    launch.program = read_program(env, info[0]);
    if (!info[1].IsArray() || info[1].As<Napi::Array>().Length() != 6) {
      throw_error(env, code::Arg, "geometry must be 6 integers; got " + describe_value(info[1]));
    }
    Napi::Array g = info[1].As<Napi::Array>();
    uint64_t threads = 1;
    for (uint32_t i = 0; i < 3; ++i) {
      launch.threadgroups[i] = u32_arg(g.Get(i), "geometry[" + std::to_string(i) + "]");
      launch.threads[i] = u32_arg(g.Get(i + 3), "geometry[" + std::to_string(i + 3) + "]");
      if (launch.threadgroups[i] == 0 || launch.threads[i] == 0) throw_error(env, code::Arg, "geometry must be positive");
      threads *= launch.threads[i];
    }
    if (threads > launch.program->max_threads) {
      throw_error(env, code::Arg, "a threadgroup of " + std::to_string(threads) + " threads; this kernel allows at most " +
                                      std::to_string(launch.program->max_threads) + " on this device");
    }
    if (!info[2].IsArray() || !info[3].IsArray()) throw_error(env, code::Arg, "args and outputs must be arrays");
    Napi::Array args = info[2].As<Napi::Array>();
    EventList events;
    std::vector<TensorPtr> held;    // dense inputs, alive until the run is done
    std::vector<QTensorPtr> held_q; // quantized inputs
    double work = 1;
    for (uint32_t i = 0; i < args.Length(); ++i) {
      const std::string at = "args[" + std::to_string(i) + "]";
      if (!args.Get(i).IsObject()) throw_error(env, code::Arg, at + " must be an object");
      Napi::Object a = args.Get(i).As<Napi::Object>();
      UserKernelArg arg;
      arg.index = u32_arg(a.Get("index"), at + ".index");
      if (a.Has("bytes")) {
        arg.bytes = bytes_arg(a.Get("bytes"), at + ".bytes");
      } else if (a.Has("plane")) {
        const std::string plane = string_arg(a.Get("plane"), (at + ".plane").c_str());
        QTensorPtr q = NativeQTensor::Get(a.Get("tensor"), "args[i].tensor");
        if (a.Get("name").IsString()) arg.name = a.Get("name").As<Napi::String>().Utf8Value();
        if (plane == "tensor") {
          // Both planes, bound by the backend as one tensor (lib/ checked the format and layout).
          arg.scaled = q;
          work += double(q->codes->bytes() + q->scales->bytes());
        } else {
          arg.buffer = plane == "codes" ? q->codes : plane == "scales" ? q->scales : plane == "biases" ? q->biases : nullptr;
          if (!arg.buffer) throw_error(env, code::Arg, at + ".plane must be codes, scales, biases (affine) or tensor; got '" + plane + "'");
          work += double(arg.buffer->bytes());
        }
        events.push_back(q->ready_event());
        held_q.push_back(std::move(q));
      } else {
        TensorPtr t = NativeTensor::Get(a.Get("tensor"), "args[i].tensor");
        arg.buffer = t->buffer;
        events.push_back(t->ready_event());
        work += double(t->numel());
        held.push_back(std::move(t));
      }
      launch.args.push_back(std::move(arg));
    }
    if (!info[4].IsUndefined()) {
      if (!info[4].IsArray()) throw_error(env, code::Arg, "threadgroupMemory must be an array; got " + describe_value(info[4]));
      Napi::Array tg = info[4].As<Napi::Array>();
      for (uint32_t i = 0; i < tg.Length(); ++i) {
        const std::string at = "threadgroupMemory[" + std::to_string(i) + "]";
        if (!tg.Get(i).IsObject()) throw_error(env, code::Arg, at + " must be an object");
        Napi::Object m = tg.Get(i).As<Napi::Object>();
        UserKernelThreadgroupMemory mem{u32_arg(m.Get("index"), at + ".index"), u32_arg(m.Get("bytes"), at + ".bytes")};
        if (mem.bytes == 0 || mem.bytes % 16 != 0) {
          throw_error(env, code::Arg, at + ".bytes must be a positive multiple of 16; got " + std::to_string(mem.bytes));
        }
        launch.threadgroup_memory.push_back(mem);
      }
    }
    Napi::Array outs = info[3].As<Napi::Array>();
    std::vector<TensorPtr> outputs;
    for (uint32_t i = 0; i < outs.Length(); ++i) {
      const std::string at = "outputs[" + std::to_string(i) + "]";
      if (!outs.Get(i).IsObject()) throw_error(env, code::Arg, at + " must be an object");
      Napi::Object o = outs.Get(i).As<Napi::Object>();
      DType t;
      const std::string dtype = string_arg(o.Get("dtype"), (at + ".dtype").c_str());
      if (!parse_dtype(dtype, &t)) throw_error(env, code::DType, at + ".dtype is not a dtype: " + dtype);
      outputs.push_back(make_tensor(read_shape(o.Get("shape"), "outputs[i].shape"), t, allocator_of(backend_)));
      UserKernelArg arg;
      arg.index = u32_arg(o.Get("index"), at + ".index");
      arg.buffer = outputs.back()->buffer;
      const Napi::Value init = o.Get("init");
      if (init.IsNumber()) arg.fill = fill_bytes(t, init.As<Napi::Number>().DoubleValue());
      launch.args.push_back(std::move(arg));
    }
    EventPtr event = submit(env, work + 1e9, std::move(events),
                            [launch, held, held_q, outputs](Backend& b, Completion done) {
                              if (b.user_kernel(launch, done)) return true;
                              // The metal backend declined (a buffer that is not Metal storage):
                              // the stream asks the cpu backend next, which cannot run MSL.
                              if (!b.runs_on_caller()) return false;
                              done(OpStatus{code::Kernel, "a kernel compiled for Metal cannot run on the cpu backend (its buffers are not Metal storage)"});
                              return true;
                            });
    return NativeTensor::WrapOutputs(env, outputs, event);
  });
}

}  // namespace mto::addon
