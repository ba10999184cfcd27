/* tools/ckpt/main.c: rf-ckpt, the checkpoint tool: list, verify and diff
 * (diff.c) of checkpoint files (safetensors with CRC32Cs) and checkpoint
 * directories (a TensorFlow-style "checkpoint" state file). verify is
 * rf_ckpt_verify, strict unless --allow-unchecked. Each command reads its
 * flags through a flag table (rdmaflow/flags.h) and maps the
 * table's errors to rf-ckpt's words. Exit 0 on success, 1 when a file
 * fails or files differ, 2 on a usage error. */
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_tool.h"
#include "rdmaflow/env.h"
#include "rdmaflow/flags.h"
#include "rdmaflow/version.h"

static const char usage[] =
    "usage: rf-ckpt list FILE|DIR\n"
    "       rf-ckpt verify [--allow-unchecked] FILE|DIR\n"
    "       rf-ckpt diff A B [--rtol R] [--atol A]\n"
    "       rf-ckpt --help | --version\n"
    "\n"
    "  list    each tensor's name, dtype, shape, bytes and CRC32C; for a\n"
    "          checkpoint directory its latest checkpoint and the kept list\n"
    "  verify  exit 0 if the file (for a DIR: every kept checkpoint) opens,\n"
    "          carries a CRC32C for every tensor and for its header, and\n"
    "          every CRC32C matches; 1 with the reason otherwise (a file\n"
    "          without them, such as a plain safetensors file, fails, naming\n"
    "          the tensors that have none); a checkpoint's shard ledger\n"
    "          (elastic workers) must parse and check, and is described\n"
    "          on a line before the verdict\n"
    "  diff    tensors only in one, dtype or shape differences, and for\n"
    "          equal shapes the number of differing elements and the max\n"
    "          abs difference (|a - b| > atol + rtol * |b| differs; NaN\n"
    "          equals NaN); exit 0 when equal, 1 otherwise. A DIR stands\n"
    "          for its latest checkpoint\n"
    "\n"
    "verify's flag:\n";

/* verify's flag; list takes none. */
#define VERIFY_ROWS 2
static void verify_flag_rows(rf_flag_row rows[VERIFY_ROWS], bool *allow)
{
    const rf_flag_row table[VERIFY_ROWS] = {
        RF_FLAG_BOOL(
            "allow-unchecked", allow,
            "accept tensors and a header without a CRC32C, still check "
            "the CRC32Cs that are there, and say how many tensors could "
            "not be checked"),
        {0},
    };
    memcpy(rows, table, sizeof table);
}

/* diff's tolerances (0: exact). */
#define DIFF_ROWS 3
static void diff_flag_rows(rf_flag_row rows[DIFF_ROWS], double *rtol,
                           double *atol)
{
    const rf_flag_row table[DIFF_ROWS] = {
        RF_FLAG_DOUBLE("rtol", rtol, "0", 0, DBL_MAX, "R",
                       "relative tolerance, a non-negative number"),
        RF_FLAG_DOUBLE("atol", atol, "0", 0, DBL_MAX, "A",
                       "absolute tolerance, a non-negative number"),
        {0},
    };
    memcpy(rows, table, sizeof table);
}

static void print_usage(void)
{
    rf_flag_row verify_rows[VERIFY_ROWS], diff_rows[DIFF_ROWS];
    bool allow;
    double rtol, atol;
    verify_flag_rows(verify_rows, &allow);
    diff_flag_rows(diff_rows, &rtol, &atol);
    fputs(usage, stdout);
    rf_flags_print_help(stdout, &(rf_flag_table){.rows = verify_rows});
    fputs("\ndiff's flags:\n", stdout);
    rf_flags_print_help(stdout, &(rf_flag_table){.rows = diff_rows});
}

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rf-ckpt: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(rf-ckpt --help for usage)\n");
    va_end(ap);
    return 2;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

rf_ckpt *tool_open(const char *path)
{
    rf_ckpt *ck = NULL;
    rf_status st;
    if (is_dir(path)) {
        st = rf_ckpt_dir_open_latest(path, &ck, NULL, 0);
        if (st == RF_OK && *rf_ckpt_note(ck))
            fprintf(stderr, "rf-ckpt: %s\n", rf_ckpt_note(ck));
    } else {
        st = rf_ckpt_open(path, &ck);
    }
    if (st != RF_OK) {
        fprintf(stderr, "rf-ckpt: %s\n", rf_error_message());
        return NULL;
    }
    return ck;
}

static void print_tensors(const rf_ckpt *ck)
{
    printf("%s: %zu tensors%s\n", rf_esc(rf_ckpt_path(ck)), rf_ckpt_count(ck),
           rf_ckpt_has_crc(ck) ? ", CRC32C verified"
                               : ", no CRC32C stored (computed here)");
    printf("%-40s %-5s %-16s %12s %s\n", "name", "dtype", "shape", "bytes",
           "crc32c");
    for (size_t i = 0; i < rf_ckpt_count(ck); i++) {
        const rf_ckpt_entry *e = rf_ckpt_at(ck, i);
        char shape[160];
        rf_shape_format(&e->t.shape, shape, sizeof shape);
        static const char *const names[] = {"F32", "I32", "I64", "BOOL"};
        printf("%-40s %-5s %-16s %12zu %08" PRIx32 "\n", rf_esc(e->t.name),
               names[e->t.dtype], shape, e->t.bytes, e->crc32c);
    }
}

static int cmd_list(const char *path)
{
    rf_ckpt_list kept = {0};
    if (is_dir(path) && rf_ckpt_dir_list(path, &kept) != RF_OK) {
        fprintf(stderr, "rf-ckpt: %s\n", rf_error_message());
        return 1;
    }
    rf_ckpt *ck = tool_open(path);
    if (!ck) {
        rf_ckpt_list_free(&kept);
        return 1;
    }
    print_tensors(ck);
    if (is_dir(path)) {
        printf("kept checkpoints (newest first):\n");
        for (size_t i = 0; i < kept.n; i++)
            printf("  %s%s\n", rf_esc(kept.paths[i]),
                   strcmp(kept.paths[i], rf_ckpt_path(ck)) ? "" : " (opened)");
    }
    rf_ckpt_list_free(&kept);
    rf_ckpt_close(ck);
    return 0;
}

/* One file through rf_ckpt_verify (strict unless allow_unchecked). */
static int verify_one(const char *path, bool allow_unchecked)
{
    rf_ckpt_verify_options opts = {.allow_unchecked = allow_unchecked};
    rf_ckpt_verify_report r;
    if (rf_ckpt_verify(path, &opts, &r) != RF_OK) {
        printf("FAIL %s\n", rf_error_message());
        /* the library's wording for CRC32Cs that are not there */
        if (!allow_unchecked &&
            strstr(rf_error_message(), ": cannot be verified: "))
            printf("     (rf-ckpt verify --allow-unchecked accepts it, "
                   "checking only the CRC32Cs it has)\n");
        return 1;
    }
    /* before the verdict, which stays the last line */
    if (r.shard_ledger[0])
        printf("   %s: its %s\n", path, r.shard_ledger);
    if (!r.unchecked && r.header_checked) {
        printf("ok %s: %zu tensors, every CRC32C matches\n", rf_esc(path),
               r.tensors);
        return 0;
    }
    printf("ok %s: %zu tensors, %zu unchecked (no CRC32C), the header %s; "
           "%s (--allow-unchecked)\n",
           rf_esc(path), r.tensors, r.unchecked,
           r.header_checked ? "checked" : "unchecked (no CRC32C)",
           r.unchecked < r.tensors || r.header_checked
               ? "every CRC32C there matches"
               : "only the layout checked");
    return 0;
}

static int cmd_verify(const char *path, bool allow_unchecked)
{
    if (!is_dir(path))
        return verify_one(path, allow_unchecked);
    rf_ckpt_list kept;
    if (rf_ckpt_dir_list(path, &kept) != RF_OK) {
        printf("FAIL %s\n", rf_error_message());
        return 1;
    }
    if (kept.n == 0) {
        printf("FAIL %s: no checkpoint (no state file)\n", rf_esc(path));
        return 1;
    }
    int bad = 0;
    for (size_t i = 0; i < kept.n; i++)
        bad += verify_one(kept.paths[i], allow_unchecked);
    rf_ckpt_list_free(&kept);
    return bad ? 1 : 0;
}

/* Whether argv has a bare "--": rf-ckpt never took it as the end of the
 * flags (the table would), so it stays an unknown flag. */
static bool has_dashdash(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--"))
            return true;
    return false;
}

/* diff A B [--rtol R] [--atol A], the flags anywhere; an argument that
 * starts with one dash is a path. */
static int cmd_diff(int argc, char **argv)
{
    rf_flag_row rows[DIFF_ROWS];
    double rtol, atol;
    diff_flag_rows(rows, &rtol, &atol);
    rf_flag_table t = {.rows = rows, .exact_names = true, .long_only = true};
    rf_flag_error err;
    int n;
    if (has_dashdash(argc, argv))
        return usage_error("%s", "unknown flag --");
    if (rf_flags_parse(&t, argc, argv, &n, &err) != RF_FLAGS_OK)
        return err.kind == RF_FLAG_ERR_UNKNOWN
                   ? usage_error("unknown flag %s", RF_ECHO(err.arg))
                   : usage_error("%s needs a non-negative number",
                                 RF_ECHO(err.arg));
    for (int i = 1; i <= n; i++) {
        if (!*argv[i])
            return usage_error("%s", "diff: a path is an empty string");
        if (i == 3)
            return usage_error("diff takes two paths, not also '%s'",
                               RF_ECHO(argv[i]));
    }
    if (n != 2)
        return usage_error("%s", "diff needs two paths A B");
    return tool_diff(argv[1], argv[2], rtol, atol);
}

/* list FILE|DIR, verify [--allow-unchecked] FILE|DIR. */
static int cmd_list_verify(const char *cmd, int argc, char **argv)
{
    bool verify = !strcmp(cmd, "verify"), allow_unchecked = false;
    rf_flag_row rows[VERIFY_ROWS];
    verify_flag_rows(rows, &allow_unchecked);
    if (!verify)
        rows[0] = rows[VERIFY_ROWS - 1]; /* list: no flags */
    rf_flag_table t = {.rows = rows, .exact_names = true};
    rf_flag_error err;
    int n;
    if (has_dashdash(argc, argv))
        return usage_error("%s", "--: unknown flag");
    if (rf_flags_parse(&t, argc, argv, &n, &err) != RF_FLAGS_OK) {
        if (err.kind == RF_FLAG_ERR_EXTRA_VALUE)
            return usage_error("%s: --allow-unchecked takes no value",
                               RF_ECHO(err.arg));
        return usage_error(strcmp(err.arg, "--allow-unchecked")
                               ? "%s: unknown flag"
                               : "%s: only verify takes it",
                           RF_ECHO(err.arg));
    }
    for (int i = 1; i <= n; i++) /* "-" */
        if (argv[i][0] == '-')
            return usage_error("%s: unknown flag", RF_ECHO(argv[i]));
    if (n != 1)
        return usage_error(
            n < 1 ? "%s needs FILE|DIR" : "%s takes one FILE|DIR", cmd);
    if (argv[1][0] == '\0')
        return usage_error("%s: the FILE|DIR is an empty string", cmd);
    return verify ? cmd_verify(argv[1], allow_unchecked) : cmd_list(argv[1]);
}

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-ckpt: %s\n", rf_error_message());
        return 2;
    }
    if (argc < 2)
        return usage_error("%s", "no command");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        print_usage();
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("rf-ckpt (rdmaflow) %s\n", rf_version());
        return 0;
    }
    if (!strcmp(cmd, "diff"))
        return cmd_diff(argc - 1, argv + 1);
    if (strcmp(cmd, "list") && strcmp(cmd, "verify"))
        return usage_error(cmd[0] == '-' ? "unknown flag %s"
                                         : "unknown command '%s'",
                           RF_ECHO(cmd));
    return cmd_list_verify(cmd, argc - 1, argv + 1);
}
