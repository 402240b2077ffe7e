// metalport host-check shim: the MetalPerformanceShadersGraph subset PyTorch's MPS host code uses
// (MPSGraph and its tensors, data, operations, descriptors, enums and the op-building methods).
// Declarations only, written from Apple's public API signatures; see ../README.md.  The op lists in
// the first MPSGraph category are regular (unary `<op>WithTensor:name:`, binary
// `<op>WithPrimaryTensor:secondaryTensor:name:`, reductions `<op>WithTensor:axis(es):name:`).
#pragma once
#include <MetalPerformanceShaders/MetalPerformanceShaders.h>

@class MPSGraph, MPSGraphTensor, MPSGraphTensorData, MPSGraphOperation, MPSGraphExecutable, MPSGraphDevice;
@class MPSGraphShapedType, MPSGraphType, MPSGraphCompilationDescriptor, MPSGraphExecutionDescriptor;
@class MPSGraphExecutableExecutionDescriptor, MPSGraphVariableOp;

typedef NSDictionary<MPSGraphTensor*, MPSGraphTensorData*> MPSGraphTensorDataDictionary;
typedef NSDictionary<MPSGraphTensor*, MPSGraphShapedType*> MPSGraphTensorShapedTypeDictionary;
typedef void (^MPSGraphCompletionHandler)(MPSGraphTensorDataDictionary* resultsDictionary, NSError* error);
typedef void (^MPSGraphScheduledHandler)(MPSGraphTensorDataDictionary* resultsDictionary, NSError* error);
typedef void (^MPSGraphExecutableCompletionHandler)(NSArray<MPSGraphTensorData*>* results, NSError* error);
typedef void (^MPSGraphExecutableScheduledHandler)(NSArray<MPSGraphTensorData*>* results, NSError* error);
typedef void (^MPSGraphCompilationCompletionHandler)(MPSGraphExecutable* executable, NSError* error);
typedef MPSGraphTensor* (^MPSGraphIfThenElseBlock)(void);
typedef NSArray<MPSGraphTensor*>* (^MPSGraphControlFlowDependencyBlock)(void);
typedef MPSGraphTensor* (^MPSGraphWhileBeforeBlock)(NSArray<MPSGraphTensor*>* inputTensors,
                                                    NSMutableArray<MPSGraphTensor*>* resultTensors);
typedef NSArray<MPSGraphTensor*>* (^MPSGraphWhileAfterBlock)(NSArray<MPSGraphTensor*>* bodyBlockArguments);
typedef NSArray<MPSGraphTensor*>* (^MPSGraphForLoopBodyBlock)(MPSGraphTensor* index,
                                                              NSArray<MPSGraphTensor*>* iterationArguments);

typedef NS_OPTIONS(uint64_t, MPSGraphOptions) {
  MPSGraphOptionsNone = 0, MPSGraphOptionsSynchronizeResults = 1L, MPSGraphOptionsVerbose = 2L,
  MPSGraphOptionsDefault = MPSGraphOptionsSynchronizeResults
};
typedef NS_ENUM(uint64_t, MPSGraphOptimization) { MPSGraphOptimizationLevel0 = 0, MPSGraphOptimizationLevel1 = 1 };
typedef NS_OPTIONS(uint64_t, MPSGraphOptimizationProfile) {
  MPSGraphOptimizationProfilePerformance = 0, MPSGraphOptimizationProfilePowerEfficiency = 1L
};
typedef NS_ENUM(NSUInteger, MPSGraphTensorNamedDataLayout) {
  MPSGraphTensorNamedDataLayoutNCHW = 0, MPSGraphTensorNamedDataLayoutNHWC = 1, MPSGraphTensorNamedDataLayoutOIHW = 2,
  MPSGraphTensorNamedDataLayoutHWIO = 3, MPSGraphTensorNamedDataLayoutCHW = 4, MPSGraphTensorNamedDataLayoutHWC = 5,
  MPSGraphTensorNamedDataLayoutHW = 6, MPSGraphTensorNamedDataLayoutNCDHW = 7, MPSGraphTensorNamedDataLayoutNDHWC = 8,
  MPSGraphTensorNamedDataLayoutOIDHW = 9, MPSGraphTensorNamedDataLayoutDHWIO = 10
};
typedef NS_ENUM(NSUInteger, MPSGraphPaddingStyle) {
  MPSGraphPaddingStyleExplicit = 0, MPSGraphPaddingStyleTF_VALID = 1, MPSGraphPaddingStyleTF_SAME = 2,
  MPSGraphPaddingStyleExplicitOffset = 3, MPSGraphPaddingStyleONNX_SAME_LOWER = 4
};
typedef NS_ENUM(NSInteger, MPSGraphPaddingMode) {
  MPSGraphPaddingModeConstant = 0, MPSGraphPaddingModeReflect = 1, MPSGraphPaddingModeSymmetric = 2,
  MPSGraphPaddingModeClampToEdge = 3, MPSGraphPaddingModeZero = 4, MPSGraphPaddingModePeriodic = 5,
  MPSGraphPaddingModeAntiPeriodic = 6
};
typedef NS_ENUM(NSUInteger, MPSGraphReductionMode) {
  MPSGraphReductionModeMin = 0, MPSGraphReductionModeMax = 1, MPSGraphReductionModeSum = 2,
  MPSGraphReductionModeProduct = 3, MPSGraphReductionModeArgumentMin = 4, MPSGraphReductionModeArgumentMax = 5
};
typedef NS_ENUM(NSInteger, MPSGraphScatterMode) {
  MPSGraphScatterModeAdd = 0, MPSGraphScatterModeSub = 1, MPSGraphScatterModeMul = 2, MPSGraphScatterModeDiv = 3,
  MPSGraphScatterModeMin = 4, MPSGraphScatterModeMax = 5, MPSGraphScatterModeSet = 6
};
typedef NS_ENUM(NSUInteger, MPSGraphResizeMode) { MPSGraphResizeNearest = 0, MPSGraphResizeBilinear = 1 };
typedef NS_ENUM(NSUInteger, MPSGraphResizeNearestRoundingMode) {
  MPSGraphResizeNearestRoundingModeRoundPreferCeil = 0, MPSGraphResizeNearestRoundingModeRoundPreferFloor = 1,
  MPSGraphResizeNearestRoundingModeCeil = 2, MPSGraphResizeNearestRoundingModeFloor = 3,
  MPSGraphResizeNearestRoundingModeRoundToEven = 4, MPSGraphResizeNearestRoundingModeRoundToOdd = 5
};
typedef NS_ENUM(uint64_t, MPSGraphRandomDistribution) {
  MPSGraphRandomDistributionUniform = 0, MPSGraphRandomDistributionNormal = 1,
  MPSGraphRandomDistributionTruncatedNormal = 2
};
typedef NS_ENUM(uint64_t, MPSGraphRandomNormalSamplingMethod) {
  MPSGraphRandomNormalSamplingInvCDF = 0, MPSGraphRandomNormalSamplingBoxMuller = 1
};
typedef NS_ENUM(uint64_t, MPSGraphLossReductionType) {
  MPSGraphLossReductionTypeNone = 0, MPSGraphLossReductionTypeAxis = 0, MPSGraphLossReductionTypeSum = 1,
  MPSGraphLossReductionTypeMean = 2
};
typedef NS_ENUM(NSUInteger, MPSGraphDeviceType) { MPSGraphDeviceTypeMetal = 0 };
typedef NS_ENUM(NSUInteger, MPSGraphPoolingReturnIndicesMode) {
  MPSGraphPoolingReturnIndicesNone = 0, MPSGraphPoolingReturnIndicesGlobalFlatten1D = 1,
  MPSGraphPoolingReturnIndicesGlobalFlatten2D = 2, MPSGraphPoolingReturnIndicesGlobalFlatten3D = 3,
  MPSGraphPoolingReturnIndicesGlobalFlatten4D = 4, MPSGraphPoolingReturnIndicesLocalFlatten1D = 5,
  MPSGraphPoolingReturnIndicesLocalFlatten2D = 6, MPSGraphPoolingReturnIndicesLocalFlatten3D = 7,
  MPSGraphPoolingReturnIndicesLocalFlatten4D = 8
};
typedef NS_ENUM(NSUInteger, MPSGraphRNNActivation) {
  MPSGraphRNNActivationNone = 0, MPSGraphRNNActivationRelu = 1, MPSGraphRNNActivationTanh = 2,
  MPSGraphRNNActivationSigmoid = 3, MPSGraphRNNActivationHardSigmoid = 4
};
typedef NS_ENUM(NSInteger, MPSGraphFFTScalingMode) {
  MPSGraphFFTScalingModeNone = 0, MPSGraphFFTScalingModeSize = 1, MPSGraphFFTScalingModeUnitary = 2
};
typedef NS_ENUM(NSUInteger, MPSGraphSparseStorageType) {
  MPSGraphSparseStorageCOO = 0, MPSGraphSparseStorageCSC = 1, MPSGraphSparseStorageCSR = 2
};
typedef NS_ENUM(NSUInteger, MPSGraphNonMaximumSuppressionCoordinateMode) {
  MPSGraphNonMaximumSuppressionCoordinateModeCornersHeightFirst = 0
};

@interface MPSGraphObject : NSObject
@end
@interface MPSGraphType : MPSGraphObject <NSCopying>
@end
@interface MPSGraphShapedType : MPSGraphType
@property(readwrite, copy) MPSShape* shape;
@property(readwrite) MPSDataType dataType;
- (instancetype)initWithShape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (BOOL)isEqualTo:(MPSGraphShapedType*)object;
@end

@interface MPSGraphDevice : MPSGraphObject
@property(readonly) MPSGraphDeviceType type;
@property(readonly) id<MTLDevice> metalDevice;
+ (instancetype)deviceWithMTLDevice:(id<MTLDevice>)metalDevice;
@end

@interface MPSGraphOperation : MPSGraphObject <NSCopying>
@property(readonly) NSArray<MPSGraphTensor*>* inputTensors;
@property(readonly) NSArray<MPSGraphTensor*>* outputTensors;
@property(readonly) NSArray<MPSGraphOperation*>* controlDependencies;
@property(readonly, weak) MPSGraph* graph;
@property(readonly) NSString* name;
@end
@interface MPSGraphVariableOp : MPSGraphOperation
@property(readonly) MPSShape* shape;
@property(readonly) MPSDataType dataType;
@end

@interface MPSGraphTensor : MPSGraphObject <NSCopying>
@property(readonly, copy) MPSShape* shape;
@property(readonly) MPSDataType dataType;
@property(readonly) MPSGraphOperation* operation;
@end

@interface MPSGraphTensorData : MPSGraphObject
@property(readonly, copy) MPSShape* shape;
@property(readonly) MPSDataType dataType;
@property(readonly) MPSGraphDevice* device;
- (instancetype)initWithDevice:(MPSGraphDevice*)device data:(NSData*)data shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (instancetype)initWithMTLBuffer:(id<MTLBuffer>)buffer shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (instancetype)initWithMTLBuffer:(id<MTLBuffer>)buffer shape:(MPSShape*)shape dataType:(MPSDataType)dataType
                         rowBytes:(NSUInteger)rowBytes;
- (instancetype)initWithMPSMatrix:(MPSMatrix*)matrix;
- (instancetype)initWithMPSMatrix:(MPSMatrix*)matrix rank:(NSUInteger)rank;
- (instancetype)initWithMPSVector:(MPSVector*)vector;
- (instancetype)initWithMPSNDArray:(MPSNDArray*)ndarray;
- (MPSNDArray*)mpsndarray;
@end

@interface MPSGraphCompilationDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) MPSGraphOptimization optimizationLevel;
@property(readwrite) BOOL waitForCompilationCompletion;
@property(readwrite) MPSGraphCompilationCompletionHandler compilationCompletionHandler;
@property(readwrite) dispatch_queue_t dispatchQueue;
@property(readwrite) MPSGraphOptimizationProfile optimizationProfile;
- (void)disableTypeInference;
@end

@interface MPSGraphExecutionDescriptor : MPSGraphObject
@property(readwrite, atomic) MPSGraphScheduledHandler scheduledHandler;
@property(readwrite, atomic) MPSGraphCompletionHandler completionHandler;
@property(readwrite, atomic) BOOL waitUntilCompleted;
@property(readwrite, atomic, copy) MPSGraphCompilationDescriptor* compilationDescriptor;
- (void)waitForEvent:(id<MTLSharedEvent>)event value:(uint64_t)value;
- (void)signalEvent:(id<MTLSharedEvent>)event atExecutionEvent:(NSUInteger)executionStage value:(uint64_t)value;
@end

@interface MPSGraphExecutableExecutionDescriptor : MPSGraphObject <NSCopying>
@property(readwrite, atomic) MPSGraphExecutableScheduledHandler scheduledHandler;
@property(readwrite, atomic) MPSGraphExecutableCompletionHandler completionHandler;
@property(readwrite, atomic) BOOL waitUntilCompleted;
@end

@interface MPSGraphExecutable : MPSGraphObject
@property(readwrite) MPSGraphOptions options;
@property(readonly) NSArray<MPSGraphTensor*>* feedTensors;
@property(readonly) NSArray<MPSGraphTensor*>* targetTensors;
- (void)specializeWithDevice:(MPSGraphDevice*)device inputTypes:(NSArray<MPSGraphType*>*)inputTypes
       compilationDescriptor:(MPSGraphCompilationDescriptor*)compilationDescriptor;
- (NSArray<MPSGraphTensorData*>*)runWithMTLCommandQueue:(id<MTLCommandQueue>)commandQueue
                                            inputsArray:(NSArray<MPSGraphTensorData*>*)inputsArray
                                           resultsArray:(NSArray<MPSGraphTensorData*>*)resultsArray
                                    executionDescriptor:(MPSGraphExecutableExecutionDescriptor*)executionDescriptor;
- (NSArray<MPSGraphTensorData*>*)encodeToCommandBuffer:(MPSCommandBuffer*)commandBuffer
                                           inputsArray:(NSArray<MPSGraphTensorData*>*)inputsArray
                                          resultsArray:(NSArray<MPSGraphTensorData*>*)resultsArray
                                   executionDescriptor:(MPSGraphExecutableExecutionDescriptor*)executionDescriptor;
@end

@interface MPSGraphConvolution2DOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) NSUInteger strideInX, strideInY, dilationRateInX, dilationRateInY, paddingLeft, paddingRight,
    paddingTop, paddingBottom, groups;
@property(readwrite) MPSGraphPaddingStyle paddingStyle;
@property(readwrite) MPSGraphTensorNamedDataLayout dataLayout;
@property(readwrite) MPSGraphTensorNamedDataLayout weightsLayout;
+ (instancetype)descriptorWithStrideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY
                        dilationRateInX:(NSUInteger)dilationRateInX dilationRateInY:(NSUInteger)dilationRateInY
                                 groups:(NSUInteger)groups paddingLeft:(NSUInteger)paddingLeft
                           paddingRight:(NSUInteger)paddingRight paddingTop:(NSUInteger)paddingTop
                          paddingBottom:(NSUInteger)paddingBottom paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                             dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
                          weightsLayout:(MPSGraphTensorNamedDataLayout)weightsLayout;
+ (instancetype)descriptorWithStrideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY
                        dilationRateInX:(NSUInteger)dilationRateInX dilationRateInY:(NSUInteger)dilationRateInY
                                 groups:(NSUInteger)groups paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                             dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
                          weightsLayout:(MPSGraphTensorNamedDataLayout)weightsLayout;
- (void)setExplicitPaddingWithPaddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                               paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom;
@end

@interface MPSGraphConvolution3DOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) NSUInteger strideInX, strideInY, strideInZ, dilationRateInX, dilationRateInY, dilationRateInZ,
    paddingLeft, paddingRight, paddingTop, paddingBottom, paddingFront, paddingBack, groups;
@property(readwrite) MPSGraphPaddingStyle paddingStyle;
@property(readwrite) MPSGraphTensorNamedDataLayout dataLayout;
@property(readwrite) MPSGraphTensorNamedDataLayout weightsLayout;
+ (instancetype)descriptorWithStrideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY strideInZ:(NSUInteger)strideInZ
                        dilationRateInX:(NSUInteger)dilationRateInX dilationRateInY:(NSUInteger)dilationRateInY
                        dilationRateInZ:(NSUInteger)dilationRateInZ groups:(NSUInteger)groups
                            paddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                             paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom
                           paddingFront:(NSUInteger)paddingFront paddingBack:(NSUInteger)paddingBack
                           paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                             dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
                          weightsLayout:(MPSGraphTensorNamedDataLayout)weightsLayout;
@end

@interface MPSGraphDepthwiseConvolution3DOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite, copy) NSArray<NSNumber*>* strides;
@property(readwrite, copy) NSArray<NSNumber*>* dilationRates;
@property(readwrite, copy) NSArray<NSNumber*>* paddingValues;
@property(readwrite) MPSGraphPaddingStyle paddingStyle;
@property(readwrite) NSInteger channelDimensionIndex;
+ (instancetype)descriptorWithStrides:(NSArray<NSNumber*>*)strides dilationRates:(NSArray<NSNumber*>*)dilationRates
                        paddingValues:(NSArray<NSNumber*>*)paddingValues paddingStyle:(MPSGraphPaddingStyle)paddingStyle;
+ (instancetype)descriptorWithPaddingStyle:(MPSGraphPaddingStyle)paddingStyle;
@end

@interface MPSGraphPooling2DOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) NSUInteger kernelWidth, kernelHeight, strideInX, strideInY, dilationRateInX, dilationRateInY,
    paddingLeft, paddingRight, paddingTop, paddingBottom;
@property(readwrite) MPSGraphPaddingStyle paddingStyle;
@property(readwrite) MPSGraphTensorNamedDataLayout dataLayout;
@property(readwrite) MPSGraphPoolingReturnIndicesMode returnIndicesMode;
@property(readwrite) MPSDataType returnIndicesDataType;
@property(readwrite) BOOL ceilMode;
@property(readwrite) BOOL includeZeroPadToAverage;
+ (instancetype)descriptorWithKernelWidth:(NSUInteger)kernelWidth kernelHeight:(NSUInteger)kernelHeight
                                strideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY
                          dilationRateInX:(NSUInteger)dilationRateInX dilationRateInY:(NSUInteger)dilationRateInY
                              paddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                               paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom
                             paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                               dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout;
+ (instancetype)descriptorWithKernelWidth:(NSUInteger)kernelWidth kernelHeight:(NSUInteger)kernelHeight
                                strideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY
                             paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                               dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout;
- (void)setExplicitPaddingWithPaddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                               paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom;
@end

@interface MPSGraphPooling4DOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite, copy) NSArray<NSNumber*>* kernelSizes;
@property(readwrite, copy) NSArray<NSNumber*>* strides;
@property(readwrite, copy) NSArray<NSNumber*>* dilationRates;
@property(readwrite, copy) NSArray<NSNumber*>* paddingValues;
@property(readwrite) MPSGraphPaddingStyle paddingStyle;
@property(readwrite) BOOL ceilMode;
@property(readwrite) BOOL includeZeroPadToAverage;
@property(readwrite) MPSGraphPoolingReturnIndicesMode returnIndicesMode;
@property(readwrite) MPSDataType returnIndicesDataType;
+ (instancetype)descriptorWithKernelSizes:(NSArray<NSNumber*>*)kernelSizes strides:(NSArray<NSNumber*>*)strides
                            dilationRates:(NSArray<NSNumber*>*)dilationRates paddingValues:(NSArray<NSNumber*>*)paddingValues
                             paddingStyle:(MPSGraphPaddingStyle)paddingStyle;
+ (instancetype)descriptorWithKernelSizes:(NSArray<NSNumber*>*)kernelSizes paddingStyle:(MPSGraphPaddingStyle)paddingStyle;
@end

@interface MPSGraphStencilOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) MPSGraphReductionMode reductionMode;
@property(readwrite, copy) MPSShape* offsets;
@property(readwrite, copy) MPSShape* strides;
@property(readwrite, copy) MPSShape* dilationRates;
@property(readwrite, copy) MPSShape* explicitPadding;
@property(readwrite) MPSGraphPaddingMode boundaryMode;
@property(readwrite) MPSGraphPaddingStyle paddingStyle;
@property(readwrite) float paddingConstant;
+ (instancetype)descriptorWithReductionMode:(MPSGraphReductionMode)reductionMode offsets:(MPSShape*)offsets
                                    strides:(MPSShape*)strides dilationRates:(MPSShape*)dilationRates
                            explicitPadding:(MPSShape*)explicitPadding boundaryMode:(MPSGraphPaddingMode)boundaryMode
                               paddingStyle:(MPSGraphPaddingStyle)paddingStyle paddingConstant:(float)paddingConstant;
+ (instancetype)descriptorWithPaddingStyle:(MPSGraphPaddingStyle)paddingStyle;
@end

@interface MPSGraphRandomOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) MPSGraphRandomDistribution distribution;
@property(readwrite) MPSDataType dataType;
@property(readwrite) float mean, standardDeviation, min, max;
@property(readwrite) NSInteger minInteger, maxInteger;
@property(readwrite) MPSGraphRandomNormalSamplingMethod samplingMethod;
+ (instancetype)descriptorWithDistribution:(MPSGraphRandomDistribution)distribution dataType:(MPSDataType)dataType;
@end

@interface MPSGraphFFTDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) BOOL inverse;
@property(readwrite) MPSGraphFFTScalingMode scalingMode;
@property(readwrite) BOOL roundToOddHermitean;
+ (instancetype)descriptor;
@end

@interface MPSGraphCreateSparseOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) MPSGraphSparseStorageType sparseStorageType;
@property(readwrite) MPSDataType dataType;
+ (instancetype)descriptorWithStorageType:(MPSGraphSparseStorageType)sparseStorageType dataType:(MPSDataType)dataType;
@end

@interface MPSGraphLSTMDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) BOOL reverse, bidirectional, produceCell, training, forgetGateLast;
@property(readwrite) MPSGraphRNNActivation inputGateActivation, forgetGateActivation, cellGateActivation,
    outputGateActivation, activation;
+ (instancetype)descriptor;
@end
@interface MPSGraphGRUDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) BOOL reverse, bidirectional, training, resetGateFirst, resetAfter, flipZ;
@property(readwrite) MPSGraphRNNActivation updateGateActivation, resetGateActivation, outputGateActivation;
+ (instancetype)descriptor;
@end

@interface MPSGraphImToColOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) NSUInteger kernelWidth, kernelHeight, strideInX, strideInY, dilationRateInX, dilationRateInY,
    paddingLeft, paddingRight, paddingTop, paddingBottom;
@property(readwrite) MPSGraphTensorNamedDataLayout dataLayout;
+ (instancetype)descriptorWithKernelWidth:(NSUInteger)kernelWidth kernelHeight:(NSUInteger)kernelHeight
                                strideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY
                          dilationRateInX:(NSUInteger)dilationRateInX dilationRateInY:(NSUInteger)dilationRateInY
                              paddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                               paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom
                               dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout;
+ (instancetype)descriptorWithKernelWidth:(NSUInteger)kernelWidth kernelHeight:(NSUInteger)kernelHeight
                                strideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY
                          dilationRateInX:(NSUInteger)dilationRateInX dilationRateInY:(NSUInteger)dilationRateInY
                               dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout;
- (void)setExplicitPaddingWithPaddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                               paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom;
@end

@interface MPSGraphDepthwiseConvolution2DOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) NSUInteger strideInX, strideInY, dilationRateInX, dilationRateInY, paddingLeft, paddingRight,
    paddingTop, paddingBottom;
@property(readwrite) MPSGraphPaddingStyle paddingStyle;
@property(readwrite) MPSGraphTensorNamedDataLayout dataLayout;
@property(readwrite) MPSGraphTensorNamedDataLayout weightsLayout;
+ (instancetype)descriptorWithStrideInX:(NSUInteger)strideInX strideInY:(NSUInteger)strideInY
                        dilationRateInX:(NSUInteger)dilationRateInX dilationRateInY:(NSUInteger)dilationRateInY
                            paddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                             paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom
                           paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                             dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
                          weightsLayout:(MPSGraphTensorNamedDataLayout)weightsLayout;
+ (instancetype)descriptorWithDataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
                           weightsLayout:(MPSGraphTensorNamedDataLayout)weightsLayout;
- (void)setExplicitPaddingWithPaddingLeft:(NSUInteger)paddingLeft paddingRight:(NSUInteger)paddingRight
                               paddingTop:(NSUInteger)paddingTop paddingBottom:(NSUInteger)paddingBottom;
@end

@interface MPSGraph : MPSGraphObject
@property(readwrite, atomic) MPSGraphOptions options;
+ (instancetype)new;
- (instancetype)init;
- (MPSGraphTensorDataDictionary*)runWithFeeds:(MPSGraphTensorDataDictionary*)feeds
                                targetTensors:(NSArray<MPSGraphTensor*>*)targetTensors
                             targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations;
- (MPSGraphTensorDataDictionary*)runWithMTLCommandQueue:(id<MTLCommandQueue>)commandQueue
                                                  feeds:(MPSGraphTensorDataDictionary*)feeds
                                          targetTensors:(NSArray<MPSGraphTensor*>*)targetTensors
                                       targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations;
- (void)runWithMTLCommandQueue:(id<MTLCommandQueue>)commandQueue feeds:(MPSGraphTensorDataDictionary*)feeds
              targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations
             resultsDictionary:(MPSGraphTensorDataDictionary*)resultsDictionary;
- (void)encodeToCommandBuffer:(MPSCommandBuffer*)commandBuffer feeds:(MPSGraphTensorDataDictionary*)feeds
             targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations
            resultsDictionary:(MPSGraphTensorDataDictionary*)resultsDictionary
          executionDescriptor:(MPSGraphExecutionDescriptor*)executionDescriptor;
- (MPSGraphTensorDataDictionary*)encodeToCommandBuffer:(MPSCommandBuffer*)commandBuffer
                                                 feeds:(MPSGraphTensorDataDictionary*)feeds
                                         targetTensors:(NSArray<MPSGraphTensor*>*)targetTensors
                                      targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations
                                   executionDescriptor:(MPSGraphExecutionDescriptor*)executionDescriptor;
- (MPSGraphExecutable*)compileWithDevice:(MPSGraphDevice*)device feeds:(MPSGraphTensorShapedTypeDictionary*)feeds
                           targetTensors:(NSArray<MPSGraphTensor*>*)targetTensors
                        targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations
                   compilationDescriptor:(MPSGraphCompilationDescriptor*)compilationDescriptor;
@end

@interface MPSGraph (MPSGraphOps)
// placeholders, constants, variables
- (MPSGraphTensor*)placeholderWithShape:(MPSShape*)shape dataType:(MPSDataType)dataType name:(NSString*)name;
- (MPSGraphTensor*)placeholderWithShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)constantWithScalar:(double)scalar dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)constantWithScalar:(double)scalar shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)constantWithRealPart:(double)realPart imaginaryPart:(double)imagPart dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)constantWithRealPart:(double)realPart imaginaryPart:(double)imagPart shape:(MPSShape*)shape
                               dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)constantWithData:(NSData*)data shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)variableWithData:(NSData*)data shape:(MPSShape*)shape dataType:(MPSDataType)dataType name:(NSString*)name;
- (MPSGraphTensor*)variableFromTensorWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)readVariable:(MPSGraphTensor*)variable name:(NSString*)name;
- (MPSGraphOperation*)assignVariable:(MPSGraphTensor*)variable withValueOfTensor:(MPSGraphTensor*)tensor name:(NSString*)name;

- (MPSGraphTensor*)identityWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)exponentWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)exponentBase2WithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)exponentBase10WithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)logarithmWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)logarithmBase2WithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)logarithmBase10WithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)squareWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)squareRootWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)reciprocalSquareRootWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)reverseSquareRootWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)reciprocalWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)absoluteWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)absoluteSquareWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)negativeWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)signWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)signbitWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)ceilWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)floorWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)roundWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)rintWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)sinWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)cosWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)tanWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)sinhWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)coshWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)tanhWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)asinWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)acosWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)atanWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)asinhWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)acoshWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)atanhWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)notWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)isInfiniteWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)isFiniteWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)isNaNWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)erfWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)truncateWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)bitwiseNOTWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)bitwisePopulationCountWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)conjugateWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)realPartOfTensorWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)imaginaryPartOfTensorWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)sigmoidWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)softPlusWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)additionWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)subtractionWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)multiplicationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)divisionWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)moduloWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)powerWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)minimumWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)maximumWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)minimumWithNaNPropagationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)maximumWithNaNPropagationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)equalWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)notEqualWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)lessThanWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)lessThanOrEqualToWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)greaterThanWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)greaterThanOrEqualToWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)logicalANDWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)logicalORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)logicalNANDWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)logicalNORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)logicalXORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)logicalXNORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)atan2WithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)divisionNoNaNWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)floorModuloWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)bitwiseANDWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)bitwiseORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)bitwiseXORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)bitwiseLeftShiftWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)bitwiseRightShiftWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)reductionSumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionSumWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionMaximumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionMaximumWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionMinimumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionMinimumWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionProductWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionProductWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionMaximumPropagateNaNWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionMaximumPropagateNaNWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionMinimumPropagateNaNWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionMinimumPropagateNaNWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionArgMaximumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionArgMaximumWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionArgMinimumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionArgMinimumWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionAndWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionAndWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionOrWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionOrWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionSumWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)reductionMaximumWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)reductionMinimumWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)reductionProductWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)selectWithPredicateTensor:(MPSGraphTensor*)predicateTensor truePredicateTensor:(MPSGraphTensor*)truePredicateTensor
                        falsePredicateTensor:(MPSGraphTensor*)falseSelectTensor name:(NSString*)name;
- (MPSGraphTensor*)clampWithTensor:(MPSGraphTensor*)tensor minValueTensor:(MPSGraphTensor*)minValueTensor
                    maxValueTensor:(MPSGraphTensor*)maxValueTensor name:(NSString*)name;
- (MPSGraphTensor*)complexTensorWithRealTensor:(MPSGraphTensor*)realTensor imaginaryTensor:(MPSGraphTensor*)imaginaryTensor
                                          name:(NSString*)name;
- (MPSGraphTensor*)castTensor:(MPSGraphTensor*)tensor toType:(MPSDataType)type name:(NSString*)name;
- (MPSGraphTensor*)reinterpretCastTensor:(MPSGraphTensor*)tensor toType:(MPSDataType)type name:(NSString*)name;
- (MPSGraphTensor*)reLUWithTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)reLUGradientWithIncomingGradient:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source name:(NSString*)name;
- (MPSGraphTensor*)sigmoidGradientWithIncomingGradient:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source name:(NSString*)name;
- (MPSGraphTensor*)leakyReLUWithTensor:(MPSGraphTensor*)tensor alpha:(double)alpha name:(NSString*)name;
- (MPSGraphTensor*)leakyReLUWithTensor:(MPSGraphTensor*)tensor alphaTensor:(MPSGraphTensor*)alphaTensor name:(NSString*)name;
- (MPSGraphTensor*)leakyReLUGradientWithIncomingGradient:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source
                                             alphaTensor:(MPSGraphTensor*)alphaTensor name:(NSString*)name;
- (MPSGraphTensor*)softMaxWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)softMaxGradientWithIncomingGradient:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source
                                                  axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)softMaxCrossEntropyWithSourceTensor:(MPSGraphTensor*)sourceTensor labelsTensor:(MPSGraphTensor*)labelsTensor
                                                  axis:(NSInteger)axis reductionType:(MPSGraphLossReductionType)reductionType
                                                  name:(NSString*)name;
// shape
- (MPSGraphTensor*)reshapeTensor:(MPSGraphTensor*)tensor withShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)reshapeTensor:(MPSGraphTensor*)tensor withShapeTensor:(MPSGraphTensor*)shapeTensor name:(NSString*)name;
- (MPSGraphTensor*)transposeTensor:(MPSGraphTensor*)tensor dimension:(NSUInteger)dimensionIndex
                     withDimension:(NSUInteger)dimensionIndex2 name:(NSString*)name;
- (MPSGraphTensor*)transposeTensor:(MPSGraphTensor*)tensor permutation:(NSArray<NSNumber*>*)permutation name:(NSString*)name;
- (MPSGraphTensor*)sliceTensor:(MPSGraphTensor*)tensor dimension:(NSUInteger)dimensionIndex start:(NSInteger)start
                        length:(NSInteger)length name:(NSString*)name;
- (MPSGraphTensor*)sliceTensor:(MPSGraphTensor*)tensor starts:(NSArray<NSNumber*>*)starts ends:(NSArray<NSNumber*>*)ends
                       strides:(NSArray<NSNumber*>*)strides name:(NSString*)name;
- (MPSGraphTensor*)sliceTensor:(MPSGraphTensor*)tensor starts:(NSArray<NSNumber*>*)starts ends:(NSArray<NSNumber*>*)ends
                       strides:(NSArray<NSNumber*>*)strides startMask:(uint32_t)startMask endMask:(uint32_t)endMask
                   squeezeMask:(uint32_t)squeezeMask name:(NSString*)name;
- (MPSGraphTensor*)sliceGradientTensor:(MPSGraphTensor*)inputGradientTensor fwdInShapeTensor:(MPSGraphTensor*)fwdInShapeTensor
                                starts:(NSArray<NSNumber*>*)starts ends:(NSArray<NSNumber*>*)ends
                               strides:(NSArray<NSNumber*>*)strides name:(NSString*)name;
- (MPSGraphTensor*)sliceGradientTensor:(MPSGraphTensor*)inputGradientTensor fwdInShapeTensor:(MPSGraphTensor*)fwdInShapeTensor
                                starts:(NSArray<NSNumber*>*)starts ends:(NSArray<NSNumber*>*)ends
                               strides:(NSArray<NSNumber*>*)strides startMask:(uint32_t)startMask endMask:(uint32_t)endMask
                           squeezeMask:(uint32_t)squeezeMask name:(NSString*)name;
- (MPSGraphTensor*)concatTensor:(MPSGraphTensor*)tensor withTensor:(MPSGraphTensor*)tensor2 dimension:(NSInteger)dimensionIndex
                           name:(NSString*)name;
- (MPSGraphTensor*)concatTensors:(NSArray<MPSGraphTensor*>*)tensors dimension:(NSInteger)dimensionIndex name:(NSString*)name;
- (MPSGraphTensor*)concatTensors:(NSArray<MPSGraphTensor*>*)tensors dimension:(NSInteger)dimensionIndex
                     interleave:(BOOL)interleave name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)splitTensor:(MPSGraphTensor*)tensor splitSizes:(NSArray<NSNumber*>*)splitSizes
                                    axis:(NSInteger)axis name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)splitTensor:(MPSGraphTensor*)tensor numSplits:(NSUInteger)numSplits axis:(NSInteger)axis
                                    name:(NSString*)name;
- (MPSGraphTensor*)stackTensors:(NSArray<MPSGraphTensor*>*)inputTensors axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)tileTensor:(MPSGraphTensor*)tensor withMultiplier:(MPSShape*)multiplier name:(NSString*)name;
- (MPSGraphTensor*)tileGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradientTensor
                                             sourceTensor:(MPSGraphTensor*)sourceTensor
                                           withMultiplier:(MPSShape*)multiplier name:(NSString*)name;
- (MPSGraphTensor*)broadcastTensor:(MPSGraphTensor*)tensor toShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)broadcastTensor:(MPSGraphTensor*)tensor toShapeTensor:(MPSGraphTensor*)shapeTensor name:(NSString*)name;
- (MPSGraphTensor*)shapeOfTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)squeezeTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)squeezeTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)squeezeTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)expandDimsOfTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)expandDimsOfTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)flatten2DTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reverseTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reverseTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)padTensor:(MPSGraphTensor*)tensor withPaddingMode:(MPSGraphPaddingMode)paddingMode
                 leftPadding:(MPSShape*)leftPadding rightPadding:(MPSShape*)rightPadding
               constantValue:(double)constantValue name:(NSString*)name;
- (MPSGraphTensor*)padGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradientTensor
                                            sourceTensor:(MPSGraphTensor*)sourceTensor
                                             paddingMode:(MPSGraphPaddingMode)paddingMode
                                             leftPadding:(MPSShape*)leftPadding rightPadding:(MPSShape*)rightPadding
                                                    name:(NSString*)name;
- (MPSGraphTensor*)spaceToDepth2DTensor:(MPSGraphTensor*)tensor widthAxis:(NSUInteger)widthAxis heightAxis:(NSUInteger)heightAxis
                              depthAxis:(NSUInteger)depthAxis blockSize:(NSUInteger)blockSize
                   usePixelShuffleOrder:(BOOL)usePixelShuffleOrder name:(NSString*)name;
- (MPSGraphTensor*)depthToSpace2DTensor:(MPSGraphTensor*)tensor widthAxis:(NSUInteger)widthAxis heightAxis:(NSUInteger)heightAxis
                              depthAxis:(NSUInteger)depthAxis blockSize:(NSUInteger)blockSize
                   usePixelShuffleOrder:(BOOL)usePixelShuffleOrder name:(NSString*)name;
- (MPSGraphTensor*)coordinateAlongAxis:(NSInteger)axis withShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)coordinateAlongAxis:(NSInteger)axis withShapeTensor:(MPSGraphTensor*)shapeTensor name:(NSString*)name;
- (MPSGraphTensor*)coordinateAlongAxisTensor:(MPSGraphTensor*)axisTensor withShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)bandPartWithTensor:(MPSGraphTensor*)inputTensor numLower:(NSInteger)numLower numUpper:(NSInteger)numUpper
                                 name:(NSString*)name;
// gather / scatter
- (MPSGraphTensor*)gatherWithUpdatesTensor:(MPSGraphTensor*)updatesTensor indicesTensor:(MPSGraphTensor*)indicesTensor
                                      axis:(NSUInteger)axis batchDimensions:(NSUInteger)batchDimensions name:(NSString*)name;
- (MPSGraphTensor*)gatherNDWithUpdatesTensor:(MPSGraphTensor*)updatesTensor indicesTensor:(MPSGraphTensor*)indicesTensor
                             batchDimensions:(NSUInteger)batchDimensions name:(NSString*)name;
- (MPSGraphTensor*)gatherAlongAxis:(NSInteger)axis withUpdatesTensor:(MPSGraphTensor*)updatesTensor
                     indicesTensor:(MPSGraphTensor*)indicesTensor name:(NSString*)name;
- (MPSGraphTensor*)scatterWithUpdatesTensor:(MPSGraphTensor*)updatesTensor indicesTensor:(MPSGraphTensor*)indicesTensor
                                      shape:(MPSShape*)shape axis:(NSInteger)axis mode:(MPSGraphScatterMode)mode
                                       name:(NSString*)name;
- (MPSGraphTensor*)scatterWithDataTensor:(MPSGraphTensor*)dataTensor updatesTensor:(MPSGraphTensor*)updatesTensor
                           indicesTensor:(MPSGraphTensor*)indicesTensor axis:(NSInteger)axis
                                    mode:(MPSGraphScatterMode)mode name:(NSString*)name;
- (MPSGraphTensor*)scatterNDWithUpdatesTensor:(MPSGraphTensor*)updatesTensor indicesTensor:(MPSGraphTensor*)indicesTensor
                                        shape:(MPSShape*)shape batchDimensions:(NSUInteger)batchDimensions
                                         mode:(MPSGraphScatterMode)mode name:(NSString*)name;
- (MPSGraphTensor*)scatterNDWithDataTensor:(MPSGraphTensor*)dataTensor updatesTensor:(MPSGraphTensor*)updatesTensor
                             indicesTensor:(MPSGraphTensor*)indicesTensor batchDimensions:(NSUInteger)batchDimensions
                                      mode:(MPSGraphScatterMode)mode name:(NSString*)name;
- (MPSGraphTensor*)scatterAlongAxis:(NSInteger)axis withDataTensor:(MPSGraphTensor*)dataTensor
                      updatesTensor:(MPSGraphTensor*)updatesTensor indicesTensor:(MPSGraphTensor*)indicesTensor
                               mode:(MPSGraphScatterMode)mode name:(NSString*)name;
- (MPSGraphTensor*)scatterAlongAxis:(NSInteger)axis withUpdatesTensor:(MPSGraphTensor*)updatesTensor
                      indicesTensor:(MPSGraphTensor*)indicesTensor shape:(MPSShape*)shape
                               mode:(MPSGraphScatterMode)mode name:(NSString*)name;
// matmul, sort, top-k, cumulative
- (MPSGraphTensor*)matrixMultiplicationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                         secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name;
- (MPSGraphTensor*)sortWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis descending:(BOOL)descending name:(NSString*)name;
- (MPSGraphTensor*)sortWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)argSortWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis descending:(BOOL)descending
                                name:(NSString*)name;
- (MPSGraphTensor*)argSortWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)topKWithSourceTensor:(MPSGraphTensor*)source k:(NSUInteger)k name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)topKWithSourceTensor:(MPSGraphTensor*)source axis:(NSInteger)axis k:(NSUInteger)k
                                             name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)bottomKWithSourceTensor:(MPSGraphTensor*)source axis:(NSInteger)axis k:(NSUInteger)k
                                                name:(NSString*)name;
- (MPSGraphTensor*)topKWithGradientTensor:(MPSGraphTensor*)gradient source:(MPSGraphTensor*)source k:(NSUInteger)k
                                     name:(NSString*)name;
- (MPSGraphTensor*)cumulativeSumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)cumulativeSumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis exclusive:(BOOL)exclusive
                                   reverse:(BOOL)reverse name:(NSString*)name;
- (MPSGraphTensor*)cumulativeProductWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)cumulativeMinimumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)cumulativeMaximumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
// normalization, mean/variance
- (MPSGraphTensor*)meanOfTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)varianceOfTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)varianceOfTensor:(MPSGraphTensor*)tensor meanTensor:(MPSGraphTensor*)meanTensor
                               axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)normalizationWithTensor:(MPSGraphTensor*)tensor meanTensor:(MPSGraphTensor*)mean
                            varianceTensor:(MPSGraphTensor*)variance gammaTensor:(MPSGraphTensor*)gamma
                                betaTensor:(MPSGraphTensor*)beta epsilon:(float)epsilon name:(NSString*)name;
- (MPSGraphTensor*)normalizationGammaGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradientTensor
                                                           sourceTensor:(MPSGraphTensor*)sourceTensor
                                                             meanTensor:(MPSGraphTensor*)meanTensor
                                                         varianceTensor:(MPSGraphTensor*)varianceTensor
                                                          reductionAxes:(NSArray<NSNumber*>*)axes
                                                                epsilon:(float)epsilon name:(NSString*)name;
- (MPSGraphTensor*)normalizationBetaGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradientTensor
                                                          sourceTensor:(MPSGraphTensor*)sourceTensor
                                                         reductionAxes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)normalizationGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradientTensor
                                                      sourceTensor:(MPSGraphTensor*)sourceTensor
                                                        meanTensor:(MPSGraphTensor*)meanTensor
                                                    varianceTensor:(MPSGraphTensor*)varianceTensor
                                                       gammaTensor:(MPSGraphTensor*)gamma
                                               gammaGradientTensor:(MPSGraphTensor*)gammaGradient
                                                betaGradientTensor:(MPSGraphTensor*)betaGradient
                                                     reductionAxes:(NSArray<NSNumber*>*)axes
                                                           epsilon:(float)epsilon name:(NSString*)name;
// convolution and pooling
- (MPSGraphTensor*)convolution2DWithSourceTensor:(MPSGraphTensor*)source weightsTensor:(MPSGraphTensor*)weights
                                      descriptor:(MPSGraphConvolution2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)convolution2DDataGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient
                                                         weightsTensor:(MPSGraphTensor*)weights
                                                           outputShape:(MPSShape*)outputShape
                                          forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)forwardConvolutionDescriptor
                                                                  name:(NSString*)name;
- (MPSGraphTensor*)convolution2DWeightsGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient
                                                             sourceTensor:(MPSGraphTensor*)source
                                                              outputShape:(MPSShape*)outputShape
                                             forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)forwardConvolutionDescriptor
                                                                     name:(NSString*)name;
- (MPSGraphTensor*)convolutionTranspose2DWithSourceTensor:(MPSGraphTensor*)source weightsTensor:(MPSGraphTensor*)weights
                                              outputShape:(MPSShape*)outputShape
                                               descriptor:(MPSGraphConvolution2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)convolution3DWithSourceTensor:(MPSGraphTensor*)source weightsTensor:(MPSGraphTensor*)weights
                                      descriptor:(MPSGraphConvolution3DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)convolution3DDataGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient
                                                         weightsTensor:(MPSGraphTensor*)weights
                                                           outputShape:(MPSShape*)outputShape
                                          forwardConvolutionDescriptor:(MPSGraphConvolution3DOpDescriptor*)forwardConvolutionDescriptor
                                                                  name:(NSString*)name;
- (MPSGraphTensor*)convolution3DWeightsGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient
                                                             sourceTensor:(MPSGraphTensor*)source
                                                              outputShape:(MPSShape*)outputShape
                                             forwardConvolutionDescriptor:(MPSGraphConvolution3DOpDescriptor*)forwardConvolutionDescriptor
                                                                     name:(NSString*)name;
- (MPSGraphTensor*)depthwiseConvolution3DWithSourceTensor:(MPSGraphTensor*)source weightsTensor:(MPSGraphTensor*)weights
                                               descriptor:(MPSGraphDepthwiseConvolution3DOpDescriptor*)descriptor
                                                     name:(NSString*)name;
- (MPSGraphTensor*)maxPooling2DWithSourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor
                                           name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)maxPooling2DReturnIndicesWithSourceTensor:(MPSGraphTensor*)source
                                                            descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor
                                                                  name:(NSString*)name;
- (MPSGraphTensor*)maxPooling2DGradientWithGradientTensor:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source
                                               descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)avgPooling2DWithSourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor
                                           name:(NSString*)name;
- (MPSGraphTensor*)avgPooling2DGradientWithGradientTensor:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source
                                               descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)maxPooling4DWithSourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor
                                           name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)maxPooling4DReturnIndicesWithSourceTensor:(MPSGraphTensor*)source
                                                            descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor
                                                                  name:(NSString*)name;
- (MPSGraphTensor*)avgPooling4DWithSourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor
                                           name:(NSString*)name;
- (MPSGraphTensor*)L2NormPooling4DWithSourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor
                                              name:(NSString*)name;
// resize
- (MPSGraphTensor*)resizeTensor:(MPSGraphTensor*)imagesTensor size:(MPSShape*)size mode:(MPSGraphResizeMode)mode
                   centerResult:(BOOL)centerResult alignCorners:(BOOL)alignCorners
                         layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
- (MPSGraphTensor*)resizeTensor:(MPSGraphTensor*)imagesTensor sizeTensor:(MPSGraphTensor*)size mode:(MPSGraphResizeMode)mode
                   centerResult:(BOOL)centerResult alignCorners:(BOOL)alignCorners
                         layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
- (MPSGraphTensor*)resizeWithGradientTensor:(MPSGraphTensor*)gradient input:(MPSGraphTensor*)input mode:(MPSGraphResizeMode)mode
                               centerResult:(BOOL)centerResult alignCorners:(BOOL)alignCorners
                                     layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
// random, stencil, one-hot, control flow, FFT, non-zero
- (MPSGraphTensor*)randomPhiloxStateTensorWithSeed:(NSUInteger)seed name:(NSString*)name;
- (MPSGraphTensor*)randomPhiloxStateTensorWithCounterLow:(NSUInteger)counterLow counterHigh:(NSUInteger)counterHigh
                                                     key:(NSUInteger)key name:(NSString*)name;
- (MPSGraphTensor*)randomTensorWithShape:(MPSShape*)shape descriptor:(MPSGraphRandomOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)randomTensorWithShape:(MPSShape*)shape descriptor:(MPSGraphRandomOpDescriptor*)descriptor
                                    seed:(NSUInteger)seed name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)randomTensorWithShape:(MPSShape*)shape descriptor:(MPSGraphRandomOpDescriptor*)descriptor
                                       stateTensor:(MPSGraphTensor*)state name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)randomTensorWithShapeTensor:(MPSGraphTensor*)shapeTensor
                                              descriptor:(MPSGraphRandomOpDescriptor*)descriptor
                                             stateTensor:(MPSGraphTensor*)state name:(NSString*)name;
- (MPSGraphTensor*)randomUniformTensorWithShape:(MPSShape*)shape name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)randomUniformTensorWithShape:(MPSShape*)shape stateTensor:(MPSGraphTensor*)state name:(NSString*)name;
- (MPSGraphTensor*)dropoutTensor:(MPSGraphTensor*)tensor rate:(double)rate name:(NSString*)name;
- (MPSGraphTensor*)dropoutTensor:(MPSGraphTensor*)tensor rateTensor:(MPSGraphTensor*)rate name:(NSString*)name;
- (MPSGraphTensor*)stencilWithSourceTensor:(MPSGraphTensor*)source weightsTensor:(MPSGraphTensor*)weights
                                descriptor:(MPSGraphStencilOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)oneHotWithIndicesTensor:(MPSGraphTensor*)indicesTensor depth:(NSUInteger)depth axis:(NSUInteger)axis
                                  dataType:(MPSDataType)dataType onValue:(double)onValue offValue:(double)offValue
                                      name:(NSString*)name;
- (MPSGraphTensor*)oneHotWithIndicesTensor:(MPSGraphTensor*)indicesTensor depth:(NSUInteger)depth dataType:(MPSDataType)dataType
                                      name:(NSString*)name;
- (MPSGraphTensor*)oneHotWithIndicesTensor:(MPSGraphTensor*)indicesTensor depth:(NSUInteger)depth name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)controlDependencyWithOperations:(NSArray<MPSGraphOperation*>*)operations
                                          dependentBlock:(MPSGraphControlFlowDependencyBlock)dependentBlock name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)ifWithPredicateTensor:(MPSGraphTensor*)predicateTensor
                                        thenBlock:(MPSGraphIfThenElseBlock)thenBlock
                                        elseBlock:(MPSGraphIfThenElseBlock)elseBlock name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)whileWithInitialInputs:(NSArray<MPSGraphTensor*>*)initialInputs
                                             before:(MPSGraphWhileBeforeBlock)before after:(MPSGraphWhileAfterBlock)after
                                               name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)forLoopWithLowerBound:(MPSGraphTensor*)lowerBound upperBound:(MPSGraphTensor*)upperBound
                                              step:(MPSGraphTensor*)step initialBodyArguments:(NSArray<MPSGraphTensor*>*)initialBodyArguments
                                              body:(MPSGraphForLoopBodyBlock)body name:(NSString*)name;
- (MPSGraphTensor*)fastFourierTransformWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes
                                       descriptor:(MPSGraphFFTDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)realToHermiteanFFTWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes
                                     descriptor:(MPSGraphFFTDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)HermiteanToRealFFTWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes
                                     descriptor:(MPSGraphFFTDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)nonZeroIndicesOfTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (MPSGraphTensor*)sparseTensorWithDescriptor:(MPSGraphCreateSparseOpDescriptor*)sparseDescriptor
                                      tensors:(NSArray<MPSGraphTensor*>*)inputTensors shape:(MPSShape*)shape
                                         name:(NSString*)name;
- (MPSGraphTensor*)sparseTensorWithType:(MPSGraphSparseStorageType)sparseStorageType
                                tensors:(NSArray<MPSGraphTensor*>*)inputTensors shape:(MPSShape*)shape
                               dataType:(MPSDataType)dataType name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)LSTMWithSourceTensor:(MPSGraphTensor*)source recurrentWeight:(MPSGraphTensor*)recurrentWeight
                                      inputWeight:(MPSGraphTensor*)inputWeight bias:(MPSGraphTensor*)bias
                                        initState:(MPSGraphTensor*)initState initCell:(MPSGraphTensor*)initCell
                                       descriptor:(MPSGraphLSTMDescriptor*)descriptor name:(NSString*)name;
// macOS 13+ additions: axis tensors, inverse, explicit-size resize, grid sampling, truncation
- (MPSGraphTensor*)sortWithTensor:(MPSGraphTensor*)tensor axisTensor:(MPSGraphTensor*)axisTensor descending:(BOOL)descending name:(NSString*)name;
- (MPSGraphTensor*)sortWithTensor:(MPSGraphTensor*)tensor axisTensor:(MPSGraphTensor*)axisTensor name:(NSString*)name;
- (MPSGraphTensor*)argSortWithTensor:(MPSGraphTensor*)tensor axisTensor:(MPSGraphTensor*)axisTensor descending:(BOOL)descending name:(NSString*)name;
- (MPSGraphTensor*)argSortWithTensor:(MPSGraphTensor*)tensor axisTensor:(MPSGraphTensor*)axisTensor name:(NSString*)name;
- (MPSGraphTensor*)cumulativeSumWithTensor:(MPSGraphTensor*)tensor axisTensor:(MPSGraphTensor*)axisTensor name:(NSString*)name;
- (MPSGraphTensor*)cumulativeSumWithTensor:(MPSGraphTensor*)tensor axisTensor:(MPSGraphTensor*)axisTensor exclusive:(BOOL)exclusive reverse:(BOOL)reverse
                              name:(NSString*)name;
- (MPSGraphTensor*)cumulativeProductWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis exclusive:(BOOL)exclusive reverse:(BOOL)reverse
                              name:(NSString*)name;
- (MPSGraphTensor*)cumulativeMinimumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis exclusive:(BOOL)exclusive reverse:(BOOL)reverse
                              name:(NSString*)name;
- (MPSGraphTensor*)cumulativeMaximumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis exclusive:(BOOL)exclusive reverse:(BOOL)reverse
                              name:(NSString*)name;
- (MPSGraphTensor*)inverseOfTensor:(MPSGraphTensor*)inputTensor name:(NSString*)name;
- (MPSGraphTensor*)resizeNearestWithTensor:(MPSGraphTensor*)imagesTensor sizeTensor:(MPSGraphTensor*)size
           nearestRoundingMode:(MPSGraphResizeNearestRoundingMode)nearestRoundingMode centerResult:(BOOL)centerResult
                  alignCorners:(BOOL)alignCorners layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
- (MPSGraphTensor*)resizeNearestWithTensor:(MPSGraphTensor*)imagesTensor sizeTensor:(MPSGraphTensor*)size scaleOffsetTensor:(MPSGraphTensor*)scaleOffset
           nearestRoundingMode:(MPSGraphResizeNearestRoundingMode)nearestRoundingMode layout:(MPSGraphTensorNamedDataLayout)layout
                          name:(NSString*)name;
- (MPSGraphTensor*)resizeBilinearWithTensor:(MPSGraphTensor*)imagesTensor sizeTensor:(MPSGraphTensor*)size centerResult:(BOOL)centerResult
                   alignCorners:(BOOL)alignCorners layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
- (MPSGraphTensor*)resizeBilinearWithTensor:(MPSGraphTensor*)imagesTensor sizeTensor:(MPSGraphTensor*)size scaleOffsetTensor:(MPSGraphTensor*)scaleOffset
                         layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
- (MPSGraphTensor*)resizeNearestWithGradientTensor:(MPSGraphTensor*)gradient input:(MPSGraphTensor*)input
                   nearestRoundingMode:(MPSGraphResizeNearestRoundingMode)nearestRoundingMode
                          centerResult:(BOOL)centerResult alignCorners:(BOOL)alignCorners layout:(MPSGraphTensorNamedDataLayout)layout
                                  name:(NSString*)name;
- (MPSGraphTensor*)resizeNearestWithGradientTensor:(MPSGraphTensor*)gradient input:(MPSGraphTensor*)input scaleOffsetTensor:(MPSGraphTensor*)scaleOffset
                   nearestRoundingMode:(MPSGraphResizeNearestRoundingMode)nearestRoundingMode layout:(MPSGraphTensorNamedDataLayout)layout
                                  name:(NSString*)name;
- (MPSGraphTensor*)resizeBilinearWithGradientTensor:(MPSGraphTensor*)gradient input:(MPSGraphTensor*)input centerResult:(BOOL)centerResult
                           alignCorners:(BOOL)alignCorners layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
- (MPSGraphTensor*)resizeBilinearWithGradientTensor:(MPSGraphTensor*)gradient input:(MPSGraphTensor*)input scaleOffsetTensor:(MPSGraphTensor*)scaleOffset
                                 layout:(MPSGraphTensorNamedDataLayout)layout name:(NSString*)name;
- (MPSGraphTensor*)resizeTensor:(MPSGraphTensor*)imagesTensor sizeTensor:(MPSGraphTensor*)size mode:(MPSGraphResizeMode)mode centerResult:(BOOL)centerResult
       alignCorners:(BOOL)alignCorners name:(NSString*)name;
- (MPSGraphTensor*)sampleGridWithSourceTensor:(MPSGraphTensor*)source coordinateTensor:(MPSGraphTensor*)coordinates layout:(MPSGraphTensorNamedDataLayout)layout
             normalizeCoordinates:(BOOL)normalizeCoordinates relativeCoordinates:(BOOL)relativeCoordinates
                     alignCorners:(BOOL)alignCorners paddingMode:(MPSGraphPaddingMode)paddingMode
                     samplingMode:(MPSGraphResizeMode)samplingMode constantValue:(double)constantValue
                             name:(NSString*)name;
- (MPSGraphTensor*)sampleGridWithSourceTensor:(MPSGraphTensor*)source coordinateTensor:(MPSGraphTensor*)coordinates layout:(MPSGraphTensorNamedDataLayout)layout
             normalizeCoordinates:(BOOL)normalizeCoordinates relativeCoordinates:(BOOL)relativeCoordinates
                     alignCorners:(BOOL)alignCorners paddingMode:(MPSGraphPaddingMode)paddingMode
              nearestRoundingMode:(MPSGraphResizeNearestRoundingMode)nearestRoundingMode
                    constantValue:(double)constantValue name:(NSString*)name;
// strided-slice updates (macOS 14.4+ / 15+) and tensor-driven slices
- (MPSGraphTensor*)sliceUpdateDataTensor:(MPSGraphTensor*)dataTensor updateTensor:(MPSGraphTensor*)updateTensor starts:(NSArray<NSNumber*>*)starts
                        ends:(NSArray<NSNumber*>*)ends strides:(NSArray<NSNumber*>*)strides name:(NSString*)name;
- (MPSGraphTensor*)sliceUpdateDataTensor:(MPSGraphTensor*)dataTensor updateTensor:(MPSGraphTensor*)updateTensor starts:(NSArray<NSNumber*>*)starts
                        ends:(NSArray<NSNumber*>*)ends strides:(NSArray<NSNumber*>*)strides startMask:(uint32_t)startMask
                     endMask:(uint32_t)endMask squeezeMask:(uint32_t)squeezeMask name:(NSString*)name;
- (MPSGraphTensor*)sliceUpdateDataTensor:(MPSGraphTensor*)dataTensor updateTensor:(MPSGraphTensor*)updateTensor startsTensor:(MPSGraphTensor*)startsTensor
                  endsTensor:(MPSGraphTensor*)endsTensor stridesTensor:(MPSGraphTensor*)stridesTensor startMask:(uint32_t)startMask
                     endMask:(uint32_t)endMask squeezeMask:(uint32_t)squeezeMask name:(NSString*)name;
- (MPSGraphTensor*)sliceTensor:(MPSGraphTensor*)tensor startTensor:(MPSGraphTensor*)startTensor endTensor:(MPSGraphTensor*)endTensor strideTensor:(MPSGraphTensor*)strideTensor
         startMask:(uint32_t)startMask endMask:(uint32_t)endMask squeezeMask:(uint32_t)squeezeMask name:(NSString*)name;
- (MPSGraphTensor*)sliceTensor:(MPSGraphTensor*)tensor startTensor:(MPSGraphTensor*)startTensor sizeTensor:(MPSGraphTensor*)sizeTensor squeezeMask:(uint32_t)squeezeMask
              name:(NSString*)name;
// im2col, distances, more convolution and pooling gradients, GRU
- (MPSGraphTensor*)imToColWithSourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphImToColOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)colToImWithSourceTensor:(MPSGraphTensor*)source outputShape:(MPSShape*)outputShape
                    descriptor:(MPSGraphImToColOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)HammingDistanceWithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor
                         resultDataType:(MPSDataType)resultDataType name:(NSString*)name;
- (MPSGraphTensor*)depthwiseConvolution2DWithSourceTensor:(MPSGraphTensor*)source weightsTensor:(MPSGraphTensor*)weights
                                   descriptor:(MPSGraphDepthwiseConvolution2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)convolution2DDataGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient weightsTensor:(MPSGraphTensor*)weights
                                         outputShapeTensor:(MPSGraphTensor*)outputShapeTensor
                              forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)forwardConvolutionDescriptor name:(NSString*)name;
- (MPSGraphTensor*)convolution2DWeightsGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient sourceTensor:(MPSGraphTensor*)source
                                            outputShapeTensor:(MPSGraphTensor*)outputShapeTensor
                                 forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)forwardConvolutionDescriptor name:(NSString*)name;
- (MPSGraphTensor*)convolutionTranspose2DWithSourceTensor:(MPSGraphTensor*)source weightsTensor:(MPSGraphTensor*)weights outputShapeTensor:(MPSGraphTensor*)outputShape
                                   descriptor:(MPSGraphConvolution2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)convolutionTranspose2DDataGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient weightsTensor:(MPSGraphTensor*)weights
                                                        outputShape:(MPSShape*)outputShape
                                       forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)forwardConvolutionDescriptor
                                                               name:(NSString*)name;
- (MPSGraphTensor*)convolutionTranspose2DWeightsGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient sourceTensor:(MPSGraphTensor*)source
                                                           outputShape:(MPSShape*)outputShape
                                          forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)forwardConvolutionDescriptor
                                                                  name:(NSString*)name;
- (MPSGraphTensor*)maxPooling2DGradientWithGradientTensor:(MPSGraphTensor*)gradient indicesTensor:(MPSGraphTensor*)indices outputShape:(MPSShape*)outputShape
                                   descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)maxPooling2DGradientWithGradientTensor:(MPSGraphTensor*)gradient indicesTensor:(MPSGraphTensor*)indices
                            outputShapeTensor:(MPSGraphTensor*)outputShape descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)maxPooling4DGradientWithGradientTensor:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor
                                         name:(NSString*)name;
- (MPSGraphTensor*)maxPooling4DGradientWithGradientTensor:(MPSGraphTensor*)gradient indicesTensor:(MPSGraphTensor*)indices outputShape:(MPSShape*)outputShape
                                   descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)maxPooling4DGradientWithGradientTensor:(MPSGraphTensor*)gradient indicesTensor:(MPSGraphTensor*)indices
                            outputShapeTensor:(MPSGraphTensor*)outputShape descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)avgPooling4DGradientWithGradientTensor:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor
                                         name:(NSString*)name;
- (MPSGraphTensor*)L2NormPooling4DGradientWithGradientTensor:(MPSGraphTensor*)gradient sourceTensor:(MPSGraphTensor*)source descriptor:(MPSGraphPooling4DOpDescriptor*)descriptor
                                            name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)GRUWithSourceTensor:(MPSGraphTensor*)source recurrentWeight:(MPSGraphTensor*)recurrentWeight
                                     inputWeight:(MPSGraphTensor*)inputWeight bias:(MPSGraphTensor*)bias initState:(MPSGraphTensor*)initState
                                      descriptor:(MPSGraphGRUDescriptor*)descriptor name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)GRUWithSourceTensor:(MPSGraphTensor*)source recurrentWeight:(MPSGraphTensor*)recurrentWeight
                                     inputWeight:(MPSGraphTensor*)inputWeight bias:(MPSGraphTensor*)bias initState:(MPSGraphTensor*)initState
                                            mask:(MPSGraphTensor*)mask secondaryBias:(MPSGraphTensor*)secondaryBias
                                      descriptor:(MPSGraphGRUDescriptor*)descriptor name:(NSString*)name;
- (NSArray<MPSGraphTensor*>*)LSTMWithSourceTensor:(MPSGraphTensor*)source recurrentWeight:(MPSGraphTensor*)recurrentWeight
                                      inputWeight:(MPSGraphTensor*)inputWeight bias:(MPSGraphTensor*)bias initState:(MPSGraphTensor*)initState
                                         initCell:(MPSGraphTensor*)initCell mask:(MPSGraphTensor*)mask peephole:(MPSGraphTensor*)peephole
                                       descriptor:(MPSGraphLSTMDescriptor*)descriptor name:(NSString*)name;
- (MPSGraphTensor*)scatterNDWithUpdatesTensor:(MPSGraphTensor*)updatesTensor indicesTensor:(MPSGraphTensor*)indicesTensor shape:(MPSShape*)shape
                  batchDimensions:(NSUInteger)batchDimensions name:(NSString*)name;
- (MPSGraphTensor*)gatherAlongAxisTensor:(MPSGraphTensor*)axisTensor withUpdatesTensor:(MPSGraphTensor*)updatesTensor indicesTensor:(MPSGraphTensor*)indicesTensor
                        name:(NSString*)name;
- (MPSGraphTensor*)scatterAlongAxisTensor:(MPSGraphTensor*)axisTensor withDataTensor:(MPSGraphTensor*)dataTensor updatesTensor:(MPSGraphTensor*)updatesTensor
                indicesTensor:(MPSGraphTensor*)indicesTensor mode:(MPSGraphScatterMode)mode name:(NSString*)name;
- (MPSGraphTensor*)stopGradientTensor:(MPSGraphTensor*)tensor name:(NSString*)name;
- (NSDictionary<MPSGraphTensor*, MPSGraphTensor*>*)gradientForPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                              withTensors:(NSArray<MPSGraphTensor*>*)tensors name:(NSString*)name;
@end
