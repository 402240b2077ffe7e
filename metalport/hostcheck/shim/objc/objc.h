// metalport host-check shim: the Objective-C runtime basics (BOOL, nil, YES/NO).
// Declarations only, written from the public API; see ../README.md.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#ifndef nil
#define nil nullptr
#endif
#ifndef Nil
#define Nil nullptr
#endif
typedef long NSInteger;
typedef unsigned long NSUInteger;
#define NSIntegerMax __LONG_MAX__
#define NSUIntegerMax (__LONG_MAX__ * 2UL + 1UL)
#define NSNotFound NSIntegerMax

#define NS_ENUM(type, name) enum name : type name; enum name : type
#define NS_OPTIONS(type, name) enum name : type name; enum name : type
#define NS_SWIFT_NAME(x)
#define NS_REFINED_FOR_SWIFT
#define NS_DESIGNATED_INITIALIZER
#define NS_RETURNS_RETAINED __attribute__((ns_returns_retained))
#define NS_RETURNS_NOT_RETAINED __attribute__((ns_returns_not_retained))
#define NS_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define NS_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")
#define API_AVAILABLE(...)
#define API_UNAVAILABLE(...)
#define API_DEPRECATED(...)
#define MPS_AVAILABLE_STARTING(...)
#define MPS_CLASS_AVAILABLE_STARTING(...)
#define NS_AVAILABLE(...)
#define NS_AVAILABLE_MAC(...)
#define MTL_EXTERN extern "C"
#define NS_INLINE static inline

extern "C" {
typedef struct objc_selector* SEL;
SEL sel_registerName(const char* name);
const char* sel_getName(SEL sel);
id objc_retain(id obj);
void objc_release(id obj);
}
