// The cross-process pipeline cache (pipeline_archive.h).
#include "pipeline_archive.h"

#import <Foundation/Foundation.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "objc_strings.h"

namespace mto::metal {
namespace {

// mkdir -p; true when `dir` exists afterwards.
bool make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      const std::string part = dir.substr(0, i);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

NSURL* file_url(const std::string& path) { return [NSURL fileURLWithPath:to_ns(path) isDirectory:NO]; }

}  // namespace

std::string default_archive_path(const Capabilities& caps) {
  std::string dir;
  if (const char* env = std::getenv("METAL_TENSOROPS_CACHE_DIR"); env && *env) {
    dir = env;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::string(home) + "/Library/Caches/metal-tensorops";
  } else {
    return "";
  }
  const std::string arch = caps.architecture.empty() ? "unknown-gpu" : caps.architecture;
  return dir + "/pipelines-" + arch + "-macos" + os_version_string(caps.os) + ".metalarchive";
}

PipelineArchive::PipelineArchive(id<MTLDevice> device, std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  @autoreleasepool {
    MTLBinaryArchiveDescriptor* descriptor = [MTLBinaryArchiveDescriptor new];
    NSError* err = nil;
    if (file_exists(path_)) {
      descriptor.url = file_url(path_);
      archive_ = [device newBinaryArchiveWithDescriptor:descriptor error:&err];
    }
    if (!archive_) {  // missing, or unreadable for this OS/GPU: start empty
      descriptor.url = nil;
      archive_ = [device newBinaryArchiveWithDescriptor:descriptor error:&err];
    }
  }
  if (archive_) writer_ = std::make_unique<DebouncedWriter>(std::chrono::milliseconds(1000), [this] { write(); });
}

void PipelineArchive::add(MTLComputePipelineDescriptor* descriptor) {
  if (!archive_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    @autoreleasepool {
      NSError* err = nil;
      if (![archive_ addComputePipelineFunctionsWithDescriptor:descriptor error:&err]) return;
    }
  }
  writer_->changed();
}

void PipelineArchive::flush() {
  if (writer_) writer_->flush();
}

void PipelineArchive::write() {
  std::lock_guard<std::mutex> lock(mu_);
  @autoreleasepool {
    const size_t slash = path_.rfind('/');
    if (slash == std::string::npos || !make_dirs(path_.substr(0, slash))) return;
    const std::string tmp = path_ + "." + std::to_string(::getpid()) + ".tmp";
    NSError* err = nil;
    if ([archive_ serializeToURL:file_url(tmp) error:&err]) {
      if (std::rename(tmp.c_str(), path_.c_str()) != 0) std::remove(tmp.c_str());
    }
  }
}

}  // namespace mto::metal
