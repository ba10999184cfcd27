/* tools/launch/metrics.h: rf-launch --metrics_dir and --plot: the
 * directories and the tasks' metrics files checked before any task starts
 * (stale files of an earlier launch removed), and rf-plot run on the
 * files at the end. */
#ifndef RF_LAUNCH_METRICS_H
#define RF_LAUNCH_METRICS_H

#include "launch.h"
#include "task.h"

/* Before the tasks start: makes the directories if missing, checks that
 * they are writable directories and that no task's file is something
 * other than a metrics file, removes old metrics files of the tasks, and
 * with --plot checks that rf-plot can draw (jq, gnuplot). -1 after a
 * message naming the flag (a usage error). */
int lt_metrics_prepare(const lt_opts *o, lt_task *t, int n,
                       const lt_sigstate *sig);

/* --plot, at the end: rf-plot --out PLOT_DIR on the tasks' files that
 * exist; -1 after a message if it failed. */
int lt_metrics_plot(const lt_opts *o, const lt_task *t, int n,
                    const lt_sigstate *sig);

#endif
