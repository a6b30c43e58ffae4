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

}  // namespace

bool archive_file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

NSURL* archive_file_url(const std::string& path) { return [NSURL fileURLWithPath:to_ns(path) isDirectory:NO]; }

void replace_archive_file(const std::string& path, const std::function<bool(NSURL* url)>& serialize) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || !make_dirs(path.substr(0, slash))) return;
  const std::string tmp = path + "." + std::to_string(::getpid()) + ".tmp";
  if (serialize(archive_file_url(tmp))) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
  }
}

std::string default_archive_path(const Capabilities& caps, const std::string& name) {
  std::string dir;
  if (const char* env = std::getenv("METAL_TENSOROPS_CACHE_DIR"); env && *env) {
    dir = env;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::string(home) + "/Library/Caches/metal-tensorops";
  } else {
    return "";
  }
  const std::string arch = caps.architecture.empty() ? "unknown-gpu" : caps.architecture;
  return dir + "/" + name + "-" + arch + "-macos" + os_version_string(caps.os) + ".metalarchive";
}

PipelineArchive::PipelineArchive(id<MTLDevice> device, std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  @autoreleasepool {
    MTLBinaryArchiveDescriptor* descriptor = [MTLBinaryArchiveDescriptor new];
    NSError* err = nil;
    if (archive_file_exists(path_)) {
      descriptor.url = archive_file_url(path_);
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
    replace_archive_file(path_, [this](NSURL* url) {
      NSError* err = nil;
      return bool([archive_ serializeToURL:url error:&err]);
    });
  }
}

}  // namespace mto::metal
