/* fabric/sock/sock_dma.h: marks the progress thread's accesses to target
 * regions (read data sent, write payload received, atomics) as DMA for
 * ThreadSanitizer. The application orders its own accesses to a region
 * against remote ones through messages that pass through the peer process
 * (as with a NIC), which TSan cannot see, so these accesses are not
 * recorded. No effect in other builds. */
#ifndef RF_FABRIC_SOCK_DMA_H
#define RF_FABRIC_SOCK_DMA_H

#if defined(__SANITIZE_THREAD__)
#define SOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SOCK_TSAN 1
#endif
#endif

#ifdef SOCK_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define SOCK_DMA_BEGIN()                                                       \
    (AnnotateIgnoreReadsBegin(__FILE__, __LINE__),                             \
     AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#define SOCK_DMA_END()                                                         \
    (AnnotateIgnoreWritesEnd(__FILE__, __LINE__),                              \
     AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
#define SOCK_DMA_BEGIN() ((void)0)
#define SOCK_DMA_END()   ((void)0)
#endif

#endif
