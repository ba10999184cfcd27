/* ps/ps_client_rows_rmw.c: apply=worker sparse pushes (see
 * ps_client_rows.c). */
#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

rf_status cli_rows_rmw(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                       size_t n, const float *grad, bool use_locking)
{
    (void)c, (void)rows, (void)n, (void)grad, (void)use_locking;
    return rf_error_set(RF_ERR_UNSUPPORTED,
                        "rf_ps_push_sparse: apply=worker to '%s' not yet",
                        v->spec.name);
}
