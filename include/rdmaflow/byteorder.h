/* rdmaflow/byteorder.h: the one little-endian byte codec. Every wire format
 * and file format of rdmaflow (the sock provider's frames, the ps control
 * protocol, rf-bench's control messages, safetensors headers) is
 * little-endian; these helpers read and write it at any alignment, on any
 * host byte order. Header-only: each is a handful of shifts the compiler
 * turns into one load or store on little-endian machines. */
#ifndef RDMAFLOW_BYTEORDER_H
#define RDMAFLOW_BYTEORDER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The low `bytes` bytes (1..8) of v at p, least significant first. */
static inline void rf_put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* `bytes` bytes (1..8) at p as an unsigned little-endian number. */
static inline uint64_t rf_get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline void rf_put_le16(unsigned char *p, uint16_t v)
{
    rf_put_le(p, v, 2);
}
static inline void rf_put_le32(unsigned char *p, uint32_t v)
{
    rf_put_le(p, v, 4);
}
static inline void rf_put_le64(unsigned char *p, uint64_t v)
{
    rf_put_le(p, v, 8);
}
static inline uint16_t rf_get_le16(const unsigned char *p)
{
    return (uint16_t)rf_get_le(p, 2);
}
static inline uint32_t rf_get_le32(const unsigned char *p)
{
    return (uint32_t)rf_get_le(p, 4);
}
static inline uint64_t rf_get_le64(const unsigned char *p)
{
    return rf_get_le(p, 8);
}

#ifdef __cplusplus
}
#endif
#endif
