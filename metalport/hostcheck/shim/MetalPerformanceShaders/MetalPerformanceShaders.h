// metalport host-check shim: the MetalPerformanceShaders subset PyTorch's MPS host code uses
// (data types, MPSShape, MPSCommandBuffer, MPSNDArray, kernels and matrices).
// Declarations only, written from Apple's public API signatures; see ../README.md.
#pragma once
#include <Metal/Metal.h>

typedef NS_OPTIONS(uint32_t, MPSDataType) {
  MPSDataTypeInvalid = 0,
  MPSDataTypeFloatBit = 0x10000000,
  MPSDataTypeFloat32 = MPSDataTypeFloatBit | 32,
  MPSDataTypeFloat16 = MPSDataTypeFloatBit | 16,
  MPSDataTypeComplexBit = 0x01000000,
  MPSDataTypeComplexFloat32 = MPSDataTypeFloatBit | MPSDataTypeComplexBit | 64,
  MPSDataTypeComplexFloat16 = MPSDataTypeFloatBit | MPSDataTypeComplexBit | 32,
  MPSDataTypeSignedBit = 0x20000000,
  MPSDataTypeIntBit = MPSDataTypeSignedBit,
  MPSDataTypeInt2 = MPSDataTypeSignedBit | 2,
  MPSDataTypeInt4 = MPSDataTypeSignedBit | 4,
  MPSDataTypeInt8 = MPSDataTypeSignedBit | 8,
  MPSDataTypeInt16 = MPSDataTypeSignedBit | 16,
  MPSDataTypeInt32 = MPSDataTypeSignedBit | 32,
  MPSDataTypeInt64 = MPSDataTypeSignedBit | 64,
  MPSDataTypeUInt2 = 2,
  MPSDataTypeUInt4 = 4,
  MPSDataTypeUInt8 = 8,
  MPSDataTypeUInt16 = 16,
  MPSDataTypeUInt32 = 32,
  MPSDataTypeUInt64 = 64,
  MPSDataTypeAlternateEncodingBit = 0x80000000,
  MPSDataTypeBool = MPSDataTypeAlternateEncodingBit | 8,
  MPSDataTypeBFloat16 = MPSDataTypeAlternateEncodingBit | MPSDataTypeFloat16,
  MPSDataTypeNormalizedBit = 0x40000000,
  MPSDataTypeUnorm1 = MPSDataTypeNormalizedBit | 1,
  MPSDataTypeUnorm8 = MPSDataTypeNormalizedBit | 8,
};

typedef NS_OPTIONS(NSUInteger, MPSKernelOptions) {
  MPSKernelOptionsNone = 0, MPSKernelOptionsSkipAPIValidation = 1U << 0, MPSKernelOptionsAllowReducedPrecision = 1U << 1,
  MPSKernelOptionsDisableInternalTiling = 1U << 2, MPSKernelOptionsInsertDebugGroups = 1U << 3, MPSKernelOptionsVerbose = 1U << 4
};

typedef NSArray<NSNumber*> MPSShape;
typedef struct { double x, y, z; } MPSOffset_d;
typedef struct { NSInteger x, y, z; } MPSOffset;
typedef struct { NSUInteger start, length; } MPSDimensionSlice;

@protocol MPSDeviceProvider
- (id<MTLDevice>)mpsMTLDevice;
@end

@interface MPSKernel : NSObject <NSCopying, NSSecureCoding>
@property(readwrite) MPSKernelOptions options;
@property(readonly, retain) id<MTLDevice> device;
@property(copy) NSString* label;
- (instancetype)initWithDevice:(id<MTLDevice>)device;
- (instancetype)copyWithZone:(NSZone*)zone device:(id<MTLDevice>)device;
@end

@interface MPSCommandBuffer : NSObject <MTLCommandBuffer>
@property(readonly, retain) id<MTLCommandBuffer> commandBuffer;
@property(readonly, retain) id<MTLCommandBuffer> rootCommandBuffer;
@property(readwrite, strong) id predicate;
+ (MPSCommandBuffer*)commandBufferWithCommandBuffer:(id<MTLCommandBuffer>)commandBuffer;
+ (MPSCommandBuffer*)commandBufferFromCommandQueue:(id<MTLCommandQueue>)commandQueue;
- (instancetype)initWithCommandBuffer:(id<MTLCommandBuffer>)commandBuffer;
- (void)commitAndContinue;
- (void)prefetchHeapForWorkloadSize:(size_t)size;
@end

@interface MPSNDArrayDescriptor : NSObject
@property(readwrite) MPSDataType dataType;
@property(readwrite) NSUInteger numberOfDimensions;
@property(readwrite) BOOL preferPackedRows;
+ (instancetype)descriptorWithDataType:(MPSDataType)dataType dimensionCount:(NSUInteger)numberOfDimensions
                            dimensionSizes:(NSUInteger*)dimensionSizes;
+ (instancetype)descriptorWithDataType:(MPSDataType)dataType shape:(MPSShape*)shape;
+ (instancetype)descriptorWithDataType:(MPSDataType)dataType dimensionSizes:(NSUInteger)dimension0, ...;
- (NSUInteger)lengthOfDimension:(NSUInteger)dimensionIndex;
- (MPSDimensionSlice)sliceRangeForDimension:(NSUInteger)dimensionIndex;
- (void)sliceDimension:(NSUInteger)dimensionIndex withSubrange:(MPSDimensionSlice)subRange;
- (void)transposeDimension:(NSUInteger)dimensionIndex withDimension:(NSUInteger)dimensionIndex2;
- (void)reshapeWithDimensionCount:(NSUInteger)numberOfDimensions dimensionSizes:(NSUInteger*)dimensionSizes;
- (void)reshapeWithShape:(MPSShape*)shape;
- (MPSShape*)getShape;
- (void)permuteWithDimensionOrder:(NSUInteger*)dimensionOrder;
@end

@interface MPSNDArray : NSObject
@property(readonly) MPSDataType dataType;
@property(readonly) size_t dataTypeSize;
@property(readonly) NSUInteger numberOfDimensions;
@property(readonly, retain) id<MTLDevice> device;
@property(copy) NSString* label;
@property(readonly, retain) MPSNDArray* parent;
- (instancetype)initWithDevice:(id<MTLDevice>)device descriptor:(MPSNDArrayDescriptor*)descriptor;
- (instancetype)initWithDevice:(id<MTLDevice>)device scalar:(double)value;
- (instancetype)initWithBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset descriptor:(MPSNDArrayDescriptor*)descriptor;
- (NSUInteger)lengthOfDimension:(NSUInteger)dimensionIndex;
- (MPSNDArrayDescriptor*)descriptor;
- (NSUInteger)resourceSize;
- (MPSNDArray*)arrayViewWithDescriptor:(MPSNDArrayDescriptor*)descriptor;
- (MPSNDArray*)arrayViewWithShape:(MPSShape*)shape strides:(MPSShape*)strides;
- (MPSNDArray*)arrayViewWithCommandBuffer:(id<MTLCommandBuffer>)cmdBuf descriptor:(MPSNDArrayDescriptor*)descriptor
                                 aliasing:(NSUInteger)aliasing;
- (void)readBytes:(void*)buffer strideBytes:(NSInteger*)strideByteSizes;
- (void)writeBytes:(void*)buffer strideBytes:(NSInteger*)strideByteSizes;
- (void)exportDataWithCommandBuffer:(id<MTLCommandBuffer>)cmdBuf toBuffer:(id<MTLBuffer>)buffer
                    destinationDataType:(MPSDataType)destinationDataType offset:(NSUInteger)offset
                             rowStrides:(NSInteger*)rowStrides;
- (void)importDataWithCommandBuffer:(id<MTLCommandBuffer>)cmdBuf fromBuffer:(id<MTLBuffer>)buffer
                     sourceDataType:(MPSDataType)sourceDataType offset:(NSUInteger)offset
                         rowStrides:(NSInteger*)rowStrides;
- (void)synchronizeOnCommandBuffer:(id<MTLCommandBuffer>)commandBuffer;
- (id<MTLBuffer>)buffer;
@end

@interface MPSTemporaryNDArray : MPSNDArray
+ (instancetype)temporaryNDArrayWithCommandBuffer:(id<MTLCommandBuffer>)commandBuffer descriptor:(MPSNDArrayDescriptor*)descriptor;
@property(readwrite) NSUInteger readCount;
@end

@interface MPSNDArrayIdentity : MPSKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device;
- (MPSNDArray*)reshapeWithCommandBuffer:(id<MTLCommandBuffer>)cmdBuf sourceArray:(MPSNDArray*)sourceArray
                                  shape:(MPSShape*)shape destinationArray:(MPSNDArray*)destinationArray;
@end

typedef NS_ENUM(NSUInteger, MPSMatrixDecompositionStatus) {
  MPSMatrixDecompositionStatusSuccess = 0, MPSMatrixDecompositionStatusFailure = -1,
  MPSMatrixDecompositionStatusSingular = -2, MPSMatrixDecompositionStatusNonPositiveDefinite = -3
};

@interface MPSMatrixDescriptor : NSObject
@property(readwrite) NSUInteger rows;
@property(readwrite) NSUInteger columns;
@property(readonly) NSUInteger matrices;
@property(readwrite) MPSDataType dataType;
@property(readwrite) NSUInteger rowBytes;
@property(readonly) NSUInteger matrixBytes;
+ (MPSMatrixDescriptor*)matrixDescriptorWithRows:(NSUInteger)rows columns:(NSUInteger)columns rowBytes:(NSUInteger)rowBytes
                                        dataType:(MPSDataType)dataType;
+ (MPSMatrixDescriptor*)matrixDescriptorWithRows:(NSUInteger)rows columns:(NSUInteger)columns matrices:(NSUInteger)matrices
                                        rowBytes:(NSUInteger)rowBytes matrixBytes:(NSUInteger)matrixBytes
                                        dataType:(MPSDataType)dataType;
+ (size_t)rowBytesFromColumns:(NSUInteger)columns dataType:(MPSDataType)dataType;
+ (size_t)rowBytesForColumns:(NSUInteger)columns dataType:(MPSDataType)dataType;
@end

@interface MPSMatrix : NSObject
@property(readonly, retain) id<MTLDevice> device;
@property(readonly) NSUInteger rows;
@property(readonly) NSUInteger columns;
@property(readonly) NSUInteger matrices;
@property(readonly) MPSDataType dataType;
@property(readonly) NSUInteger rowBytes;
@property(readonly) NSUInteger matrixBytes;
@property(readonly) NSUInteger offset;
@property(readonly) id<MTLBuffer> data;
- (instancetype)initWithBuffer:(id<MTLBuffer>)buffer descriptor:(MPSMatrixDescriptor*)descriptor;
- (instancetype)initWithBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset descriptor:(MPSMatrixDescriptor*)descriptor;
- (instancetype)initWithDevice:(id<MTLDevice>)device descriptor:(MPSMatrixDescriptor*)descriptor;
- (void)synchronizeOnCommandBuffer:(id<MTLCommandBuffer>)commandBuffer;
@end

@interface MPSVectorDescriptor : NSObject
+ (MPSVectorDescriptor*)vectorDescriptorWithLength:(NSUInteger)length dataType:(MPSDataType)dataType;
@end
@interface MPSVector : NSObject
- (instancetype)initWithBuffer:(id<MTLBuffer>)buffer descriptor:(MPSVectorDescriptor*)descriptor;
@end

@interface MPSMatrixBinaryKernel : MPSKernel
@property(readwrite) MTLOrigin primarySourceMatrixOrigin;
@property(readwrite) MTLOrigin secondarySourceMatrixOrigin;
@property(readwrite) MTLOrigin resultMatrixOrigin;
@property(readwrite) NSUInteger batchStart;
@property(readwrite) NSUInteger batchSize;
@end
@interface MPSMatrixUnaryKernel : MPSKernel
@property(readwrite) MTLOrigin sourceMatrixOrigin;
@property(readwrite) MTLOrigin resultMatrixOrigin;
@property(readwrite) NSUInteger batchStart;
@property(readwrite) NSUInteger batchSize;
@end

@interface MPSMatrixMultiplication : MPSKernel
@property(readwrite) MTLOrigin resultMatrixOrigin;
@property(readwrite) MTLOrigin leftMatrixOrigin;
@property(readwrite) MTLOrigin rightMatrixOrigin;
@property(readwrite) NSUInteger batchStart;
@property(readwrite) NSUInteger batchSize;
- (instancetype)initWithDevice:(id<MTLDevice>)device transposeLeft:(BOOL)transposeLeft transposeRight:(BOOL)transposeRight
                    resultRows:(NSUInteger)resultRows resultColumns:(NSUInteger)resultColumns
               interiorColumns:(NSUInteger)interiorColumns alpha:(double)alpha beta:(double)beta;
- (instancetype)initWithDevice:(id<MTLDevice>)device resultRows:(NSUInteger)resultRows resultColumns:(NSUInteger)resultColumns
               interiorColumns:(NSUInteger)interiorColumns;
- (void)encodeToCommandBuffer:(id<MTLCommandBuffer>)commandBuffer leftMatrix:(MPSMatrix*)leftMatrix
                  rightMatrix:(MPSMatrix*)rightMatrix resultMatrix:(MPSMatrix*)resultMatrix;
@end

@interface MPSMatrixDecompositionLU : MPSMatrixUnaryKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device rows:(NSUInteger)rows columns:(NSUInteger)columns;
- (void)encodeToCommandBuffer:(id<MTLCommandBuffer>)commandBuffer sourceMatrix:(MPSMatrix*)sourceMatrix
                 resultMatrix:(MPSMatrix*)resultMatrix pivotIndices:(MPSMatrix*)pivotIndices
                         info:(id<MTLBuffer>)info;
@end

@interface MPSMatrixDecompositionCholesky : MPSMatrixUnaryKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device lower:(BOOL)lower order:(NSUInteger)order;
- (void)encodeToCommandBuffer:(id<MTLCommandBuffer>)commandBuffer sourceMatrix:(MPSMatrix*)sourceMatrix
                 resultMatrix:(MPSMatrix*)resultMatrix status:(id<MTLBuffer>)status;
@end

@interface MPSMatrixSolveTriangular : MPSMatrixBinaryKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device right:(BOOL)right upper:(BOOL)upper transpose:(BOOL)transpose
                          unit:(BOOL)unit order:(NSUInteger)order numberOfRightHandSides:(NSUInteger)numberOfRightHandSides
                         alpha:(double)alpha;
- (void)encodeToCommandBuffer:(id<MTLCommandBuffer>)commandBuffer sourceMatrix:(MPSMatrix*)sourceMatrix
          rightHandSideMatrix:(MPSMatrix*)rightHandSideMatrix solutionMatrix:(MPSMatrix*)solutionMatrix;
@end

@interface MPSMatrixSolveLU : MPSMatrixBinaryKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device transpose:(BOOL)transpose order:(NSUInteger)order
        numberOfRightHandSides:(NSUInteger)numberOfRightHandSides;
- (void)encodeToCommandBuffer:(id<MTLCommandBuffer>)commandBuffer sourceMatrix:(MPSMatrix*)sourceMatrix
          rightHandSideMatrix:(MPSMatrix*)rightHandSideMatrix pivotIndices:(MPSMatrix*)pivotIndices
               solutionMatrix:(MPSMatrix*)solutionMatrix;
@end

@interface MPSMatrixFindTopK : MPSMatrixUnaryKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device numberOfTopKValues:(NSUInteger)numberOfTopKValues;
@end

@interface MPSNDArrayMultiaryKernel : MPSKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device sourceCount:(NSUInteger)count;
- (MPSNDArray*)encodeToCommandBuffer:(id<MTLCommandBuffer>)cmdBuf sourceArrays:(NSArray<MPSNDArray*>*)sourceArrays;
- (void)encodeToCommandBuffer:(id<MTLCommandBuffer>)cmdBuf sourceArrays:(NSArray<MPSNDArray*>*)sourceArrays
             destinationArray:(MPSNDArray*)destination;
@end
@interface MPSNDArrayMatrixMultiplication : MPSNDArrayMultiaryKernel
@property(readwrite) double alpha;
@property(readwrite) double beta;
@end
