/* tests/fabric/case_api.c: API basics in one process: provider naming,
 * unknown providers, the packed descriptor's little-endian layout, region
 * descriptors, empty completion queues and listener/request timeouts. */
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"

void case_api_basics(void)
{
    rf_fabric *f = rt_fabric_open();
    const char *name = rf_fabric_provider(f);
    CHECK(name && *name, "rf_fabric_provider is empty");
    if (strcmp(rt_opts.provider, "auto") != 0)
        CHECK(strcmp(name, rt_opts.provider) == 0,
              "opened '%s' but rf_fabric_provider says '%s'", rt_opts.provider,
              name);
    int listed = 0;
    for (const char *const *p = rf_fabric_providers(); *p; p++)
        listed |= strcmp(*p, name) == 0;
    CHECK(listed, "rf_fabric_providers() does not list '%s'", name);

    rf_fabric *none = (rf_fabric *)(uintptr_t)1;
    CHECK(rf_fabric_open("no-such-provider", NULL, &none) != RF_OK &&
              none == NULL,
          "opening an unknown provider succeeded or left *out set");

    rf_mr_desc in = {.addr = 0x0102030405060708ull,
                     .len = 0x1112131415161718ull,
                     .rkey = 0x21222324u},
               out;
    unsigned char packed[RF_MR_DESC_PACKED_SIZE];
    rf_mr_desc_pack(&in, packed);
    static const unsigned char want[RF_MR_DESC_PACKED_SIZE] = {
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x18, 0x17,
        0x16, 0x15, 0x14, 0x13, 0x12, 0x11, 0x24, 0x23, 0x22, 0x21};
    CHECK(memcmp(packed, want, sizeof want) == 0,
          "rf_mr_desc_pack is not the little-endian addr|len|rkey layout");
    rf_mr_desc_unpack(packed, &out);
    CHECK(out.addr == in.addr && out.len == in.len && out.rkey == in.rkey,
          "rf_mr_desc_unpack does not invert rf_mr_desc_pack");

    rt_buf b;
    rt_buf_alloc(f, &b, 12345, RF_ACCESS_ALL);
    rf_mr_desc d;
    rf_mr_describe(b.mr, &d);
    CHECK(d.len == 12345, "descriptor length %llu, registered 12345",
          (unsigned long long)d.len);
    rf_cq *cq = NULL;
    CHECK_OK(rf_cq_create(f, 16, &cq));
    rf_completion comp;
    CHECK(rf_cq_poll(cq, &comp, 1) == 0, "empty queue polled non-empty");
    uint64_t t0 = rf_now_us();
    int r = rf_cq_wait(cq, &comp, 1, 100);
    uint64_t ms = (rf_now_us() - t0) / 1000;
    CHECK(r == RF_ERR_TIMEOUT, "rf_cq_wait on an empty queue returned %d", r);
    CHECK(ms >= 90 && ms <= (uint64_t)rft_ms(1100),
          "rf_cq_wait(100 ms) returned after %llu ms", (unsigned long long)ms);

    rf_listener *l = NULL;
    CHECK_OK(rf_listen(f, rt_opts.host, 0, &l));
    CHECK(rf_listener_port(l) != 0, "listener on port 0");
    rf_conn_req *req = (rf_conn_req *)(uintptr_t)1;
    t0 = rf_now_us();
    rf_status st = rf_listener_get_request(l, 100, &req);
    ms = (rf_now_us() - t0) / 1000;
    CHECK(st != RF_OK && req == NULL,
          "rf_listener_get_request without connections returned %s",
          rf_status_string(st));
    CHECK(ms >= 90 && ms <= (uint64_t)rft_ms(1100),
          "rf_listener_get_request(100 ms) returned after %llu ms",
          (unsigned long long)ms);
    rf_error_clear();
    rf_listener_close(l);
    rf_cq_destroy(cq);
    rt_buf_free(&b);
    rf_fabric_close(f);
}
