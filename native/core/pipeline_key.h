// Cache keys for compute pipelines: one pipeline per (kernel function, function-constant values).
// The key is a stable string so it can also name the pipeline inside an MTLBinaryArchive across
// processes; native/metal/library.mm turns the same constants into MTLFunctionConstantValues.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mto {

// The function-constant types our kernels use. Values are held as raw bits so a float key is
// exact (0.0 and -0.0 differ, as they do to the compiler).
enum class ConstantType : uint8_t { Bool, Int16, UInt16, Int32, UInt32, Float32 };

struct FunctionConstant {
  uint32_t index = 0;  // [[function_constant(index)]]
  ConstantType type = ConstantType::Int32;
  uint32_t bits = 0;   // the value's bits, zero-extended (bool: 0 or 1)

  static FunctionConstant boolean(uint32_t index, bool v);
  static FunctionConstant i32(uint32_t index, int32_t v);
  static FunctionConstant u32(uint32_t index, uint32_t v);
  static FunctionConstant f32(uint32_t index, float v);
};

const char* constant_type_name(ConstantType t);  // "bool", "i16", "u16", "i32", "u32", "f32"
bool parse_constant_type(const std::string& name, ConstantType* out);

// "kernel" with no constants, else "kernel<0:u32=64,3:bool=1,5:f32=0x3f800000>" with constants
// sorted by index (the order they were given in does not matter). Integers print in decimal
// (signed types with their sign), floats as their bit pattern. Throws Error(E_ARG) when `kernel`
// is not an MSL identifier, an index repeats, or a value does not fit its type.
std::string pipeline_key(const std::string& kernel, std::vector<FunctionConstant> constants);

}  // namespace mto
