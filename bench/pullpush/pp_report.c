/* bench/pullpush/pp_report.c: banner and table of rf-bench-pullpush
 * (pp_report.h). */
#include "pp_report.h"

#include <stdio.h>

#include "bench_quantile.h"

const char *const pp_op_names[PP_OPS] = {"memcpy", "pull", "push_ps",
                                         "push_worker"};

void pp_report_banner(const pp_opts *o, const pp_model *m, const pp_results *r)
{
    char opt[256];
    rf_optim_format(&o->optim, opt, sizeof opt);
    printf("rf-bench-pullpush: provider %s, %d ps tasks on %s (ports %u %u), "
           "one client\n",
           r->provider, PP_PS_TASKS, o->host, r->ports[0], r->ports[1]);
    printf("model: %zu bytes (nominal %llu), %zu float32 variables, MLP "
           "width %lld; greedy placement: ps 0 %zu variables %zu bytes, "
           "ps 1 %zu variables %zu bytes\n",
           m->bytes, (unsigned long long)o->size, m->nvars, (long long)m->width,
           m->ps_vars[0], m->ps_bytes[0], m->ps_vars[1], m->ps_bytes[1]);
    for (size_t i = 0; i < m->nvars; i++) {
        const pp_var *v = &m->v[i];
        char shape[48];
        if (v->rank == 2)
            snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)v->dims[0],
                     (long long)v->dims[1]);
        else
            snprintf(shape, sizeof shape, "[%lld]", (long long)v->dims[0]);
        printf("var %-14s %-12s ps %zu %12zu bytes\n", v->name, shape,
               v->ps_task, v->bytes);
    }
    printf("optimizer: %s; %d rounds measured after %d warm-up, the four "
           "operations of a round in rotated order\n",
           opt, o->rounds, o->warmup);
    printf("wire_bytes: payload of the work requests posted per operation, "
           "both directions (from the ps record layout); tcp_bytes: the "
           "kernel's TCP payload count on the client's connections "
           "(sock only; median of the rounds)\n");
    printf("ratio: time / the same round's single-thread memcpy of the "
           "model's bytes (p10, median, p90 of the rounds); wire_rt: time / "
           "the operation's wire_bytes at that round's memcpy speed "
           "(median)\n");
}

void pp_report_table(const pp_model *m, const pp_results *r)
{
    size_t n = (size_t)r->rounds;
    printf("%-12s %12s %12s %12s %10s %10s %10s %10s %8s %8s %8s %8s\n", "op",
           "model_bytes", "wire_bytes", "tcp_bytes", "p10[ms]", "median[ms]",
           "p90[ms]", "MiB/s", "ratio10", "ratio", "ratio90", "wire_rt");
    for (int op = 0; op < PP_OPS; op++) {
        double ratio[1000], wire_ratio[1000];
        /* wire_rt: against the operation's payload at the round's memcpy
         * speed (memcpy: its own bytes) */
        double wire_share =
            op == PP_MEMCPY ? 1.0 : (double)m->bytes / (double)r->wire[op];
        for (size_t k = 0; k < n; k++) {
            ratio[k] = r->t_s[op][k] / r->t_s[PP_MEMCPY][k];
            wire_ratio[k] = ratio[k] * wire_share;
        }
        double med = bench_quantile(r->t_s[op], n, 0.5);
        char wire[24] = "-", tcp[24] = "-";
        if (op != PP_MEMCPY)
            snprintf(wire, sizeof wire, "%llu",
                     (unsigned long long)r->wire[op]);
        if (op != PP_MEMCPY && r->have_tcp)
            snprintf(tcp, sizeof tcp, "%.0f",
                     bench_quantile(r->tcp[op], n, 0.5));
        printf("%-12s %12zu %12s %12s %10.3f %10.3f %10.3f %10.1f %8.2f %8.2f "
               "%8.2f %8.2f\n",
               pp_op_names[op], m->bytes, wire, tcp,
               1e3 * bench_quantile(r->t_s[op], n, 0.1), 1e3 * med,
               1e3 * bench_quantile(r->t_s[op], n, 0.9),
               (double)m->bytes / med / 1048576.0,
               bench_quantile(ratio, n, 0.1), bench_quantile(ratio, n, 0.5),
               bench_quantile(ratio, n, 0.9),
               bench_quantile(wire_ratio, n, 0.5));
    }
}
