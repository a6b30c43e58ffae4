// RunProcess: the op behind user kernels on the cpu backend (lib/ops/kernel.ts): the inputs'
// bytes go to files, a program runs over them as a child process (core/process_run.h: the
// emulator built from the user's source), and the outputs are read back from its files. Queued
// like every op (validated at the call, outputs allocated at once, run in stream order on a pool
// thread, never on the JS thread); under the metal backend the stream runs it on the cpu backend.
// An input is a dense tensor's bytes or one plane of a quantized tensor (a user kernel's quantized
// input is bound as its planes: lib/kernels/quantized.ts).
#include <string>
#include <vector>

#include "core/error.h"
#include "core/process_run.h"
#include "device.h"
#include "errors.h"
#include "tensors.h"

namespace mto::addon {
namespace {

std::vector<std::string> read_strings(Napi::Value v, const char* arg) {
  if (!v.IsArray()) throw_error(v.Env(), code::Arg, std::string(arg) + " must be an array of strings");
  Napi::Array a = v.As<Napi::Array>();
  std::vector<std::string> out;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value s = a.Get(i);
    if (!s.IsString()) throw_error(v.Env(), code::Arg, std::string(arg) + "[" + std::to_string(i) + "] must be a string");
    out.push_back(s.As<Napi::String>().Utf8Value());
  }
  return out;
}

Napi::Array array_arg(Napi::Value v, const char* arg) {
  if (!v.IsArray()) throw_error(v.Env(), code::Arg, std::string(arg) + " must be an array");
  return v.As<Napi::Array>();
}

// The bytes one input file holds: the dense tensor's, or the named plane of the quantized one.
struct InputBytes {
  BufferPtr buffer;
  size_t bytes = 0;
  EventPtr ready;
  double numel = 0;
};

InputBytes input_bytes(Napi::Env env, Napi::Value id, const std::string& plane) {
  if (plane.empty()) {
    TensorPtr t = NativeTensor::Get(id, "inputs[i]");
    return {t->buffer, t->bytes(), t->ready_event(), double(t->numel())};
  }
  QTensorPtr q = NativeQTensor::Get(id, "inputs[i]");
  BufferPtr b = plane == "codes" ? q->codes : plane == "scales" ? q->scales : plane == "biases" ? q->biases : nullptr;
  if (!b) throw_error(env, code::Arg, "inputPlanes: '" + plane + "' is not a plane of this quantized tensor (codes, scales, biases)");
  return {b, b->bytes(), q->ready_event(), double(b->bytes())};
}

}  // namespace

// (argv, inputs: tensor ids, inputFiles, outShapes, outDtypes, outFiles, inputPlanes?) -> output
// ids; inputPlanes[i] is '' for a dense input, else the plane of the quantized tensor inputs[i].
Napi::Value NativeDevice::RunProcess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    const std::vector<std::string> argv = read_strings(info[0], "argv");
    if (argv.empty()) throw_error(env, code::Arg, "argv must name a program");
    Napi::Array ins = array_arg(info[1], "inputs");
    const std::vector<std::string> in_files = read_strings(info[2], "inputFiles");
    Napi::Array shapes = array_arg(info[3], "outShapes");
    const std::vector<std::string> dtypes = read_strings(info[4], "outDtypes");
    const std::vector<std::string> out_files = read_strings(info[5], "outFiles");
    const std::vector<std::string> planes =
        info[6].IsUndefined() ? std::vector<std::string>(ins.Length()) : read_strings(info[6], "inputPlanes");
    if (in_files.size() != ins.Length() || planes.size() != ins.Length() || dtypes.size() != shapes.Length() ||
        out_files.size() != shapes.Length()) {
      throw_error(env, code::Arg, "inputs/inputFiles/inputPlanes and outShapes/outDtypes/outFiles must have matching lengths");
    }
    std::vector<InputBytes> inputs;
    EventList events;
    double work = 0;
    for (uint32_t i = 0; i < ins.Length(); ++i) {
      inputs.push_back(input_bytes(env, ins.Get(i), planes[i]));
      events.push_back(std::move(inputs.back().ready));  // the stream holds it; the run needs only the bytes
      work += inputs.back().numel;
    }
    std::vector<TensorPtr> outputs;
    for (uint32_t i = 0; i < shapes.Length(); ++i) {
      DType t;
      if (!parse_dtype(dtypes[i], &t)) throw_error(env, code::DType, "outDtypes[" + std::to_string(i) + "] is not a dtype: " + dtypes[i]);
      outputs.push_back(make_tensor(read_shape(shapes.Get(i), "outShapes[i]"), t, allocator_of(backend_)));
    }
    // Always on the cpu backend's pool (on_host_if): the metal backend declines it to the stream's cpu.
    // Work far above the inline limit: a child process takes milliseconds, never the JS thread.
    EventPtr event = submit(env, work + 1e9, std::move(events),
                            on_host_if(true, [argv, inputs, in_files, outputs, out_files](Backend&, Completion done) {
                              done(capture_status([&] {
                                std::vector<ProcessFile> files;
                                for (size_t i = 0; i < inputs.size(); ++i)
                                  files.push_back({in_files[i], inputs[i].buffer->data(), inputs[i].bytes, nullptr});
                                for (size_t i = 0; i < outputs.size(); ++i)
                                  files.push_back({out_files[i], nullptr, outputs[i]->bytes(), outputs[i]->buffer->data()});
                                run_process(argv, files);
                              }));
                              return true;
                            }));
    return NativeTensor::WrapOutputs(env, outputs, event);
  });
}

}  // namespace mto::addon
