#include "process_run.h"

#include "error.h"

#if defined(_WIN32)

namespace mto {
void run_process(const std::vector<std::string>&, std::vector<ProcessFile>&) {
  throw Error(code::Backend, "user kernels run in the emulator only on Linux and macOS (it runs them as child processes)");
}
}  // namespace mto

#else

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

extern char** environ;

namespace mto {
namespace {

// Everything the program wrote to stderr, from a file (a pipe would need a reader thread while
// the program runs: a kernel that prints much would block on a full pipe).
std::string tail_of(const std::string& path, size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// Removes the folder whatever happens to the run.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "metal-tensorops-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error(code::Kernel, std::string("cannot make a temporary folder: ") + std::strerror(errno));
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

void run_process(const std::vector<std::string>& argv, std::vector<ProcessFile>& files) {
  if (argv.empty()) throw Error(code::Arg, "run_process: no program");
  TempDir dir;
  for (const ProcessFile& f : files) {
    if (!f.data) continue;
    std::ofstream out(dir.path + "/" + f.name, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(f.data), std::streamsize(f.bytes));
    if (!out) throw Error(code::Kernel, "cannot write " + f.name + " for " + argv[0]);
  }
  std::vector<std::string> args = argv;
  for (std::string& a : args) {
    for (size_t at; (at = a.find("{dir}")) != std::string::npos;) a.replace(at, 5, dir.path);
  }
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  const std::string log = dir.path + "/stderr.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw Error(code::Kernel, "cannot start " + argv[0] + ": " + std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(code::Kernel, std::string("waiting for ") + argv[0] + ": " + std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exited with status " + std::to_string(WEXITSTATUS(status));
    const std::string said = tail_of(log, 4000);
    throw Error(code::Kernel, said.empty() ? argv[0] + " " + how : said);
  }
  for (ProcessFile& f : files) {
    if (!f.out) continue;
    std::ifstream in(dir.path + "/" + f.name, std::ios::binary);
    in.read(static_cast<char*>(f.out), std::streamsize(f.bytes));
    if (!in || in.gcount() != std::streamsize(f.bytes) || in.peek() != EOF) {
      throw Error(code::Kernel, argv[0] + " did not write " + std::to_string(f.bytes) + " bytes to " + f.name);
    }
  }
}

}  // namespace mto

#endif
