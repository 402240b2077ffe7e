// metalport host-check shim: <os/log.h> (unified logging handles).
#pragma once
#include <stdint.h>
extern "C" {
typedef struct os_log_s* os_log_t;
#define OS_LOG_DISABLED ((os_log_t)0)
#define OS_LOG_DEFAULT ((os_log_t)0)
os_log_t os_log_create(const char* subsystem, const char* category);
typedef uint8_t os_log_type_t;
#define OS_LOG_TYPE_DEFAULT ((os_log_type_t)0x00)
#define OS_LOG_TYPE_INFO ((os_log_type_t)0x01)
#define OS_LOG_TYPE_DEBUG ((os_log_type_t)0x02)
#define OS_LOG_TYPE_ERROR ((os_log_type_t)0x10)
bool os_log_type_enabled(os_log_t log, os_log_type_t type);
void mshim_os_log_impl(os_log_t log, const char* format, ...);
}
#define os_log(log, ...) mshim_os_log_impl(log, __VA_ARGS__)
#define os_log_info(log, ...) mshim_os_log_impl(log, __VA_ARGS__)
#define os_log_debug(log, ...) mshim_os_log_impl(log, __VA_ARGS__)
#define os_log_error(log, ...) mshim_os_log_impl(log, __VA_ARGS__)
