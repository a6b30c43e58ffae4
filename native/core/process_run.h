// Runs a program as a child process over files in a fresh temporary folder: what a user kernel's
// emulator run (dev.kernel() on the cpu backend, emulator/main.cc) is to the stream. A child
// process, not code loaded into Node: a kernel that writes out of bounds or crashes ends its own
// process, and the op fails with what it printed.
#pragma once
#include <string>
#include <vector>

namespace mto {

struct ProcessFile {
  std::string name;                   // a plain file name inside the folder ("b0.bin")
  const void* data = nullptr;         // written before the run (inputs)
  size_t bytes = 0;
  void* out = nullptr;                // read back after a successful run (outputs): exactly `bytes`
};

// Writes the `files` with data into a new folder, runs argv (every "{dir}" in it replaced by the
// folder's path) with no stdin, and, when it exits with status 0, reads the files with `out` back.
// Throws Error(E_KERNEL) naming the program with the last lines it wrote to stderr when it cannot
// start, exits otherwise or is killed; Error(E_BACKEND) where child processes are not supported
// (Windows, for now). The folder is removed in every case.
void run_process(const std::vector<std::string>& argv, std::vector<ProcessFile>& files);

}  // namespace mto
