/* tools/fabric-demo/demo_target.c: the target side of rf-fabric-demo.
 * Registers the demo region, listens, accepts one initiator (handing it the
 * region's descriptor as accept private data), waits for the final
 * write_imm, checks what the initiator did to its memory and sends the
 * verdict back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"
#include "rdmaflow/clock.h"

#define ROLE "target"

static int fail(const char *what, rf_status st)
{
    demo_say(ROLE, "FAILED: %s: %s (%s)", what, rf_status_string(st),
             rf_error_message());
    return 1;
}

/* Checks the region after the initiator's steps; fills why on failure. */
static int region_ok(const unsigned char *region, char *why, size_t cap)
{
    size_t bad = demo_mismatch(region, DEMO_DATA_LEN, 1);
    if (bad != DEMO_DATA_LEN) {
        snprintf(why, cap,
                 "FAIL: data byte %zu is 0x%02x, not what the "
                 "initiator wrote",
                 bad, region[bad]);
        return 0;
    }
    uint64_t counter;
    memcpy(&counter, region + DEMO_COUNTER_OFF, 8);
    if (counter != DEMO_SWAP_TO) {
        snprintf(why, cap, "FAIL: counter is %llu, expected %d",
                 (unsigned long long)counter, DEMO_SWAP_TO);
        return 0;
    }
    if (memcmp(region + DEMO_IMM_OFF, DEMO_IMM_PAYLOAD,
               sizeof DEMO_IMM_PAYLOAD) != 0) {
        snprintf(why, cap, "FAIL: write_imm payload not in place");
        return 0;
    }
    snprintf(why, cap,
             "OK: data, counter (%llu) and write_imm payload as "
             "expected",
             (unsigned long long)counter);
    return 1;
}

int demo_target(const demo_opts *o)
{
    rf_fabric_attr attr = {.bind_addr = o->host};
    rf_fabric *f = NULL;
    rf_status st = rf_fabric_open(o->provider, &attr, &f);
    if (st != RF_OK)
        return fail("rf_fabric_open", st);
    unsigned char *region = aligned_alloc(4096, DEMO_REGION_LEN);
    unsigned char *report = aligned_alloc(4096, 4096);
    if (!region || !report) {
        demo_say(ROLE, "FAILED: out of memory");
        return 1;
    }
    memset(region, 0, DEMO_REGION_LEN);
    memset(report, 0, 4096);
    demo_content(region, DEMO_DATA_LEN, 0);
    uint64_t init = DEMO_COUNTER_INIT;
    memcpy(region + DEMO_COUNTER_OFF, &init, 8);

    rf_mr *mr = NULL, *rmr = NULL;
    rf_cq *cq = NULL;
    rf_listener *l = NULL;
    rf_conn_req *req = NULL;
    rf_ep *ep = NULL;
    int rc = 1;
    if ((st = rf_mr_reg(f, region, DEMO_REGION_LEN, RF_ACCESS_ALL, &mr)) ||
        (st = rf_mr_reg(f, report, 4096, RF_ACCESS_LOCAL_WRITE, &rmr))) {
        rc = fail("rf_mr_reg", st);
        goto out;
    }
    rf_mr_desc d;
    rf_mr_describe(mr, &d);
    if ((st = rf_listen(f, o->host, o->port, &l)) != RF_OK) {
        rc = fail("rf_listen", st);
        goto out;
    }
    demo_say(ROLE,
             "provider %s, listening on %s:%u; region of %llu B at "
             "0x%llx, rkey 0x%08x, counter %d at +%d",
             rf_fabric_provider(f), o->host, (unsigned)rf_listener_port(l),
             (unsigned long long)d.len, (unsigned long long)d.addr, d.rkey,
             DEMO_COUNTER_INIT, DEMO_COUNTER_OFF);
    if (o->port_fd >= 0) {
        dprintf(o->port_fd, "port %u\n", (unsigned)rf_listener_port(l));
        close(o->port_fd);
    }
    if ((st = rf_listener_get_request(l, DEMO_TIMEOUT_MS, &req)) != RF_OK) {
        rc = fail("waiting for an initiator", st);
        goto out;
    }
    size_t plen = 0;
    const char *priv = rf_conn_req_private_data(req, &plen);
    demo_say(ROLE, "connection request with %zu B of private data: \"%.*s\"",
             plen, (int)plen, priv ? priv : "");
    unsigned char packed[RF_MR_DESC_PACKED_SIZE];
    rf_mr_desc_pack(&d, packed);
    if ((st = rf_cq_create(f, 64, &cq)) != RF_OK) {
        rf_reject(req, NULL, 0);
        rc = fail("rf_cq_create", st);
        goto out;
    }
    rf_ep_attr ea = {.send_cq = cq};
    uint64_t t0 = rf_now_us();
    if ((st = rf_accept(req, &ea, packed, sizeof packed, &ep)) != RF_OK) {
        rc = fail("rf_accept", st);
        goto out;
    }
    demo_say(ROLE, "accepted in %llu us, sent the region descriptor (%d B)",
             (unsigned long long)(rf_now_us() - t0), RF_MR_DESC_PACKED_SIZE);
    /* One receive for the write_imm that ends the initiator's steps. */
    if ((st = rf_post_recv(ep, NULL, 0, NULL, (void *)1)) != RF_OK) {
        rc = fail("rf_post_recv", st);
        goto out;
    }
    rf_completion c;
    if ((st = demo_wait(cq, &c)) != RF_OK || (st = c.status) != RF_OK) {
        rc = fail("waiting for the write_imm", st);
        goto out;
    }
    if (c.op != RF_OP_RECV_WRITE_IMM) {
        demo_say(ROLE, "FAILED: expected a write_imm, got op %d", (int)c.op);
        goto out;
    }
    demo_say(ROLE, "write_imm arrived: imm 0x%08x, %u B at +%d: \"%s\"", c.imm,
             c.len, DEMO_IMM_OFF, (const char *)region + DEMO_IMM_OFF);
    int ok = c.imm == DEMO_IMM_VALUE && c.len == sizeof DEMO_IMM_PAYLOAD;
    char *why = (char *)report;
    if (!ok)
        snprintf(why, DEMO_REPORT_LEN,
                 "FAIL: immediate 0x%08x len %u, "
                 "expected 0x%08x len %zu",
                 c.imm, c.len, DEMO_IMM_VALUE, sizeof DEMO_IMM_PAYLOAD);
    else
        ok = region_ok(region, why, DEMO_REPORT_LEN);
    demo_say(ROLE, "checked my memory: %s", why);
    if ((st = rf_send(ep, why, strlen(why) + 1, rmr, (void *)2)) != RF_OK ||
        (st = demo_wait(cq, &c)) != RF_OK || (st = c.status) != RF_OK) {
        rc = fail("sending the verdict", st);
        goto out;
    }
    demo_say(ROLE, "verdict sent; done");
    rc = ok ? 0 : 1;
out:
    rf_ep_close(ep);
    rf_cq_destroy(cq);
    rf_listener_close(l);
    if (rmr)
        rf_mr_dereg(rmr);
    if (mr)
        rf_mr_dereg(mr);
    free(region);
    free(report);
    rf_fabric_close(f);
    return rc;
}
