/* tools/launch/opts.h: rf-launch's command line. */
#ifndef RF_LAUNCH_OPTS_H
#define RF_LAUNCH_OPTS_H

#include <stdio.h>

#include "launch.h"

/* Parses argv into *o. Returns 0, or -1 with a message naming the flag and
 * the problem in err (the caller exits with LT_EXIT_USAGE). With --help,
 * returns 0 with o->help set and nothing else checked; with --version,
 * likewise with o->version set. */
int lt_opts_parse(int argc, char **argv, lt_opts *o, char *err, size_t errlen);

/* Prints the usage text. */
void lt_opts_usage(FILE *f);

#endif
