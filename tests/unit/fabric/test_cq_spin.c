/* tests/unit/fabric/test_cq_spin.c: rf_cq_wait's adaptive spin (fabric.c),
 * on a fake provider whose queue counts the polls of the spin and the
 * blocking waits after it, so what is checked is what rf_cq_wait did, not
 * how long it took. A wait spins while recent spins found something; after
 * 4 spins in a row found nothing, one wait in 32 spins (a probe) and the
 * others block at once; a probe that finds a completion brings the spin
 * back; completions are returned however the wait went. */
#include <stdlib.h>

#include "fabric/provider.h"
#include "rdmaflow/status.h"
#include "tests/common/check.h"

typedef struct fake_cq {
    rf_cq base;
    int polls;     /* cq_poll calls (the spin's) */
    int waits;     /* cq_wait calls (the blocking part) */
    int ready_at;  /* the poll (count) from which a completion is there; 0: none
                    */
    int delivered; /* completions handed out */
} fake_cq;

static rf_fabric fake_fabric;

static rf_status fake_open(const rf_fabric_attr *attr, rf_fabric **out)
{
    (void)attr;
    *out = &fake_fabric;
    return RF_OK;
}

static void fake_close(rf_fabric *f)
{
    (void)f;
}

static rf_status fake_cq_create(rf_fabric *f, uint32_t depth, rf_cq **out)
{
    (void)depth;
    fake_cq *cq = calloc(1, sizeof *cq);
    CHECK(cq != NULL, "calloc");
    cq->base.fabric = f;
    *out = &cq->base;
    return RF_OK;
}

static void fake_cq_destroy(rf_cq *cq)
{
    free(cq);
}

static int fake_cq_poll(rf_cq *base, rf_completion *out, int max)
{
    fake_cq *cq = (fake_cq *)base;
    (void)max;
    cq->polls++;
    if (cq->ready_at && cq->polls >= cq->ready_at) {
        cq->ready_at = 0;
        cq->delivered++;
        *out = (rf_completion){.status = RF_OK};
        return 1;
    }
    return 0;
}

static int fake_cq_wait(rf_cq *base, rf_completion *out, int max,
                        int timeout_ms)
{
    fake_cq *cq = (fake_cq *)base;
    (void)timeout_ms;
    cq->waits++;
    if (cq->ready_at) { /* arrived while blocked */
        cq->ready_at = 0;
        cq->delivered++;
        (void)max;
        *out = (rf_completion){.status = RF_OK};
        return 1;
    }
    return RF_ERR_TIMEOUT;
}

/* One rf_cq_wait; whether it spun (polled) and whether it blocked. */
static void wait_once(fake_cq *cq, int want_spin, int want_n, const char *what)
{
    int polls = cq->polls, waits = cq->waits;
    rf_completion c;
    int n = rf_cq_wait(&cq->base, &c, 1, 5);
    int spun = cq->polls > polls, blocked = cq->waits > waits;
    CHECK(spun == want_spin, "%s: the wait %s", what,
          spun ? "spun, expected it to block at once" : "did not spin");
    CHECK(n == want_n || (want_n == 0 && n == RF_ERR_TIMEOUT),
          "%s: rf_cq_wait returned %d, want %d", what, n, want_n);
    if (want_n == 0)
        CHECK(blocked, "%s: an empty spin did not go on to block", what);
}

int main(void)
{
    rf_provider_ops ops = rf_shm_provider; /* the mandatory slots filled */
    ops.name = "fake";
    ops.probe = NULL;
    ops.fabric_open = fake_open;
    ops.fabric_close = fake_close;
    ops.cq_create = fake_cq_create;
    ops.cq_destroy = fake_cq_destroy;
    ops.cq_poll = fake_cq_poll;
    ops.cq_wait = fake_cq_wait;
    rf_fabric *f = NULL;
    CHECK_OK(rf_provider_open(&ops, NULL, &f));
    rf_cq *base = NULL;
    CHECK_OK(rf_cq_create(f, 16, &base));
    CHECK_OK(rf_cq_set_spin_us(base, 50));
    fake_cq *cq = (fake_cq *)base;

    /* A completion found by the spin: the spin stays. */
    for (int i = 0; i < 10; i++) {
        cq->ready_at = cq->polls + 3;
        wait_once(cq, 1, 1, "completion within the spin");
    }
    /* Four empty spins, then waits block at once but for one probe in 32. */
    for (int i = 0; i < 4; i++)
        wait_once(cq, 1, 0, "empty queue, spins 1-4");
    int spins = 0, probe_at = -1;
    for (int i = 0; i < 64; i++) {
        int polls = cq->polls;
        rf_completion c;
        int n = rf_cq_wait(base, &c, 1, 5);
        CHECK(n == RF_ERR_TIMEOUT, "empty queue: rf_cq_wait returned %d", n);
        if (cq->polls > polls) {
            spins++;
            if (probe_at < 0)
                probe_at = i;
        }
    }
    CHECK(spins == 2, "64 waits after 4 empty spins: %d spun, want 2 probes",
          spins);
    CHECK(probe_at == 31, "the first probe was wait %d, want 31", probe_at);

    /* A completion that comes while blocked is returned (no spin). */
    cq->ready_at = cq->polls + 1;
    rf_completion c;
    int n = 0;
    for (int i = 0; i < 40 && n != 1; i++)
        n = rf_cq_wait(base, &c, 1, 5);
    CHECK(n == 1, "a completion that arrived was not returned (%d)", n);

    /* A probe that finds a completion brings the spin back. */
    int found = 0;
    for (int i = 0; i < 40 && !found; i++) {
        int before = cq->polls;
        cq->ready_at = cq->polls + 2;
        n = rf_cq_wait(base, &c, 1, 5);
        found = cq->polls > before && n == 1;
    }
    CHECK(found, "no probe found the completion within 40 waits");
    for (int i = 0; i < 3; i++)
        wait_once(cq, 1, 0, "after a probe found a completion");

    rf_cq_destroy(base);
    rf_fabric_close(f);
    return 0;
}
