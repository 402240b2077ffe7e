// metalport Metal-on-CPU shim: lets PyTorch's c10/metal headers and .metal kernels compile as
// host C++.  Part 1 (types) and part 2 (math, atomics) come first, then EMU-TG's threadgroup
// executor, then the address-space keywords (last, so no system header sees them).
#pragma once
#ifndef __METAL__
#define __METAL__ 1
#endif
#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 310
#endif
// c10/metal/igamma.h calls expm1f unqualified after global using-directives for c10::metal and
// metal; a C library declaration of ::expm1f (pulled in by libc++'s <atomic>/<utility>, or any
// <cmath>) would make that ambiguous.  Rename the C library's one while system headers load.
#define expm1f mshim_libm_expm1f
#define __DECL_SIMD_mshim_libm_expm1f
#include "metal_math.h"
#include "metal_threadgroup.h"
#undef expm1f
#undef __DECL_SIMD_mshim_libm_expm1f

// Address spaces and function qualifiers.  When metalport preprocesses a shader
// (MSHIM_PREPROCESS) they become same-length marker identifiers, so the kernel table can read
// them from the preprocessed text; metalport then blanks them out (constant -> const) before
// compiling, keeping diagnostic columns.
#ifdef MSHIM_PREPROCESS
#define device __mD__
#define constant __mshC__
#define thread __mT__
#define kernel __mK__
#ifndef threadgroup
#define threadgroup __mshimTG__
#endif
#else
#define device
#define constant const
#define thread
#define kernel
#ifndef threadgroup
#define threadgroup
#endif
#endif
#define vertex
#define fragment
#define ray_data
#define object_data
