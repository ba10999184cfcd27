/* tools/launch/output.h: a task's output stream, forwarded line by line. */
#ifndef RF_LAUNCH_OUTPUT_H
#define RF_LAUNCH_OUTPUT_H

#include "launch.h"

/* Longest line forwarded whole; a longer one is cut into pieces of this
 * size, each forwarded as a line of its own (with the prefix). */
#define LT_LINE_MAX 65536

/* Starts forwarding the non-blocking pipe in_fd to out_fd. */
void lt_lines_init(lt_lines *b, int in_fd, int out_fd, const char *prefix);

/* Reads what the pipe holds (a bounded amount, for fairness between tasks)
 * and writes every complete line as "<prefix><line>\n" in one write, so
 * lines of different tasks never mix. At end of file, writes a partial
 * last line with a newline added and closes the pipe. Returns 1 when the
 * pipe is closed, 0 when more may come. */
int lt_lines_pump(lt_lines *b);

/* Reads everything the pipe holds right now (the writer has exited). */
void lt_lines_drain(lt_lines *b);

/* Writes a partial last line, if any, and closes the pipe. */
void lt_lines_close(lt_lines *b);

#endif
