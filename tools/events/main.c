/* tools/events/main.c: rf-events, prints the events of TensorBoard event
 * files (tf.compat.v1.train.summary_iterator on the command line): each
 * FILE, and for a DIR the events.out.tfevents.* files in it and in its
 * eval/ folder (where rf-trainer's chief and evaluator write them), in
 * name order. Text by default, JSON lines with --json (rf-plot reads
 * those). A corrupt file's events up to the bad record are printed, then
 * the error; the other files are still read. Exit 0, 1 when a file could
 * not be read whole (or a DIR holds no event file), 2 on a usage error. */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "events_tool.h"
#include "rdmaflow/env.h"
#include "rdmaflow/flags.h"
#include "rdmaflow/version.h"

#define EVENT_PREFIX "events.out.tfevents."

static const char usage_text[] =
    "usage: rf-events [--json] FILE|DIR...\n"
    "       rf-events --help | --version\n"
    "\n"
    "Prints the events of TensorBoard event files (events.out.tfevents.*,\n"
    "as rf-trainer's chief writes into --checkpoint_dir or --summary_dir\n"
    "and its evaluator into their eval/ folder, or as TensorFlow writes\n"
    "them): for a DIR, the event files in it and in DIR/eval, in name\n"
    "order. Each event is a line: its step, wall time (seconds since the\n"
    "epoch) and scalar values as tag=value, or the file version or session\n"
    "status it carries; values that are not scalars (images, histograms)\n"
    "are counted, not printed. Text from a file is printed with control\n"
    "characters escaped (\\xNN). Every record's CRC32Cs are checked: a\n"
    "corrupt or cut-short file's events are printed up to the bad record,\n"
    "then the error, naming the record and its byte offset.\n"
    "\n"
    "With --json, one JSON object per line: {\"file\", \"record\", \"step\",\n"
    "\"wall_time\", \"kind\" (file_version, summary, session_log or other),\n"
    "\"values\": {TAG: VALUE}}, with \"file_version\", \"session_status\" or\n"
    "\"skipped\" (values that are not scalars) by kind; a value that is not\n"
    "finite is the string \"NaN\", \"Infinity\" or \"-Infinity\", and bytes\n"
    "that are not UTF-8 become U+FFFD.\n"
    "\n"
    "Exit status: 0, 1 when a file could not be read whole or a DIR holds\n"
    "no event file, 2 on a usage error.\n"
    "\n"
    "Options:\n";

typedef struct options {
    bool json, help, version;
} options;

#define FLAG_ROWS 4
static void flag_rows(rf_flag_row rows[FLAG_ROWS], options *o)
{
    const rf_flag_row table[FLAG_ROWS] = {
        RF_FLAG_BOOL("json", &o->json,
                     "print each event as a JSON object on one line"),
        RF_FLAG_STOP("help", &o->help, "print this help and exit"),
        RF_FLAG_STOP("version", &o->version, "print the version and exit"),
        {0},
    };
    memcpy(rows, table, sizeof table);
}

/* An error about a path or from a file, its controls escaped: either may
 * hold anything (the library's messages come escaped already, so \ and "
 * are left as they are). */
static void report(const char *what)
{
    char buf[2048];
    rf_escape(buf, sizeof buf, what, strlen(what), RF_ESCAPE_CONTROLS);
    fflush(stdout);
    fprintf(stderr, "rf-events: %s\n", buf);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt,
                                                             ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    report(msg); /* it may quote an argument */
    fprintf(stderr, "(rf-events --help for usage)\n");
    return 2;
}

/* Prints the events of one file; false when it could not be read whole. */
static bool print_file(const char *path, const options *o, bool header)
{
    if (header && !o->json) {
        fputs("==> ", stdout);
        rf_fputs_escaped(path, stdout);
        fputs(" <==\n", stdout);
    }
    rf_summary_reader *r = NULL;
    if (rf_summary_reader_open(path, &r) != RF_OK) {
        report(rf_error_message());
        return false;
    }
    bool ok = true, end = false;
    rf_summary_event ev;
    while (!end) {
        if (rf_summary_reader_next(r, &ev, &end) != RF_OK) {
            report(rf_error_message());
            ok = false;
            break;
        }
        if (end)
            break;
        if (!o->json) {
            ev_print_text(stdout, &ev);
        } else if (ev_print_json(stdout, path, &ev) < 0) {
            report("out of memory");
            ok = false;
            break;
        }
    }
    rf_summary_reader_close(r);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends dir's event files (regular files named events.out.tfevents.*),
 * as "dir/name" in name order, to *list; false (reported) when dir cannot
 * be read. */
static bool list_dir(const char *dir, char ***list, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s: cannot read the directory", dir);
        report(msg);
        return false;
    }
    size_t first = *n;
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, EVENT_PREFIX, strlen(EVENT_PREFIX)) != 0)
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = malloc(len);
        char **grown = realloc(*list, (*n + 1) * sizeof **list);
        if (!path || !grown) {
            free(path);
            if (grown)
                *list = grown;
            report("out of memory");
            ok = false;
            break;
        }
        *list = grown;
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        (*list)[(*n)++] = path;
    }
    closedir(d);
    if (*n > first) /* *list may still be NULL */
        qsort(*list + first, *n - first, sizeof **list, by_name);
    return ok;
}

/* The files an argument stands for: a FILE itself, a DIR's event files
 * and its eval folder's. false (reported) when there are none. */
static bool expand(const char *arg, char ***list, size_t *n)
{
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)) {
        char *copy = strdup(arg);
        char **grown = realloc(*list, (*n + 1) * sizeof **list);
        if (grown)
            *list = grown;
        if (!copy || !grown) {
            free(copy);
            report("out of memory");
            return false;
        }
        (*list)[(*n)++] = copy; /* opening it says what is wrong */
        return true;
    }
    size_t before = *n;
    if (!list_dir(arg, list, n))
        return false;
    size_t len = strlen(arg) + sizeof "/eval";
    char *eval = malloc(len);
    if (!eval) {
        report("out of memory");
        return false;
    }
    snprintf(eval, len, "%s/eval", arg);
    bool ok =
        stat(eval, &st) != 0 || !S_ISDIR(st.st_mode) || list_dir(eval, list, n);
    free(eval);
    if (ok && *n == before) {
        char msg[600];
        snprintf(msg, sizeof msg,
                 "%s: no event files (" EVENT_PREFIX "*) in it or in its "
                 "eval folder",
                 arg);
        report(msg);
        return false;
    }
    return ok;
}

int main(int argc, char **argv)
{
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-events: %s\n", rf_error_message());
        return 2;
    }
    options o = {0};
    rf_flag_row rows[FLAG_ROWS];
    flag_rows(rows, &o);
    rf_flag_table t = {.rows = rows, .exact_names = true, .long_only = true};
    rf_flag_error err;
    int n = 0;
    int rc = rf_flags_parse(&t, argc, argv, &n, &err);
    if (rc < 0)
        return usage_error("%s", err.message);
    if (o.help) {
        fputs(usage_text, stdout);
        rf_flags_print_help(stdout, &t);
        return 0;
    }
    if (o.version) {
        printf("rf-events (rdmaflow) %s\n", rf_version());
        return 0;
    }
    if (n == 0)
        return usage_error("%s", "no FILE or DIR given");
    for (int i = 1; i <= n; i++)
        if (!*argv[i])
            return usage_error("argument %d is an empty string", i);
    char **files = NULL;
    size_t count = 0;
    bool ok = true;
    for (int i = 1; i <= n; i++)
        ok = expand(argv[i], &files, &count) && ok;
    for (size_t i = 0; i < count; i++) {
        ok = print_file(files[i], &o, count > 1) && ok;
        free(files[i]);
    }
    free(files);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("rf-events: stdout");
        return 1;
    }
    return ok ? 0 : 1;
}
