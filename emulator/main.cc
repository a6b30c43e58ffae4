// The program that runs one user kernel (dev.kernel(), issue #30) in the MSL-on-CPU emulator: the
// kernel's generated translation unit (gen/gen_kernels.mjs) linked with the runtime (runtime/)
// and this main. The addon runs it as a child process, so whatever the
// kernel does (an out-of-bounds write, a divergent barrier, a crash) ends in this process and comes
// back as an error message, never as a fault in Node.
//
//   user-kernel DIR NAME GX GY GZ TX TY TZ TGMEM LAYOUTS N [INDEX MODE BYTES FILL LABEL]...
//
// GX.. are threadgroups per grid, TX.. threads per threadgroup, TGMEM the host-sized threadgroup
// memory: `-` (none) or INDEX:BYTES[,INDEX:BYTES]... for each [[threadgroup(INDEX)]] parameter. LAYOUTS is 1, or 2 for a kernel with TensorOps: then the
// whole run is made twice, under two cooperative-tensor layouts (MTOH_COOP_SEED, the one the
// environment gives, else the shim's default, and a second derived from it), each in a child
// process of its own (the shim reads the seed once per process), and outputs that differ between
// the two mean the kernel assumes how a cooperative tensor's elements are spread over threads,
// which Metal leaves to the implementation. Each of the N buffers, named LABEL in messages, is bound at
// [[buffer(INDEX)]] and
// lives in DIR/bINDEX.bin: MODE `i` is read (an input, or a constant), `o` is written back after
// the run (an output). An output starts filled with FILL, `DTYPE:VALUE` (float32, float16, bfloat16,
// int32 or bool, and a number), or, with FILL `-`, with poison that differs between the two passes
// below. MODE `t` is a scale-plane tensor argument (tensor_arg.h: a tensorops-mx kernel's quantized
// input): BYTES of codes in DIR/bINDEX.bin and its scale plane in DIR/bINDEX.scales.bin, bound
// together as one host tensor with the descriptor DESC given in FILL's place.
//
// The kernel runs twice, as the harness runs our own kernels (test/msl/driver/cases.cc): regions
// ending at their upper guard page with threads in order, then starting at their lower guard page
// with threads in reverse; outputs that differ between the passes mean a race or a read of memory
// nothing wrote. Exit status 0: outputs written; 2: bad arguments; 3: the kernel failed (stderr
// says how, naming the thread and the buffer where the emulator knows them).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "launch.h"
#include "launch_tensors.h"
#include "tensor_arg.h"

namespace {

struct BufferSpec {
  int index = 0;
  bool output = false;
  size_t bytes = 0;
  std::vector<unsigned char> fill;  // empty: poison
};

bool parse_u32(const char* s, uint32_t* out) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (!*s || *end || v > 0xFFFFFFFFul) return false;
  *out = uint32_t(v);
  return true;
}

template <class T>
void push_bytes(T v, std::vector<unsigned char>* out) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(&v);
  out->assign(p, p + sizeof v);
}

// One element of `dtype:value` (the compiler's own float -> half/bfloat conversions: RNE).
bool parse_fill(const std::string& s, std::vector<unsigned char>* out) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  const std::string dtype = s.substr(0, colon), text = s.substr(colon + 1);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end) return false;
  if (dtype == "float32") push_bytes(float(v), out);
  else if (dtype == "float16") push_bytes(_Float16(float(v)), out);
  else if (dtype == "bfloat16") push_bytes(__bf16(float(v)), out);
  else if (dtype == "int32") push_bytes(int32_t(v), out);
  else if (dtype == "bool") push_bytes(uint8_t(v != 0), out);
  else return false;
  return true;
}

std::string file_of(const std::string& dir, int index, const std::string& suffix = "") {
  return dir + "/b" + std::to_string(index) + suffix + ".bin";
}

bool read_file(const std::string& path, std::vector<unsigned char>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

// TGMEM: "-", or "INDEX:BYTES" pairs separated by commas.
bool parse_threadgroup_memory(const std::string& s, std::vector<std::pair<int, uint32_t>>* out) {
  if (s == "-") return true;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t end = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, end - at);
    const size_t colon = item.find(':');
    uint32_t index = 0, bytes = 0;
    if (colon == std::string::npos || !parse_u32(item.substr(0, colon).c_str(), &index) ||
        !parse_u32(item.substr(colon + 1).c_str(), &bytes) || bytes == 0)
      return false;
    out->emplace_back(int(index), bytes);
    at = end + 1;
  }
  return true;
}

int usage(const char* why) {
  std::fprintf(stderr, "user-kernel: %s\n", why);
  return 2;
}

// The kernel's two passes (below), its outputs written to DIR/bINDEX{suffix}.bin. 0, or 3 with the
// failure on stderr.
int run_passes(const mtoh::KernelInfo& kernel, const mtoh::Geometry& geometry, const std::vector<BufferSpec>& specs,
               const std::vector<mtoh::HostBuffer>& inputs, const std::vector<mtoh::HostTensor>& tensors,
               const std::vector<std::pair<int, uint32_t>>& threadgroup_memory, const std::string& dir,
               const std::string& suffix) {
  const size_t n = specs.size();
  // The two passes' order and poison are those of the harness's own cases (driver/cases.cc).
  struct Pass {
    bool align_end, reverse;
    unsigned char poison;
    const char* name;
  };
  const Pass passes[2] = {{true, false, 0xFF, "pass 1: buffers end at their guard page"},
                          {false, true, 0x7B, "pass 2: buffers start at their guard page, threads in reverse"}};
  std::vector<std::vector<unsigned char>> first(n);
  for (int p = 0; p < 2; ++p) {
    std::vector<mtoh::HostBuffer> buffers = inputs;
    for (size_t b = 0; b < n; ++b) {
      if (!specs[b].output) continue;
      std::vector<unsigned char>& d = buffers[b].data;
      d.resize(specs[b].bytes);
      if (specs[b].fill.empty()) {
        std::memset(d.data(), passes[p].poison, d.size());
      } else {
        for (size_t i = 0; i < d.size(); ++i) d[i] = specs[b].fill[i % specs[b].fill.size()];
      }
    }
    mtoh::RunOptions options;
    options.align_end = passes[p].align_end;
    options.reverse_order = passes[p].reverse;
    // Both passes on one cooperative layout: a difference between them is then a race, and
    // layouts are compared by seed (run_with_layout), so that each cause gets its own name.
    options.row_blocks_in_reverse = false;
    options.threadgroup_poison = passes[p].poison;
    const mtoh::RunResult r = mtoh::run_kernel(kernel, geometry, buffers, tensors, threadgroup_memory, options);
    if (!r.ok) {
      std::fprintf(stderr, "%s: %s (%s)\n", r.kind.c_str(), r.message.c_str(), passes[p].name);
      return 3;
    }
    for (size_t b = 0; b < n; ++b) {
      if (!specs[b].output) continue;
      if (p == 0) {
        first[b] = std::move(buffers[b].data);
      } else if (first[b] != buffers[b].data) {
        size_t at = 0;
        while (first[b][at] == buffers[b].data[at]) ++at;
        std::fprintf(stderr,
                     "nondeterministic: output '%s' differs between the two passes from byte %zu (a race "
                     "between threads, a read of memory nothing wrote, or an output element never written: "
                     "give the output an init value if that is meant)\n",
                     inputs[b].name.c_str(), at);
        return 3;
      }
    }
  }
  for (size_t b = 0; b < n; ++b) {
    if (!specs[b].output) continue;
    std::ofstream f(file_of(dir, specs[b].index, suffix), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(first[b].data()), std::streamsize(first[b].size()));
    if (!f) return usage("cannot write an output");
  }
  return 0;
}

// run_passes in a child process whose MTOH_COOP_SEED is `seed` (the shim reads it once, at the
// first cooperative tensor, so each layout needs a process of its own). Called before this
// process has started any thread, so fork() copies a single-threaded process.
int run_with_layout(uint64_t seed, const std::string& suffix, const std::function<int(const std::string&)>& run) {
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return usage("cannot fork for a second cooperative-tensor layout");
  if (pid == 0) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%" PRIx64, seed);
    setenv("MTOH_COOP_SEED", text, 1);
    std::fflush(stderr);
    _exit(run(suffix));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return usage("cannot wait for a layout's run");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::fprintf(stderr, "crashed: the kernel's run under cooperative-tensor layout seed 0x%" PRIx64 " ended by signal %d\n",
               seed, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 12) return usage("too few arguments");
  const std::string dir = argv[1], name = argv[2];
  mtoh::Geometry geometry;
  uint32_t layouts = 0, n = 0;
  std::vector<std::pair<int, uint32_t>> threadgroup_memory;
  for (int i = 0; i < 3; ++i) {
    if (!parse_u32(argv[3 + i], &geometry.threadgroups[i]) || !parse_u32(argv[6 + i], &geometry.threads[i]))
      return usage("bad geometry");
  }
  if (!parse_threadgroup_memory(argv[9], &threadgroup_memory) || !parse_u32(argv[10], &layouts) || (layouts != 1 && layouts != 2)) {
    return usage("bad threadgroup memory or layout count");
  }
  if (!parse_u32(argv[11], &n) || argc != 12 + 5 * int(n)) return usage("bad buffer list");

  std::vector<BufferSpec> specs;
  std::vector<mtoh::HostBuffer> inputs;
  std::vector<mtoh::HostTensor> tensors;
  for (uint32_t b = 0; b < n; ++b) {
    char** a = argv + 12 + 5 * b;
    uint32_t index = 0, bytes = 0;
    if (!parse_u32(a[0], &index) || !parse_u32(a[2], &bytes)) return usage("bad buffer");
    if (std::strcmp(a[1], "t") == 0) {
      // A scale-plane tensor: its two planes, bound as one host tensor (tensor_arg.h).
      mtoh::HostTensor t;
      size_t scale_bytes = 0;
      if (!mtoh_user::parse_tensor_desc(a[3], &t, &scale_bytes)) return usage("bad tensor descriptor");
      t.index = int(index);
      t.name = a[4];
      if (!read_file(file_of(dir, int(index)), &t.data) || t.data.size() != bytes)
        return usage(("cannot read " + file_of(dir, int(index))).c_str());
      if (!read_file(file_of(dir, int(index), ".scales"), &t.scales) || t.scales.size() != scale_bytes)
        return usage(("cannot read " + file_of(dir, int(index), ".scales")).c_str());
      tensors.push_back(std::move(t));
      continue;
    }
    specs.emplace_back();
    inputs.emplace_back();
    BufferSpec& s = specs.back();
    s.index = int(index);
    s.bytes = bytes;
    s.output = std::strcmp(a[1], "o") == 0;
    if (!s.output && std::strcmp(a[1], "i") != 0) return usage("a buffer's mode must be i or o");
    if (std::strcmp(a[3], "-") != 0 && !parse_fill(a[3], &s.fill)) return usage("bad fill");
    inputs.back().index = s.index;
    inputs.back().name = a[4];
    if (!s.output) {
      if (!read_file(file_of(dir, s.index), &inputs.back().data) || inputs.back().data.size() != s.bytes)
        return usage(("cannot read " + file_of(dir, s.index)).c_str());
    }
  }

  const mtoh::KernelInfo* kernel = mtoh::find_kernel("user", "", name);
  if (!kernel) return usage(("no kernel named " + name).c_str());

  auto run = [&](const std::string& suffix) {
    return run_passes(*kernel, geometry, specs, inputs, tensors, threadgroup_memory, dir, suffix);
  };
  if (layouts == 1) return run("");

  // Two layouts: the environment's seed (or the shim's default) and one derived from it.
  const char* given = std::getenv("MTOH_COOP_SEED");
  const uint64_t seeds[2] = {given && *given ? uint64_t(std::strtoull(given, nullptr, 0)) : uint64_t(0x5EEDC0DEull),
                             (seeds[0] ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull};
  const std::string suffixes[2] = {".layout1", ".layout2"};
  for (int l = 0; l < 2; ++l) {
    const int rc = run_with_layout(seeds[l], suffixes[l], run);
    if (rc != 0) return rc;
  }
  for (size_t b = 0; b < specs.size(); ++b) {
    if (!specs[b].output) continue;
    std::vector<unsigned char> one, two;
    if (!read_file(file_of(dir, specs[b].index, suffixes[0]), &one) || !read_file(file_of(dir, specs[b].index, suffixes[1]), &two)) {
      return usage("cannot read back a layout's output");
    }
    if (one != two) {
      size_t at = 0;
      while (at < one.size() && at < two.size() && one[at] == two[at]) ++at;
      std::fprintf(stderr,
                   "cooperative_layout: output '%s' differs between two cooperative-tensor layouts (MTOH_COOP_SEED "
                   "0x%" PRIx64 " and 0x%" PRIx64 ") from byte %zu: the kernel depends on how a cooperative "
                   "tensor's elements are spread over the threads, which Metal leaves to the implementation (a "
                   "thread's element i is not row-major element lane * capacity + i). Find each element's place "
                   "with get_multidimensional_index(i) after is_valid_element(i), or move the tensor with "
                   "load() and store()\n",
                   inputs[b].name.c_str(), seeds[0], seeds[1], at);
      return 3;
    }
    if (std::rename(file_of(dir, specs[b].index, suffixes[0]).c_str(), file_of(dir, specs[b].index).c_str()) != 0) {
      return usage("cannot write an output");
    }
  }
  return 0;
}
