// metalport host-check shim: what Apple's libc declares beyond glibc/musl that PyTorch's MPS
// headers call (force-included before the translation unit, since they reach it via <ctime>).
#pragma once
#ifndef __APPLE__  // Darwin's own libc headers (zig ships them) already declare these
#include <time.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
#ifndef CLOCK_UPTIME_RAW
#define CLOCK_UPTIME_RAW 8
#endif
#ifndef CLOCK_MONOTONIC_RAW_APPROX
#define CLOCK_MONOTONIC_RAW_APPROX 5
#endif
uint64_t clock_gettime_nsec_np(clockid_t clock_id);
uint64_t mach_absolute_time(void);
#ifdef __cplusplus
}
#endif
#endif
