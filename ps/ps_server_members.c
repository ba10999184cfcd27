/* ps/ps_server_members.c: which client ids are members of the job now,
 * for elastic workers (rdmaflow/ps.h, the globals block). The service
 * thread owns the bitmap and writes it with the CPU only (never a NIC
 * atomic): a bit is set at the client's HELLO, cleared by its LEAVE, or
 * cleared once its connection has been closed for member_timeout_ms
 * without a new one (a killed or partitioned worker). Clients READ the
 * words; the chief waits at the end for the members that did not announce
 * they finished. Not a registry of addresses: the ps knows ids only. A
 * member's LEAVE or expiry returns its shards to the ledger (ps_ledger.c). */
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/clock.h"

static void set_bit(rf_ps_server *s, uint32_t id, bool on)
{
    uint64_t *w = &s->members[id / 64u], m = 1ull << (id % 64u);
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    __atomic_store_n(w, on ? v | m : v & ~m, __ATOMIC_RELEASE);
}

static bool has_bit(const rf_ps_server *s, uint32_t id)
{
    return (__atomic_load_n(&s->members[id / 64u], __ATOMIC_ACQUIRE) >>
                (id % 64u) &
            1u) != 0;
}

/* A member left or expired: its unfinished shards go back to the ledger
 * at their recorded batch (for another worker to continue). */
static void return_shards(rf_ps_server *s, uint32_t id)
{
    uint32_t n = ps_ledger_release(&s->ledger, id);
    if (n)
        RF_LOG_INFO("ps %d: %u shard%s of client %u returned to the ledger",
                    s->opt.task_index, n, n == 1 ? "" : "s", id);
}

void ps_members_init(rf_ps_server *s)
{
    s->members = (uint64_t *)ps_arena_ptr(
        &s->arena, (ps_loc){.region = 0, .offset = PS_MEMBERS_OFF});
    memset(s->member_gone_ms, 0, sizeof s->member_gone_ms);
}

void ps_members_join(rf_ps_server *s, uint32_t id)
{
    if (id >= RF_PS_MAX_DONE_WORKERS)
        return;
    s->member_gone_ms[id] = 0;
    if (!has_bit(s, id))
        RF_LOG_INFO("ps %d: client %u joined (a member)", s->opt.task_index,
                    id);
    set_bit(s, id, true);
}

void ps_members_leave(rf_ps_server *s, uint32_t id)
{
    if (id >= RF_PS_MAX_DONE_WORKERS)
        return;
    RF_LOG_INFO("ps %d: client %u left the job (LEAVE)", s->opt.task_index, id);
    s->member_gone_ms[id] = 0;
    set_bit(s, id, false);
    return_shards(s, id);
}

void ps_members_gone(rf_ps_server *s, uint32_t id)
{
    if (id < RF_PS_MAX_DONE_WORKERS && has_bit(s, id))
        s->member_gone_ms[id] = rf_now_ms();
}

void ps_members_expire(rf_ps_server *s)
{
    long long now = rf_now_ms();
    for (uint32_t id = 0; id < RF_PS_MAX_DONE_WORKERS; id++) {
        long long gone = s->member_gone_ms[id];
        if (!gone || now - gone < s->opt.member_timeout_ms)
            continue;
        s->member_gone_ms[id] = 0;
        if (!has_bit(s, id))
            continue;
        set_bit(s, id, false);
        RF_LOG_WARN("ps %d: client %u disconnected %d ms ago and did not "
                    "come back: no longer a member",
                    s->opt.task_index, id, s->opt.member_timeout_ms);
        return_shards(s, id);
    }
}

void rf_ps_server_members(rf_ps_server *s, uint64_t bits[RF_PS_DONE_WORDS])
{
    for (uint32_t w = 0; w < RF_PS_DONE_WORDS; w++)
        bits[w] = s && s->members
                      ? __atomic_load_n(&s->members[w], __ATOMIC_ACQUIRE)
                      : 0;
}
