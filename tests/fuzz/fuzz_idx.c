/* tests/fuzz/fuzz_idx.c: libFuzzer target for the IDX reader
 * (graph/data/idx.c, Fashion-MNIST's images and labels, gzip'd or raw via
 * zlib). idx_read takes a path, so the input is written to a memfd
 * (libFuzzer's -max_len bounds it) and read back as /proc/self/fd/N, as
 * a 1-dimensional (labels) and a 3-dimensional (images) file. A refusal
 * must say why and leave the result zeroed; a file that reads holds
 * exactly as many bytes as its dimensions say, every one readable (ASan).
 * zlib itself is not instrumented: coverage guides only idx.c. The seeds
 * in corpus/idx, made in that directory by
 *   printf '\0\0\10\1\0\0\0\12\0\1\2\3\4\5\6\7\10\11' > labels.idx1
 *   printf '\0\0\10\3\0\0\0\2\0\0\0\3\0\0\0\3' > images.idx3
 *   printf '\0\1\2\3\4\5\6\7\10\11\12\13\14\15\16\17\20\21' >> images.idx3
 *   for f in labels.idx1 images.idx3; do gzip -n -9 -c $f > $f.gz; done */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "graph/data/idx.h"
#include "rdmaflow/status.h"

static void read_as(const char *path, unsigned ndims)
{
    rf_idx idx;
    if (idx_read(path, ndims, &idx) != RF_OK) {
        REQUIRE(rf_error_message()[0] && !idx.data && idx.size == 0);
        return;
    }
    uint64_t n = 1;
    REQUIRE(idx.ndims == ndims);
    for (unsigned i = 0; i < ndims; i++)
        n *= idx.dims[i];
    REQUIRE(n == idx.size && idx.data);
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < idx.size; i++)
        sum ^= idx.data[i];
    (void)sum;
    idx_free(&idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz_idx", 0);
        REQUIRE(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    REQUIRE(ftruncate(fd, 0) == 0);
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(fd, data + off, size - off, (off_t)off);
        REQUIRE(w > 0);
        off += (size_t)w;
    }
    read_as(path, 1);
    read_as(path, 3);
    return 0;
}
