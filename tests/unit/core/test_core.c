/* tests/unit/core/test_core.c: unit tests of the fabric core that need no peer:
 * status names, error messages, environment parsing, log levels, descriptor
 * packing, provider selection and the argument checks of fabric.c; the
 * settings table (core/env_table.c) and reading through it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "rdmaflow/data.h"
#include "rdmaflow/env.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/status.h"
#include "rdmaflow/types.h"
#include "tests/common/check.h"

static void test_status_strings(void)
{
    const rf_status all[] = {
        RF_OK,
        RF_INPROGRESS,
        RF_ERR_INVALID_ARG,
        RF_ERR_NO_MEMORY,
        RF_ERR_NO_RESOURCE,
        RF_ERR_UNSUPPORTED,
        RF_ERR_REMOTE_ACCESS,
        RF_ERR_TIMEOUT,
        RF_ERR_DISCONNECTED,
        RF_ERR_ABORTED,
        RF_ERR_UNAVAILABLE,
        RF_ERR_IO,
        RF_ERR_CORRUPT,
        RF_ERR_AUTH,
        RF_ERR_NUMERIC,
    };
    CHECK(sizeof all / sizeof all[0] == RF_STATUS_COUNT, "count %zu",
          sizeof all / sizeof all[0]);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const char *name = rf_status_string(all[i]);
        CHECK(strncmp(name, "RF_", 3) == 0 && strcmp(name, "RF_ERR_UNKNOWN"),
              "code %d named %s", (int)all[i], name);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(name, rf_status_string(all[j])) != 0,
                  "codes %d and %d share the name %s", (int)all[i], (int)all[j],
                  name);
    }
    CHECK(strcmp(rf_status_string(RF_ERR_TIMEOUT), "RF_ERR_TIMEOUT") == 0, "%s",
          rf_status_string(RF_ERR_TIMEOUT));
    CHECK(strcmp(rf_status_string((rf_status)-100), "RF_ERR_UNKNOWN") == 0,
          "%s", rf_status_string((rf_status)-100));
    CHECK(strcmp(rf_status_string((rf_status)7), "RF_ERR_UNKNOWN") == 0, "%s",
          rf_status_string((rf_status)7));
}

static void test_error_message(void)
{
    rf_error_clear();
    CHECK(rf_error_message()[0] == '\0', "not cleared");
    rf_status st = rf_error_set(RF_ERR_IO, "reading %s failed", "x.bin");
    CHECK(st == RF_ERR_IO, "returned %d", (int)st);
    CHECK(strcmp(rf_error_message(), "reading x.bin failed") == 0, "got '%s'",
          rf_error_message());
    /* wrapping the cause: the message is an argument of its own update */
    rf_error_set(RF_ERR_IO, "ps task %d: %s", 3, rf_error_message());
    rf_error_set(RF_ERR_IO, "%s (and again: %s)", rf_error_message(),
                 rf_error_message());
    CHECK(strcmp(rf_error_message(),
                 "ps task 3: reading x.bin failed (and again: ps task 3: "
                 "reading x.bin failed)") == 0,
          "got '%s'", rf_error_message());
    /* rf_error_prefix: context in front, in place; alone when empty */
    rf_error_set(RF_ERR_IO, "disk full");
    st = rf_error_prefix(RF_ERR_CORRUPT, "saving '%s'", "m.ckpt");
    CHECK(st == RF_ERR_CORRUPT, "rf_error_prefix returned %d", (int)st);
    CHECK(strcmp(rf_error_message(), "saving 'm.ckpt': disk full") == 0,
          "got '%s'", rf_error_message());
    rf_error_clear();
    rf_error_prefix(RF_ERR_IO, "step %d", 7);
    CHECK(strcmp(rf_error_message(), "step 7") == 0, "got '%s'",
          rf_error_message());
}

/* rf_shape_format (core/types.c) keeps snprintf's contract across its
 * appends: cut to fit, NUL-terminated, the full length returned. */
static void test_shape_format(void)
{
    rf_shape s = RF_SHAPE(-1, 784, 10);
    char buf[32];
    CHECK(rf_shape_format(&s, buf, sizeof buf) == 10 &&
              !strcmp(buf, "[?,784,10]"),
          "got '%s'", buf);
    char small[6];
    memset(small, 'x', sizeof small);
    CHECK(rf_shape_format(&s, small, sizeof small) == 10 &&
              !strcmp(small, "[?,78"),
          "cut to '%.6s'", small);
    CHECK(rf_shape_format(&s, NULL, 0) == 10, "the length without a buffer");
    rf_shape scalar = RF_SCALAR;
    CHECK(rf_shape_format(&scalar, buf, sizeof buf) == 2 && !strcmp(buf, "[]"),
          "got '%s'", buf);
}

static void test_env(void)
{
    int64_t v = 0;
    unsetenv("RF_TEST_INT");
    CHECK(rf_env_int("RF_TEST_INT", 42, 0, 100, &v) == RF_OK && v == 42,
          "default %" PRId64, v);
    setenv("RF_TEST_INT", "17", 1);
    CHECK(rf_env_int("RF_TEST_INT", 42, 0, 100, &v) == RF_OK && v == 17,
          "parsed %" PRId64, v);
    setenv("RF_TEST_INT", "17x", 1);
    v = 5;
    CHECK(rf_env_int("RF_TEST_INT", 42, 0, 100, &v) == RF_ERR_INVALID_ARG &&
              v == 5,
          "trailing junk accepted");
    CHECK(strstr(rf_error_message(), "RF_TEST_INT") &&
              strstr(rf_error_message(), "offset 2"),
          "message '%s' must name the variable and the bad character",
          rf_error_message());
    setenv("RF_TEST_INT", "101", 1);
    CHECK(rf_env_int("RF_TEST_INT", 42, 0, 100, &v) == RF_ERR_INVALID_ARG,
          "out of range accepted");
    setenv("RF_TEST_INT", "99999999999999999999999", 1);
    CHECK(rf_env_int("RF_TEST_INT", 42, 0, INT64_MAX, &v) == RF_ERR_INVALID_ARG,
          "overflow accepted");
    unsetenv("RF_TEST_INT");

    static const char *const modes[] = {"poll", "event", NULL};
    int idx = -1;
    setenv("RF_TEST_MODE", "event", 1);
    CHECK(rf_env_choice("RF_TEST_MODE", modes, 0, &idx) == RF_OK && idx == 1,
          "idx %d", idx);
    setenv("RF_TEST_MODE", "evnt", 1);
    CHECK(rf_env_choice("RF_TEST_MODE", modes, 0, &idx) == RF_ERR_INVALID_ARG,
          "unknown choice accepted");
    CHECK(strstr(rf_error_message(), "poll|event") != NULL,
          "message '%s' must list the choices", rf_error_message());
    unsetenv("RF_TEST_MODE");
    CHECK(rf_env_choice("RF_TEST_MODE", modes, 0, &idx) == RF_OK && idx == 0,
          "default idx %d", idx);
}

/* Every row of the settings table is whole: an integer's default is in
 * its range or shown as words, its shown default is the number otherwise;
 * a choice's default is one of its choices; the rows that repeat a public
 * header's constant agree with it. */
static void test_settings_table(void)
{
    int rows = 0;
    for (const rf_env_var *v = rf_env_vars(); v->name; v++, rows++) {
        CHECK(v->def && v->reader && v->meaning, "%s: a column is empty",
              v->name);
        CHECK(rf_env_find(v->name) == v, "%s: not found by name", v->name);
        if (v->kind == RF_ENV_INT) {
            char shown[32];
            snprintf(shown, sizeof shown, "%" PRId64, v->int_def);
            bool in_range = v->int_def >= v->min && v->int_def <= v->max;
            CHECK(v->min <= v->max, "%s: empty range", v->name);
            CHECK(in_range ? strcmp(shown, v->def) == 0
                           : strcmp(shown, v->def) != 0,
                  "%s: default %" PRId64 " shown as '%s' (range [%" PRId64
                  ", %" PRId64 "])",
                  v->name, v->int_def, v->def, v->min, v->max);
        } else if (v->kind == RF_ENV_CHOICE) {
            bool found = false;
            for (int i = 0; v->choices && v->choices[i]; i++)
                found |= strcmp(v->choices[i], v->def) == 0;
            CHECK(found, "%s: default '%s' is not a choice", v->name, v->def);
        } else {
            CHECK(!v->text_def || strcmp(v->text_def, v->def) == 0,
                  "%s: text default '%s' shown as '%s'", v->name, v->text_def,
                  v->def);
        }
    }
    CHECK(rows >= 30, "only %d rows", rows);
    const rf_env_var *spin = rf_env_find("RF_CQ_SPIN_US");
    CHECK(spin && spin->int_def == RF_CQ_SPIN_US_DEFAULT &&
              spin->max == RF_CQ_SPIN_US_MAX,
          "RF_CQ_SPIN_US's row disagrees with fabric.h");
    const rf_env_var *fm = rf_env_find("RF_FASHION_MNIST_DIR");
    CHECK(fm && fm->text_def && strcmp(fm->text_def, RF_FASHION_MNIST_DIR) == 0,
          "RF_FASHION_MNIST_DIR's row disagrees with data.h");
    CHECK(!rf_env_find("RF_NO_SUCH_SETTING"), "an unknown name was found");
}

/* Reading through the table: the row's default, range and choices. */
static void test_settings_read(void)
{
    int64_t v = -1;
    unsetenv("RF_PS_CHUNK_MB");
    CHECK(rf_setting_int("RF_PS_CHUNK_MB", &v) == RF_OK && v == 64,
          "unset RF_PS_CHUNK_MB read %" PRId64, v);
    setenv("RF_PS_CHUNK_MB", "0", 1);
    CHECK(rf_setting_int("RF_PS_CHUNK_MB", &v) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "RF_PS_CHUNK_MB: 0 is out of range "
                                         "[1, 1048576]"),
          "RF_PS_CHUNK_MB=0: %s", rf_error_message());
    CHECK(rf_setting_check(rf_env_find("RF_PS_CHUNK_MB")) == RF_ERR_INVALID_ARG,
          "rf_setting_check passed RF_PS_CHUNK_MB=0");
    setenv("RF_PS_CHUNK_MB", "", 1);
    CHECK(rf_setting_int("RF_PS_CHUNK_MB", &v) == RF_OK && v == 64,
          "empty RF_PS_CHUNK_MB read %" PRId64, v);
    unsetenv("RF_PS_CHUNK_MB");
    CHECK(rf_setting_int("RF_NO_SUCH_SETTING", &v) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "RF_NO_SUCH_SETTING"),
          "an unknown setting: %s", rf_error_message());
    CHECK(rf_setting_int("RF_FABRIC", &v) == RF_ERR_INVALID_ARG,
          "a text row read as an integer");

    int idx = -1;
    unsetenv("RF_VERBS_CQ_MODE");
    CHECK(rf_setting_choice("RF_VERBS_CQ_MODE", &idx) == RF_OK && idx == 1,
          "unset RF_VERBS_CQ_MODE is choice %d, want 1 (event)", idx);
    setenv("RF_VERBS_CQ_MODE", "poll", 1);
    CHECK(rf_setting_choice("RF_VERBS_CQ_MODE", &idx) == RF_OK && idx == 0,
          "RF_VERBS_CQ_MODE=poll is choice %d", idx);
    setenv("RF_VERBS_CQ_MODE", "busy", 1);
    CHECK(rf_setting_choice("RF_VERBS_CQ_MODE", &idx) == RF_ERR_INVALID_ARG,
          "RF_VERBS_CQ_MODE=busy accepted");
    unsetenv("RF_VERBS_CQ_MODE");

    unsetenv("RF_FABRIC");
    const char *f = rf_setting_str("RF_FABRIC");
    CHECK(f && strcmp(f, "auto") == 0, "unset RF_FABRIC is '%s'",
          f ? f : "(null)");
    unsetenv("RF_BIND_ADDR");
    CHECK(rf_setting_str("RF_BIND_ADDR") == NULL,
          "unset RF_BIND_ADDR has a value");
    setenv("RF_BIND_ADDR", "0.0.0.0", 1);
    f = rf_setting_str("RF_BIND_ADDR");
    CHECK(f && strcmp(f, "0.0.0.0") == 0, "RF_BIND_ADDR read '%s'",
          f ? f : "(null)");
    unsetenv("RF_BIND_ADDR");
}

/* rf_escape: the tensor name, each kind of escape, invalid UTF-8,
 * C1 controls, the CONTROLS mode, cutting between escapes; rf_echo and
 * rf_error_set escape too. */
static void test_escape(void)
{
    char buf[256];
    const char evil[] = "\x1b[2J\x1b[31mEVIL\n";
    rf_escape(buf, sizeof buf, evil, strlen(evil), RF_ESCAPE_ALL);
    CHECK(!strcmp(buf, "\\x1b[2J\\x1b[31mEVIL\\n"), "evil: %s", buf);
    const char mix[] = "a\tb\rc\\d\"e\x7f\x01\xc2\x9b"
                       "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff\xc3";
    size_t need = rf_escape(buf, sizeof buf, mix, strlen(mix), RF_ESCAPE_ALL);
    const char *want = "a\\tb\\rc\\\\d\\\"e\\x7f\\x01\\xc2\\x9b"
                       "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\\xff\\xc3";
    CHECK(!strcmp(buf, want) && need == strlen(want), "mix: %s (%zu)", buf,
          need);
    /* overlong '/', a surrogate, above U+10FFFF: each byte escaped */
    const char bad[] = "\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80";
    rf_escape(buf, sizeof buf, bad, strlen(bad), RF_ESCAPE_ALL);
    CHECK(!strcmp(buf, "\\xc0\\xaf\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80"),
          "bad: %s", buf);
    rf_escape(buf, sizeof buf, "a\0b", 3, RF_ESCAPE_ALL);
    CHECK(!strcmp(buf, "a\\x00b"), "nul: %s", buf);
    rf_escape(buf, sizeof buf, "x\\\"\n", 4, RF_ESCAPE_CONTROLS);
    CHECK(!strcmp(buf, "x\\\"\\n"), "controls: %s", buf);
    /* cut between escapes, snprintf's count */
    char small[6];
    need = rf_escape(small, sizeof small, "ab\x1b", 3, RF_ESCAPE_ALL);
    CHECK(!strcmp(small, "ab") && need == 6, "cut: %s %zu", small, need);
    char *d = rf_escape_dup(evil);
    CHECK(d && !strcmp(d, "\\x1b[2J\\x1b[31mEVIL\\n"), "dup: %s", d);
    free(d);
    CHECK(!strcmp(RF_ECHO("\x1b]0;t\a"), "\\x1b]0;t\\x07"), "%s",
          RF_ECHO("\x1b]0;t\a"));
    rf_error_set(RF_ERR_CORRUPT, "name %s", evil);
    CHECK(!strchr(rf_error_message(), 0x1b) &&
              strstr(rf_error_message(), "\\x1b[31mEVIL\\n"),
          "error: %s", rf_error_message());
    /* a log line (the logger writes to stderr here: RF_LOG_FILE unset) */
    char path[] = "/tmp/rf-test-core-log.XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    CHECK(fd >= 0 && saved >= 0, "%s", "mkstemp/dup");
    fflush(stderr);
    dup2(fd, 2);
    RF_LOG_ERRORF("peer sent %s", evil);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char line[512] = "";
    ssize_t got = pread(fd, line, sizeof line - 1, 0);
    close(fd);
    unlink(path);
    CHECK(got > 0 && !memchr(line, 0x1b, (size_t)got) &&
              strstr(line, "peer sent \\x1b[2J\\x1b[31mEVIL\\n\n"),
          "log line: %s", line);
}

/* rf_echo: short values unchanged, long ones cut to RF_ECHO_MAX bytes and
 * "...", never inside a UTF-8 sequence, small buffers respected. */
static void test_echo(void)
{
    char buf[RF_ECHO_BUF], big[300];
    CHECK(!strcmp(rf_echo("abc", buf, sizeof buf), "abc"), "%s", buf);
    memset(big, 'x', sizeof big);
    big[RF_ECHO_MAX] = '\0';
    CHECK(!strcmp(rf_echo(big, buf, sizeof buf), big), "64 bytes cut: %s", buf);
    big[RF_ECHO_MAX] = 'y';
    big[sizeof big - 1] = '\0';
    rf_echo(big, buf, sizeof buf);
    CHECK(strlen(buf) == RF_ECHO_MAX + 3 && !strncmp(buf, big, RF_ECHO_MAX) &&
              !strcmp(buf + RF_ECHO_MAX, "..."),
          "long: '%s'", buf);
    /* a 2-byte UTF-8 character across the cut is dropped whole */
    memset(big, 'x', sizeof big);
    memcpy(big + RF_ECHO_MAX - 1, "\xc3\xa9", 2);
    big[sizeof big - 1] = '\0';
    rf_echo(big, buf, sizeof buf);
    CHECK(strlen(buf) == RF_ECHO_MAX - 1 + 3 && buf[RF_ECHO_MAX - 2] == 'x',
          "utf-8 cut: '%s'", buf);
    char small[8];
    CHECK(!strcmp(rf_echo(big, small, sizeof small), "xxxx..."), "small: %s",
          small);
    CHECK(!strcmp(rf_echo(NULL, buf, sizeof buf), "(null)"), "%s", buf);
    CHECK(!strcmp(RF_ECHO("ok"), "ok"), "%s", "RF_ECHO");
    /* in a message, the reason after the value survives */
    CHECK(rf_parse_int(big, 0, 1, "--n", &(int64_t){0}) == RF_ERR_INVALID_ARG,
          "%s", "parse");
    CHECK(strstr(rf_error_message(), "...' is not an integer") != NULL, "%s",
          rf_error_message());
}

static void test_log_levels(void)
{
    rf_log_level l;
    CHECK(rf_log_parse_level("debug", &l) == 0 && l == RF_LOG_DEBUG, "debug");
    CHECK(rf_log_parse_level("verbose", &l) == -1, "unknown level accepted");
    rf_log_level old = rf_log_threshold();
    rf_log_set_threshold(RF_LOG_TRACE);
    CHECK(rf_log_threshold() == RF_LOG_TRACE, "threshold not set");
    rf_log_set_threshold(old);
}

static void test_desc_pack(void)
{
    rf_mr_desc in = {.addr = 0x0123456789abcdefull,
                     .len = 0xfedcba9876543210ull,
                     .rkey = 0xdeadbeef};
    unsigned char wire[RF_MR_DESC_PACKED_SIZE];
    rf_mr_desc_pack(&in, wire);
    CHECK(wire[0] == 0xef && wire[7] == 0x01 && wire[16] == 0xef &&
              wire[19] == 0xde,
          "not little-endian");
    rf_mr_desc out;
    rf_mr_desc_unpack(wire, &out);
    CHECK(out.addr == in.addr && out.len == in.len && out.rkey == in.rkey,
          "round trip changed the descriptor");
}

static void test_provider_selection(void)
{
    rf_fabric *fab = (rf_fabric *)1;
    CHECK(rf_fabric_open("nosuch", NULL, &fab) == RF_ERR_INVALID_ARG &&
              fab == NULL,
          "unknown provider accepted");
    CHECK(strstr(rf_error_message(), "nosuch") &&
              strstr(rf_error_message(), "sock"),
          "message '%s' must name the provider and list the compiled-in ones",
          rf_error_message());
    const char *const *names = rf_fabric_providers();
    int has_sock = 0;
    for (int i = 0; names[i]; i++)
        has_sock |= strcmp(names[i], "sock") == 0;
    CHECK(has_sock, "sock provider not listed");

    setenv("RF_FABRIC", "sock", 1);
    CHECK(rf_fabric_open("auto", NULL, &fab) == RF_OK, "open auto=sock");
    if (fab) {
        CHECK(strcmp(rf_fabric_provider(fab), "sock") == 0, "opened %s",
              rf_fabric_provider(fab));
        rf_fabric_close(fab);
    }
    unsetenv("RF_FABRIC");
    /* Unset, the default is auto: one fabric over every provider. */
    CHECK(rf_fabric_open(NULL, NULL, &fab) == RF_OK, "open default: %s",
          rf_error_message());
    if (fab) {
        CHECK(strcmp(rf_fabric_provider(fab), "auto") == 0,
              "default opened %s, not auto", rf_fabric_provider(fab));
        rf_fabric_close(fab);
    }
}

static void test_argument_checks(void)
{
    rf_fabric *fab = NULL;
    if (rf_fabric_open("sock", NULL, &fab) != RF_OK) {
        CHECK(0, "cannot open sock");
        return;
    }
    static uint64_t buf[64];
    rf_mr *mr = (rf_mr *)1;
    CHECK(rf_mr_reg(fab, buf, 0, RF_ACCESS_LOCAL_WRITE, &mr) ==
                  RF_ERR_INVALID_ARG &&
              mr == NULL,
          "empty region accepted");
    CHECK(rf_mr_reg(fab, buf, sizeof buf, 1u << 9, &mr) == RF_ERR_INVALID_ARG,
          "unknown access bits accepted");
    CHECK(rf_mr_reg(fab, buf, sizeof buf, RF_ACCESS_REMOTE_WRITE, &mr) ==
              RF_ERR_INVALID_ARG,
          "remote write without local write accepted");
    rf_cq *cq = NULL;
    CHECK(rf_cq_create(fab, 0, &cq) == RF_ERR_INVALID_ARG, "depth 0 accepted");

    CHECK(rf_mr_reg(fab, buf, sizeof buf, RF_ACCESS_ALL, &mr) == RF_OK,
          "register");
    rf_mr_desc d;
    rf_mr_describe(mr, &d);
    CHECK(d.addr == (uint64_t)(uintptr_t)buf && d.len == sizeof buf &&
              d.rkey != 0,
          "descriptor %" PRIx64 "+%" PRIu64 " rkey %u", d.addr, d.len, d.rkey);
    CHECK(rf_mr_addr(mr) == buf && rf_mr_len(mr) == sizeof buf, "accessors");

    CHECK(rf_cq_create(fab, 16, &cq) == RF_OK, "cq");
    rf_completion c;
    CHECK(rf_cq_poll(cq, &c, 1) == 0, "empty cq returned something");
    CHECK(rf_cq_wait(cq, &c, 1, 10) == RF_ERR_TIMEOUT,
          "empty cq wait must time out");
    rf_ep_attr attr = {.send_cq = cq};
    unsigned char big[RF_MAX_PRIVATE_DATA + 1] = {0};
    rf_ep *ep = NULL;
    CHECK(rf_connect(fab, "127.0.0.1", 1, &attr, big, sizeof big, 100, &ep) ==
              RF_ERR_INVALID_ARG,
          "oversize private data accepted");
    rf_ep_attr no_cq = {0};
    CHECK(rf_connect(fab, "127.0.0.1", 1, &no_cq, NULL, 0, 100, &ep) ==
              RF_ERR_INVALID_ARG,
          "missing send_cq accepted");
    CHECK(rf_connect(fab, "127.0.0.1", 0, &attr, NULL, 0, 100, &ep) ==
              RF_ERR_INVALID_ARG,
          "port 0 accepted");
    rf_cq_destroy(cq);
    rf_mr_dereg(mr);
    rf_fabric_close(fab);
}

int main(void)
{
    test_status_strings();
    test_error_message();
    test_shape_format();
    test_env();
    test_settings_table();
    test_settings_read();
    test_echo();
    test_escape();
    test_log_levels();
    test_desc_pack();
    test_provider_selection();
    test_argument_checks();
    printf("core unit tests passed\n");
    return 0;
}
