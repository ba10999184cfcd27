/* tools/launch/hostfile.c: reading an Open MPI style hostfile (see
 * hostfile.h): "host [slots=N]" lines, '#' comments, blank lines. A host
 * listed twice gets the slots of both lines, as Open MPI merges them. */
#include "hostfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/env.h"
#include "rdmaflow/file.h"

static int add_host(lt_hostfile *h, const char *name, int slots)
{
    for (int i = 0; i < h->n; i++) {
        if (!strcmp(h->host[i], name)) {
            h->slots[i] += slots;
            return 0;
        }
    }
    char **nh = realloc(h->host, (size_t)(h->n + 1) * sizeof *nh);
    if (nh)
        h->host = nh;
    int *ns = realloc(h->slots, (size_t)(h->n + 1) * sizeof *ns);
    if (ns)
        h->slots = ns;
    if (!nh || !ns || !(h->host[h->n] = strdup(name)))
        return -1;
    h->slots[h->n++] = slots;
    return 0;
}

/* "slots=N" or "max_slots=N" (max-slots too); *slots set for slots=. */
static int parse_word(const char *w, int *slots, const char *path, int line,
                      char *err, size_t errlen)
{
    const char *eq = strchr(w, '=');
    size_t klen = eq ? (size_t)(eq - w) : strlen(w);
    bool is_slots = klen == 5 && !strncmp(w, "slots", 5);
    bool is_max = (klen == 9 && (!strncmp(w, "max_slots", 9) ||
                                 !strncmp(w, "max-slots", 9)));
    if (!eq || (!is_slots && !is_max)) {
        snprintf(err, errlen,
                 "--hostfile: %s:%d: '%s': expected slots=N after the host "
                 "(lines are "
                 "\"HOST [slots=N]\")",
                 path, line, RF_ECHO(w));
        return -1;
    }
    char *end;
    errno = 0;
    long v = strtol(eq + 1, &end, 10);
    if (eq[1] < '0' || eq[1] > '9' || *end || errno || v < 1 ||
        v > 2 * LT_MAX_TASKS_PER_JOB + 1) {
        snprintf(err, errlen,
                 "--hostfile: %s:%d: '%s': %.*s must be an integer in [1, %d]",
                 path, line, RF_ECHO(w), (int)klen, w,
                 2 * LT_MAX_TASKS_PER_JOB + 1);
        return -1;
    }
    if (is_slots)
        *slots = (int)v;
    return 0;
}

int lt_hostfile_read(const char *path, lt_hostfile *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    /* Only a regular file: a FIFO would block the open (or the read)
     * forever, a directory or a device is a mistake. Opened non-blocking
     * and checked again on the descriptor, so a FIFO swapped in after
     * the check cannot block either. */
    if (rf_file_check_input(path) != RF_OK) {
        snprintf(err, errlen, "--hostfile: %s", rf_error_message());
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "--hostfile: %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen,
                 "--hostfile: %s is not a regular file (a FIFO, device or "
                 "socket): refusing to read it",
                 path);
        close(fd);
        return -1;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "--hostfile: %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    int line = 0, rc = 0;
    while (rc == 0 && getline(&buf, &cap, f) >= 0) {
        line++;
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL, *host = strtok_r(buf, " \t\r\n", &save);
        if (!host)
            continue;
        char hq[RF_HOST_MAX + 8];
        snprintf(hq, sizeof hq, "%s:1", host);
        char h[RF_HOST_MAX];
        uint16_t port;
        if (strlen(host) >= RF_HOST_MAX ||
            rf_parse_host_port(hq, "host", h, &port) != RF_OK ||
            strchr(host, ':')) {
            snprintf(err, errlen,
                     "--hostfile: %s:%d: '%s' is not a host name or IPv4 "
                     "address",
                     path, line, RF_ECHO(host));
            rc = -1;
            break;
        }
        int slots = 1;
        for (char *w; rc == 0 && (w = strtok_r(NULL, " \t\r\n", &save));)
            rc = parse_word(w, &slots, path, line, err, errlen);
        if (rc == 0 && add_host(out, host, slots) != 0) {
            snprintf(err, errlen, "--hostfile: out of memory");
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "--hostfile: %s: read error", path);
        rc = -1;
    }
    if (rc == 0 && out->n == 0) {
        snprintf(err, errlen, "--hostfile: %s lists no host", path);
        rc = -1;
    }
    free(buf);
    fclose(f);
    if (rc != 0)
        lt_hostfile_free(out);
    return rc;
}

void lt_hostfile_free(lt_hostfile *h)
{
    for (int i = 0; i < h->n; i++)
        free(h->host[i]);
    free(h->host);
    free(h->slots);
    memset(h, 0, sizeof *h);
}
