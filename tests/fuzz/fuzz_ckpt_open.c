/* tests/fuzz/fuzz_ckpt_open.c: libFuzzer target for the checkpoint reader
 * (session/ckpt_read.c, the parser behind rf_ckpt_open): any bytes as a
 * whole file. Every input must either open (then every entry lies inside
 * the file, its size matches its dtype and shape, and a found name is the
 * same entry, its name escapes to inert text, and the header held no key
 * twice: rf_json_check accepts it) or be refused with a message that holds
 * no control byte; nothing may crash or read out of bounds (ASan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_check.h"
#include "fuzz_common.h"
#include "rdmaflow/byteorder.h"
#include "session/ckpt_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rf_ckpt *ck = NULL;
    if (ckpt_open_buffer("fuzz.safetensors", data, size, &ck) != RF_OK) {
        if (!rf_error_message()[0])
            abort(); /* a refusal always says why */
        fuzz_require_inert(rf_error_message());
        return 0;
    }
    /* accepted: a header json-c read without a key twice (issue 25) */
    REQUIRE(size >= 8 && rf_get_le64(data) <= size - 8);
    REQUIRE(rf_json_check((const char *)data + 8, (size_t)rf_get_le64(data),
                          RF_ERR_CORRUPT, "fuzz") == RF_OK);
    for (size_t i = 0; i < rf_ckpt_count(ck); i++) {
        const rf_ckpt_entry *e = rf_ckpt_at(ck, i);
        int64_t numel = rf_shape_numel(&e->t.shape);
        if (numel < 0 ||
            e->t.bytes != (size_t)numel * rf_dtype_size(e->t.dtype) ||
            e->t.bytes > size)
            abort();
        if (e->t.bytes) { /* touch every byte: ASan checks the bounds */
            volatile unsigned char sum = 0;
            for (size_t b = 0; b < e->t.bytes; b++)
                sum ^= ((const unsigned char *)e->t.data)[b];
            (void)sum;
        }
        if (rf_ckpt_find(ck, e->t.name) != e)
            abort();
        fuzz_require_escapes(e->t.name);
    }
    rf_ckpt_close(ck);
    return 0;
}
