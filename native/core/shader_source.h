// Turning the shader files embedded in the binary (scripts/embed-shaders.mjs) into one MSL source
// per library. newLibraryWithSource: has no file system to resolve `#include "x.h"` against, so
// the host inlines our own headers itself. Backend-neutral so it is unit-tested on Linux
// (test/shader-embed.test.ts) against the files in shaders/.
#pragma once
#include <functional>
#include <string>

namespace mto {

// Text of the embedded file `name` ("mx_formats.h"), or nullptr when there is none.
using ShaderLookup = std::function<const std::string*(const std::string& name)>;

// `name` with every quoted include replaced, recursively, by the included file's text the first
// time it is met and by an empty line after that (the headers have include guards anyway).
// Each inlined file is framed by `#line` directives, so the compiler's messages name the real
// file and line. Angle-bracket includes (<metal_stdlib>) are left for the compiler. Throws
// Error(E_BACKEND) naming the file when `name` or an included file is not embedded.
std::string expand_shader_source(const std::string& name, const ShaderLookup& lookup);

// The source of one kernel of a library, so that Metal generates code for it alone (a library
// such as attention.metal instantiates 81): `library` (expand_shader_source's text) compiled with
// MTO_ONE_KERNEL defined, which turns the library's own MTO_KERNEL_INSTANCE lines into nothing
// (shaders/kernel_abi.h), followed by `instance`, the kernel's MTO_KERNEL_INSTANCE_ONE line
// (scripts/kernel-instances.mjs lists them). An empty `instance` leaves the library's plain,
// non-template kernels only.
std::string one_kernel_source(const std::string& library, const std::string& instance);

}  // namespace mto
