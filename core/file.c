/* core/file.c: the one crash-safe file writer and the output/input path
 * checks (rdmaflow/file.h): symbolic links resolved to the file they name,
 * a temporary ".NAME.tmp.PID.N" beside it, fsync, rename, fsync of the
 * directory, and the removal of temporaries left by dead writers. */
#include "rdmaflow/file.h"
#include "core/log.h"
#include "rdmaflow/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest symbolic-link chain followed (Linux's own limit). */
#define FILE_MAX_LINKS 40
/* The base name as it appears in a temporary's name (cut to keep the name
 * under NAME_MAX). */
#define FILE_TMP_BASE_MAX 200
/* Temporary names tried before giving up on EEXIST. */
#define FILE_TMP_TRIES 1000

/* Paths longer than this are shown in messages by their last bytes, so
 * that a long path never pushes the reason out of rf_error_message(). */
#define FILE_PATH_SHOWN 120

/* path, or "..." and its last FILE_PATH_SHOWN - 3 bytes, in buf. */
static const char *shown(const char *path, char buf[FILE_PATH_SHOWN + 1])
{
    size_t n = strlen(path);
    if (n <= FILE_PATH_SHOWN)
        return path;
    const char *tail = path + n - (FILE_PATH_SHOWN - 3);
    while (((unsigned char)*tail & 0xc0) == 0x80)
        tail++; /* do not split a UTF-8 sequence */
    snprintf(buf, FILE_PATH_SHOWN + 1, "...%s", tail);
    return buf;
}
#define SHOWN(path) shown((path), (char[FILE_PATH_SHOWN + 1]){0})

struct rf_file_out {
    char *target; /* the file replaced (the path with links resolved) */
    char *dir;    /* its directory */
    char *tmp;    /* the temporary */
    FILE *f;
};

/* The directory part of path ("." if none); malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static char *join(const char *dir, const char *name)
{
    size_t d = strlen(dir), n = strlen(name);
    char *s = malloc(d + n + 2);
    if (!s)
        return NULL;
    memcpy(s, dir, d);
    size_t at = d;
    if (d == 0 || s[d - 1] != '/')
        s[at++] = '/';
    memcpy(s + at, name, n + 1);
    return s;
}

/* path with every symbolic link of its last component followed: the file
 * a write through the link would replace (it need not exist: a dangling
 * link names the file it would create). NULL with errno on failure
 * (ELOOP for too many links, ENOMEM). */
static char *resolve_links(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        if (hops == FILE_MAX_LINKS) {
            free(cur);
            errno = ELOOP;
            return NULL;
        }
        char link[PATH_MAX];
        ssize_t k = readlink(cur, link, sizeof link - 1);
        if (k < 0) {
            free(cur);
            return NULL;
        }
        link[k] = '\0';
        char *next;
        if (link[0] == '/') {
            next = strdup(link);
        } else {
            char *d = dir_of(cur);
            next = d ? join(d, link) : NULL;
            free(d);
        }
        free(cur);
        cur = next;
    }
    errno = ENOMEM;
    return NULL;
}

/* The check of rf_file_check_output on path whose links resolve to
 * target; who is what the messages call the file. */
static rf_status check_target(const char *who, const char *target)
{
    struct stat st;
    if (stat(target, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return rf_error_set(RF_ERR_INVALID_ARG, "%s is a directory", who);
        if (!S_ISREG(st.st_mode))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s is not a regular file (a device, FIFO or "
                                "socket)",
                                who);
    } else if (errno != ENOENT && errno != ENOTDIR) {
        /* ENOTDIR: the parent is not a directory, said below */
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: %s", who, strerror(errno));
    }
    char *dir = dir_of(target);
    if (!dir)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", who);
    rf_status rc = RF_OK;
    if (stat(dir, &st) != 0)
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s: directory %s does not exist (%s)", who,
                          SHOWN(dir), strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        rc = rf_error_set(RF_ERR_INVALID_ARG, "%s: %s is not a directory", who,
                          SHOWN(dir));
    else if (access(dir, W_OK | X_OK) != 0)
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s: directory %s is not writable (%s)", who,
                          SHOWN(dir), strerror(errno));
    free(dir);
    return rc;
}

/* Checks path; on success *target_out (if not NULL) is the resolved
 * target, malloc'd. */
static rf_status check_output(const char *path, char **target_out)
{
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG, "output file name is empty");
    if (path[strlen(path) - 1] == '/')
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: a file name cannot end in '/'", SHOWN(path));
    char *target = resolve_links(path);
    if (!target)
        return errno == ENOMEM
                   ? rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory",
                                  SHOWN(path))
                   : rf_error_set(RF_ERR_INVALID_ARG,
                                  "%s: cannot follow the symbolic link: %s",
                                  SHOWN(path), strerror(errno));
    rf_status rc;
    if (strcmp(target, path) == 0) {
        rc = check_target(SHOWN(path), target);
    } else {
        size_t len = strlen(path) + strlen(target) + 48;
        char *who = malloc(len);
        if (!who) {
            free(target);
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory",
                                SHOWN(path));
        }
        snprintf(who, len, "%s (a symbolic link to %s)", SHOWN(path),
                 SHOWN(target));
        rc = check_target(who, target);
        free(who);
    }
    if (rc == RF_OK && target_out)
        *target_out = target;
    else
        free(target);
    return rc;
}

rf_status rf_file_check_output(const char *path)
{
    return check_output(path, NULL);
}

rf_status rf_file_check_input(const char *path)
{
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG, "input file name is empty");
    struct stat st;
    if (stat(path, &st) != 0)
        return rf_error_set(RF_ERR_IO, "%s: cannot open: %s", SHOWN(path),
                            strerror(errno));
    if (S_ISDIR(st.st_mode))
        return rf_error_set(RF_ERR_IO, "%s is a directory, not a file",
                            SHOWN(path));
    if (!S_ISREG(st.st_mode))
        return rf_error_set(RF_ERR_IO,
                            "%s is not a regular file (a FIFO, device or "
                            "socket): refusing to read it",
                            SHOWN(path));
    if (access(path, R_OK) != 0)
        return rf_error_set(RF_ERR_IO, "%s: cannot open: %s", SHOWN(path),
                            strerror(errno));
    return RF_OK;
}

/* Parses "<digits>.<digits>" exactly; the first number into *pid. */
static bool parse_pid_counter(const char *s, long *pid)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    long p = strtol(s, &end, 10);
    if (errno || *end != '.' || end[1] < '0' || end[1] > '9' || p <= 0)
        return false;
    for (const char *c = end + 1; *c; c++)
        if (*c < '0' || *c > '9')
            return false;
    *pid = p;
    return true;
}

/* Removes the temporaries ".BASE.tmp.PID.N" of dir whose PID is not a
 * live process: what a killed writer of the same target left. */
static void remove_stale(const char *dir, const char *base)
{
    char prefix[FILE_TMP_BASE_MAX + 8];
    int k =
        snprintf(prefix, sizeof prefix, ".%.*s.tmp.", FILE_TMP_BASE_MAX, base);
    DIR *d = opendir(dir);
    if (!d || k <= 0) {
        if (d)
            closedir(d);
        return;
    }
    long self = (long)getpid();
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        long pid;
        if (strncmp(e->d_name, prefix, (size_t)k) != 0 ||
            !parse_pid_counter(e->d_name + k, &pid) || pid == self ||
            pid > INT_MAX)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive (or not ours to judge) */
        char *p = join(dir, e->d_name);
        if (p && unlink(p) == 0)
            RF_LOG_INFO("removed %s, a temporary file left by process %ld, "
                        "which is gone",
                        p, pid);
        free(p);
    }
    closedir(d);
}

rf_status rf_file_out_open(const char *path, rf_file_out **out)
{
    static atomic_uint counter;
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_file_out_open: out NULL");
    *out = NULL;
    char *target = NULL;
    rf_status rc = check_output(path, &target);
    if (rc != RF_OK)
        return rc;
    rf_file_out *o = calloc(1, sizeof *o);
    if (o) {
        o->target = target;
        o->dir = dir_of(target);
    }
    if (!o || !o->dir) {
        rf_file_out_abort(o);
        if (!o)
            free(target);
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", SHOWN(path));
    }
    remove_stale(o->dir, base_of(target));
    /* EEXIST: a stale file with this very name (a dead writer whose PID
     * this process now has, as after a container restart): next number */
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < FILE_TMP_TRIES; tries++) {
        char name[FILE_TMP_BASE_MAX + 64];
        snprintf(name, sizeof name, ".%.*s.tmp.%ld.%u", FILE_TMP_BASE_MAX,
                 base_of(target), (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        free(o->tmp);
        o->tmp = join(o->dir, name);
        if (!o->tmp) {
            rf_file_out_abort(o);
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory",
                                SHOWN(path));
        }
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        rc = rf_error_set(RF_ERR_IO, "cannot create %s: %s", SHOWN(o->tmp),
                          strerror(errno));
        free(o->tmp);
        o->tmp = NULL; /* not ours: never unlinked */
        rf_file_out_abort(o);
        return rc;
    }
    struct stat st;
    if (stat(target, &st) == 0 && S_ISREG(st.st_mode))
        (void)fchmod(fd, st.st_mode & 07777); /* keep the target's mode */
    o->f = fdopen(fd, "w");
    if (!o->f) {
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: %s", SHOWN(o->tmp),
                          strerror(errno));
        close(fd);
        rf_file_out_abort(o);
        return rc;
    }
    *out = o;
    return RF_OK;
}

FILE *rf_file_out_stream(rf_file_out *o)
{
    return o ? o->f : NULL;
}

void rf_file_out_abort(rf_file_out *o)
{
    if (!o)
        return;
    if (o->f)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->dir);
    free(o->target);
    free(o);
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The test hook of file.h's top comment. Once per marker: a restarted
 * process with the same environment does not stop again. */
static void test_stop_before_rename(const char *base)
{
    const char *marker = rf_setting_str("RF_TEST_CKPT_STOP_BEFORE_RENAME");
    FILE *f = marker && *marker ? fopen(marker, "r") : NULL;
    if (!f)
        return;
    char want[512] = "";
    bool match = fgets(want, sizeof want, f) != NULL;
    fclose(f);
    want[strcspn(want, "\n")] = '\0';
    if (match && strcmp(want, base) == 0 && unlink(marker) == 0)
        raise(SIGSTOP);
}

rf_status rf_file_out_commit(rf_file_out *o)
{
    if (!o)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_file_out_commit: NULL");
    rf_status rc = RF_OK;
    errno = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        rc = rf_error_set(RF_ERR_IO, "cannot write %s: %s", SHOWN(o->target),
                          strerror(errno ? errno : EIO));
    if (rc == RF_OK && fsync(fileno(o->f)) != 0)
        rc = rf_error_set(RF_ERR_IO, "fsync %s: %s", SHOWN(o->tmp),
                          strerror(errno));
    int closed = fclose(o->f);
    o->f = NULL;
    if (closed != 0 && rc == RF_OK)
        rc = rf_error_set(RF_ERR_IO, "closing %s: %s", SHOWN(o->tmp),
                          strerror(errno));
    if (rc == RF_OK)
        test_stop_before_rename(base_of(o->target));
    if (rc == RF_OK && rename(o->tmp, o->target) != 0)
        rc = rf_error_set(RF_ERR_IO, "renaming %s to %s: %s", SHOWN(o->tmp),
                          SHOWN(o->target), strerror(errno));
    if (rc != RF_OK) {
        rf_file_out_abort(o);
        return rc;
    }
    free(o->tmp);
    o->tmp = NULL; /* renamed: nothing to remove */
    if (fsync_dir(o->dir) != 0)
        rc = rf_error_set(RF_ERR_IO,
                          "%s is written but fsync of its directory %s "
                          "failed: %s",
                          SHOWN(o->target), SHOWN(o->dir), strerror(errno));
    rf_file_out_abort(o);
    return rc;
}

rf_status rf_file_write_atomic(const char *path, const rf_file_chunk *c,
                               size_t n)
{
    rf_file_out *o;
    rf_status rc = rf_file_out_open(path, &o);
    if (rc != RF_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (c[i].len == 0)
            continue;
        errno = 0;
        if (fwrite(c[i].p, 1, c[i].len, o->f) != c[i].len) {
            rc = rf_error_set(RF_ERR_IO, "cannot write %s: %s",
                              SHOWN(o->target), strerror(errno ? errno : EIO));
            rf_file_out_abort(o);
            return rc;
        }
    }
    return rf_file_out_commit(o);
}
