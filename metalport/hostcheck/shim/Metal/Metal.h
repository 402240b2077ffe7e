// metalport host-check shim: the Metal subset PyTorch's MPS host code uses (devices, buffers,
// command queues/buffers/encoders, pipelines, libraries, events, capture).
// Declarations only, written from Apple's public API signatures; see ../README.md.
#pragma once
#include <Foundation/Foundation.h>

typedef struct { NSUInteger width, height, depth; } MTLSize;
typedef struct { NSUInteger x, y, z; } MTLOrigin;
typedef struct { MTLOrigin origin; MTLSize size; } MTLRegion;
static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  MTLSize s = {width, height, depth};
  return s;
}
static inline MTLOrigin MTLOriginMake(NSUInteger x, NSUInteger y, NSUInteger z) {
  MTLOrigin o = {x, y, z};
  return o;
}
static inline MTLRegion MTLRegionMake1D(NSUInteger x, NSUInteger width) {
  MTLRegion r = {{x, 0, 0}, {width, 1, 1}};
  return r;
}
typedef struct { NSUInteger size; NSUInteger align; } MTLSizeAndAlign;

typedef NS_ENUM(NSUInteger, MTLCPUCacheMode) { MTLCPUCacheModeDefaultCache = 0, MTLCPUCacheModeWriteCombined = 1 };
typedef NS_ENUM(NSUInteger, MTLStorageMode) {
  MTLStorageModeShared = 0, MTLStorageModeManaged = 1, MTLStorageModePrivate = 2, MTLStorageModeMemoryless = 3
};
typedef NS_ENUM(NSUInteger, MTLHazardTrackingMode) {
  MTLHazardTrackingModeDefault = 0, MTLHazardTrackingModeUntracked = 1, MTLHazardTrackingModeTracked = 2
};
typedef NS_OPTIONS(NSUInteger, MTLResourceOptions) {
  MTLResourceCPUCacheModeDefaultCache = 0,
  MTLResourceCPUCacheModeWriteCombined = 1,
  MTLResourceStorageModeShared = 0 << 4,
  MTLResourceStorageModeManaged = 1 << 4,
  MTLResourceStorageModePrivate = 2 << 4,
  MTLResourceStorageModeMemoryless = 3 << 4,
  MTLResourceHazardTrackingModeDefault = 0 << 8,
  MTLResourceHazardTrackingModeUntracked = 1 << 8,
  MTLResourceHazardTrackingModeTracked = 2 << 8,
  MTLResourceOptionCPUCacheModeDefault = 0,
};
typedef NS_ENUM(NSUInteger, MTLPurgeableState) {
  MTLPurgeableStateKeepCurrent = 1, MTLPurgeableStateNonVolatile = 2, MTLPurgeableStateVolatile = 3,
  MTLPurgeableStateEmpty = 4
};
typedef NS_ENUM(NSUInteger, MTLCommandBufferStatus) {
  MTLCommandBufferStatusNotEnqueued = 0, MTLCommandBufferStatusEnqueued = 1, MTLCommandBufferStatusCommitted = 2,
  MTLCommandBufferStatusScheduled = 3, MTLCommandBufferStatusCompleted = 4, MTLCommandBufferStatusError = 5
};
typedef NS_ENUM(NSUInteger, MTLDispatchType) { MTLDispatchTypeSerial = 0, MTLDispatchTypeConcurrent = 1 };
typedef NS_OPTIONS(NSUInteger, MTLResourceUsage) {
  MTLResourceUsageRead = 1 << 0, MTLResourceUsageWrite = 1 << 1
};
typedef NS_OPTIONS(NSUInteger, MTLBarrierScope) {
  MTLBarrierScopeBuffers = 1 << 0, MTLBarrierScopeTextures = 1 << 1, MTLBarrierScopeRenderTargets = 1 << 2
};
typedef NS_ENUM(NSUInteger, MTLLanguageVersion) {
  MTLLanguageVersion2_0 = (2 << 16), MTLLanguageVersion2_1 = (2 << 16) + 1, MTLLanguageVersion2_2 = (2 << 16) + 2,
  MTLLanguageVersion2_3 = (2 << 16) + 3, MTLLanguageVersion2_4 = (2 << 16) + 4, MTLLanguageVersion3_0 = (3 << 16),
  MTLLanguageVersion3_1 = (3 << 16) + 1, MTLLanguageVersion3_2 = (3 << 16) + 2, MTLLanguageVersion4_0 = (4 << 16)
};
typedef NS_ENUM(NSInteger, MTLGPUFamily) {
  MTLGPUFamilyApple1 = 1001, MTLGPUFamilyApple2 = 1002, MTLGPUFamilyApple3 = 1003, MTLGPUFamilyApple4 = 1004,
  MTLGPUFamilyApple5 = 1005, MTLGPUFamilyApple6 = 1006, MTLGPUFamilyApple7 = 1007, MTLGPUFamilyApple8 = 1008,
  MTLGPUFamilyApple9 = 1009, MTLGPUFamilyApple10 = 1010, MTLGPUFamilyMac1 = 2001, MTLGPUFamilyMac2 = 2002,
  MTLGPUFamilyCommon1 = 3001, MTLGPUFamilyCommon2 = 3002, MTLGPUFamilyCommon3 = 3003, MTLGPUFamilyMetal3 = 5001,
  MTLGPUFamilyMetal4 = 5002
};
typedef NS_ENUM(NSUInteger, MTLMathMode) { MTLMathModeSafe = 0, MTLMathModeRelaxed = 1, MTLMathModeFast = 2 };
typedef NS_ENUM(NSInteger, MTLMathFloatingPointFunctions) {
  MTLMathFloatingPointFunctionsFast = 0, MTLMathFloatingPointFunctionsPrecise = 1
};
typedef NS_ENUM(NSUInteger, MTLDataType) {
  MTLDataTypeNone = 0, MTLDataTypeStruct = 1, MTLDataTypeArray = 2, MTLDataTypeFloat = 3, MTLDataTypeFloat2 = 4,
  MTLDataTypeFloat3 = 5, MTLDataTypeFloat4 = 6, MTLDataTypeHalf = 16, MTLDataTypeInt = 29, MTLDataTypeInt2 = 30,
  MTLDataTypeUInt = 33, MTLDataTypeShort = 37, MTLDataTypeUShort = 41, MTLDataTypeChar = 45, MTLDataTypeUChar = 49,
  MTLDataTypeBool = 53, MTLDataTypeLong = 81, MTLDataTypeULong = 85, MTLDataTypeBFloat = 121
};
typedef NS_ENUM(NSUInteger, MTLCaptureDestination) {
  MTLCaptureDestinationDeveloperTools = 1, MTLCaptureDestinationGPUTraceDocument = 2
};
typedef NS_OPTIONS(NSUInteger, MTLPipelineOption) { MTLPipelineOptionNone = 0 };
typedef NS_ENUM(NSInteger, MTLLibraryType) { MTLLibraryTypeExecutable = 0, MTLLibraryTypeDynamic = 1 };
typedef NS_ENUM(NSUInteger, MTLFunctionType) { MTLFunctionTypeVertex = 1, MTLFunctionTypeFragment = 2, MTLFunctionTypeKernel = 3 };
typedef NSUInteger MTLBinaryArchiveError;
extern NSErrorDomain const MTLLibraryErrorDomain;
extern NSErrorDomain const MTLCommandBufferErrorDomain;

@protocol MTLDevice, MTLCommandQueue, MTLCommandBuffer, MTLFunction, MTLLibrary, MTLHeap, MTLEvent, MTLTexture;
@protocol MTLComputePipelineState, MTLArgumentEncoder, MTLBuffer, MTLFence, MTLSharedEvent;
@class MTLCompileOptions, MTLComputePipelineDescriptor, MTLComputePipelineReflection, MTLFunctionConstantValues;
@class MTLSharedEventListener, MTLHeapDescriptor, MTLCommandBufferDescriptor, MTLTextureDescriptor;

@protocol MTLResource <NSObject>
@property(nullable, copy) NSString* label;
@property(readonly) id<MTLDevice> device;
@property(readonly) MTLCPUCacheMode cpuCacheMode;
@property(readonly) MTLStorageMode storageMode;
@property(readonly) MTLHazardTrackingMode hazardTrackingMode;
@property(readonly) MTLResourceOptions resourceOptions;
- (MTLPurgeableState)setPurgeableState:(MTLPurgeableState)state;
@property(readonly) id<MTLHeap> heap;
@property(readonly) NSUInteger heapOffset;
@property(readonly) NSUInteger allocatedSize;
- (void)makeAliasable;
- (BOOL)isAliasable;
@end

@protocol MTLBuffer <MTLResource>
@property(readonly) NSUInteger length;
- (void*)contents;
- (void)didModifyRange:(NSRange)range;
- (void)addDebugMarker:(NSString*)marker range:(NSRange)range;
- (void)removeAllDebugMarkers;
@property(readonly) uint64_t gpuAddress;
- (id<MTLTexture>)newTextureWithDescriptor:(MTLTextureDescriptor*)descriptor offset:(NSUInteger)offset bytesPerRow:(NSUInteger)bytesPerRow;
@end

@protocol MTLTexture <MTLResource>
@property(readonly) NSUInteger width;
@property(readonly) NSUInteger height;
@property(readonly) NSUInteger depth;
@end

@protocol MTLHeap <NSObject>
@property(nullable, copy) NSString* label;
@property(readonly) NSUInteger size;
@property(readonly) NSUInteger usedSize;
@property(readonly) NSUInteger currentAllocatedSize;
- (NSUInteger)maxAvailableSizeWithAlignment:(NSUInteger)alignment;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (MTLPurgeableState)setPurgeableState:(MTLPurgeableState)state;
@end

@interface MTLHeapDescriptor : NSObject <NSCopying>
@property(readwrite) NSUInteger size;
@property(readwrite) MTLStorageMode storageMode;
@property(readwrite) MTLCPUCacheMode cpuCacheMode;
@property(readwrite) MTLHazardTrackingMode hazardTrackingMode;
@property(readwrite) MTLResourceOptions resourceOptions;
@end

@protocol MTLFunction <NSObject>
@property(nullable, copy) NSString* label;
@property(readonly) id<MTLDevice> device;
@property(readonly) MTLFunctionType functionType;
@property(readonly) NSString* name;
- (id<MTLArgumentEncoder>)newArgumentEncoderWithBufferIndex:(NSUInteger)bufferIndex;
@end

@interface MTLFunctionConstantValues : NSObject <NSCopying>
- (void)setConstantValue:(const void*)value type:(MTLDataType)type atIndex:(NSUInteger)index;
- (void)setConstantValues:(const void*)values type:(MTLDataType)type withRange:(NSRange)range;
- (void)setConstantValue:(const void*)value type:(MTLDataType)type withName:(NSString*)name;
- (void)reset;
@end

@interface MTLCompileOptions : NSObject <NSCopying>
@property(readwrite, copy) NSDictionary<NSString*, NSObject*>* preprocessorMacros;
@property(readwrite) BOOL fastMathEnabled;
@property(readwrite) MTLMathMode mathMode;
@property(readwrite) MTLMathFloatingPointFunctions mathFloatingPointFunctions;
@property(readwrite) MTLLanguageVersion languageVersion;
@property(readwrite) MTLLibraryType libraryType;
@property(readwrite, copy) NSString* installName;
@property(readwrite) BOOL preserveInvariance;
@end

@protocol MTLLibrary <NSObject>
@property(nullable, copy) NSString* label;
@property(readonly) id<MTLDevice> device;
- (id<MTLFunction>)newFunctionWithName:(NSString*)functionName;
- (id<MTLFunction>)newFunctionWithName:(NSString*)name constantValues:(MTLFunctionConstantValues*)constantValues
                                 error:(NSError**)error;
@property(readonly) NSArray<NSString*>* functionNames;
@property(readonly) MTLLibraryType type;
@property(readonly) NSString* installName;
@end

@interface MTLComputePipelineDescriptor : NSObject <NSCopying>
@property(nullable, copy) NSString* label;
@property(nullable, readwrite, strong) id<MTLFunction> computeFunction;
@property(readwrite) BOOL threadGroupSizeIsMultipleOfThreadExecutionWidth;
@property(readwrite) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readwrite) NSUInteger maxCallStackDepth;
- (void)reset;
@end

@protocol MTLComputePipelineState <NSObject>
@property(readonly) NSString* label;
@property(readonly) id<MTLDevice> device;
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@property(readonly) NSUInteger staticThreadgroupMemoryLength;
- (NSUInteger)imageblockMemoryLengthForDimensions:(MTLSize)imageblockDimensions;
@property(readonly) BOOL supportIndirectCommandBuffers;
@end

@protocol MTLArgumentEncoder <NSObject>
@property(readonly) id<MTLDevice> device;
@property(nullable, copy) NSString* label;
@property(readonly) NSUInteger encodedLength;
@property(readonly) NSUInteger alignment;
- (void)setArgumentBuffer:(id<MTLBuffer>)argumentBuffer offset:(NSUInteger)offset;
- (void)setArgumentBuffer:(id<MTLBuffer>)argumentBuffer startOffset:(NSUInteger)startOffset arrayElement:(NSUInteger)arrayElement;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBuffers:(const id<MTLBuffer> __unsafe_unretained[])buffers offsets:(const NSUInteger[])offsets withRange:(NSRange)range;
- (void*)constantDataAtIndex:(NSUInteger)index;
- (id<MTLArgumentEncoder>)newArgumentEncoderForBufferAtIndex:(NSUInteger)index;
@end

@protocol MTLFence <NSObject>
@property(readonly) id<MTLDevice> device;
@property(nullable, copy) NSString* label;
@end

@protocol MTLEvent <NSObject>
@property(readonly) id<MTLDevice> device;
@property(nullable, copy) NSString* label;
@end

typedef void (^MTLSharedEventNotificationBlock)(id<MTLSharedEvent>, uint64_t value);
@interface MTLSharedEventListener : NSObject
- (instancetype)init;
- (instancetype)initWithDispatchQueue:(dispatch_queue_t)dispatchQueue;
@property(readonly) dispatch_queue_t dispatchQueue;
@end
@interface MTLSharedEventHandle : NSObject <NSSecureCoding>
@property(readonly) NSString* label;
@end

@protocol MTLSharedEvent <MTLEvent>
- (void)notifyListener:(MTLSharedEventListener*)listener atValue:(uint64_t)value block:(MTLSharedEventNotificationBlock)block;
- (MTLSharedEventHandle*)newSharedEventHandle;
- (BOOL)waitUntilSignaledValue:(uint64_t)value timeoutMS:(uint64_t)milliseconds;
@property(readwrite) uint64_t signaledValue;
@end

@protocol MTLCommandEncoder <NSObject>
@property(readonly) id<MTLDevice> device;
@property(nullable, copy) NSString* label;
- (void)endEncoding;
- (void)insertDebugSignpost:(NSString*)string;
- (void)pushDebugGroup:(NSString*)string;
- (void)popDebugGroup;
@end

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
@property(readonly) MTLDispatchType dispatchType;
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void*)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBufferOffset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBuffers:(const id<MTLBuffer> __unsafe_unretained[])buffers offsets:(const NSUInteger[])offsets withRange:(NSRange)range;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset attributeStride:(NSUInteger)stride atIndex:(NSUInteger)index;
- (void)setBytes:(const void*)bytes length:(NSUInteger)length attributeStride:(NSUInteger)stride atIndex:(NSUInteger)index;
- (void)setTexture:(id<MTLTexture>)texture atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setStageInRegion:(MTLRegion)region;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)dispatchThreadgroupsWithIndirectBuffer:(id<MTLBuffer>)indirectBuffer indirectBufferOffset:(NSUInteger)indirectBufferOffset
                         threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)dispatchThreads:(MTLSize)threadsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)updateFence:(id<MTLFence>)fence;
- (void)waitForFence:(id<MTLFence>)fence;
- (void)useResource:(id<MTLResource>)resource usage:(MTLResourceUsage)usage;
- (void)useResources:(const id<MTLResource> __unsafe_unretained[])resources count:(NSUInteger)count usage:(MTLResourceUsage)usage;
- (void)useHeap:(id<MTLHeap>)heap;
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope;
- (void)memoryBarrierWithResources:(const id<MTLResource> __unsafe_unretained[])resources count:(NSUInteger)count;
@end

@protocol MTLBlitCommandEncoder <MTLCommandEncoder>
- (void)copyFromBuffer:(id<MTLBuffer>)sourceBuffer sourceOffset:(NSUInteger)sourceOffset toBuffer:(id<MTLBuffer>)destinationBuffer
     destinationOffset:(NSUInteger)destinationOffset size:(NSUInteger)size;
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value;
- (void)synchronizeResource:(id<MTLResource>)resource;
- (void)updateFence:(id<MTLFence>)fence;
- (void)waitForFence:(id<MTLFence>)fence;
@end

typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);
@protocol MTLCommandBuffer <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) id<MTLCommandQueue> commandQueue;
@property(readonly) BOOL retainedReferences;
@property(nullable, copy) NSString* label;
@property(readonly) double kernelStartTime;
@property(readonly) double kernelEndTime;
@property(readonly) double GPUStartTime;
@property(readonly) double GPUEndTime;
@property(readonly) MTLCommandBufferStatus status;
@property(readonly) NSError* error;
- (void)enqueue;
- (void)commit;
- (void)addScheduledHandler:(MTLCommandBufferHandler)block;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (void)waitUntilScheduled;
- (void)waitUntilCompleted;
- (id<MTLBlitCommandEncoder>)blitCommandEncoder;
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (id<MTLComputeCommandEncoder>)computeCommandEncoderWithDispatchType:(MTLDispatchType)dispatchType;
- (void)encodeWaitForEvent:(id<MTLEvent>)event value:(uint64_t)value;
- (void)encodeSignalEvent:(id<MTLEvent>)event value:(uint64_t)value;
- (void)pushDebugGroup:(NSString*)string;
- (void)popDebugGroup;
@end

@interface MTLCommandBufferDescriptor : NSObject <NSCopying>
@property(readwrite) BOOL retainedReferences;
@end

@protocol MTLCommandQueue <NSObject>
@property(nullable, copy) NSString* label;
@property(readonly) id<MTLDevice> device;
- (id<MTLCommandBuffer>)commandBuffer;
- (id<MTLCommandBuffer>)commandBufferWithDescriptor:(MTLCommandBufferDescriptor*)descriptor;
- (id<MTLCommandBuffer>)commandBufferWithUnretainedReferences;
@end

typedef void (^MTLNewLibraryCompletionHandler)(id<MTLLibrary> library, NSError* error);
typedef void (^MTLNewComputePipelineStateCompletionHandler)(id<MTLComputePipelineState> computePipelineState, NSError* error);

@protocol MTLDevice <NSObject>
@property(readonly) NSString* name;
@property(readonly) uint64_t registryID;
@property(readonly) MTLSize maxThreadsPerThreadgroup;
@property(readonly) BOOL hasUnifiedMemory;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
@property(readonly) NSUInteger currentAllocatedSize;
@property(readonly) NSUInteger maxThreadgroupMemoryLength;
@property(readonly) NSUInteger maxBufferLength;
@property(readonly, getter=isLowPower) BOOL lowPower;
@property(readonly, getter=isHeadless) BOOL headless;
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLCommandQueue>)newCommandQueueWithMaxCommandBufferCount:(NSUInteger)maxCommandBufferCount;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytes:(const void*)pointer length:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void*)pointer length:(NSUInteger)length options:(MTLResourceOptions)options
                              deallocator:(void (^)(void* pointer, NSUInteger length))deallocator;
- (id<MTLHeap>)newHeapWithDescriptor:(MTLHeapDescriptor*)descriptor;
- (MTLSizeAndAlign)heapBufferSizeAndAlignWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLLibrary>)newDefaultLibrary;
- (id<MTLLibrary>)newLibraryWithFile:(NSString*)filepath error:(NSError**)error;
- (id<MTLLibrary>)newLibraryWithURL:(NSURL*)url error:(NSError**)error;
- (id<MTLLibrary>)newLibraryWithData:(dispatch_data_t)data error:(NSError**)error;
- (id<MTLLibrary>)newLibraryWithSource:(NSString*)source options:(MTLCompileOptions*)options error:(NSError**)error;
- (void)newLibraryWithSource:(NSString*)source options:(MTLCompileOptions*)options
           completionHandler:(MTLNewLibraryCompletionHandler)completionHandler;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction error:(NSError**)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                                           options:(MTLPipelineOption)options
                                                        reflection:(MTLComputePipelineReflection**)reflection
                                                             error:(NSError**)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithDescriptor:(MTLComputePipelineDescriptor*)descriptor
                                                             options:(MTLPipelineOption)options
                                                          reflection:(MTLComputePipelineReflection**)reflection
                                                               error:(NSError**)error;
- (id<MTLFence>)newFence;
- (id<MTLEvent>)newEvent;
- (id<MTLSharedEvent>)newSharedEvent;
- (id<MTLSharedEvent>)newSharedEventWithHandle:(MTLSharedEventHandle*)sharedEventHandle;
@end

extern "C" id<MTLDevice> MTLCreateSystemDefaultDevice(void);
extern "C" NSArray<id<MTLDevice>>* MTLCopyAllDevices(void);

@interface MTLCaptureDescriptor : NSObject <NSCopying>
@property(nonatomic, strong) id captureObject;
@property(nonatomic, assign) MTLCaptureDestination destination;
@property(nonatomic, copy) NSURL* outputURL;
@end

@protocol MTLCaptureScope <NSObject>
- (void)beginScope;
- (void)endScope;
@property(nullable, copy) NSString* label;
@end

@interface MTLCaptureManager : NSObject
+ (MTLCaptureManager*)sharedCaptureManager;
- (id<MTLCaptureScope>)newCaptureScopeWithDevice:(id<MTLDevice>)device;
- (id<MTLCaptureScope>)newCaptureScopeWithCommandQueue:(id<MTLCommandQueue>)commandQueue;
- (BOOL)supportsDestination:(MTLCaptureDestination)destination;
- (BOOL)startCaptureWithDescriptor:(MTLCaptureDescriptor*)descriptor error:(NSError**)error;
- (void)startCaptureWithDevice:(id<MTLDevice>)device;
- (void)startCaptureWithCommandQueue:(id<MTLCommandQueue>)commandQueue;
- (void)stopCapture;
@property(readonly) BOOL isCapturing;
@end
