/* tests/fuzz/fuzz_event_file.c: libFuzzer target for the event-file reader
 * (rf_summary_reader, rdmaflow/summary.h: session/summary_reader.c over
 * the TFRecord reader session/tfrecord_read.c and protobuf-c's decoder).
 * rf_summary_reader_open takes a path, so the input is written to a file
 * in a private temporary directory (removed at exit): as it is, or, when
 * it starts with 'R', framed here: the rest is records of up to 255 bytes
 * (a length byte, then the bytes), each written with its length and
 * masked CRC32Cs (this file's own bitwise CRC32C), so that mutations
 * reach protobuf-c's decoder instead of dying at a CRC. Every event is read
 * until the end or an error. An error must be RF_ERR_CORRUPT naming the
 * file and the record, and the next call must fail the same way; every
 * event returned must be consistent (a kind the header names, its record
 * numbers increasing, tags and values readable, a version string for a
 * file-version event). The seeds (corpus/event_file) are files the
 * library wrote and records made by hand. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "rdmaflow/summary.h"

static char dir[64];
static char file[96];

static void cleanup(void)
{
    unlink(file);
    rmdir(dir);
}

/* CRC32C (Castagnoli, reflected 0x82f63b78), bit by bit: the test's own,
 * independent of the library's ISA-L one; masked as TensorFlow masks. */
static uint32_t masked_crc(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    c = ~c;
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void put_le(FILE *fp, uint64_t v, int bytes)
{
    uint8_t b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    REQUIRE(fwrite(b, 1, (size_t)bytes, fp) == (size_t)bytes);
}

/* data as records: a length byte, then up to that many bytes, each */
static void write_framed(FILE *fp, const uint8_t *data, size_t size)
{
    while (size > 0) {
        size_t n = data[0] < size - 1 ? data[0] : size - 1;
        uint8_t len[8];
        for (int i = 0; i < 8; i++)
            len[i] = (uint8_t)((uint64_t)n >> (8 * i));
        REQUIRE(fwrite(len, 1, 8, fp) == 8);
        put_le(fp, masked_crc(len, 8), 4);
        REQUIRE(fwrite(data + 1, 1, n, fp) == n);
        put_le(fp, masked_crc(data + 1, n), 4);
        data += 1 + n;
        size -= 1 + n;
    }
}

static void check_event(const rf_summary_event *ev, uint64_t *next_record)
{
    REQUIRE(ev->record >= *next_record);
    *next_record = ev->record + 1;
    switch (ev->kind) {
    case RF_SUMMARY_EVENT_FILE_VERSION:
        REQUIRE(ev->file_version && ev->num_values == 0);
        fuzz_require_escapes(ev->file_version); /* as rf-events prints it */
        break;
    case RF_SUMMARY_EVENT_SUMMARY:
        REQUIRE(!ev->file_version);
        REQUIRE(ev->num_values == 0 || (ev->tags && ev->values));
        for (size_t i = 0; i < ev->num_values; i++) {
            REQUIRE(ev->tags[i]);
            volatile float v = ev->values[i];
            (void)v;
            fuzz_require_escapes(ev->tags[i]);
        }
        break;
    case RF_SUMMARY_EVENT_SESSION_LOG:
    case RF_SUMMARY_EVENT_OTHER:
        REQUIRE(!ev->file_version && ev->num_values == 0 &&
                ev->num_skipped == 0);
        break;
    default:
        REQUIRE(0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz_event_file.XXXXXX",
                 tmp && strlen(tmp) < 32 ? tmp : "/tmp");
        REQUIRE(mkdtemp(dir));
        snprintf(file, sizeof file, "%s/events.out.tfevents.fuzz", dir);
        atexit(cleanup);
    }
    FILE *fp = fopen(file, "wb");
    REQUIRE(fp);
    if (size > 0 && data[0] == 'R')
        write_framed(fp, data + 1, size - 1);
    else
        REQUIRE(fwrite(data, 1, size, fp) == size);
    REQUIRE(fclose(fp) == 0);

    rf_summary_reader *r = NULL;
    REQUIRE(rf_summary_reader_open(file, &r) == RF_OK && r);
    uint64_t next_record = 0;
    rf_summary_event ev;
    bool end = false;
    rf_status st;
    while ((st = rf_summary_reader_next(r, &ev, &end)) == RF_OK && !end)
        check_event(&ev, &next_record);
    if (st != RF_OK) {
        REQUIRE(st == RF_ERR_CORRUPT);
        const char *msg = rf_error_message();
        REQUIRE(strstr(msg, file) && strstr(msg, "record "));
        fuzz_require_inert(msg);
        char first[512];
        snprintf(first, sizeof first, "%s", msg);
        REQUIRE(rf_summary_reader_next(r, &ev, &end) == st && !end);
        REQUIRE(strcmp(rf_error_message(), first) == 0);
    } else {
        /* a clean end stays one */
        REQUIRE(rf_summary_reader_next(r, &ev, &end) == RF_OK && end);
    }
    rf_summary_reader_close(r);
    return 0;
}
