/* tests/unit/fabric/test_provider_table.c: rf_provider_open checks a
 * provider table's mandatory slots once, before anything is opened: every
 * compiled-in table passes (its probe is replaced by one that answers
 * RF_ERR_UNAVAILABLE, so nothing is opened), and a table without one of its
 * mandatory slots is refused with RF_ERR_UNSUPPORTED naming the slot. */
#include <stdio.h>

#include "fabric/provider.h"
#include "rdmaflow/status.h"
#include "tests/common/check.h"

static int probes;

static rf_status probe_unavailable(void)
{
    probes++;
    return rf_error_set(RF_ERR_UNAVAILABLE, "test probe: not here");
}

/* The table passes the mandatory-slot check: the open reaches the probe. */
static void check_complete(const rf_provider_ops *real)
{
    rf_provider_ops ops = *real;
    ops.probe = probe_unavailable;
    rf_fabric *fab = (rf_fabric *)&ops; /* overwritten with NULL */
    int before = probes;
    CHECK_ST(rf_provider_open(&ops, NULL, &fab), RF_ERR_UNAVAILABLE);
    CHECK(probes == before + 1, "provider %s: probe not reached", real->name);
    CHECK(fab == NULL, "provider %s: out not cleared", real->name);
}

int main(void)
{
    const rf_provider_ops *tables[] = {
#ifdef RF_HAVE_VERBS
        &rf_verbs_provider,
#endif
        &rf_sock_provider,
        &rf_shm_provider,
        &rf_auto_provider,
    };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        check_complete(tables[i]);

    /* A mandatory slot left NULL: refused before the probe runs. */
    rf_provider_ops ops = rf_sock_provider;
    ops.probe = probe_unavailable;
    ops.ep_enable_remote_access = NULL;
    rf_fabric *fab = NULL;
    int before = probes;
    CHECK_ST(rf_provider_open(&ops, NULL, &fab), RF_ERR_UNSUPPORTED);
    CHECK_MSG("provider sock lacks the mandatory op ep_enable_remote_access");
    CHECK(probes == before, "probe ran for an incomplete table");
    CHECK(fab == NULL, "out not cleared");

    /* Optional slots may be NULL. */
    ops = rf_sock_provider;
    ops.probe = probe_unavailable;
    ops.mr_reg_keyed = NULL;
    ops.device_info = NULL;
    ops.ep_provider = NULL;
    CHECK_ST(rf_provider_open(&ops, NULL, &fab), RF_ERR_UNAVAILABLE);

    printf("provider table tests passed\n");
    return 0;
}
