#include "shader_source.h"

#include <set>

#include "error.h"

namespace mto {
namespace {

// The file named by a line `#include "name"` (spaces allowed around '#'), or "".
std::string quoted_include(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
  i = line.find_first_not_of(" \t", i + 7);
  if (i == std::string::npos || line[i] != '"') return "";
  const size_t end = line.find('"', i + 1);
  return end == std::string::npos ? "" : line.substr(i + 1, end - i - 1);
}

struct Expander {
  const ShaderLookup& lookup;
  std::set<std::string> inlined;
  std::string out;

  void expand(const std::string& name, const std::string& from) {
    const std::string* text = lookup(name);
    if (!text) {
      throw Error(code::Backend, from.empty()
                                     ? "no embedded shader file '" + name + "'"
                                     : "shader file '" + from + "' includes '" + name +
                                           "', which is not embedded in this build");
    }
    inlined.insert(name);  // before its own includes: a cycle ends at the first repeat
    out += "#line 1 \"" + name + "\"\n";
    size_t line_no = 0, pos = 0;
    while (pos < text->size()) {
      size_t end = text->find('\n', pos);
      const bool last = end == std::string::npos;
      if (last) end = text->size();
      const std::string line = text->substr(pos, end - pos);
      ++line_no;
      const std::string inc = quoted_include(line);
      if (inc.empty()) {
        out += line;
        out += '\n';
      } else if (inlined.count(inc)) {
        out += '\n';  // already inlined: keep the line count
      } else {
        expand(inc, name);
        out += "#line " + std::to_string(line_no + 1) + " \"" + name + "\"\n";
      }
      pos = end + 1;
    }
  }
};

}  // namespace

std::string expand_shader_source(const std::string& name, const ShaderLookup& lookup) {
  Expander e{lookup, {}, {}};
  e.expand(name, "");
  return e.out;
}

std::string one_kernel_source(const std::string& library, const std::string& instance) {
  // The define before the library's first line (kernel_abi.h reads it when first included); the
  // instance after its last, where every template it names is declared.
  return "#define MTO_ONE_KERNEL 1\n" + library + "\n#line 1 \"kernel instance\"\n" + instance + "\n";
}

}  // namespace mto
