// measureRoofline(threads, { seconds?, readBytes? }): the machine's FMA peak and read bandwidth
// (native/cpu/roofline.h), for the benchmark only; not part of the public API.
// cpuKernels(): the kernel names alone, without measuring, for `metal-tensorops info`.
//
// It runs SYNCHRONOUSLY (on a thread pool of its own, the calling thread waiting) and blocks the
// event loop for about a second: fine for a benchmark script, never to be called from an app.
#include "roofline.h"

#include <future>
#include <string>

#include "core/error.h"
#include "cpu/roofline.h"
#include "cpu/thread_pool.h"
#include "kernels/decode.h"
#include "kernels/dot.h"
#include "errors.h"

namespace mto::addon {
namespace {

// The kernels the ops run here, decode-conversion/fused-dot ("avx512vbmi/avx512vbmi", "avx2/avx2",
// "neon/neon"): each table is picked once per process from the CPU and METAL_TENSOROPS_CPU_ISA.
std::string kernel_names() {
  const kernels::DotKernels* dot = kernels::dot_kernels();
  return std::string(kernels::core_kernels().name) + "/" + (dot ? dot->name : "none");
}

Napi::Value CpuKernels(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value { return Napi::String::New(env, kernel_names()); });
}

Napi::Value MeasureRoofline(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    if (!info[0].IsNumber()) throw_error(env, code::Arg, "threads must be a number");
    const int threads = info[0].As<Napi::Number>().Int32Value();
    if (threads < 1 || threads > 1024) {
      throw_error(env, code::Arg, "threads must be an integer from 1 to 1024; got " +
                                      std::to_string(threads));
    }
    cpu::RooflineOptions opts;
    if (info.Length() > 1 && info[1].IsObject()) {
      Napi::Object o = info[1].As<Napi::Object>();
      if (o.Has("seconds") && o.Get("seconds").IsNumber()) {
        const double s = o.Get("seconds").As<Napi::Number>().DoubleValue();
        if (!(s > 0 && s <= 10)) throw_error(env, code::Arg, "options.seconds must be in (0, 10]");
        opts.seconds = s;
      }
      if (o.Has("readBytes") && o.Get("readBytes").IsNumber()) {
        const double b = o.Get("readBytes").As<Napi::Number>().DoubleValue();
        if (!(b >= 1 << 20 && b <= double(int64_t(16) << 30))) {
          throw_error(env, code::Arg, "options.readBytes must be from 1 MiB to 16 GiB");
        }
        opts.read_bytes = int64_t(b);
      }
    }
    // Measured on the pool's own threads, while this (JS) thread waits: the bench calls it
    // before and after its cases, never while anything else runs.
    cpu::ThreadPool pool(threads);
    std::promise<cpu::Roofline> measured;
    pool.post([&] {
      try {
        measured.set_value(cpu::measure_roofline(pool, opts));
      } catch (...) {
        measured.set_exception(std::current_exception());
      }
    });
    const cpu::Roofline r = measured.get_future().get();
    Napi::Object out = Napi::Object::New(env);
    out.Set("threads", r.threads);
    Napi::Array fma = Napi::Array::New(env, r.fma.size());
    for (size_t i = 0; i < r.fma.size(); ++i) {
      Napi::Object e = Napi::Object::New(env);
      e.Set("isa", r.fma[i].isa);
      e.Set("lanes", r.fma[i].lanes);
      e.Set("gflops", r.fma[i].gflops);
      fma.Set(uint32_t(i), e);
    }
    out.Set("fma", fma);
    out.Set("fmaGflops", r.fma_gflops);
    out.Set("fmaIsa", r.fma_isa);
    out.Set("readGBps", r.read_gbps);
    out.Set("readBytes", double(r.read_bytes));
    out.Set("kernels", kernel_names());
    return out;
  });
}

}  // namespace

void InitRoofline(Napi::Env env, Napi::Object exports) {
  exports.Set("measureRoofline", Napi::Function::New(env, MeasureRoofline, "measureRoofline"));
  exports.Set("cpuKernels", Napi::Function::New(env, CpuKernels, "cpuKernels"));
}

}  // namespace mto::addon
