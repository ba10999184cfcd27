/* tests/fuzz/fuzz_sock_frame.c: libFuzzer target for the sock provider's
 * pure wire-format functions (fabric/sock/sock_frame.c). Every input is
 * decoded as a frame header, as a handshake and as a stream of frames; a
 * header or handshake that decodes must re-encode to exactly the same bytes,
 * and the remote access check is compared with a 128-bit reference. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/sock/sock_frame.h"
#include "fuzz_common.h"
#include "rdmaflow/byteorder.h"

static void check_header(const uint8_t *data, size_t size)
{
    rf_sock_hdr h;
    rf_sock_parse p = rf_sock_hdr_decode(data, size, &h);
    REQUIRE(p >= RF_SOCK_PARSE_OK && p <= RF_SOCK_PARSE_STATUS);
    REQUIRE(rf_sock_parse_string(p) != NULL);
    REQUIRE(rf_sock_op_name(h.op) != NULL);
    if (p != RF_SOCK_PARSE_OK)
        return;
    REQUIRE(size >= RF_SOCK_HDR_SIZE);
    if (!rf_sock_op_has_payload(h.op))
        REQUIRE(h.len == 0);
    unsigned char again[RF_SOCK_HDR_SIZE];
    rf_sock_hdr_encode(&h, again);
    REQUIRE(memcmp(again, data, RF_SOCK_HDR_SIZE) == 0);
    rf_sock_hdr h2;
    REQUIRE(rf_sock_hdr_decode(again, sizeof again, &h2) == RF_SOCK_PARSE_OK);
    REQUIRE(memcmp(&h, &h2, sizeof h) == 0);
}

static void check_handshake(const uint8_t *data, size_t size)
{
    rf_sock_hs hs;
    rf_sock_parse p = rf_sock_hs_decode(data, size, &hs);
    if (p != RF_SOCK_PARSE_OK)
        return;
    REQUIRE(hs.priv_len <= RF_SOCK_HS_PRIV);
    REQUIRE(hs.type >= RF_SOCK_HS_CONNECT && hs.type <= RF_SOCK_HS_REJECT);
    unsigned char again[RF_SOCK_HS_SIZE];
    rf_sock_hs_encode(&hs, again);
    REQUIRE(memcmp(again, data, RF_SOCK_HS_SIZE) == 0);
}

/* Walks the input as a stream: header, payload, header, ... as the
 * receiving endpoint does, stopping at the first bad header. */
static void check_stream(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (size - off >= RF_SOCK_HDR_SIZE) {
        rf_sock_hdr h;
        if (rf_sock_hdr_decode(data + off, size - off, &h) != RF_SOCK_PARSE_OK)
            return;
        off += RF_SOCK_HDR_SIZE;
        if (h.len > size - off)
            return; /* truncated payload */
        off += h.len;
    }
}

static void check_access(const uint8_t *data, size_t size)
{
    if (size < 40)
        return;
    uint64_t base = rf_get_le64(data), len = rf_get_le64(data + 8);
    uint64_t addr = rf_get_le64(data + 16), n = rf_get_le64(data + 24);
    uint32_t access = rf_get_le32(data + 32), need = rf_get_le32(data + 36);
    /* Small lengths too, so in-range cases are common. */
    if (data[0] & 1) {
        len &= 0xffff;
        n &= 0xffff;
        addr = base + (addr & 0x1ffff);
    }
    unsigned __int128 b = base, end = (unsigned __int128)base + len;
    unsigned __int128 a = addr, aend = (unsigned __int128)addr + n;
    if (end > ((unsigned __int128)1 << 64))
        return; /* a region never wraps the address space */
    int in = a >= b && aend <= end;
    int want = in && (access & need) == need;
    REQUIRE(rf_sock_access_ok(base, len, access, addr, n, need) == want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_header(data, size);
    check_handshake(data, size);
    check_stream(data, size);
    check_access(data, size);
    return 0;
}
