/* tools/trainer/export.c: --variables_out: every variable of the graph
 * (values, optimizer slots, beta powers, global_step) as one checkpoint
 * file, written by rf_ckpt_write (rdmaflow/checkpoint.h): safetensors with
 * the names in byte order and a CRC32C per tensor in "__metadata__", no
 * metadata that varies between runs, so two runs with bitwise-equal
 * variables give byte-identical files; written to a temporary name,
 * fsynced and renamed, so a crash never leaves a partial file under the
 * real name. */
#include "export.h"
#include "rdmaflow/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>

int tr_export_variables(rf_graph *g, const char *path, char *err, size_t errlen)
{
    size_t n = rf_graph_num_variables(g);
    rf_ckpt_tensor *t = calloc(n ? n : 1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        rf_node *v = rf_graph_variable(g, i);
        t[i] = (rf_ckpt_tensor){.name = rf_node_name(v),
                                .dtype = rf_node_dtype(v),
                                .shape = rf_node_shape(v),
                                .data = rf_variable_data(v),
                                .bytes = rf_variable_bytes(v)};
    }
    rf_status st = rf_ckpt_write(path, t, n, NULL);
    free(t);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    return 0;
}
