/* tools/trainer/export.c: --variables_out: every variable of the graph
 * (values, optimizer slots, beta powers, global_step; a partitioned
 * variable whole under its own name) as one checkpoint file, written by
 * rf_ckpt_write (rdmaflow/checkpoint.h): safetensors with the names in byte
 * order and a CRC32C per tensor in "__metadata__", no metadata that varies
 * between runs, so two runs with bitwise-equal variables give byte-identical
 * files; written to a temporary name, fsynced and renamed, so a crash never
 * leaves a partial file under the real name. */
#include "export.h"
#include "rdmaflow/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>

int tr_export_variables(rf_graph *g, const char *path, char *err, size_t errlen)
{
    size_t n = rf_graph_num_variables(g);
    rf_ckpt_vars *b = NULL;
    rf_status st = rf_ckpt_vars_create(n, &b);
    for (size_t i = 0; st == RF_OK && i < n; i++) {
        rf_node *v = rf_graph_variable(g, i);
        st = rf_ckpt_vars_add(b, v, rf_variable_data(v));
    }
    const rf_ckpt_tensor *t = NULL;
    size_t nt = 0;
    if (st == RF_OK)
        st = rf_ckpt_vars_tensors(b, &t, &nt);
    if (st == RF_OK)
        st = rf_ckpt_write(path, t, nt, NULL);
    rf_ckpt_vars_free(b);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    return 0;
}
