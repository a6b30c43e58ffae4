#pragma once
#include <napi.h>

namespace mto::addon {
// Registers measureRoofline, an internal export for the benchmark (bench/), and cpuKernels, the
// kernel names measureRoofline reports, for `metal-tensorops info`.
void InitRoofline(Napi::Env env, Napi::Object exports);
}
