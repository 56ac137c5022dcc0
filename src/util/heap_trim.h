/* heap_trim.h: hand freed heap pages back to the kernel (glibc's malloc_trim), where that
 * means something. Under AddressSanitizer the allocator is ASan's and glibc's malloc is never
 * initialised: malloc_trim would initialise glibc's unused arena lazily, and several threads
 * doing that at once (diagnose's read pool) crashed in mtrim. So a sanitizer build, and any
 * libc that is not glibc, trims nothing. */
#ifndef GP_UTIL_HEAP_TRIM_H
#define GP_UTIL_HEAP_TRIM_H
#include <stdlib.h> /* defines __GLIBC__ where the libc is glibc */

#if defined(__SANITIZE_ADDRESS__)
#define GP_HEAP_TRIM_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GP_HEAP_TRIM_OFF 1
#endif
#endif

#if defined(__GLIBC__) && !defined(GP_HEAP_TRIM_OFF)
#include <malloc.h>
static inline void gp_heap_trim(void) {
    malloc_trim(0);
}
#else
static inline void gp_heap_trim(void) {}
#endif
#endif
