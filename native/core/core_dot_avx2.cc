#include "core_dot.h"
namespace mto::simd {
const DotKernels* dot_kernels_avx2() { return nullptr; }
}
