/* tools/ckpt/main.c: rf-ckpt, the checkpoint tool: list, verify and diff
 * (diff.c) of checkpoint files (safetensors with CRC32Cs) and checkpoint
 * directories (a TensorFlow-style "checkpoint" state file). verify is
 * rf_ckpt_verify, strict unless --allow-unchecked. Exit 0 on success, 1
 * when a file fails or files differ, 2 on a usage error. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_tool.h"
#include "rdmaflow/env.h"
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
    "          the tensors that have none). --allow-unchecked accepts\n"
    "          tensors and a header without a CRC32C, still checks the\n"
    "          CRC32Cs that are there, and says how many tensors it could\n"
    "          not check\n"
    "  diff    tensors only in one, dtype or shape differences, and for\n"
    "          equal shapes the number of differing elements and the max\n"
    "          abs difference (|a - b| > atol + rtol * |b| differs; NaN\n"
    "          equals NaN); exit 0 when equal, 1 otherwise. Default\n"
    "          tolerances 0 (exact). A DIR stands for its latest checkpoint\n";

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
    printf("%s: %zu tensors%s\n", rf_ckpt_path(ck), rf_ckpt_count(ck),
           rf_ckpt_has_crc(ck) ? ", CRC32C verified"
                               : ", no CRC32C stored (computed here)");
    printf("%-40s %-5s %-16s %12s %s\n", "name", "dtype", "shape", "bytes",
           "crc32c");
    for (size_t i = 0; i < rf_ckpt_count(ck); i++) {
        const rf_ckpt_entry *e = rf_ckpt_at(ck, i);
        char shape[160];
        rf_shape_format(&e->t.shape, shape, sizeof shape);
        static const char *const names[] = {"F32", "I32", "I64", "BOOL"};
        printf("%-40s %-5s %-16s %12zu %08" PRIx32 "\n", e->t.name,
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
            printf("  %s%s\n", kept.paths[i],
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
    if (!r.unchecked && r.header_checked) {
        printf("ok %s: %zu tensors, every CRC32C matches\n", path, r.tensors);
        return 0;
    }
    printf("ok %s: %zu tensors, %zu unchecked (no CRC32C), the header %s; "
           "%s (--allow-unchecked)\n",
           path, r.tensors, r.unchecked,
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
        printf("FAIL %s: no checkpoint (no state file)\n", path);
        return 1;
    }
    int bad = 0;
    for (size_t i = 0; i < kept.n; i++)
        bad += verify_one(kept.paths[i], allow_unchecked);
    rf_ckpt_list_free(&kept);
    return bad ? 1 : 0;
}

static int parse_tol(const char *flag, const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || errno || !(d >= 0) || isinf(d))
        return -1;
    (void)flag;
    *out = d;
    return 0;
}

static int cmd_diff(int argc, char **argv)
{
    const char *files[2];
    int nfiles = 0;
    double rtol = 0, atol = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--", 2)) {
            const char *eq = strchr(a, '=');
            size_t k = eq ? (size_t)(eq - a) : strlen(a);
            double *dst = k == 6 && !strncmp(a, "--rtol", 6)   ? &rtol
                          : k == 6 && !strncmp(a, "--atol", 6) ? &atol
                                                               : NULL;
            if (!dst)
                return usage_error("unknown flag %s", RF_ECHO(a));
            const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (parse_tol(a, v, dst) != 0)
                return usage_error("%s needs a non-negative number",
                                   RF_ECHO(a));
            continue;
        }
        if (!*a)
            return usage_error("%s", "diff: a path is an empty string");
        if (nfiles == 2)
            return usage_error("diff takes two paths, not also '%s'",
                               RF_ECHO(a));
        files[nfiles++] = a;
    }
    if (nfiles != 2)
        return usage_error("%s", "diff needs two paths A B");
    return tool_diff(files[0], files[1], rtol, atol);
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
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("rf-ckpt (rdmaflow) %s\n", rf_version());
        return 0;
    }
    if (!strcmp(cmd, "diff"))
        return cmd_diff(argc - 2, argv + 2);
    if (strcmp(cmd, "list") && strcmp(cmd, "verify"))
        return usage_error(cmd[0] == '-' ? "unknown flag %s"
                                         : "unknown command '%s'",
                           RF_ECHO(cmd));
    /* verify's one flag, before or after the path */
    bool allow_unchecked = false;
    if (!strcmp(cmd, "verify")) {
        int k = 2;
        for (int i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--allow-unchecked"))
                allow_unchecked = true;
            else if (!strncmp(argv[i], "--allow-unchecked=", 18))
                return usage_error("%s: --allow-unchecked takes no value",
                                   RF_ECHO(argv[i]));
            else
                argv[k++] = argv[i];
        }
        argc = k;
    }
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-')
            return usage_error(strcmp(argv[i], "--allow-unchecked")
                                   ? "%s: unknown flag"
                                   : "%s: only verify takes it",
                               RF_ECHO(argv[i]));
    if (argc != 3)
        return usage_error(
            argc < 3 ? "%s needs FILE|DIR" : "%s takes one FILE|DIR", cmd);
    if (argv[2][0] == '\0')
        return usage_error("%s: the FILE|DIR is an empty string", cmd);
    return !strcmp(cmd, "list") ? cmd_list(argv[2])
                                : cmd_verify(argv[2], allow_unchecked);
}
