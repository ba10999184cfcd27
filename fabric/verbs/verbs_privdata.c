/* fabric/verbs/verbs_privdata.c: framing of connection private data so the
 * peer gets exactly the bytes (and length) that were sent.
 *
 * On InfiniBand and RoCE, rdma_cm (port space RDMA_PS_TCP) carries private
 * data in IB CM MADs: the connect REQ has 92 bytes, of which rdma_cm keeps
 * 36 for its own header (addresses, port), leaving 56; the REP has 196 bytes
 * and the REJ 148. The receiver always sees the whole field, zero-padded, so
 * the length travels inside: one length byte, then the data. That is why
 * RF_MAX_PRIVATE_DATA is 55. iWARP (MPA) delivers exact lengths: raw data,
 * no framing. */
#include <string.h>

#include "fabric/verbs/verbs_internal.h"

void verbs_priv_encode(const vfab *fab, const void *priv, size_t len,
                       unsigned char out[VPRIV_WIRE_MAX], uint8_t *out_len)
{
    if (len > RF_MAX_PRIVATE_DATA)
        len = RF_MAX_PRIVATE_DATA;
    if (fab->iwarp) {
        if (len)
            memcpy(out, priv, len);
        *out_len = (uint8_t)len;
        return;
    }
    out[0] = (uint8_t)len;
    if (len)
        memcpy(out + 1, priv, len);
    *out_len = (uint8_t)(len + 1);
}

int verbs_priv_decode(const vfab *fab, const void *data, size_t len,
                      unsigned char out[RF_MAX_PRIVATE_DATA], size_t *out_len)
{
    const unsigned char *p = data;
    *out_len = 0;
    if (!p)
        len = 0;
    if (fab->iwarp) {
        size_t n = len < RF_MAX_PRIVATE_DATA ? len : RF_MAX_PRIVATE_DATA;
        if (n)
            memcpy(out, p, n);
        *out_len = n;
        return 0;
    }
    if (len == 0)
        return 0; /* e.g. a reject by the CM itself: no data */
    if (p[0] > RF_MAX_PRIVATE_DATA || (size_t)p[0] + 1 > len)
        return -1;
    memcpy(out, p + 1, p[0]);
    *out_len = p[0];
    return 0;
}
