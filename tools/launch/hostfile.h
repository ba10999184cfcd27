/* tools/launch/hostfile.h: rf-launch --hostfile FILE, Open MPI's hostfile
 * format: one host per line, optionally "slots=N", '#' comments. */
#ifndef RF_LAUNCH_HOSTFILE_H
#define RF_LAUNCH_HOSTFILE_H

#include <stddef.h>

typedef struct lt_hostfile {
    char **host; /* in file order; a host listed twice is merged */
    int *slots;  /* tasks it takes (slots=N, default 1) */
    int n;
} lt_hostfile;

/* Reads path. Returns 0, or -1 with err naming the file and line:
 * "--hostfile: FILE:3: 'slots=x': slots must be an integer in [1, 129]".
 * Lines:
 *   host [slots=N] [max_slots=M]   (max_slots, Open MPI's, is ignored)
 * blank lines and everything after '#' are ignored; a file with no host is
 * an error. */
int lt_hostfile_read(const char *path, lt_hostfile *out, char *err,
                     size_t errlen);
void lt_hostfile_free(lt_hostfile *h);

#endif
