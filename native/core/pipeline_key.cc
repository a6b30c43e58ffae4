#include "pipeline_key.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "error.h"

namespace mto {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

// Whether `bits` is a value the type can hold (the unused high bits must be zero).
bool fits(ConstantType t, uint32_t bits) {
  switch (t) {
    case ConstantType::Bool: return bits <= 1;
    case ConstantType::Int16:
    case ConstantType::UInt16: return bits <= 0xffff;
    default: return true;
  }
}

std::string value_text(const FunctionConstant& c) {
  char buf[32];
  switch (c.type) {
    case ConstantType::Bool:
    case ConstantType::UInt16:
    case ConstantType::UInt32: std::snprintf(buf, sizeof buf, "%u", c.bits); break;
    case ConstantType::Int16: std::snprintf(buf, sizeof buf, "%d", int(int16_t(uint16_t(c.bits)))); break;
    case ConstantType::Int32: std::snprintf(buf, sizeof buf, "%d", int32_t(c.bits)); break;
    case ConstantType::Float32: std::snprintf(buf, sizeof buf, "0x%08x", c.bits); break;
  }
  return buf;
}

}  // namespace

FunctionConstant FunctionConstant::boolean(uint32_t index, bool v) {
  return {index, ConstantType::Bool, v ? 1u : 0u};
}
FunctionConstant FunctionConstant::i32(uint32_t index, int32_t v) {
  return {index, ConstantType::Int32, uint32_t(v)};
}
FunctionConstant FunctionConstant::u32(uint32_t index, uint32_t v) {
  return {index, ConstantType::UInt32, v};
}
FunctionConstant FunctionConstant::f32(uint32_t index, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return {index, ConstantType::Float32, bits};
}

const char* constant_type_name(ConstantType t) {
  switch (t) {
    case ConstantType::Bool: return "bool";
    case ConstantType::Int16: return "i16";
    case ConstantType::UInt16: return "u16";
    case ConstantType::Int32: return "i32";
    case ConstantType::UInt32: return "u32";
    case ConstantType::Float32: return "f32";
  }
  return "?";
}

bool parse_constant_type(const std::string& name, ConstantType* out) {
  for (ConstantType t : {ConstantType::Bool, ConstantType::Int16, ConstantType::UInt16,
                         ConstantType::Int32, ConstantType::UInt32, ConstantType::Float32}) {
    if (name == constant_type_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

std::string pipeline_key(const std::string& kernel, std::vector<FunctionConstant> constants) {
  if (!is_identifier(kernel)) {
    throw Error(code::Arg, "kernel name must be an MSL identifier; got '" + kernel + "'");
  }
  std::sort(constants.begin(), constants.end(),
            [](const FunctionConstant& a, const FunctionConstant& b) { return a.index < b.index; });
  std::string key = kernel;
  for (size_t i = 0; i < constants.size(); ++i) {
    const FunctionConstant& c = constants[i];
    if (i > 0 && constants[i - 1].index == c.index) {
      throw Error(code::Arg, "function constant index " + std::to_string(c.index) + " given twice for " + kernel);
    }
    if (!fits(c.type, c.bits)) {
      throw Error(code::Arg, "function constant " + std::to_string(c.index) + " of " + kernel + ": value bits " +
                                 std::to_string(c.bits) + " do not fit type " + constant_type_name(c.type));
    }
    key += (i == 0 ? "<" : ",") + std::to_string(c.index) + ":" + constant_type_name(c.type) + "=" + value_text(c);
  }
  if (!constants.empty()) key += ">";
  return key;
}

}  // namespace mto
