/* session/ckpt_dir.c: a checkpoint directory as TensorFlow's Saver keeps
 * one: rf_ckpt_dir_save (a new model.ckpt-<step>.safetensors, the state
 * file rewritten, the oldest beyond max_to_keep and the files of that
 * pattern it does not name deleted; a new file removed again if the state
 * file could not name it), rf_ckpt_dir_list and rf_ckpt_dir_open_latest
 * (the newest that verifies). */
#include "session/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "rdmaflow/escape.h"

#define DEFAULT_MAX_TO_KEEP 5

static rf_status check_dir(const char *dir)
{
    struct stat st;
    if (!dir || !*dir)
        return rf_error_set(RF_ERR_INVALID_ARG, "checkpoint directory is "
                                                "empty");
    if (stat(dir, &st) != 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "checkpoint directory %s: %s",
                            dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return rf_error_set(RF_ERR_INVALID_ARG, "%s is not a directory", dir);
    return RF_OK;
}

rf_status rf_ckpt_dir_create(const char *dir)
{
    if (!dir || !*dir)
        return rf_error_set(RF_ERR_INVALID_ARG, "checkpoint directory is "
                                                "empty");
    size_t n = strlen(dir);
    char *p = malloc(n + 1);
    if (!p)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
    memcpy(p, dir, n + 1);
    rf_status rc = RF_OK;
    /* each prefix ending before a '/', then the whole path */
    for (size_t i = 1; i <= n && rc == RF_OK; i++) {
        if (i < n && p[i] != '/')
            continue;
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = rf_error_set(RF_ERR_IO, "cannot create directory %s: %s", p,
                              strerror(errno));
        if (i < n)
            p[i] = '/';
    }
    free(p);
    if (rc == RF_OK)
        rc = check_dir(dir);
    if (rc == RF_OK && access(dir, W_OK | X_OK) != 0)
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "checkpoint directory %s is not writable: %s", dir,
                          strerror(errno));
    return rc;
}

static char *resolve(const char *dir, const char *name)
{
    return ckpt_join(name[0] == '/' ? NULL : dir, name);
}

/* The step of model.ckpt-<decimal step>.safetensors, the one name
 * rf_ckpt_dir_save writes (a checkpoint is that one file: no .index or
 * .data companions); -1 for any other name. */
static int64_t job_file_step(const char *name)
{
    static const char pre[] = "model.ckpt-", suf[] = ".safetensors";
    if (strncmp(name, pre, sizeof pre - 1) != 0)
        return -1;
    const char *p = name + sizeof pre - 1, *digits = p;
    int64_t step = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (step > (INT64_MAX - (*p - '0')) / 10)
            return -1;
        step = step * 10 + (*p - '0');
    }
    return p > digits && !strcmp(p, suf) ? step : -1;
}

typedef struct job_file {
    int64_t step;
    char *name;
} job_file;

static int by_step(const void *a, const void *b)
{
    const job_file *x = a, *y = b;
    return (x->step > y->step) - (x->step < y->step);
}

/* Whether dir/name is a regular file (not followed if a link). */
static bool regular(const char *dir, const struct dirent *e)
{
    if (e->d_type == DT_REG)
        return true;
    if (e->d_type != DT_UNKNOWN)
        return false;
    char *p = ckpt_join(dir, e->d_name);
    struct stat st;
    bool reg = p && lstat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return reg;
}

/* The directory's regular files of the pattern, oldest step first, into
 * *out (each name malloc'd; free with files_free). */
static rf_status job_files(const char *dir, job_file **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return rf_error_set(RF_ERR_IO, "cannot list %s: %s", dir,
                            strerror(errno));
    rf_status rc = RF_OK;
    size_t cap = 0;
    for (struct dirent *e; rc == RF_OK && (e = readdir(d)) != NULL;) {
        int64_t step = job_file_step(e->d_name);
        if (step < 0 || !regular(dir, e))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            job_file *f = realloc(*out, cap * sizeof *f);
            if (!f) {
                rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
                break;
            }
            *out = f;
        }
        (*out)[*n].step = step;
        if (!((*out)[*n].name = strdup(e->d_name)))
            rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
        else
            (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(*out, *n, sizeof **out, by_step);
    return rc;
}

static void files_free(job_file *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i].name);
    free(f);
}

/* Whether an entry of s (relative to dir, or absolute) is dir/name: the
 * same string, or the same file. */
static bool names_file(const char *dir, const ckpt_state *s, const char *name)
{
    char *path = ckpt_join(dir, name);
    struct stat want, got;
    bool have = path && stat(path, &want) == 0, found = false;
    for (size_t i = 0; i <= s->n && !found; i++) {
        const char *e = i < s->n ? s->all[i] : s->latest;
        if (!e)
            continue;
        found = !strcmp(e, name) || (path && !strcmp(e, path));
        char *p = have && !found ? resolve(dir, e) : NULL;
        found =
            found || (p && stat(p, &got) == 0 && got.st_dev == want.st_dev &&
                      got.st_ino == want.st_ino);
        free(p);
    }
    free(path);
    return found;
}

/* No state file, or one that cannot be read: its list is rebuilt from the
 * directory's files of the pattern, oldest step first, so max_to_keep
 * goes on counting them and none is deleted as unnamed. */
static rf_status adopt(const char *dir, ckpt_state *s)
{
    job_file *f;
    size_t n;
    rf_status rc = job_files(dir, &f, &n);
    for (size_t i = 0; rc == RF_OK && i < n; i++)
        rc = ckpt_state_add(s, f[i].name);
    files_free(f, n);
    return rc;
}

/* Deletes the files of the pattern that the state file just written
 * (kept) does not name: a save whose state file was never written, an
 * older run's, a copy dropped in by hand. Nothing else is touched. */
static void sweep(const char *dir, const ckpt_state *kept)
{
    job_file *f;
    size_t n;
    if (job_files(dir, &f, &n) != RF_OK) {
        RF_LOG_WARN("%s; unnamed checkpoint files not looked for",
                    rf_error_message());
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (names_file(dir, kept, f[i].name))
            continue;
        char *victim = ckpt_join(dir, f[i].name);
        if (victim && unlink(victim) == 0)
            RF_LOG_INFO("deleted %s: the state file does not name it", victim);
        else if (victim && errno != ENOENT)
            RF_LOG_WARN("cannot delete %s (the state file does not name "
                        "it): %s",
                        victim, strerror(errno));
        free(victim);
    }
    files_free(f, n);
}

/* The state file could not be written (rc): the new checkpoint counts as
 * saved only once a state file names it, so it is removed unless the
 * state file on disk names it anyway (the rename happened, or the same
 * step was saved before). */
static rf_status unname(const char *dir, const char *name, const char *path,
                        rf_status rc)
{
    char why[512];
    snprintf(why, sizeof why, "%s", rf_error_message());
    ckpt_state now = {0};
    bool found = false;
    bool named = ckpt_state_read(dir, &now, &found) == RF_OK && found &&
                 names_file(dir, &now, name);
    ckpt_state_free(&now);
    if (named)
        return rf_error_set(rc, "%s", why);
    if (unlink(path) != 0 && errno != ENOENT)
        return rf_error_set(rc,
                            "%s; and %s, which no state file names, "
                            "could not be removed: %s",
                            why, name, strerror(errno));
    return rf_error_set(rc, "%s (%s removed: no state file names it)", why,
                        name);
}

static rf_status write_state(const char *dir, const ckpt_state *s)
{
    char *path = ckpt_join(dir, CKPT_STATE_NAME);
    char *text = ckpt_state_format(s);
    rf_status rc;
    if (!path || !text)
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
    else if ((rc = rf_ckpt_check_path(path)) == RF_OK)
        rc = ckpt_atomic_write(path, &(ckpt_chunk){text, strlen(text)}, 1);
    free(text);
    free(path);
    return rc;
}

rf_status rf_ckpt_dir_save(const char *dir, int64_t step,
                           const rf_ckpt_tensor *t, size_t n,
                           const char *const *meta, int max_to_keep,
                           char *path_out, size_t len)
{
    return rf_ckpt_dir_save_filled(dir, step, t, NULL, n, meta, max_to_keep,
                                   path_out, len);
}

rf_status rf_ckpt_dir_save_filled(const char *dir, int64_t step,
                                  const rf_ckpt_tensor *t,
                                  const rf_ckpt_fill *fills, size_t n,
                                  const char *const *meta, int max_to_keep,
                                  char *path_out, size_t len)
{
    rf_status rc = check_dir(dir);
    if (rc != RF_OK)
        return rc;
    if (step < 0 || max_to_keep < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: step %" PRId64 " and max_to_keep %d must "
                            "not be negative",
                            dir, step, max_to_keep);
    size_t keep = max_to_keep ? (size_t)max_to_keep : DEFAULT_MAX_TO_KEEP;
    char name[64];
    snprintf(name, sizeof name, "model.ckpt-%" PRId64 ".safetensors", step);
    char *path = ckpt_join(dir, name);
    if (!path)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
    if (path_out && strlen(path) >= len) {
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s: path_out has %zu bytes, the path needs %zu", dir,
                          len, strlen(path) + 1);
        free(path);
        return rc;
    }
    ckpt_state old = {0}, next = {0};
    bool found;
    rc = ckpt_state_read(dir, &old, &found);
    if (rc == RF_ERR_CORRUPT) {
        RF_LOG_WARN("%s; writing a new state file that names the "
                    "directory's model.ckpt-<step>.safetensors files",
                    rf_error_message());
        rc = RF_OK;
    }
    if (rc == RF_OK && !old.latest)
        rc = adopt(dir, &old);
    if (rc == RF_OK)
        rc = rf_ckpt_write_filled(path, t, fills, n, meta);
    if (rc != RF_OK)
        goto out;

    /* the kept list, oldest first: the old one (with its newest), without
     * this name, then this name */
    if (old.latest) {
        bool listed = false;
        for (size_t i = 0; i < old.n; i++)
            listed = listed || !strcmp(old.all[i], old.latest);
        if (!listed)
            rc = ckpt_state_add(&old, old.latest);
    }
    for (size_t i = 0; i < old.n && rc == RF_OK; i++) {
        bool dup = !strcmp(old.all[i], name) || !strcmp(old.all[i], path);
        for (size_t j = i + 1; j < old.n && !dup; j++)
            dup = !strcmp(old.all[i], old.all[j]);
        if (!dup)
            rc = ckpt_state_add(&next, old.all[i]);
    }
    if (rc == RF_OK)
        rc = ckpt_state_add(&next, name);
    if (rc == RF_OK && !(next.latest = strdup(name)))
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
    size_t drop = next.n > keep ? next.n - keep : 0;
    ckpt_state kept = {next.latest, next.all + drop, next.n - drop};
    if (rc == RF_OK)
        rc = write_state(dir, &kept);
    if (rc != RF_OK) {
        rc = unname(dir, name, path, rc);
        goto out;
    }
    /* only plain names inside dir are ever deleted */
    for (size_t i = 0; i < drop; i++) {
        if (strchr(next.all[i], '/') || !strcmp(next.all[i], ".") ||
            !strcmp(next.all[i], "..")) {
            RF_LOG_WARN("%s: not deleting old checkpoint '%s' (not a name "
                        "inside the directory)",
                        dir, next.all[i]);
            continue;
        }
        char *victim = ckpt_join(dir, next.all[i]);
        if (victim && unlink(victim) != 0 && errno != ENOENT)
            RF_LOG_WARN("cannot delete old checkpoint %s: %s", victim,
                        strerror(errno));
        free(victim);
    }
    sweep(dir, &kept);
    if (path_out)
        snprintf(path_out, len, "%s", path);
out:
    ckpt_state_free(&old);
    ckpt_state_free(&next);
    free(path);
    return rc;
}

void rf_ckpt_list_free(rf_ckpt_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        free(list->paths[i]);
    free(list->paths);
    list->paths = NULL;
    list->n = 0;
}

rf_status rf_ckpt_dir_list(const char *dir, rf_ckpt_list *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ckpt_dir_list: no output");
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (dir && *dir && stat(dir, &sb) != 0 && errno == ENOENT)
        return RF_OK; /* no directory yet: no checkpoint */
    rf_status rc = check_dir(dir);
    if (rc != RF_OK)
        return rc;
    ckpt_state s;
    bool found;
    rc = ckpt_state_read(dir, &s, &found);
    if (rc != RF_OK || !found)
        return rc;
    out->paths = calloc(s.n + 1, sizeof *out->paths);
    if (!out->paths) {
        ckpt_state_free(&s);
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
    }
    /* newest first: model_checkpoint_path, then the rest newest first */
    out->paths[out->n++] = resolve(dir, s.latest);
    for (size_t i = s.n; i-- > 0;) {
        bool dup = !strcmp(s.all[i], s.latest);
        for (size_t j = i + 1; j < s.n && !dup; j++)
            dup = !strcmp(s.all[i], s.all[j]);
        if (!dup)
            out->paths[out->n++] = resolve(dir, s.all[i]);
    }
    ckpt_state_free(&s);
    for (size_t i = 0; i < out->n; i++)
        if (!out->paths[i]) {
            rf_ckpt_list_free(out);
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
        }
    return RF_OK;
}

/* Appends "skipped REASON" (REASON with the path in it) to the note,
 * separated by "; ". The path is escaped as rf_error_set escapes the
 * reason (rdmaflow/escape.h), so the note is one line of inert text. */
static char *add_note(char *note, const char *path, const char *why)
{
    size_t plen = strlen(path);
    size_t elen = rf_escape(NULL, 0, path, plen, RF_ESCAPE_CONTROLS);
    char *ep = malloc(elen + 1);
    if (!ep)
        return note;
    rf_escape(ep, elen + 1, path, plen, RF_ESCAPE_CONTROLS);
    size_t old = note ? strlen(note) : 0;
    size_t need = old + elen + strlen(why) + 16;
    char *n = realloc(note, need);
    if (n)
        snprintf(n + old, need - old, "%sskipped %s%s%s", old ? "; " : "",
                 strstr(why, ep) ? "" : ep, strstr(why, ep) ? "" : ": ", why);
    free(ep);
    return n ? n : note;
}

/* The base names of the list's paths, ", "-separated, into buf. */
static void names(const rf_ckpt_list *l, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->n && k < len; i++) {
        const char *slash = strrchr(l->paths[i], '/');
        int w = snprintf(buf + k, len - k, "%s%s", i ? ", " : "",
                         slash ? slash + 1 : l->paths[i]);
        k += w > 0 ? (size_t)w : 0;
    }
}

rf_status rf_ckpt_dir_open_latest(const char *dir, rf_ckpt **out,
                                  char *path_out, size_t len)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ckpt_dir_open_latest: no output");
    *out = NULL;
    rf_ckpt_list list;
    rf_status rc = rf_ckpt_dir_list(dir, &list);
    if (rc != RF_OK)
        return rc;
    if (list.n == 0)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "%s: no checkpoint (no state file '%s')", dir,
                            CKPT_STATE_NAME);
    char *note = NULL, *newest = NULL;
    rf_ckpt *ck = NULL;
    for (size_t i = 0; i < list.n && !ck; i++) {
        rf_status st = rf_ckpt_open(list.paths[i], &ck);
        if (st == RF_OK)
            break;
        RF_LOG_WARN("checkpoint %s is unusable: %s%s", list.paths[i],
                    rf_error_message(),
                    i + 1 < list.n ? "; trying the previous one" : "");
        note = add_note(note, list.paths[i], rf_error_message());
        if (i == 0)
            newest = strdup(rf_error_message());
    }
    if (!ck) {
        /* rf_error_message holds 511 bytes: the names, and the newest's
         * reason (each reason is logged) */
        char all[256];
        names(&list, all, sizeof all);
        rc = rf_error_set(RF_ERR_CORRUPT,
                          "%s: none of its %zu checkpoints is usable (%s; "
                          "each reason logged); the newest: %s",
                          dir, list.n, all, newest ? newest : "?");
    } else {
        if (note) {
            free(ck->note);
            ck->note = note;
            note = NULL;
        }
        if (path_out &&
            (size_t)snprintf(path_out, len, "%s", rf_ckpt_path(ck)) >= len) {
            rc = rf_error_set(RF_ERR_INVALID_ARG,
                              "%s: path_out has %zu bytes, the path %s needs "
                              "more",
                              dir, len, rf_ckpt_path(ck));
            rf_ckpt_close(ck);
            ck = NULL;
        }
    }
    free(note);
    free(newest);
    rf_ckpt_list_free(&list);
    *out = ck;
    return rc;
}
