/* fabric/sock/sock_frame.h: the sock provider's wire format. Pure functions
 * (no I/O, no allocation) that encode and decode the fixed little-endian
 * frame header and the connection handshake, validating every field, plus
 * the overflow-safe remote access check. Fuzzed by tests/fuzz.
 *
 * Data frames: a 40-byte header followed by `len` payload bytes.
 *   off size field
 *   0   2    magic 0x4652 ("RF" as bytes 'R','F')
 *   2   1    version (RF_SOCK_VERSION)
 *   3   1    opcode (rf_sock_op)
 *   4   4    len: payload bytes that follow the header
 *   8   4    key: rkey (requests) or status as int32 (replies, ERROR)
 *   12  4    aux: immediate (WRITE_IMM_REQ), bytes asked (READ_REQ), else 0
 *   16  8    addr: target address (requests), old value (ATOMIC_RESP)
 *   24  8    arg0: addend (FADD_REQ), compare value (CSWAP_REQ)
 *   32  8    arg1: swap value (CSWAP_REQ)
 * Fields an opcode does not use must be zero. Requests are answered by
 * exactly one reply each, in request order, on the same connection.
 *
 * Handshake: one 72-byte frame each way before any data frame.
 *   0   4    magic 0x48534652 ("RFSH")
 *   4   1    version (RF_SOCK_HS_VERSION)
 *   5   1    type (CONNECT, ACCEPT, REJECT)
 *   6   1    private data length (<= 56)
 *   7   1    reserved, 0
 *   8   4    max_send_wr of the sender (1..RF_SOCK_MAX_QUEUE; 0 in REJECT)
 *   12  4    requests the sender serves outstanding at once as a target
 *            (1..RF_SOCK_MAX_QUEUE; 0 in REJECT): its peer holds more back
 *   16  56   private data, zero padded */
#ifndef RF_FABRIC_SOCK_FRAME_H
#define RF_FABRIC_SOCK_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define RF_SOCK_MAGIC    0x4652u
#define RF_SOCK_HS_MAGIC 0x48534652u
#define RF_SOCK_VERSION  1
/* The handshake's own version: 2 added the serve limit at offset 12. */
#define RF_SOCK_HS_VERSION 2
#define RF_SOCK_HDR_SIZE   40
#define RF_SOCK_HS_SIZE    72
#define RF_SOCK_HS_PRIV    56
/* Largest queue depth an endpoint may declare (and so the most replies a
 * target keeps queued for one peer). */
#define RF_SOCK_MAX_QUEUE (1u << 20)

typedef enum rf_sock_op {
    RF_SOCK_READ_REQ = 1,
    RF_SOCK_WRITE_REQ = 2,
    RF_SOCK_WRITE_IMM_REQ = 3,
    RF_SOCK_SEND_REQ = 4,
    RF_SOCK_FADD_REQ = 5,
    RF_SOCK_CSWAP_REQ = 6,
    RF_SOCK_READ_RESP = 0x11,   /* status; len = data bytes (0 on error) */
    RF_SOCK_ACK = 0x12,         /* status of a write, write_imm or send */
    RF_SOCK_ATOMIC_RESP = 0x13, /* status; addr = old value */
    RF_SOCK_ERROR = 0x20, /* sender entered the error state; key = reason */
} rf_sock_op;

typedef enum rf_sock_parse {
    RF_SOCK_PARSE_OK = 0,
    RF_SOCK_PARSE_SHORT,    /* fewer bytes than a header / handshake */
    RF_SOCK_PARSE_MAGIC,    /* wrong magic: not this protocol */
    RF_SOCK_PARSE_VERSION,  /* right magic, unsupported version */
    RF_SOCK_PARSE_OPCODE,   /* unknown opcode or handshake type */
    RF_SOCK_PARSE_LENGTH,   /* a length field out of range for the opcode */
    RF_SOCK_PARSE_RESERVED, /* a field the opcode does not use is not 0 */
    RF_SOCK_PARSE_STATUS,   /* a status that is not a valid rf_status */
} rf_sock_parse;

typedef struct rf_sock_hdr {
    uint8_t op;    /* rf_sock_op */
    uint32_t len;  /* payload bytes following the header */
    uint32_t key;  /* rkey, or (uint32_t)status for replies and ERROR */
    uint32_t aux;  /* imm (WRITE_IMM_REQ) or length asked (READ_REQ) */
    uint64_t addr; /* remote address, or old value (ATOMIC_RESP) */
    uint64_t arg0;
    uint64_t arg1;
} rf_sock_hdr;

enum rf_sock_hs_type {
    RF_SOCK_HS_CONNECT = 1,
    RF_SOCK_HS_ACCEPT = 2,
    RF_SOCK_HS_REJECT = 3,
};

typedef struct rf_sock_hs {
    uint8_t version; /* filled by decode; encode always writes ours */
    uint8_t type;    /* rf_sock_hs_type */
    uint8_t priv_len;
    uint32_t max_send_wr;
    uint32_t serve_max;
    unsigned char priv[RF_SOCK_HS_PRIV];
} rf_sock_hs;

/* Frame header. encode writes exactly RF_SOCK_HDR_SIZE bytes. decode reads
 * at most `avail` bytes and checks magic, version, opcode, the payload
 * length rules of the opcode (no payload for READ_REQ/atomics/ACK/
 * ATOMIC_RESP/ERROR; none with an error status), unused fields zero and
 * statuses valid. */
void rf_sock_hdr_encode(const rf_sock_hdr *h,
                        unsigned char out[RF_SOCK_HDR_SIZE]);
rf_sock_parse rf_sock_hdr_decode(const unsigned char *in, size_t avail,
                                 rf_sock_hdr *out);

/* Reply/ERROR status carried in key. */
static inline int32_t rf_sock_hdr_status(const rf_sock_hdr *h)
{
    return (int32_t)h->key;
}
int rf_sock_op_is_request(uint8_t op);
int rf_sock_op_has_payload(uint8_t op);
const char *rf_sock_op_name(uint8_t op);
const char *rf_sock_parse_string(rf_sock_parse p);

/* Handshake. decode checks magic, version, type, priv_len <= 56, zero
 * padding and reserved bytes, and max_send_wr and serve_max in
 * 1..RF_SOCK_MAX_QUEUE (both 0 for REJECT). On RF_SOCK_PARSE_VERSION
 * out->version holds the peer's version. */
void rf_sock_hs_encode(const rf_sock_hs *hs,
                       unsigned char out[RF_SOCK_HS_SIZE]);
rf_sock_parse rf_sock_hs_decode(const unsigned char *in, size_t avail,
                                rf_sock_hs *out);

/* Remote access check against one region: [addr, addr+len) inside
 * [base, base+size) (no overflow for any input), and the region's access
 * flags contain every bit of `need`. Returns 1 when allowed. */
int rf_sock_access_ok(uint64_t base, uint64_t size, uint32_t access,
                      uint64_t addr, uint64_t len, uint32_t need);

#endif
