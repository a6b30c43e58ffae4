#pragma once
#include <napi.h>

namespace mto::addon {
// Registers measureRoofline, an internal export for the benchmark (bench/).
void InitRoofline(Napi::Env env, Napi::Object exports);
}
