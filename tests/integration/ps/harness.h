/* tests/integration/ps/harness.h: what the ps integration tests share: fatal
 * checks (a failure prints file:line, the values and rf_error_message(),
 * kills every child and exits 1), child processes (the rf_ps_helper binary
 * beside this one, started with fork + exec, never a bare fork; children die
 * with their parent; a line protocol on their stdout; every wait bounded),
 * the fabric chosen by RF_FABRIC (default sock) on RF_TEST_HOST (default
 * 127.0.0.1), time budgets scaled by RF_TEST_TIME_SCALE, and seeded data. */
#ifndef RF_TESTS_INTEGRATION_PS_HARNESS_H
#define RF_TESTS_INTEGRATION_PS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"

extern const char *pt_who; /* "driver", "ps", "worker" */

__attribute__((noreturn, format(printf, 4, 5))) void
pt_fail(const char *file, int line, const char *cond, const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void pt_note(const char *fmt, ...);

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            pt_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                   \
    } while (0)

#define CHECK_ST(expr, want)                                                   \
    do {                                                                       \
        rf_status st_got_ = (rf_status)(expr);                                 \
        rf_status st_want_ = (want);                                           \
        if (st_got_ != st_want_)                                               \
            pt_fail(__FILE__, __LINE__, #expr,                                 \
                    "returned %s (%d), expected %s",                           \
                    rf_status_string(st_got_), (int)st_got_,                   \
                    rf_status_string(st_want_));                               \
    } while (0)

#define CHECK_OK(expr) CHECK_ST(expr, RF_OK)

/* The error message must contain needle. */
#define CHECK_MSG(needle)                                                      \
    CHECK(strstr(rf_error_message(), (needle)) != NULL,                        \
          "message lacks \"%s\"", (needle))

const char *pt_provider(void); /* RF_FABRIC or "sock" */
const char *pt_host(void);     /* RF_TEST_HOST or "127.0.0.1" */
int pt_scale(void);            /* RF_TEST_TIME_SCALE or 1 */
int pt_ms(int base_ms);        /* base_ms * scale */
long long pt_now_ms(void);
void pt_sleep_ms(long long ms);
rf_fabric *pt_fabric(void); /* opens the provider on pt_host() */
/* A port nobody listens on right now (bound then released). */
uint16_t pt_free_port(void);
/* "host:port" in a static ring of buffers. */
const char *pt_addr(uint16_t port);

/* ---- child processes ---- */

typedef struct pt_child {
    pid_t pid; /* 0 once reaped */
    int from_fd;
    char name[48];
    char buf[8192];
    size_t len;
} pt_child;

/* Starts rf_ps_helper with args (NULL-terminated). */
void pt_spawn(pt_child *c, const char *name, const char *const *args);
/* The next line of the child's stdout (newline stripped), within
 * timeout_ms; fails the test on timeout or end of file. */
void pt_line(pt_child *c, char *line, size_t cap, int timeout_ms);
/* Reads lines until one starts with prefix; returns the rest. */
void pt_expect(pt_child *c, const char *prefix, char *rest, size_t cap,
               int timeout_ms);
/* Waits for exit (killing it and failing on timeout); the wait status. */
int pt_wait(pt_child *c, int timeout_ms);
void pt_wait_ok(pt_child *c, int timeout_ms);
void pt_kill(pt_child *c);
void pt_kill_all(void);
void pt_proc_init(bool is_child);

/* A ps helper process: started on port (0: any), READY read back. */
typedef struct pt_ps {
    pt_child child;
    uint16_t port;
    uint64_t incarnation;
} pt_ps;
void pt_ps_start(pt_ps *ps, int index, uint16_t port);

/* ---- data ---- */

/* Deterministic floats in [-1, 1) from (seed, i). */
float pt_rand(uint64_t seed, uint64_t i);
void pt_fill(float *p, size_t n, uint64_t seed);

/* Registered float buffers for tests. */
typedef struct pt_buf {
    float *p;
    size_t n;
    rf_mr *mr;
} pt_buf;
void pt_buf_alloc(rf_ps_client *c, pt_buf *b, size_t n);
/* Frees every pt_buf (call once their clients are closed). */
void pt_buf_release_all(void);

/* A client with the test's timeouts. */
rf_ps_client *pt_client(rf_fabric *f, const char *const *addrs, size_t n,
                        uint32_t id, bool chief);

#endif
