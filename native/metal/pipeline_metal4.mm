// The Metal 4 path's pipelines (metal4_path.h make_metal4_pipeline_maker), macOS 26. From Apple's
// macOS 26.0 headers (MTL4Compiler.h, MTL4Archive.h, MTL4PipelineDataSetSerializer.h,
// MTL4ComputePipeline.h, MTL4PipelineState.h, MTL4LibraryFunctionDescriptor.h,
// MTL4SpecializedFunctionDescriptor.h, MTLDevice.h; docs/design/METAL.md):
// - a pipeline is described by an MTL4ComputePipelineDescriptor whose function is an
//   MTL4LibraryFunctionDescriptor (name and library), wrapped in an
//   MTL4SpecializedFunctionDescriptor when there are function constants; its label is the
//   pipeline key (core/pipeline_key.h), which also names it in an archive;
// - warm start: the MTL4Archive written by an earlier process is asked first
//   (newComputePipelineStateWithDescriptor:error:, nil on a miss), which compiles nothing;
// - a miss is compiled by the MTL4Compiler (newComputePipelineStateWithDescriptor:
//   compilerTaskOptions:error:), whose MTL4PipelineDataSetSerializer (configured to capture
//   binaries) keeps what it made; the archive file is written from the serializer
//   (serializeAsArchiveAndFlushToURL:error:) once a second has passed without another miss
//   (core/debounced_writer.h, as pipeline_archive.h batches the Metal 3 archive), and at exit.
// The serializer holds only what its compiler made, so pipelines this process took from the
// archive are compiled through the compiler before a write (the archive as a lookup archive makes
// that a lookup, not a compile): otherwise the new file would drop them.
// Built only with an SDK that declares Metal 4, like encode_metal4.mm.
#include "metal4_path.h"

#import <Foundation/Foundation.h>

#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core/debounced_writer.h"
#include "objc_strings.h"
#include "pipeline_archive.h"

#if MTO_HAVE_METAL4

namespace mto::metal {
namespace {

MTL4ComputePipelineDescriptor* pipeline_descriptor(id<MTLLibrary> library, const std::string& key,
                                                   const std::string& kernel,
                                                   const std::vector<FunctionConstant>& constants, MTLSize required)
    API_AVAILABLE(macos(26.0)) {
  MTL4LibraryFunctionDescriptor* function = [MTL4LibraryFunctionDescriptor new];
  function.name = to_ns(kernel);
  function.library = library;
  MTL4ComputePipelineDescriptor* descriptor = [MTL4ComputePipelineDescriptor new];
  if (constants.empty()) {
    descriptor.computeFunctionDescriptor = function;
  } else {
    MTL4SpecializedFunctionDescriptor* specialized = [MTL4SpecializedFunctionDescriptor new];
    specialized.functionDescriptor = function;
    specialized.constantValues = constant_values(constants);
    descriptor.computeFunctionDescriptor = specialized;
  }
  descriptor.label = to_ns(key);
  // Mandatory for kernels with cooperative tensors (MTL4ComputePipeline.h); 0 x 0 x 0 is unset.
  descriptor.requiredThreadsPerThreadgroup = required;
  return descriptor;
}

class API_AVAILABLE(macos(26.0)) Metal4PipelineMaker final : public PipelineMaker {
 public:
  // `serializer` nil: no archive is written (`path` is ignored); `archive` nil: a cold start.
  Metal4PipelineMaker(id<MTL4Compiler> compiler, id<MTL4PipelineDataSetSerializer> serializer,
                      id<MTL4Archive> archive, std::string path)
      : compiler_(compiler), serializer_(serializer), archive_(archive), path_(std::move(path)) {
    if (serializer_) {
      writer_ = std::make_unique<DebouncedWriter>(std::chrono::milliseconds(1000), [this] { write(); });
    }
  }

  id<MTLComputePipelineState> make(id<MTLLibrary> library, const std::string& key, const std::string& kernel,
                                   const std::vector<FunctionConstant>& constants, MTLSize required,
                                   std::string* failure) override {
    id<MTLComputePipelineState> pipeline = nil;
    @autoreleasepool {
      MTL4ComputePipelineDescriptor* descriptor = pipeline_descriptor(library, key, kernel, constants, required);
      NSError* err = nil;
      if (archive_) {
        NSError* miss = nil;
        pipeline = [archive_ newComputePipelineStateWithDescriptor:descriptor error:&miss];
        if (pipeline) {
          if (writer_) {
            std::lock_guard<std::mutex> lock(from_archive_mu_);
            from_archive_.push_back(descriptor);
          }
          return pipeline;
        }
      }
      {
        std::shared_lock<std::shared_mutex> lock(serializer_mu_);  // compiles run together, not during a write
        pipeline = [compiler_ newComputePipelineStateWithDescriptor:descriptor compilerTaskOptions:nil error:&err];
      }
      if (!pipeline) {
        *failure = "could not create the Metal pipeline " + key + " (MTL4Compiler): " +
                   error_text(err, "newComputePipelineStateWithDescriptor:compilerTaskOptions:error: returned nil");
        return nil;
      }
    }
    if (writer_) writer_->changed();
    return pipeline;
  }

  void flush() override {
    if (writer_) writer_->flush();
  }

 private:
  void write() {
    std::unique_lock<std::shared_mutex> lock(serializer_mu_);
    @autoreleasepool {
      std::vector<MTL4ComputePipelineDescriptor*> taken;
      {
        std::lock_guard<std::mutex> hold(from_archive_mu_);
        taken.swap(from_archive_);
      }
      if (!taken.empty()) {
        MTL4CompilerTaskOptions* options = [MTL4CompilerTaskOptions new];
        options.lookupArchives = @[ archive_ ];
        for (MTL4ComputePipelineDescriptor* descriptor : taken) {
          NSError* err = nil;  // a failure only leaves that pipeline out of the file
          (void)[compiler_ newComputePipelineStateWithDescriptor:descriptor compilerTaskOptions:options error:&err];
        }
      }
      replace_archive_file(path_, [this](NSURL* url) {
        NSError* err = nil;
        return bool([serializer_ serializeAsArchiveAndFlushToURL:url error:&err]);
      });
    }
  }

  id<MTL4Compiler> compiler_;
  id<MTL4PipelineDataSetSerializer> serializer_;
  id<MTL4Archive> archive_;
  std::string path_;
  std::shared_mutex serializer_mu_;
  std::mutex from_archive_mu_;
  std::vector<MTL4ComputePipelineDescriptor*> from_archive_;  // taken from archive_, not yet in the serializer
  std::unique_ptr<DebouncedWriter> writer_;  // last: its thread stops before the rest goes
};

}  // namespace

std::unique_ptr<PipelineMaker> make_metal4_pipeline_maker(id<MTLDevice> device, const std::string& archive_path) {
  @autoreleasepool {
    id<MTL4PipelineDataSetSerializer> serializer = nil;
    if (!archive_path.empty()) {
      MTL4PipelineDataSetSerializerDescriptor* sd = [MTL4PipelineDataSetSerializerDescriptor new];
      sd.configuration = MTL4PipelineDataSetSerializerConfigurationCaptureBinaries;
      serializer = [device newPipelineDataSetSerializerWithDescriptor:sd];
    }
    MTL4CompilerDescriptor* cd = [MTL4CompilerDescriptor new];
    cd.label = @"metal-tensorops";
    cd.pipelineDataSetSerializer = serializer;
    NSError* err = nil;
    id<MTL4Compiler> compiler = [device newCompilerWithDescriptor:cd error:&err];
    if (!compiler) return nullptr;
    id<MTL4Archive> archive = nil;
    if (archive_file_exists(archive_path)) {
      // Unreadable (another OS or GPU, or corrupt): a cold start, and the next write replaces it.
      NSError* unreadable = nil;
      archive = [device newArchiveWithURL:archive_file_url(archive_path) error:&unreadable];
    }
    return std::make_unique<Metal4PipelineMaker>(compiler, serializer, archive, archive_path);
  }
}

}  // namespace mto::metal

#endif  // MTO_HAVE_METAL4
