// Test-only bindings of native/core's metal host logic (see internal.h). Each function converts
// plain JS objects to the core types, runs the real code, and returns plain objects.
#include "internal.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/buffer_pool.h"
#include "core/capabilities.h"
#include "core/command_path.h"
#include "core/error.h"
#include "core/os_detect.h"
#include "core/pipeline_key.h"
#include "core/shader_source.h"
#include "core/tiers.h"
#include "errors.h"
#include "core/commit_policy.h"
#include "core/stream.h"
#include "async_test_backend.h"
#include "js_completion.h"
#include "kernels/dot.h"
#include "kernels/gemm_q8.h"

namespace mto::addon {
namespace {

std::string str_field(Napi::Object o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
}
bool bool_field(Napi::Object o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsBoolean() && v.As<Napi::Boolean>().Value();
}
double num_field(Napi::Object o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : 0;
}

// "26.2" or "26.2.1" -> OsVersion.
OsVersion parse_os(const std::string& s) {
  OsVersion v;
  std::sscanf(s.c_str(), "%d.%d.%d", &v.major, &v.minor, &v.patch);
  return v;
}

// { processInfo?, productVersion?, darwinRelease? }: each a string (what the call returned) or
// absent (the call failed) -> OsReadings.
OsReadings read_os_readings(Napi::Value v) {
  if (!v.IsObject()) throw Error(code::Arg, "readings must be an object");
  Napi::Object o = v.As<Napi::Object>();
  const auto reading = [&](const char* key) {
    OsReading r;
    r.ok = o.Get(key).IsString();
    if (r.ok) r.text = str_field(o, key);
    return r;
  };
  OsReadings r;
  r.process_info = reading("processInfo");
  r.product_version = reading("productVersion");
  r.darwin_release = reading("darwinRelease");
  return r;
}

// A boolean field, or `fallback` when it is absent.
bool bool_field_or(Napi::Object o, const char* key, bool fallback) {
  Napi::Value v = o.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : fallback;
}

// { hasDevice, deviceName, architecture, os: "26.2" | osReadings: {...}, rosetta, appleFamily,
//   metal4Family, metal4Api, scalePlaneApi, unifiedMemory, recommendedWorkingSet,
//   probes: { [tier]: true | "error text" } }
// A tier missing from `probes` compiles fine when probed. `osReadings` runs the OS detection
// (core/os_detect.h) as device.mm does; metal4Api / scalePlaneApi, when absent, are what an
// honest framework of that OS answers (macOS 26 / 27 and later).
Capabilities read_caps(Napi::Value v) {
  if (!v.IsObject()) throw Error(code::Arg, "caps must be an object");
  Napi::Object o = v.As<Napi::Object>();
  Capabilities c;
  c.has_device = bool_field(o, "hasDevice");
  c.device_name = str_field(o, "deviceName");
  c.architecture = str_field(o, "architecture");
  if (o.Has("osReadings")) {
    const OsDetection d = detect_os_version(read_os_readings(o.Get("osReadings")));
    c.os = d.version;
    c.os_source = d.source;
  } else {
    c.os = parse_os(str_field(o, "os"));
  }
  c.metal4_api = bool_field_or(o, "metal4Api", c.os.at_least(26));
  c.scale_plane_api = bool_field_or(o, "scalePlaneApi", c.os.at_least(27));
  c.rosetta = bool_field(o, "rosetta");
  c.apple_family = int(num_field(o, "appleFamily"));
  c.metal4_family = bool_field(o, "metal4Family");
  c.unified_memory = bool_field(o, "unifiedMemory");
  c.recommended_working_set = uint64_t(num_field(o, "recommendedWorkingSet"));
  return c;
}

ProbeResult scripted_probe(Napi::Object caps, Tier t) {
  ProbeResult r;
  r.state = ProbeResult::State::Ok;
  Napi::Value probes = caps.Get("probes");
  if (!probes.IsObject()) return r;
  Napi::Value p = probes.As<Napi::Object>().Get(tier_name(t));
  if (p.IsString()) {
    r.state = ProbeResult::State::Failed;
    r.message = p.As<Napi::String>().Utf8Value();
  } else if (p.IsBoolean() && !p.As<Napi::Boolean>().Value()) {
    r.state = ProbeResult::State::Failed;
    r.message = "probe failed";
  }
  return r;
}

// selectTier(caps, { backend?, tier? }, { probing = true })
//   -> { backend, tier, neuralAccelerators, fallbackReason?, probed: [tier...], needsProbe? }
Napi::Value SelectTier(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Capabilities caps = read_caps(info[0]);
    Napi::Object caps_obj = info[0].As<Napi::Object>();
    TierRequest req;
    if (info[1].IsObject()) {
      req.backend = str_field(info[1].As<Napi::Object>(), "backend");
      req.tier = str_field(info[1].As<Napi::Object>(), "tier");
    }
    const bool probing = !(info[2].IsObject() && info[2].As<Napi::Object>().Get("probing").IsBoolean() &&
                           !info[2].As<Napi::Object>().Get("probing").As<Napi::Boolean>().Value());
    Napi::Array probed = Napi::Array::New(env);
    TierChoice c;
    if (probing) {
      c = select_tier_probing(caps, req, [&](Tier t) {
        probed.Set(probed.Length(), tier_name(t));
        return scripted_probe(caps_obj, t);
      });
    } else {
      c = select_tier(caps, req);
    }
    Napi::Object o = Napi::Object::New(env);
    if (c.needs_probe) {
      o.Set("needsProbe", tier_name(c.probe_needed));
      return o;
    }
    o.Set("backend", c.backend);
    o.Set("tier", tier_name(c.tier));
    o.Set("neuralAccelerators", c.neural_accelerators);
    if (!c.fallback_reason.empty()) o.Set("fallbackReason", c.fallback_reason);
    o.Set("probed", probed);
    return o;
  });
}

// describeCaps(caps) -> { generation, neuralAcceleratorHardware, gpuFamily }
Napi::Value DescribeCaps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Capabilities caps = read_caps(info[0]);
    Napi::Object o = Napi::Object::New(env);
    o.Set("generation", architecture_generation(caps.architecture));
    o.Set("neuralAcceleratorHardware", gpu_has_neural_accelerators(caps));
    o.Set("gpuFamily", gpu_family_name(caps));
    return o;
  });
}

// detectOs({ processInfo?, productVersion?, darwinRelease? }) -> { version: "26.2", source, compatSeen }
Napi::Value DetectOs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    const OsDetection d = detect_os_version(read_os_readings(info[0]));
    Napi::Object o = Napi::Object::New(env);
    o.Set("version", os_version_string(d.version));
    o.Set("source", d.source);
    o.Set("compatSeen", d.compat_seen);
    return o;
  });
}

// gpuCores(reading, architecture) -> { cores, source }: the core count decision
// (core/capabilities.h gpu_core_count) on what IOKit's gpu-core-count read, a number, or
// undefined / null when the property or the AGXAccelerator service is absent.
Napi::Value GpuCores(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    std::optional<int64_t> reading;
    if (info[0].IsNumber()) {
      reading = info[0].As<Napi::Number>().Int64Value();
    } else if (!info[0].IsUndefined() && !info[0].IsNull()) {
      throw Error(code::Arg, "reading must be a number, undefined or null");
    }
    if (!info[1].IsString()) throw Error(code::Arg, "architecture must be a string");
    const GpuCoreCount c = gpu_core_count(reading, info[1].As<Napi::String>().Utf8Value());
    Napi::Object o = Napi::Object::New(env);
    o.Set("cores", c.cores);
    o.Set("source", core_count_source_name(c.source));
    return o;
  });
}

// commandPath(caps, tier, { sdkMetal4, available26 }) -> "metal3" | "metal4" | "metal4-past-compat"
Napi::Value CommandPathOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    const Capabilities caps = read_caps(info[0]);
    Tier t;
    if (!info[1].IsString() || !parse_tier(info[1].As<Napi::String>().Utf8Value(), &t)) {
      throw Error(code::Arg, "tier must be a tier name");
    }
    if (!info[2].IsObject()) throw Error(code::Arg, "build must be an object");
    Napi::Object b = info[2].As<Napi::Object>();
    return Napi::String::New(env, command_path_name(command_path_for(caps, t, bool_field(b, "sdkMetal4"),
                                                                     bool_field(b, "available26"))));
  });
}

// mslVersion(tier) -> { version: "4.0", raw }
Napi::Value MslVersionOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Tier t;
    if (!info[0].IsString() || !parse_tier(info[0].As<Napi::String>().Utf8Value(), &t)) {
      throw Error(code::Arg, "tier must be a tier name");
    }
    MslVersion v = msl_version_for(t);
    Napi::Object o = Napi::Object::New(env);
    o.Set("version", std::to_string(v.major) + "." + std::to_string(v.minor));
    o.Set("raw", double(v.raw()));
    return o;
  });
}

size_t read_size(Napi::Value v, const char* arg) {
  if (!v.IsNumber()) throw Error(code::Arg, std::string(arg) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9007199254740991.0 || std::floor(d) != d) {
    throw Error(code::Arg, std::string(arg) + " must be a non-negative integer");
  }
  return size_t(d);
}

Napi::Value SizeClass(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    return Napi::Number::New(env, double(size_pool_class(read_size(info[0], "bytes"))));
  });
}

}  // namespace

Napi::Object pool_stats_to_js(Napi::Env env, const SizeClassPool::Stats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("liveBytes", double(s.live_bytes));
  o.Set("cachedBytes", double(s.cached_bytes));
  o.Set("cachedBlocks", double(s.cached_blocks));
  o.Set("allocations", double(s.allocations));
  o.Set("reuses", double(s.reuses));
  o.Set("frees", double(s.frees));
  return o;
}

namespace {

// poolRun({ cacheLimit, maxOutstanding? }, script) where script items are { acquire: bytes } or
// { release: i } (i = the script index of the acquire). A fake allocator hands out numbered
// handles and fails once maxOutstanding handles exist. Returns { steps: [{ handle, bytes, reused }
// | { error, code }], stats, freed: [handle...] }.
Napi::Value PoolRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    if (!info[0].IsObject() || !info[1].IsArray()) throw Error(code::Arg, "poolRun(options, script)");
    Napi::Object opts = info[0].As<Napi::Object>();
    const size_t limit = read_size(opts.Get("cacheLimit"), "cacheLimit");
    const double max_outstanding = opts.Get("maxOutstanding").IsNumber() ? num_field(opts, "maxOutstanding") : 1e18;
    size_t next = 1, outstanding = 0;
    Napi::Array freed = Napi::Array::New(env);
    SizeClassPool pool(
        limit,
        [&](size_t) -> void* {
          if (double(outstanding) >= max_outstanding) return nullptr;
          ++outstanding;
          return reinterpret_cast<void*>(next++);
        },
        [&](void* h, size_t) {
          --outstanding;
          freed.Set(freed.Length(), double(reinterpret_cast<uintptr_t>(h)));
        });
    Napi::Array script = info[1].As<Napi::Array>();
    std::vector<SizeClassPool::Block> blocks(script.Length());
    Napi::Array steps = Napi::Array::New(env);
    for (uint32_t i = 0; i < script.Length(); ++i) {
      Napi::Object op = script.Get(i).As<Napi::Object>();
      Napi::Object step = Napi::Object::New(env);
      if (op.Has("acquire")) {
        try {
          bool reused = false;
          blocks[i] = pool.acquire(read_size(op.Get("acquire"), "acquire"), &reused);
          step.Set("handle", double(reinterpret_cast<uintptr_t>(blocks[i].handle)));
          step.Set("bytes", double(blocks[i].bytes));
          step.Set("reused", reused);
        } catch (const Error& e) {
          step.Set("error", e.what());
          step.Set("code", e.code());
        }
      } else {
        const size_t at = read_size(op.Get("release"), "release");
        if (at >= blocks.size()) throw Error(code::Arg, "release index out of range");
        pool.release(blocks[at]);
        blocks[at] = {};
      }
      steps.Set(i, step);
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("steps", steps);
    out.Set("stats", pool_stats_to_js(env, pool.stats()));
    out.Set("freed", freed);
    return out;
  });
}

FunctionConstant read_constant(Napi::Value v) {
  if (!v.IsObject()) throw Error(code::Arg, "each constant must be { index, type, value }");
  Napi::Object o = v.As<Napi::Object>();
  FunctionConstant c;
  const double index = num_field(o, "index");
  if (index < 0 || index > 65535 || std::floor(index) != index) {
    throw Error(code::Arg, "constant index must be an integer from 0 to 65535");
  }
  c.index = uint32_t(index);
  const std::string type = str_field(o, "type");
  if (!parse_constant_type(type, &c.type)) {
    throw Error(code::Arg, "constant type must be 'bool', 'i16', 'u16', 'i32', 'u32' or 'f32'; got '" + type + "'");
  }
  Napi::Value value = o.Get("value");
  if (c.type == ConstantType::Bool) {
    if (!value.IsBoolean()) throw Error(code::Arg, "a bool constant needs a boolean value");
    return FunctionConstant::boolean(c.index, value.As<Napi::Boolean>().Value());
  }
  if (!value.IsNumber()) throw Error(code::Arg, "constant value must be a number");
  const double d = value.As<Napi::Number>().DoubleValue();
  if (c.type == ConstantType::Float32) return FunctionConstant::f32(c.index, float(d));
  const bool is_signed = c.type == ConstantType::Int16 || c.type == ConstantType::Int32;
  const double lo = is_signed ? (c.type == ConstantType::Int16 ? -32768.0 : -2147483648.0) : 0.0;
  const double hi = c.type == ConstantType::Int16 ? 32767.0 : c.type == ConstantType::UInt16 ? 65535.0
                  : c.type == ConstantType::Int32 ? 2147483647.0 : 4294967295.0;
  if (std::floor(d) != d || d < lo || d > hi) {
    throw Error(code::Arg, "constant " + std::to_string(c.index) + " value does not fit " + type);
  }
  c.bits = is_signed ? uint32_t(int32_t(d)) : uint32_t(d);
  if (c.type == ConstantType::Int16) c.bits &= 0xffff;
  return c;
}

// pipelineKey(kernel, [{ index, type, value }]) -> string
Napi::Value PipelineKey(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    if (!info[0].IsString()) throw Error(code::Arg, "kernel must be a string");
    std::vector<FunctionConstant> constants;
    if (info[1].IsArray()) {
      Napi::Array a = info[1].As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); ++i) constants.push_back(read_constant(a.Get(i)));
    }
    return Napi::String::New(env, pipeline_key(info[0].As<Napi::String>().Utf8Value(), constants));
  });
}

// completeOnThread(error: string | null) -> Promise: settled through JsCompletion (the path the
// metal backend's completed handlers take) by a thread that is not the JS thread, after a few
// ms; an error string rejects with E_BACKEND and that message. The thread calls the completion
// twice: the second call must be ignored.
Napi::Value CompleteOnThread(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string error = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  JsCompletion completion(env, [](Napi::Env e) -> Napi::Value {
    return Napi::String::New(e, "resolved on the JS thread");
  });
  std::thread([done = completion.completion(), error] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    OpStatus status;
    if (!error.empty()) status = OpStatus{code::Backend, error};
    done(status);
    done(OpStatus{code::Backend, "a second completion must be ignored"});
  }).detach();
  return completion.promise();
}

// dropCompletion() -> Promise that never settles: its completion is dropped uncalled (an op that
// failed to start). The process must still be able to exit.
Napi::Value DropCompletion(const Napi::CallbackInfo& info) {
  JsCompletion completion(info.Env(), [](Napi::Env e) -> Napi::Value { return e.Undefined(); });
  Completion dropped = completion.completion();
  return completion.promise();
}

// oneKernelSource(library, instance) -> string: core/shader_source.h one_kernel_source.
Napi::Value OneKernelSource(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    if (!info[0].IsString() || !info[1].IsString()) throw Error(code::Arg, "oneKernelSource(library, instance)");
    return Napi::String::New(env, one_kernel_source(info[0].As<Napi::String>().Utf8Value(),
                                                    info[1].As<Napi::String>().Utf8Value()));
  });
}

// expandShader(name, { [file]: text }) -> string: core/shader_source.h over the given files.
Napi::Value ExpandShader(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    if (!info[0].IsString() || !info[1].IsObject()) throw Error(code::Arg, "expandShader(name, files)");
    std::map<std::string, std::string> files;
    Napi::Object o = info[1].As<Napi::Object>();
    Napi::Array keys = o.GetPropertyNames();
    for (uint32_t i = 0; i < keys.Length(); ++i) {
      const std::string k = keys.Get(i).ToString().Utf8Value();
      files[k] = o.Get(k).ToString().Utf8Value();
    }
    return Napi::String::New(env, expand_shader_source(info[0].As<Napi::String>().Utf8Value(),
                                                       [&](const std::string& n) -> const std::string* {
                                                         auto it = files.find(n);
                                                         return it == files.end() ? nullptr : &it->second;
                                                       }));
  });
}

// hostOpTimes(start: boolean) -> number[] | undefined: start (true) records the kernel time of
// every op the cpu backend runs on its pool (core/stream.h); false ends the recording and returns the
// times, in microseconds, in the order the ops finished.
Napi::Value HostOpTimes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info[0].ToBoolean()) {
    start_op_times();
    return env.Undefined();
  }
  const std::vector<double> us = take_op_times();
  Napi::Array out = Napi::Array::New(env, us.size());
  for (size_t i = 0; i < us.size(); ++i) out.Set(uint32_t(i), us[i]);
  return out;
}

// commitPolicy(architecture, opsEnv | undefined, mbEnv | undefined) -> { maxOps, maxBytes }:
// when the metal backend commits a command buffer (core/commit_policy.h).
Napi::Value CommitPolicyOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    const std::string arch = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
    const std::string ops = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    const std::string mb = info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "";
    const CommitPolicy p = commit_policy(arch, info[1].IsString() ? ops.c_str() : nullptr,
                                         info[2].IsString() ? mb.c_str() : nullptr);
    Napi::Object o = Napi::Object::New(env);
    o.Set("maxOps", p.max_ops);
    o.Set("maxBytes", double(p.max_bytes));
    return o;
  });
}

// batchBudgetCommits(maxOps, maxBytes, opBytes[], turnEnds[]) -> number[]: the 1-based ops after
// which a batch is committed when ops binding opBytes[i] bytes each are encoded one by one under a
// BatchBudget of that policy (core/commit_policy.h), the batch also being committed after each op
// listed in turnEnds (a JS turn's end or a read), as the CommandStream drives it.
Napi::Value BatchBudgetCommits(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    CommitPolicy policy;
    policy.max_ops = info[0].As<Napi::Number>().Int32Value();
    policy.max_bytes = size_t(info[1].As<Napi::Number>().Int64Value());
    Napi::Array bytes = info[2].As<Napi::Array>();
    std::set<int64_t> turn_ends;
    if (info.Length() > 3 && info[3].IsArray()) {
      Napi::Array t = info[3].As<Napi::Array>();
      for (uint32_t i = 0; i < t.Length(); ++i) turn_ends.insert(t.Get(i).As<Napi::Number>().Int64Value());
    }
    BatchBudget budget(policy);
    Napi::Array out = Napi::Array::New(env);
    uint32_t n = 0;
    for (uint32_t i = 0; i < bytes.Length(); ++i) {
      budget.bind(size_t(bytes.Get(i).As<Napi::Number>().Int64Value()));
      const bool full = budget.op_encoded();
      if (full || turn_ends.count(int64_t(i) + 1) > 0) {
        budget.committed();
        out.Set(n++, double(i + 1));
      }
    }
    return out;
  });
}

// asyncTestCounters() -> { opsRun, preparedOnJsThread, opsByLibrary }: process-wide counters of the test-only
// asynchronous backend (async_test_backend.h).
Napi::Value AsyncTestCountersOf(const Napi::CallbackInfo& info) {
  const AsyncTestCounters c = async_test_counters();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("opsRun", double(c.ops_run));
  o.Set("preparedOnJsThread", double(c.prepared_on_js_thread));
  Napi::Object by = Napi::Object::New(info.Env());
  for (const auto& [library, n] : c.ops_by_library) by.Set(library, double(n));
  o.Set("opsByLibrary", by);
  return o;
}

}  // namespace

// The cpu backend's fused kernel tables this process picked (kernels/dot.h, gemm_q8.h), by name,
// null where there are none: tests choose their references by them.
static Napi::Value CpuKernels(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  const auto name = [&](const char* n) { return n ? Napi::Value(Napi::String::New(env, n)) : env.Null(); };
  const auto* dot = mto::kernels::dot_kernels();
  const auto* q8 = mto::kernels::dot_q8_kernels();
  const auto* gemm = mto::kernels::gemm_q8_kernels();
  o.Set("dot", name(dot ? dot->name : nullptr));
  o.Set("q8", name(q8 ? q8->name : nullptr));
  o.Set("gemmQ8", name(gemm ? gemm->name : nullptr));
  return o;
}

Napi::Object InitInternal(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("selectTier", Napi::Function::New(env, SelectTier, "selectTier"));
  o.Set("describeCaps", Napi::Function::New(env, DescribeCaps, "describeCaps"));
  o.Set("detectOs", Napi::Function::New(env, DetectOs, "detectOs"));
  o.Set("gpuCores", Napi::Function::New(env, GpuCores, "gpuCores"));
  o.Set("commandPath", Napi::Function::New(env, CommandPathOf, "commandPath"));
  o.Set("mslVersion", Napi::Function::New(env, MslVersionOf, "mslVersion"));
  o.Set("sizeClass", Napi::Function::New(env, SizeClass, "sizeClass"));
  o.Set("poolRun", Napi::Function::New(env, PoolRun, "poolRun"));
  o.Set("pipelineKey", Napi::Function::New(env, PipelineKey, "pipelineKey"));
  o.Set("completeOnThread", Napi::Function::New(env, CompleteOnThread, "completeOnThread"));
  o.Set("dropCompletion", Napi::Function::New(env, DropCompletion, "dropCompletion"));
  o.Set("expandShader", Napi::Function::New(env, ExpandShader, "expandShader"));
  o.Set("oneKernelSource", Napi::Function::New(env, OneKernelSource, "oneKernelSource"));
  o.Set("planLibraries", Napi::Function::New(env, PlanLibraries, "planLibraries"));
  o.Set("planAvoiding", Napi::Function::New(env, PlanAvoiding, "planAvoiding"));
  o.Set("scalePlaneLayout", Napi::Function::New(env, ScalePlaneLayoutOf, "scalePlaneLayout"));
  o.Set("quantizedView", Napi::Function::New(env, QuantizedView, "quantizedView"));
  o.Set("hostOpTimes", Napi::Function::New(env, HostOpTimes, "hostOpTimes"));
  o.Set("asyncTestCounters", Napi::Function::New(env, AsyncTestCountersOf, "asyncTestCounters"));
  o.Set("commitPolicy", Napi::Function::New(env, CommitPolicyOf, "commitPolicy"));
  o.Set("batchBudgetCommits", Napi::Function::New(env, BatchBudgetCommits, "batchBudgetCommits"));
  o.Set("debouncedWrites", Napi::Function::New(env, DebouncedWrites, "debouncedWrites"));
  o.Set("hazards", Napi::Function::New(env, Hazards, "hazards"));
  o.Set("argAccess", Napi::Function::New(env, ArgAccess, "argAccess"));
  o.Set("stridedRange", Napi::Function::New(env, StridedRange, "stridedRange"));
  o.Set("encoderOrder", Napi::Function::New(env, EncoderOrderOf, "encoderOrder"));
  o.Set("cpuKernels", Napi::Function::New(env, CpuKernels, "cpuKernels"));
  return o;
}

}  // namespace mto::addon
