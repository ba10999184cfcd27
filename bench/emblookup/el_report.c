/* bench/emblookup/el_report.c: rf-bench-emb's text and JSON output
 * (el_report.h). */
#include "el_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void el_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *p = strchr(line, ':');
        if (!p)
            break;
        p++;
        while (*p == ' ')
            p++;
        snprintf(buf, len, "%s", p);
        buf[strcspn(buf, "\n")] = 0;
        break;
    }
    fclose(f);
}

static double ratio(const el_way_result *a, const el_way_result *b)
{
    return a->skipped || b->skipped || b->median_us <= 0
               ? -1
               : a->median_us / b->median_us;
}

void el_report_text(const el_run_info *r, const el_way_result *w)
{
    const el_opts *o = r->o;
    printf("rf-bench-emb: provider %s, %d ps tasks on %s, rows %" PRId64
           " (part 0 %" PRId64 ", part 1 %" PRId64 "), dim %u (%" PRIu64
           " B rows), batch %u x %u ids, zipf %g, seed %" PRIu64
           ", steps %d (dense %d), warm-up %d (dense %d), push %s\n",
           r->provider, EL_PS_TASKS, o->host, o->rows, r->part_rows[0],
           r->part_rows[1], o->dim, r->row_bytes, o->batch, o->features,
           o->zipf, o->seed, o->steps, o->dense_steps, o->warmup,
           o->warmup > 0 ? 1 : 0, o->push ? "apply=ps (zero gradients)" : "no");
    printf("cpu: %s\n", r->cpu);
    printf("table: %.3f GiB over 2 ps; unique rows per step %.1f of %.0f "
           "ids\n",
           (double)o->rows * (double)r->row_bytes / (1 << 30), r->unique_rows,
           r->ids);
    printf("%-7s %6s %12s %12s %12s %14s %14s %12s %10s %10s %12s %8s\n", "way",
           "steps", "median[us]", "p99[us]", "examples/s", "wire_B/step",
           "ps_cpu_us/st", "gathered/st", "w_flt/st", "ps_flt/st", "rows/s",
           "wr/row");
    for (int i = 0; i < EL_WAYS; i++) {
        const el_way_result *x = &w[i];
        if (x->skipped) {
            printf("%-7s skipped: %s\n", x->name, x->why);
            continue;
        }
        printf("%-7s %6d %12.1f %12.1f %12.0f %14.0f %14.1f %12.1f "
               "%10.1f %10.1f %12.0f %8.3f\n",
               x->name, x->steps, x->median_us, x->p99_us, x->examples_per_s,
               x->wire_bytes, x->ps_cpu_us, x->gather_rows, x->worker_faults,
               x->ps_faults, x->rows_per_s, x->wrs_per_row);
    }
    double rd = ratio(&w[EL_ROWS], &w[EL_DENSE]);
    double rg = ratio(&w[EL_ROWS], &w[EL_GATHER]);
    char a[32], b[32];
    if (rd < 0)
        snprintf(a, sizeof a, "-");
    else
        snprintf(a, sizeof a, "%.4f", rd);
    snprintf(b, sizeof b, "%.3f", rg);
    printf("ratio: rows/dense %s rows/gather %s (median step times)\n", a, b);
    for (int p = 0; p < 2; p++) {
        const rf_ps_lookup_cost *c = &r->cost[p];
        printf("auto: part %d: row READs %.1f us + %.3f us/row, gather %.1f "
               "us + %.3f us/row (probes of 1 and %u rows); at %.1f unique "
               "rows per step: %s\n",
               p, c->rows_fixed_us, c->rows_per_row_us, c->gather_fixed_us,
               c->gather_per_row_us, c->probe_rows, r->part_unique[p],
               rf_ps_lookup_cost_gather_cheaper(c, r->part_unique[p]) ? "gather"
                                                                      : "rows");
    }
    const el_way_result *x = &w[EL_AUTO];
    if (!x->skipped)
        printf("auto: chose %s (%" PRIu64 " of %" PRIu64
               " shard lookups by the gather)\n",
               el_auto_choice(x), x->auto_gathered, x->auto_lookups);
}

const char *el_auto_choice(const el_way_result *x)
{
    if (!x->auto_gathered)
        return "rows";
    return x->auto_gathered == x->auto_lookups ? "gather" : "mixed";
}

int el_report_json(const el_run_info *r, const el_way_result *w,
                   const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    const el_opts *o = r->o;
    fprintf(
        f,
        "{\"provider\":\"%s\",\"host\":\"%s\",\"cpu\":\"%s\",\"rows\":%" PRId64
        ",\"part_rows\":[%" PRId64 ",%" PRId64
        "],\"dim\":%u,\"row_bytes\":%" PRIu64
        ",\"batch\":%u,\"features\":%u,\"zipf\":%g,\"seed\":%" PRIu64
        ",\"push\":%s,\"unique_rows_per_step\":%.3f,\"ways\":[",
        r->provider, o->host, r->cpu, o->rows, r->part_rows[0], r->part_rows[1],
        o->dim, r->row_bytes, o->batch, o->features, o->zipf, o->seed,
        o->push ? "true" : "false", r->unique_rows);
    for (int i = 0; i < EL_WAYS; i++) {
        const el_way_result *x = &w[i];
        fprintf(f, "%s{\"way\":\"%s\"", i ? "," : "", x->name);
        if (x->skipped) {
            fprintf(f, ",\"skipped\":\"%s\"}", x->why);
            continue;
        }
        fprintf(
            f,
            ",\"steps\":%d,\"median_us\":%.3f,\"p99_us\":%.3f,"
            "\"examples_per_s\":%.1f,\"wire_bytes_per_step\":%.1f,"
            "\"ps_cpu_us_per_step\":%.2f,"
            "\"gathered_rows_per_step\":%.2f,"
            "\"gather_requests_per_step\":%.2f,\"rows_checked\":%.0f,"
            "\"worker_minor_faults_per_step\":%.1f,"
            "\"ps_minor_faults_per_step\":%.1f,"
            "\"unique_rows_total\":%" PRIu64 ",\"wire_bytes_total\":%" PRIu64
            ",\"gathered_rows_total\":%" PRIu64
            ",\"rows_per_s\":%.1f,\"wrs_per_row\":%.4f"
            ",\"wrs_total\":%" PRIu64 ",\"gather_asked_total\":%" PRIu64,
            x->steps, x->median_us, x->p99_us, x->examples_per_s, x->wire_bytes,
            x->ps_cpu_us, x->gather_rows, x->gather_reqs, x->rows_checked,
            x->worker_faults, x->ps_faults, x->unique_total, x->wire_total,
            x->gathered_total, x->rows_per_s, x->wrs_per_row, x->wrs_total,
            x->gather_asked_total);
        if (i == EL_AUTO)
            fprintf(f,
                    ",\"choice\":\"%s\",\"auto_gathered\":%" PRIu64
                    ",\"auto_lookups\":%" PRIu64,
                    el_auto_choice(x), x->auto_gathered, x->auto_lookups);
        fprintf(f, "}");
    }
    double rd = ratio(&w[EL_ROWS], &w[EL_DENSE]);
    double rg = ratio(&w[EL_ROWS], &w[EL_GATHER]);
    fprintf(f, "],\"ratio_rows_dense\":");
    if (rd < 0)
        fprintf(f, "null");
    else
        fprintf(f, "%.6f", rd);
    fprintf(f, ",\"ratio_rows_gather\":%.6f,\"cost\":[", rg);
    for (int p = 0; p < 2; p++) {
        const rf_ps_lookup_cost *c = &r->cost[p];
        fprintf(f,
                "%s{\"part\":%d,\"probe_rows\":%u,\"rows_fixed_us\":%.3f,"
                "\"rows_per_row_us\":%.5f,\"gather_fixed_us\":%.3f,"
                "\"gather_per_row_us\":%.5f,\"unique_rows_per_step\":%.3f}",
                p ? "," : "", p, c->probe_rows, c->rows_fixed_us,
                c->rows_per_row_us, c->gather_fixed_us, c->gather_per_row_us,
                r->part_unique[p]);
    }
    fprintf(f, "]}\n");
    if (fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}
