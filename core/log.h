/* core/log.h: leveled logging for every layer. The level comes from
 * RF_LOG_LEVEL (error|warn|info|debug|trace, default warn) and the output from
 * RF_LOG_FILE (default stderr), read once at first use. Data-path logging
 * (RF_LOG_DATA) is compiled out unless RF_ENABLE_DATA_LOG is defined. */
#ifndef RF_CORE_LOG_H
#define RF_CORE_LOG_H

typedef enum rf_log_level {
    RF_LOG_ERROR = 0,
    RF_LOG_WARN,
    RF_LOG_INFO,
    RF_LOG_DEBUG,
    RF_LOG_TRACE,
} rf_log_level;

/* Current threshold; messages above it are dropped. */
rf_log_level rf_log_threshold(void);
/* Overrides the environment (e.g. from a --log_level flag). */
void rf_log_set_threshold(rf_log_level level);
/* Parses "error".."trace"; returns 0 on success, -1 if unknown. */
int rf_log_parse_level(const char *name, rf_log_level *out);

void rf_log_write(rf_log_level level, const char *file, int line,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define RF_LOG(level, ...)                                                     \
    do {                                                                       \
        if ((level) <= rf_log_threshold())                                     \
            rf_log_write((level), __FILE__, __LINE__, __VA_ARGS__);            \
    } while (0)
#define RF_LOG_ERRORF(...) RF_LOG(RF_LOG_ERROR, __VA_ARGS__)
#define RF_LOG_WARN(...)   RF_LOG(RF_LOG_WARN, __VA_ARGS__)
#define RF_LOG_INFO(...)   RF_LOG(RF_LOG_INFO, __VA_ARGS__)
#define RF_LOG_DEBUG(...)  RF_LOG(RF_LOG_DEBUG, __VA_ARGS__)
#define RF_LOG_TRACE(...)  RF_LOG(RF_LOG_TRACE, __VA_ARGS__)

/* Rate limiting for lines logged from loops that may spin while idle
 * (polling and wait loops, progress threads, timeouts that are the normal
 * outcome of a wait): RF_LOG_LIMITED prints at most one line per
 * RF_LOG_LIMIT_INTERVAL_NS per call site; the next line it prints ends with
 * "[N similar lines suppressed]". A call site is one expansion of the
 * macro (its own static rf_log_limit); rf_log_limit_pass is the same for a
 * limit kept elsewhere (e.g. one per status code). */
#define RF_LOG_LIMIT_INTERVAL_NS 1000000000ull
typedef struct rf_log_limit {
    _Atomic unsigned long long next_ns;
    _Atomic unsigned suppressed;
} rf_log_limit;
/* 1 when a line may be printed now (*suppressed: lines dropped since the
 * last one), 0 when it is dropped (and counted). */
int rf_log_limit_pass(rf_log_limit *limit, unsigned *suppressed);
/* rf_log_write with "[N similar lines suppressed]" appended when N > 0. */
void rf_log_write_suppressed(rf_log_level level, const char *file, int line,
                             unsigned suppressed, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define RF_LOG_LIMITED(level, ...)                                             \
    do {                                                                       \
        static rf_log_limit rf_log_limit_;                                     \
        unsigned rf_log_n_;                                                    \
        if ((level) <= rf_log_threshold() &&                                   \
            rf_log_limit_pass(&rf_log_limit_, &rf_log_n_))                     \
            rf_log_write_suppressed((level), __FILE__, __LINE__, rf_log_n_,    \
                                    __VA_ARGS__);                              \
    } while (0)
#define RF_LOG_DEBUG_LIMITED(...) RF_LOG_LIMITED(RF_LOG_DEBUG, __VA_ARGS__)

#ifdef RF_ENABLE_DATA_LOG
#define RF_LOG_DATA(...) RF_LOG(RF_LOG_TRACE, __VA_ARGS__)
#else
#define RF_LOG_DATA(...) ((void)0)
#endif

#endif
