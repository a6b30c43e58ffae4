// An MTLBinaryArchive in the user's cache directory, so the second process that uses a kernel
// skips the back-end compile (tens of ms per kernel, docs/design/METAL.md). Objective-C++ only.
#pragma once
#import <Metal/Metal.h>

#include <memory>
#include <mutex>
#include <string>

#include "core/capabilities.h"
#include "core/debounced_writer.h"

namespace mto::metal {

// Where the archive for this GPU and OS lives: $METAL_TENSOROPS_CACHE_DIR, else
// $HOME/Library/Caches/metal-tensorops, then "pipelines-<architecture>-macos<version>.metalarchive"
// (an archive holds machine code for one GPU and compiler). "" when neither directory is known.
std::string default_archive_path(const Capabilities& caps);

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
