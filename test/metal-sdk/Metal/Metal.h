// Declarations of the Metal subset native/metal/*.mm uses, for `npm run check:metal` on Linux
// (test/metal-sdk/README.md). Written from Apple's Metal documentation and the public headers'
// signatures, each with the macOS version it was introduced in (docs/design/METAL.md: raw values).
// Not Apple's headers; add a declaration here, with its availability, before using it.
#pragma once
#include <Foundation/Foundation.h>

NS_ASSUME_NONNULL_BEGIN

@protocol MTLDevice;
@protocol MTLLibrary;
@protocol MTLFunction;
@protocol MTLComputePipelineState;
@protocol MTLBuffer;
@protocol MTLCommandQueue;
@protocol MTLCommandBuffer;
@protocol MTLComputeCommandEncoder;
@protocol MTLBinaryArchive;
@protocol MTLTensor;

// MTLDevice.h: MTLGPUFamily (macOS 10.15). Families are cumulative: an Apple10 GPU also answers
// YES for Apple9 and below.
NS_ENUM(NSInteger, MTLGPUFamily) {
  MTLGPUFamilyApple1 MTO_SDK_MACOS(10.15) = 1001,
  MTLGPUFamilyApple2 MTO_SDK_MACOS(10.15) = 1002,
  MTLGPUFamilyApple3 MTO_SDK_MACOS(10.15) = 1003,
  MTLGPUFamilyApple4 MTO_SDK_MACOS(10.15) = 1004,
  MTLGPUFamilyApple5 MTO_SDK_MACOS(10.15) = 1005,
  MTLGPUFamilyApple6 MTO_SDK_MACOS(10.15) = 1006,
  MTLGPUFamilyApple7 MTO_SDK_MACOS(11.0) = 1007,
  MTLGPUFamilyApple8 MTO_SDK_MACOS(13.0) = 1008,
  MTLGPUFamilyApple9 MTO_SDK_MACOS(14.0) = 1009,
  MTLGPUFamilyApple10 MTO_SDK_MACOS(26.0) = 1010,
  MTLGPUFamilyMac2 MTO_SDK_MACOS(10.15) = 2002,
  MTLGPUFamilyCommon1 MTO_SDK_MACOS(10.15) = 3001,
  MTLGPUFamilyCommon2 MTO_SDK_MACOS(10.15) = 3002,
  MTLGPUFamilyCommon3 MTO_SDK_MACOS(10.15) = 3003,
  MTLGPUFamilyMetal3 MTO_SDK_MACOS(13.0) = 5001,
  MTLGPUFamilyMetal4 MTO_SDK_MACOS(26.0) = 5002,
} MTO_SDK_MACOS(10.15);

// MTLArchitecture (macOS 14.0): name is "applegpu_g17s" and the like.
MTO_SDK_MACOS(14.0)
@interface MTLArchitecture : NSObject <NSCopying>
@property(nonnull, readonly) NSString *name;
@end

// MTLLibrary.h: MTLLanguageVersion raw values are (major << 16) + minor. 4.0 with macOS 26, 4.1
// (scale planes) with macOS 27 (docs/design/METAL.md; the macOS 27 SDK's MTLLibrary.h).
NS_ENUM(NSUInteger, MTLLanguageVersion) {
  MTLLanguageVersion2_4 MTO_SDK_MACOS(12.0) = (2 << 16) + 4,
  MTLLanguageVersion3_0 MTO_SDK_MACOS(13.0) = (3 << 16) + 0,
  MTLLanguageVersion3_1 MTO_SDK_MACOS(14.0) = (3 << 16) + 1,
  MTLLanguageVersion3_2 MTO_SDK_MACOS(15.0) = (3 << 16) + 2,
  MTLLanguageVersion4_0 MTO_SDK_MACOS(26.0) = (4 << 16) + 0,
  MTLLanguageVersion4_1 MTO_SDK_MACOS(27.0) = (4 << 16) + 1,
} MTO_SDK_MACOS(10.11);

// MTLLibrary.h: the math options of macOS 15. As in Apple's header, the enums carry no
// availability of their own; the properties do, and fastMathEnabled is deprecated from macOS 15
// (an error at a macOS 15+ deployment target with -Werror). mathFloatingPointFunctions defaults
// to Fast.
NS_ENUM(NSInteger, MTLMathMode) {
  MTLMathModeSafe = 0,
  MTLMathModeRelaxed = 1,
  MTLMathModeFast = 2,
};
NS_ENUM(NSInteger, MTLMathFloatingPointFunctions) {
  MTLMathFloatingPointFunctionsFast = 0,
  MTLMathFloatingPointFunctionsPrecise = 1,
};

MTO_SDK_MACOS(10.11)
@interface MTLCompileOptions : NSObject <NSCopying>
@property(nullable, readwrite, copy, nonatomic) NSDictionary<NSString *, NSObject *> *preprocessorMacros;
@property(readwrite, nonatomic) BOOL fastMathEnabled MTO_SDK_MACOS_DEPRECATED(10.11, 15.0);
@property(readwrite, nonatomic) MTLMathMode mathMode MTO_SDK_MACOS(15.0);
@property(nonatomic) MTLMathFloatingPointFunctions mathFloatingPointFunctions MTO_SDK_MACOS(15.0);
@property(readwrite, nonatomic) MTLLanguageVersion languageVersion MTO_SDK_MACOS(10.11);
@end

// MTLArgument.h: MTLDataType, the subset used for function constants.
NS_ENUM(NSUInteger, MTLDataType) {
  MTLDataTypeNone = 0,
  MTLDataTypeFloat = 3,
  MTLDataTypeHalf = 16,
  MTLDataTypeInt = 29,
  MTLDataTypeUInt = 33,
  MTLDataTypeShort = 37,
  MTLDataTypeUShort = 41,
  MTLDataTypeChar = 45,
  MTLDataTypeUChar = 49,
  MTLDataTypeBool = 53,
} MTO_SDK_MACOS(10.11);

// MTLFunctionConstantValues.h (macOS 10.12)
MTO_SDK_MACOS(10.12)
@interface MTLFunctionConstantValues : NSObject <NSCopying>
- (void)setConstantValue:(const void *)value type:(MTLDataType)type atIndex:(NSUInteger)index;
@end

@protocol MTLFunction <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) NSString *name;
@end

@protocol MTLLibrary <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) NSArray<NSString *> *functionNames;
- (nullable id<MTLFunction>)newFunctionWithName:(NSString *)functionName;
- (nullable id<MTLFunction>)newFunctionWithName:(NSString *)name
                                 constantValues:(MTLFunctionConstantValues *)constantValues
                                          error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(10.12);
@end

// MTLComputePipeline.h
@protocol MTLComputePipelineState <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@end

// MTLTypes.h
typedef struct {
  NSUInteger width, height, depth;
} MTLSize;
static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  MTLSize size = {width, height, depth};
  return size;
}

// MTLResource.h: storage mode << 4, CPU cache mode << 0, hazard tracking << 8. Shared storage
// is the one CPU and GPU both address on unified memory.
NS_OPTIONS(NSUInteger, MTLResourceOptions){
  MTLResourceCPUCacheModeDefaultCache MTO_SDK_MACOS(10.11) = 0,
  MTLResourceStorageModeShared MTO_SDK_MACOS(10.11) = 0 << 4,
  MTLResourceStorageModeManaged MTO_SDK_MACOS(10.11) = 1 << 4,
  MTLResourceStorageModePrivate MTO_SDK_MACOS(10.11) = 2 << 4,
  MTLResourceHazardTrackingModeDefault MTO_SDK_MACOS(10.13) = 0 << 8,
  MTLResourceHazardTrackingModeTracked MTO_SDK_MACOS(10.15) = 2 << 8,
};

// MTLAllocation.h (macOS 15): what a residency set holds; every MTLResource is one.
MTO_SDK_MACOS(15.0)
@protocol MTLAllocation <NSObject>
@property(readonly) NSUInteger allocatedSize MTO_SDK_MACOS(15.0);
@end

@protocol MTLResource <MTLAllocation>
@property(nullable, copy, atomic) NSString *label;
@property(readonly) id<MTLDevice> device;
@end

// MTLGPUAddress.h / MTLTypes.h: what Metal 4 argument tables bind (a buffer by its GPU address,
// a tensor by its resource id).
typedef uint64_t MTLGPUAddress;
typedef struct MTLResourceID {
  uint64_t _impl;
} MTLResourceID;

// MTLBuffer.h
@protocol MTLBuffer <MTLResource>
@property(readonly) NSUInteger length;
- (void *)contents NS_RETURNS_INNER_POINTER;
@property(readonly) MTLGPUAddress gpuAddress MTO_SDK_MACOS(13.0);
@end

// MTLResidencySet.h (macOS 15): allocations added or removed take effect at the next commit.
MTO_SDK_MACOS(15.0)
@interface MTLResidencySetDescriptor : NSObject <NSCopying>
@property(nullable, copy, nonatomic) NSString *label;
@property(nonatomic) NSUInteger initialCapacity;
@end

MTO_SDK_MACOS(15.0)
@protocol MTLResidencySet <NSObject>
@property(readonly) id<MTLDevice> device;
- (void)requestResidency;
- (void)addAllocations:(const id<MTLAllocation> _Nonnull[_Nonnull])allocations count:(NSUInteger)count;
- (void)removeAllocations:(const id<MTLAllocation> _Nonnull[_Nonnull])allocations count:(NSUInteger)count;
@property(readonly) NSUInteger allocationCount;
- (void)commit;
@end

// MTLTensor.h (macOS 26; multi-plane tensors macOS 27). Extents list values innermost first.
NS_ENUM(NSInteger, MTLTensorDataType) {
  MTLTensorDataTypeNone MTO_SDK_MACOS(26.0) = 0,
  MTLTensorDataTypeFloat32 MTO_SDK_MACOS(26.0) = 3,
  MTLTensorDataTypeFloat16 MTO_SDK_MACOS(26.0) = 16,
  MTLTensorDataTypeInt8 MTO_SDK_MACOS(26.0) = 45,
  MTLTensorDataTypeUInt8 MTO_SDK_MACOS(26.0) = 49,
  MTLTensorDataTypeBFloat16 MTO_SDK_MACOS(26.0) = 121,
  MTLTensorDataTypeMetalFloat8E5M2 MTO_SDK_MACOS(27.0) = 141,
  MTLTensorDataTypeMetalFloat8E4M3 MTO_SDK_MACOS(27.0) = 142,
  MTLTensorDataTypeMetalFloat8UE8M0 MTO_SDK_MACOS(27.0) = 145,
  MTLTensorDataTypeMetalFloat4E2M1 MTO_SDK_MACOS(27.0) = 148,
} MTO_SDK_MACOS(26.0);

NS_OPTIONS(NSUInteger, MTLTensorUsage){
  MTLTensorUsageCompute MTO_SDK_MACOS(26.0) = 1 << 0,
  MTLTensorUsageRender MTO_SDK_MACOS(26.0) = 1 << 1,
  // Not for multi-plane tensors.
  MTLTensorUsageMachineLearning MTO_SDK_MACOS(26.0) = 1 << 2,
};

NS_ENUM(NSInteger, MTLTensorPlaneType) {
  MTLTensorPlaneTypeData MTO_SDK_MACOS(27.0) = 0,
  MTLTensorPlaneTypeScales MTO_SDK_MACOS(27.0) = 1,
} MTO_SDK_MACOS(27.0);

MTO_SDK_MACOS(26.0)
@interface MTLTensorExtents : NSObject <NSCopying>
- (nullable instancetype)initWithRank:(NSUInteger)rank values:(nullable const NSInteger *)values;
@property(readonly) NSUInteger rank;
- (NSInteger)extentAtDimensionIndex:(NSUInteger)dimensionIndex;
@end

// Scales planes take only MetalFloat8UE8M0, block factors {32, 1, ...}.
MTO_SDK_MACOS(27.0)
@interface MTLTensorAuxiliaryPlaneDescriptor : NSObject <NSCopying>
@property(readwrite, nonatomic) MTLTensorDataType dataType;
@property(readwrite, nonatomic, copy) MTLTensorExtents *blockFactors;
@end

MTO_SDK_MACOS(27.0)
@interface MTLTensorAuxiliaryPlaneDescriptorMap : NSObject <NSCopying>
- (void)setDescriptor:(MTLTensorAuxiliaryPlaneDescriptor *)descriptor forPlane:(MTLTensorPlaneType)plane;
- (nullable MTLTensorAuxiliaryPlaneDescriptor *)descriptorForPlane:(MTLTensorPlaneType)plane;
@end

MTO_SDK_MACOS(26.0)
@interface MTLTensorDescriptor : NSObject <NSCopying>
@property(readwrite, nonatomic, copy) MTLTensorExtents *dimensions;
@property(readwrite, nonatomic, copy, nullable) MTLTensorExtents *strides;  // in elements
@property(readwrite, nonatomic) MTLTensorDataType dataType;
@property(readwrite, nonatomic) MTLTensorUsage usage;
@property(nullable, retain, nonatomic) MTLTensorAuxiliaryPlaneDescriptorMap *auxiliaryPlanes
    MTO_SDK_MACOS(27.0);
@end

// Plane offsets: 128-byte aligned for the fp8/fp4/ue8m0 data types.
MTO_SDK_MACOS(27.0)
@interface MTLTensorBufferAttachments : NSObject <NSCopying>
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset forPlane:(MTLTensorPlaneType)plane;
- (nullable id<MTLBuffer>)bufferForPlane:(MTLTensorPlaneType)plane;
@end

MTO_SDK_MACOS(26.0)
@protocol MTLTensor <MTLResource>
@property(readonly) MTLResourceID gpuResourceID;
@property(nullable, readonly) id<MTLBuffer> buffer;
@property(readonly) MTLTensorExtents *dimensions;
@property(readonly) MTLTensorDataType dataType;
@property(readonly) MTLTensorUsage usage;
@end

// MTLComputePipeline.h: descriptor-based creation (binary archives, macOS 11).
NS_OPTIONS(NSUInteger, MTLPipelineOption){
  MTLPipelineOptionNone MTO_SDK_MACOS(10.11) = 0,
  // Make the pipeline only from a linked binary archive; nil (with an error) on a miss.
  MTLPipelineOptionFailOnBinaryArchiveMiss MTO_SDK_MACOS(11.0) = 1 << 2,
};

MTO_SDK_MACOS(10.11)
@interface MTLComputePipelineDescriptor : NSObject <NSCopying>
@property(nullable, copy, nonatomic) NSString *label;
@property(nullable, readwrite, nonatomic, strong) id<MTLFunction> computeFunction;
@property(nullable, readwrite, nonatomic, copy) NSArray<id<MTLBinaryArchive>> *binaryArchives
    MTO_SDK_MACOS(11.0);
// MTLComputePipeline.h (26.0): every dispatch must then use exactly this threadgroup size.
@property(readwrite, nonatomic) MTLSize requiredThreadsPerThreadgroup MTO_SDK_MACOS(26.0);
@end

@class MTLComputePipelineReflection;

// MTLBinaryArchive.h (macOS 11): compiled pipelines stored in a file, so a later process skips
// the back-end compile. `url` nil makes an empty archive.
MTO_SDK_MACOS(11.0)
@interface MTLBinaryArchiveDescriptor : NSObject <NSCopying>
@property(nullable, nonatomic, copy) NSURL *url;
@end

MTO_SDK_MACOS(11.0)
@protocol MTLBinaryArchive <NSObject>
@property(nullable, copy, atomic) NSString *label;
@property(readonly) id<MTLDevice> device;
- (BOOL)addComputePipelineFunctionsWithDescriptor:(MTLComputePipelineDescriptor *)descriptor
                                            error:(__autoreleasing NSError *_Nullable *_Nullable)error;
- (BOOL)serializeToURL:(NSURL *)url error:(__autoreleasing NSError *_Nullable *_Nullable)error;
@end

// MTLCommandEncoder.h / MTLComputeCommandEncoder.h
// The resources a barrier of a concurrent compute encoder orders (MTLCommandEncoder.h).
NS_OPTIONS(NSUInteger, MTLBarrierScope){
  MTLBarrierScopeBuffers = 1 << 0,
  MTLBarrierScopeTextures = 1 << 1,
} MTO_SDK_MACOS(10.14);

@protocol MTLCommandEncoder <NSObject>
@property(nullable, copy, atomic) NSString *label;
- (void)endEncoding;
@end

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void *)bytes length:(NSUInteger)length atIndex:(NSUInteger)index
    MTO_SDK_MACOS(10.11);
- (void)setBuffer:(nullable id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid
       threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
// Between the dispatches of a concurrent encoder; ignored on a serial one.
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope MTO_SDK_MACOS(10.14);
@end

// MTLCommandBuffer.h
NS_ENUM(NSUInteger, MTLDispatchType){
  MTLDispatchTypeSerial,
  MTLDispatchTypeConcurrent,
} MTO_SDK_MACOS(10.14);

NS_ENUM(NSUInteger, MTLCommandBufferStatus) {
  MTLCommandBufferStatusNotEnqueued = 0,
  MTLCommandBufferStatusEnqueued = 1,
  MTLCommandBufferStatusCommitted = 2,
  MTLCommandBufferStatusScheduled = 3,
  MTLCommandBufferStatusCompleted = 4,
  MTLCommandBufferStatusError = 5,
} MTO_SDK_MACOS(10.11);

// Codes of errors in MTLCommandBufferErrorDomain (the subset we tell apart).
NS_ENUM(NSUInteger, MTLCommandBufferError) {
  MTLCommandBufferErrorNone = 0,
  MTLCommandBufferErrorInternal = 1,
  MTLCommandBufferErrorTimeout = 2,
  MTLCommandBufferErrorPageFault = 3,
  MTLCommandBufferErrorNotPermitted = 7,
  MTLCommandBufferErrorOutOfMemory = 8,
  MTLCommandBufferErrorInvalidResource = 9,
} MTO_SDK_MACOS(10.11);

extern "C" NSErrorDomain const MTLCommandBufferErrorDomain MTO_SDK_MACOS(10.11);

typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);

@protocol MTLCommandBuffer <NSObject>
@property(readonly) id<MTLDevice> device;
@property(nullable, copy, atomic) NSString *label;
@property(readonly) MTLCommandBufferStatus status;
@property(nullable, readonly) NSError *error;
- (nullable id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (nullable id<MTLComputeCommandEncoder>)computeCommandEncoderWithDispatchType:(MTLDispatchType)dispatchType
    MTO_SDK_MACOS(10.14);
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (void)commit;
@end

// MTLCommandQueue.h
@protocol MTLCommandQueue <NSObject>
@property(nullable, copy, atomic) NSString *label;
@property(readonly) id<MTLDevice> device;
- (nullable id<MTLCommandBuffer>)commandBuffer;
@end

// The Metal 4 command path (macOS 26): MTLCommandEncoder.h (MTLStages), MTL4CommandEncoder.h,
// MTL4ComputeCommandEncoder.h, MTL4ArgumentTable.h, MTL4CommandAllocator.h, MTL4CommandBuffer.h,
// MTL4CommitFeedback.h, MTL4CommandQueue.h. Nothing here tracks hazards: barriers order the work.
NS_OPTIONS(NSUInteger, MTLStages){
  MTLStageDispatch MTO_SDK_MACOS(26.0) = 1 << 27,
  MTLStageBlit MTO_SDK_MACOS(26.0) = 1 << 28,
};

NS_OPTIONS(NSUInteger, MTL4VisibilityOptions){
  MTL4VisibilityOptionNone MTO_SDK_MACOS(26.0) = 0,
  MTL4VisibilityOptionDevice MTO_SDK_MACOS(26.0) = 1 << 0,
};

@protocol MTL4CommandBuffer;

MTO_SDK_MACOS(26.0)
@protocol MTL4CommandEncoder <NSObject>
@property(nullable, copy, atomic) NSString *label;
// Work of this encoder in `beforeStages` waits for the work of earlier encoders on the queue in
// `afterQueueStages`.
- (void)barrierAfterQueueStages:(MTLStages)afterQueueStages
                   beforeStages:(MTLStages)beforeStages
              visibilityOptions:(MTL4VisibilityOptions)visibilityOptions;
// Within one encoder: later work in `beforeEncoderStages` waits for earlier work in
// `afterEncoderStages`.
- (void)barrierAfterEncoderStages:(MTLStages)afterEncoderStages
              beforeEncoderStages:(MTLStages)beforeEncoderStages
                visibilityOptions:(MTL4VisibilityOptions)visibilityOptions;
- (void)endEncoding;
@end

MTO_SDK_MACOS(26.0)
@interface MTL4ArgumentTableDescriptor : NSObject <NSCopying>
@property(readwrite, nonatomic) NSUInteger maxBufferBindCount;
@property(readwrite, nonatomic) BOOL initializeBindings;
@property(nullable, copy, nonatomic) NSString *label;
@end

// The encoder snapshots the table at each dispatch, so one table is rebound between dispatches.
MTO_SDK_MACOS(26.0)
@protocol MTL4ArgumentTable <NSObject>
- (void)setAddress:(MTLGPUAddress)gpuAddress atIndex:(NSUInteger)bindingIndex;
- (void)setResource:(MTLResourceID)resourceID atBufferIndex:(NSUInteger)bindingIndex;
@property(readonly) id<MTLDevice> device;
@end

MTO_SDK_MACOS(26.0)
@protocol MTL4ComputeCommandEncoder <MTL4CommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setArgumentTable:(nullable id<MTL4ArgumentTable>)argumentTable;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid
       threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
@end

// Reset only once every command buffer encoded with it has completed.
MTO_SDK_MACOS(26.0)
@protocol MTL4CommandAllocator <NSObject>
@property(readonly) id<MTLDevice> device;
- (void)reset;
@end

MTO_SDK_MACOS(26.0)
@protocol MTL4CommandBuffer <NSObject>
@property(readonly) id<MTLDevice> device;
@property(nullable, copy, atomic) NSString *label;
- (void)beginCommandBufferWithAllocator:(id<MTL4CommandAllocator>)allocator;
- (void)endCommandBuffer;
- (nullable id<MTL4ComputeCommandEncoder>)computeCommandEncoder;
- (void)useResidencySet:(id<MTLResidencySet>)residencySet;
@end

MTO_SDK_MACOS(26.0)
@protocol MTL4CommitFeedback <NSObject>
@property(readonly, nonatomic, nullable) NSError *error;
@end

typedef void (^MTL4CommitFeedbackHandler)(id<MTL4CommitFeedback> commitFeedback) MTO_SDK_MACOS(26.0);

MTO_SDK_MACOS(26.0)
@interface MTL4CommitOptions : NSObject
- (void)addFeedbackHandler:(MTL4CommitFeedbackHandler)block;
@end

NS_ENUM(NSInteger, MTL4CommandQueueError) {
  MTL4CommandQueueErrorNone = 0,
  MTL4CommandQueueErrorTimeout = 1,
  MTL4CommandQueueErrorNotPermitted = 2,
  MTL4CommandQueueErrorOutOfMemory = 3,
  MTL4CommandQueueErrorDeviceRemoved = 4,
  MTL4CommandQueueErrorAccessRevoked = 5,
  MTL4CommandQueueErrorInternal = 6,
} MTO_SDK_MACOS(26.0);

extern "C" NSErrorDomain const MTL4CommandQueueErrorDomain MTO_SDK_MACOS(26.0);

MTO_SDK_MACOS(26.0)
@protocol MTL4CommandQueue <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly, nullable) NSString *label;
- (void)commit:(const id<MTL4CommandBuffer> _Nonnull[_Nonnull])commandBuffers
         count:(NSUInteger)count
       options:(MTL4CommitOptions *)options;
- (void)addResidencySet:(id<MTLResidencySet>)residencySet;
@end

// Metal 4 pipelines (macOS 26): MTL4FunctionDescriptor.h, MTL4LibraryFunctionDescriptor.h,
// MTL4SpecializedFunctionDescriptor.h, MTL4PipelineState.h, MTL4ComputePipeline.h, MTL4Compiler.h,
// MTL4Archive.h, MTL4PipelineDataSetSerializer.h. Only the members pipeline_metal4.mm sends.
MTO_SDK_MACOS(26.0)
@interface MTL4FunctionDescriptor : NSObject <NSCopying>  // the base: no members of its own
@end

// A function of a library, by name.
MTO_SDK_MACOS(26.0)
@interface MTL4LibraryFunctionDescriptor : MTL4FunctionDescriptor
@property(nullable, copy, atomic) NSString *name;
@property(nullable, readwrite, nonatomic, retain) id<MTLLibrary> library;
@end

// A function with function constants: the base function's descriptor plus the values.
MTO_SDK_MACOS(26.0)
@interface MTL4SpecializedFunctionDescriptor : MTL4FunctionDescriptor
@property(nullable, copy, readwrite, nonatomic) MTL4FunctionDescriptor *functionDescriptor;
@property(nullable, copy, nonatomic) MTLFunctionConstantValues *constantValues;
@end

// `label` names the pipeline: an archive finds it by that name too.
MTO_SDK_MACOS(26.0)
@interface MTL4PipelineDescriptor : NSObject <NSCopying>
@property(nullable, copy, nonatomic) NSString *label;
@end

MTO_SDK_MACOS(26.0)
@interface MTL4ComputePipelineDescriptor : MTL4PipelineDescriptor
@property(nullable, readwrite, nonatomic, copy) MTL4FunctionDescriptor *computeFunctionDescriptor;
// MTL4ComputePipeline.h: optional, "except in cases where the pipeline uses CooperativeTensors".
@property(readwrite, nonatomic) MTLSize requiredThreadsPerThreadgroup;
@end

// CaptureBinaries is what serializeAsArchiveAndFlushToURL:error: needs (CaptureDescriptors, the
// default, only serves pipeline scripts).
NS_OPTIONS(NSUInteger, MTL4PipelineDataSetSerializerConfiguration){
  MTL4PipelineDataSetSerializerConfigurationCaptureDescriptors MTO_SDK_MACOS(26.0) = 1 << 0,
  MTL4PipelineDataSetSerializerConfigurationCaptureBinaries MTO_SDK_MACOS(26.0) = 1 << 1,
};

MTO_SDK_MACOS(26.0)
@interface MTL4PipelineDataSetSerializerDescriptor : NSObject <NSCopying>
@property(readwrite, nonatomic) MTL4PipelineDataSetSerializerConfiguration configuration;
@end

// Collects what every compiler created with it makes; written out as an archive.
MTO_SDK_MACOS(26.0)
@protocol MTL4PipelineDataSetSerializer <NSObject>
- (BOOL)serializeAsArchiveAndFlushToURL:(NSURL *)url error:(__autoreleasing NSError *_Nullable *_Nullable)error;
@end

// Read-only: a lookup gives the pipeline (nil on a miss) without compiling.
MTO_SDK_MACOS(26.0)
@protocol MTL4Archive <NSObject>
- (nullable id<MTLComputePipelineState>)newComputePipelineStateWithDescriptor:(MTL4ComputePipelineDescriptor *)descriptor
                                                                        error:(__autoreleasing NSError *_Nullable *_Nullable)error;
@end

MTO_SDK_MACOS(26.0)
@interface MTL4CompilerDescriptor : NSObject <NSCopying>
@property(copy, nonatomic, nullable) NSString *label;
@property(nullable, strong) id<MTL4PipelineDataSetSerializer> pipelineDataSetSerializer;
@end

// lookupArchives: archives the compiler searches before compiling.
MTO_SDK_MACOS(26.0)
@interface MTL4CompilerTaskOptions : NSObject <NSCopying>
@property(nullable, copy, nonatomic) NSArray<id<MTL4Archive>> *lookupArchives;
@end

MTO_SDK_MACOS(26.0)
@protocol MTL4Compiler <NSObject>
- (nullable id<MTLComputePipelineState>)newComputePipelineStateWithDescriptor:(MTL4ComputePipelineDescriptor *)descriptor
                                                          compilerTaskOptions:(nullable MTL4CompilerTaskOptions *)compilerTaskOptions
                                                                        error:(__autoreleasing NSError *_Nullable *_Nullable)error;
@end

// MTLDevice.h
// The asynchronous compiles' callbacks (Apple's MTLDevice.h typedefs): called once, on a thread
// of Metal's, with the result or nil and the error.
typedef void (^MTLNewLibraryCompletionHandler)(id<MTLLibrary> _Nullable library, NSError *_Nullable error);
typedef void (^MTLNewComputePipelineStateCompletionHandler)(id<MTLComputePipelineState> _Nullable computePipelineState,
                                                            NSError *_Nullable error);
@protocol MTLDevice <NSObject>
@property(nonnull, readonly) NSString *name;
@property(readonly) uint64_t registryID MTO_SDK_MACOS(10.13);
@property(readonly, nonnull) MTLArchitecture *architecture MTO_SDK_MACOS(14.0);
@property(readonly) BOOL hasUnifiedMemory MTO_SDK_MACOS(10.15);
@property(readonly) uint64_t recommendedMaxWorkingSetSize MTO_SDK_MACOS(10.12);
@property(readonly) NSUInteger maxBufferLength MTO_SDK_MACOS(10.14);
@property(readonly) NSUInteger maxThreadgroupMemoryLength MTO_SDK_MACOS(10.13);
@property(readonly) MTLSize maxThreadsPerThreadgroup MTO_SDK_MACOS(10.11);
@property(readonly, getter=isLowPower) BOOL lowPower MTO_SDK_MACOS(10.11);
@property(readonly, getter=isHeadless) BOOL headless MTO_SDK_MACOS(10.11);
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily MTO_SDK_MACOS(10.15);
- (nullable id<MTLLibrary>)newLibraryWithSource:(NSString *)source
                                        options:(nullable MTLCompileOptions *)options
                                          error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(10.11);
- (nullable id<MTLComputePipelineState>)
    newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                  error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(10.11);
- (void)newLibraryWithSource:(NSString *)source
                     options:(nullable MTLCompileOptions *)options
           completionHandler:(MTLNewLibraryCompletionHandler)completionHandler
    MTO_SDK_MACOS(10.11);
- (void)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                          completionHandler:(MTLNewComputePipelineStateCompletionHandler)completionHandler
    MTO_SDK_MACOS(10.11);
- (nullable id<MTLComputePipelineState>)
    newComputePipelineStateWithDescriptor:(MTLComputePipelineDescriptor *)descriptor
                                  options:(MTLPipelineOption)options
                               reflection:(MTLComputePipelineReflection *__autoreleasing _Nullable *_Nullable)reflection
                                    error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(10.11);
- (nullable id<MTLLibrary>)newLibraryWithURL:(NSURL *)url
                                       error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(10.13);
- (nullable id<MTLCommandQueue>)newCommandQueue;
- (nullable id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
// Every plane the descriptor configures needs an attachment.
- (nullable id<MTLTensor>)newTensorWithDescriptor:(MTLTensorDescriptor *)descriptor
                                      attachments:(MTLTensorBufferAttachments *)attachments
                                            error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(27.0);
- (nullable id<MTLResidencySet>)newResidencySetWithDescriptor:(MTLResidencySetDescriptor *)desc
                                                        error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(15.0);
- (nullable id<MTL4CommandQueue>)newMTL4CommandQueue MTO_SDK_MACOS(26.0);
- (nullable id<MTL4CommandAllocator>)newCommandAllocator MTO_SDK_MACOS(26.0);
- (nullable id<MTL4CommandBuffer>)newCommandBuffer MTO_SDK_MACOS(26.0);
- (nullable id<MTL4ArgumentTable>)newArgumentTableWithDescriptor:(MTL4ArgumentTableDescriptor *)descriptor
                                                           error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(26.0);
- (nullable id<MTLBinaryArchive>)newBinaryArchiveWithDescriptor:(MTLBinaryArchiveDescriptor *)descriptor
                                                          error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(11.0);
- (nullable id<MTL4Compiler>)newCompilerWithDescriptor:(MTL4CompilerDescriptor *)descriptor
                                                 error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(26.0);
- (nullable id<MTL4Archive>)newArchiveWithURL:(NSURL *)url
                                        error:(__autoreleasing NSError *_Nullable *_Nullable)error
    MTO_SDK_MACOS(26.0);
// Non-null in the header, although its documentation says nil on failure.
- (id<MTL4PipelineDataSetSerializer>)newPipelineDataSetSerializerWithDescriptor:
    (MTL4PipelineDataSetSerializerDescriptor *)descriptor MTO_SDK_MACOS(26.0);
@end

extern "C" {
id<MTLDevice> _Nullable MTLCreateSystemDefaultDevice(void) MTO_SDK_MACOS(10.11) NS_RETURNS_RETAINED;
NSArray<id<MTLDevice>> *MTLCopyAllDevices(void) MTO_SDK_MACOS(10.11) NS_RETURNS_RETAINED;
}

NS_ASSUME_NONNULL_END
