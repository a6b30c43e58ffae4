// An MTLBinaryArchive in the user's cache directory, so the second process that uses a kernel
// skips the back-end compile (tens of ms per kernel, docs/design/METAL.md). Objective-C++ only.
#pragma once
#import <Metal/Metal.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/capabilities.h"
#include "core/debounced_writer.h"

namespace mto::metal {

// Where the archive for this GPU and OS lives: $METAL_TENSOROPS_CACHE_DIR, else
// $HOME/Library/Caches/metal-tensorops, then "<name>-<architecture>-macos<version>.metalarchive"
// (an archive holds machine code for one GPU and compiler; the Metal 4 path's MTL4Archive is
// "pipelines-metal4"). "" when neither directory is known.
std::string default_archive_path(const Capabilities& caps, const std::string& name = "pipelines");

// Whether `path` is a regular file, and its file URL.
bool archive_file_exists(const std::string& path);
NSURL* archive_file_url(const std::string& path);

// Writes the file at `path` through `serialize` (given a URL to write), creating its directory:
// to a temporary file renamed over the old one, so a concurrent process never reads half a file.
// Nothing changes when `serialize` returns false.
void replace_archive_file(const std::string& path, const std::function<bool(NSURL* url)>& serialize);

class PipelineArchive {
 public:
  // Loads the archive at `path`, or starts an empty one when the file is missing or unreadable
  // (a stale or corrupt archive only costs a compile). An empty path disables it.
  PipelineArchive(id<MTLDevice> device, std::string path);

  // nil when disabled.
  id<MTLBinaryArchive> archive() const { return archive_; }
  // Records the pipeline `descriptor` describes; the archive file is written once a second has
  // passed without another (a cold start compiles dozens in a burst), by a thread of its own, to
  // a temporary file renamed over the old one (concurrent processes never read half a file).
  // Failures are ignored: the archive is an optimisation.
  void add(MTLComputePipelineDescriptor* descriptor);
  // Writes what add() recorded and is not yet on disk, now (ShaderLibraries does at exit).
  void flush();

 private:
  void write();

  std::string path_;
  id<MTLBinaryArchive> archive_ = nil;
  std::mutex mu_;  // the archive object: add and serialize
  std::unique_ptr<DebouncedWriter> writer_;
};

}  // namespace mto::metal
