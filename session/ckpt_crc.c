/* session/ckpt_crc.c: CRC32C (RFC 3720's iSCSI polynomial) with Intel ISA-L,
 * the checksum of checkpoint tensors and headers, and its hex form. */
#include "session/ckpt_internal.h"

#include <isa-l/crc.h>
#include <limits.h>

/* ISA-L's crc32_iscsi neither inverts its initial value nor its result:
 * the standard CRC32C starts from 0xffffffff and is inverted at the end;
 * chained calls pass the un-inverted running value. */
uint32_t rf_ckpt_crc32c(const void *data, size_t len)
{
    return ckpt_crc32c_update(0, data, len);
}

uint32_t ckpt_crc32c_update(uint32_t prev, const void *data, size_t len)
{
    const unsigned char *p = data;
    unsigned int crc = prev ^ 0xffffffffu;
    while (len > 0) {
        int chunk = len > (size_t)(INT_MAX / 2) ? INT_MAX / 2 : (int)len;
        /* crc32_iscsi takes a non-const pointer but only reads it */
        crc = crc32_iscsi((unsigned char *)(uintptr_t)p, chunk, crc);
        p += chunk;
        len -= (size_t)chunk;
    }
    return (uint32_t)(crc ^ 0xffffffffu);
}

uint32_t ckpt_header_crc(const char *hdr, size_t len, size_t digits_at)
{
    static const char zeros[8] = "00000000";
    /* the three pieces chained: running values stay un-inverted */
    unsigned int crc = 0xffffffffu;
    crc = crc32_iscsi((unsigned char *)(uintptr_t)hdr, (int)digits_at, crc);
    crc = crc32_iscsi((unsigned char *)(uintptr_t)zeros, 8, crc);
    crc = crc32_iscsi((unsigned char *)(uintptr_t)(hdr + digits_at + 8),
                      (int)(len - digits_at - 8), crc);
    return (uint32_t)(crc ^ 0xffffffffu);
}

void ckpt_hex8(uint32_t v, char out[9])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++)
        out[i] = hex[(v >> (28 - 4 * i)) & 0xf];
    out[8] = '\0';
}

bool ckpt_parse_hex8(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint32_t)d;
    }
    if (s[8] != '\0')
        return false;
    *out = v;
    return true;
}
