#pragma once
#include <napi.h>

namespace mto::addon {
void InitCodecs(Napi::Env env, Napi::Object exports);
}
