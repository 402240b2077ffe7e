// metalport host-check shim: libdispatch (queues, sync/async, semaphores, once).
// Queues are plain C handles here (as with OS_OBJECT_USE_OBJC=0), so dispatch_retain/release apply.
#pragma once
#include <stddef.h>
#include <stdint.h>

extern "C" {
typedef struct dispatch_queue_s* dispatch_queue_t;
typedef struct dispatch_queue_attr_s* dispatch_queue_attr_t;
typedef struct dispatch_semaphore_s* dispatch_semaphore_t;
typedef struct dispatch_group_s* dispatch_group_t;
typedef void* dispatch_object_t;
typedef struct dispatch_data_s* dispatch_data_t;
#define DISPATCH_DATA_DESTRUCTOR_DEFAULT ((dispatch_block_t)0)
typedef long dispatch_once_t;
typedef uint64_t dispatch_time_t;
typedef long dispatch_queue_priority_t;
typedef void (^dispatch_block_t)(void);

#define DISPATCH_QUEUE_SERIAL ((dispatch_queue_attr_t)0)
#define DISPATCH_QUEUE_CONCURRENT ((dispatch_queue_attr_t)1)
#define DISPATCH_TIME_NOW (0ull)
#define DISPATCH_TIME_FOREVER (~0ull)
#define DISPATCH_QUEUE_PRIORITY_DEFAULT 0
#define DISPATCH_QUEUE_PRIORITY_HIGH 2
#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull

dispatch_data_t dispatch_data_create(const void* buffer, size_t size, dispatch_queue_t queue, dispatch_block_t destructor);
dispatch_queue_t dispatch_queue_create(const char* label, dispatch_queue_attr_t attr);
dispatch_queue_t dispatch_get_main_queue(void);
dispatch_queue_t dispatch_get_global_queue(long identifier, unsigned long flags);
const char* dispatch_queue_get_label(dispatch_queue_t queue);
void dispatch_sync(dispatch_queue_t queue, dispatch_block_t block);
void dispatch_async(dispatch_queue_t queue, dispatch_block_t block);
void dispatch_barrier_sync(dispatch_queue_t queue, dispatch_block_t block);
void dispatch_barrier_async(dispatch_queue_t queue, dispatch_block_t block);
void dispatch_apply(size_t iterations, dispatch_queue_t queue, void (^block)(size_t));
void dispatch_once(dispatch_once_t* predicate, dispatch_block_t block);
void dispatch_retain(void* object);
void dispatch_release(void* object);
dispatch_semaphore_t dispatch_semaphore_create(long value);
long dispatch_semaphore_wait(dispatch_semaphore_t dsema, dispatch_time_t timeout);
long dispatch_semaphore_signal(dispatch_semaphore_t dsema);
dispatch_group_t dispatch_group_create(void);
void dispatch_group_async(dispatch_group_t group, dispatch_queue_t queue, dispatch_block_t block);
long dispatch_group_wait(dispatch_group_t group, dispatch_time_t timeout);
dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta);
}
