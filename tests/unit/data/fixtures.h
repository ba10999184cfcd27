/* tests/unit/data/fixtures.h: IDX fixture files for the data tests (their
 * checks are tests/common/check.h): a private temporary directory, files
 * written gzip-compressed or plain with any magic, sizes and payload, and
 * ways to damage them. */
#ifndef RF_TEST_DATA_FIXTURES_H
#define RF_TEST_DATA_FIXTURES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "rdmaflow/status.h"
#include "tests/common/check.h"

/* A pointer target that is no dataset: an out-parameter set to
 * (rf_dataset *)&not_a_dataset before a failing call must come back NULL. */
static int not_a_dataset;

static char tmp_dir[64];

static inline void make_tmp_dir(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/rf_test_data_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

/* tmp_dir/name in a static rotating buffer (a few live at once). */
static const char *tmp_path(const char *name)
{
    static char bufs[8][256];
    static unsigned next;
    char *p = bufs[next++ % 8];
    snprintf(p, 256, "%s/%s", tmp_dir, name);
    return p;
}

static inline void remove_tmp_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Writes magic, ndims sizes and len bytes of payload to path, through gzip
 * when gz, plainly otherwise. */
static inline void write_idx(const char *path, int gz, uint32_t magic,
                             const uint32_t *dims, unsigned ndims,
                             const uint8_t *payload, size_t len)
{
    uint8_t head[16];
    put_be32(head, magic);
    for (unsigned i = 0; i < ndims; i++)
        put_be32(head + 4 + 4 * i, dims[i]);
    size_t hlen = 4 + 4 * (size_t)ndims;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f || gzwrite(f, head, (unsigned)hlen) != (int)hlen ||
            (len && gzwrite(f, payload, (unsigned)len) != (int)len) ||
            gzclose(f) != Z_OK) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(1);
        }
    } else {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(head, 1, hlen, f) != hlen ||
            (len && fwrite(payload, 1, len, f) != len) || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(1);
        }
    }
}

static inline void write_raw(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* Appends len bytes to path. */
static inline void append_raw(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "ab");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot append to %s\n", path);
        exit(1);
    }
}

/* An IDX file as two concatenated gzip members: the header and the first
 * half of the payload, then the rest. */
static inline void write_two_members(const char *path, uint32_t magic,
                                     const uint32_t *dims, unsigned ndims,
                                     const uint8_t *payload, size_t len)
{
    char part[512];
    snprintf(part, sizeof part, "%s.part", path);
    write_idx(path, 1, magic, dims, ndims, payload, len / 2);
    gzFile f = gzopen(part, "wb");
    if (!f ||
        gzwrite(f, payload + len / 2, (unsigned)(len - len / 2)) !=
            (int)(len - len / 2) ||
        gzclose(f) != Z_OK) {
        fprintf(stderr, "cannot write %s\n", part);
        exit(1);
    }
    FILE *in = fopen(part, "rb");
    char buf[4096];
    size_t n;
    while (in && (n = fread(buf, 1, sizeof buf, in)) > 0)
        append_raw(path, buf, n);
    if (in)
        fclose(in);
    unlink(part);
}

static inline long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Keeps the first len bytes of path. */
static inline void cut_file(const char *path, long len)
{
    if (truncate(path, len) != 0) {
        perror("truncate");
        exit(1);
    }
}

/* XORs the byte at offset with mask. */
static inline void flip_byte(const char *path, long offset, uint8_t mask)
{
    FILE *f = fopen(path, "r+b");
    int c;
    if (!f || fseek(f, offset, SEEK_SET) != 0 || (c = fgetc(f)) == EOF ||
        fseek(f, offset, SEEK_SET) != 0 || fputc(c ^ mask, f) == EOF ||
        fclose(f) != 0) {
        fprintf(stderr, "cannot modify %s\n", path);
        exit(1);
    }
}

/* n images of rows x cols whose first two pixels encode the example index
 * (i & 255, i >> 8), then 255, 0, 255, ...; labels i % classes. */
static inline void write_indexed_set(const char *images, const char *labels,
                                     uint32_t n, uint32_t rows, uint32_t cols,
                                     uint32_t classes)
{
    size_t dim = (size_t)rows * cols;
    uint8_t *px = malloc(n * dim), *lb = malloc(n);
    for (uint32_t i = 0; i < n; i++) {
        for (size_t k = 0; k < dim; k++)
            px[i * dim + k] = k == 0   ? (uint8_t)(i & 255)
                              : k == 1 ? (uint8_t)(i >> 8)
                                       : (uint8_t)(k % 2 ? 0 : 255);
        lb[i] = (uint8_t)(i % classes);
    }
    const uint32_t idims[3] = {n, rows, cols}, ldims[1] = {n};
    write_idx(images, 1, 0x803, idims, 3, px, n * dim);
    write_idx(labels, 1, 0x801, ldims, 1, lb, n);
    free(px);
    free(lb);
}

/* The example index encoded in a batch row written by write_indexed_set. */
static inline unsigned decode_index(const float *x)
{
    return (unsigned)(x[0] * 255.0f + 0.5f) +
           256u * (unsigned)(x[1] * 255.0f + 0.5f);
}

#endif
