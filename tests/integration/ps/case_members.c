/* tests/integration/ps/case_members.c: the members bitmap of elastic jobs
 * (rdmaflow/ps.h; ps/ps_server_members.c), with real processes: a ps
 * helper binding roles as an elastic job does (every id below
 * RF_PS_MAX_DONE_WORKERS a worker's, the chief's id bound) with
 * --member-ms, the chief in the driver, and hold workers:
 *   - ids 3, 5 and 300 (beyond any fixed cluster's count) are admitted and
 *     set at HELLO, and the chief's READ of the bitmap shows exactly
 *     {0, 3, 5, 300};
 *   - id 3 sends LEAVE: cleared as soon as it is answered;
 *   - id 5 is SIGKILLed and id 300 closes without LEAVE: both stay members
 *     for the bound, then are cleared (neither before 80 % of it, both
 *     within it plus 3 s);
 *   - the done bitmap and global_step are other words: a worker's done bit
 *     and a global_step write leave the members alone, and the other way
 *     round. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"

/* the bound, and how long ids 3 and 300 stay before they go: long enough
 * for every hold worker to connect before the first look, in the rxe
 * guest too (scaled by RF_TEST_TIME_SCALE) */
#define MEMBER_MS ((int)rft_ms(1500))
#define STAY_MS   rft_ms(3000)

static uint64_t members(rf_ps_client *c)
{
    uint64_t bits[RF_PS_DONE_WORDS];
    CHECK_OK(rf_ps_members_read(c, bits));
    /* ids 0..63 in word 0, 300 in word 4 (bit 44): one summary word */
    uint64_t sum = bits[0];
    for (int w = 1; w < RF_PS_DONE_WORDS; w++)
        if (w != 4)
            CHECK(bits[w] == 0, "members word %d is 0x%llx", w,
                  (unsigned long long)bits[w]);
    return sum | ((bits[4] >> 44 & 1u) << 63); /* id 300 as bit 63 */
}
#define BIT(id) ((id) == 300 ? 1ull << 63 : 1ull << (id))

static void hold(rft_child *c, const char *addr, const char *id, const char *ms,
                 const char *leave)
{
    char name[32];
    snprintf(name, sizeof name, "worker%s", id);
    const char *args[] = {"hold", "--ps", addr,      "--id", id,
                          "--ms", ms,     "--leave", leave,  NULL};
    pt_spawn(c, name, args);
    char rest[64];
    rft_expect(c, "CONNECTED", rest, sizeof rest, rft_ms(15000));
}

void case_members(void)
{
    pt_ps ps;
    char log[128], ms[16];
    snprintf(ms, sizeof ms, "%d", MEMBER_MS);
    const char *extra[] = {"--workers",   "448", "--chief", "0",
                           "--member-ms", ms,    NULL};
    setenv("RF_LOG_LEVEL", "info", 1); /* its joined / left lines */
    pt_start_logged_ps(&ps, "members", extra, log, sizeof log);
    unsetenv("RF_LOG_LEVEL");
    const char *addr = pt_addr(ps.port);
    rf_fabric *f = pt_fabric();
    rf_ps_client *chief = pt_client(f, &addr, 1, 0, true);
    CHECK(members(chief) == BIT(0), "members 0x%llx, want the chief's",
          (unsigned long long)members(chief));

    rft_child w3, w5, w300;
    char stay[24];
    snprintf(stay, sizeof stay, "%lld", (long long)STAY_MS);
    hold(&w5, addr, "5", "600000", "0");
    hold(&w300, addr, "300", stay, "0");
    hold(&w3, addr, "3", stay, "1");
    uint64_t all = BIT(0) | BIT(3) | BIT(5) | BIT(300);
    CHECK(members(chief) == all, "members 0x%llx, want ids 0, 3, 5, 300",
          (unsigned long long)members(chief));
    pt_expect_log(log, "client 300 joined (a member)");

    /* id 3 leaves: cleared once its LEAVE is answered */
    char rest[64];
    rft_expect(&w3, "LEFT", rest, sizeof rest, rft_ms(10000));
    rft_wait_ok(&w3, rft_ms(10000));
    CHECK(!(members(chief) & BIT(3)), "id 3 still a member after LEAVE");
    pt_expect_log(log, "client 3 left the job (LEAVE)");

    /* id 300 closes without LEAVE, id 5 is killed: members for the bound */
    rft_expect(&w300, "HELD", rest, sizeof rest, rft_ms(10000));
    rft_wait_ok(&w300, rft_ms(10000));
    long long t300 = rf_now_ms(); /* each bound from its own going */
    kill(w5.pid, SIGKILL);
    rft_wait(&w5, rft_ms(10000));
    long long t5 = rf_now_ms(), cleared5 = 0, cleared300 = 0;
    while ((!cleared5 || !cleared300) &&
           rf_now_ms() - t5 < MEMBER_MS + rft_ms(3000)) {
        uint64_t m = members(chief);
        if (!cleared5 && !(m & BIT(5)))
            cleared5 = rf_now_ms() - t5;
        if (!cleared300 && !(m & BIT(300)))
            cleared300 = rf_now_ms() - t300;
        rf_sleep_ms(20);
    }
    rft_note("killed id 5 cleared after %lld ms, closed id 300 after %lld ms "
             "(bound %d ms)",
             cleared5, cleared300, MEMBER_MS);
    CHECK(cleared5 >= MEMBER_MS * 8 / 10 && cleared300 >= MEMBER_MS * 8 / 10,
          "cleared before the bound: %lld and %lld ms", cleared5, cleared300);
    CHECK(cleared5 && cleared300, "not cleared within %d ms: %lld %lld",
          MEMBER_MS + rft_ms(3000), cleared5, cleared300);
    pt_expect_log(log, "client 5 disconnected");
    CHECK(members(chief) == BIT(0), "members 0x%llx, want the chief's only",
          (unsigned long long)members(chief));

    /* other words: done bits and global_step do not touch the members */
    CHECK_OK(rf_ps_worker_done(chief));
    CHECK_OK(rf_ps_global_step_write(chief, -1));
    CHECK(members(chief) == BIT(0), "members changed by done/global_step");
    uint64_t done[RF_PS_DONE_WORDS];
    CHECK_OK(rf_ps_workers_done_read(chief, done));
    CHECK(done[0] == 1 && done[4] == 0, "done word 0 0x%llx",
          (unsigned long long)done[0]);

    CHECK_OK(rf_ps_shutdown(chief));
    rft_expect(&ps.child, "EXIT ", rest, sizeof rest, rft_ms(10000));
    rft_wait_ok(&ps.child, rft_ms(10000));
    rf_ps_client_close(chief);
    rf_fabric_close(f);
}
