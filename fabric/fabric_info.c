/* fabric/fabric_info.c: rf_fabric_choose (fabric_info.h), which provider a
 * fabric uses for a peer, answered for an auto fabric by the auto
 * provider's own connect order (fabric/auto/auto_cm.c); and, when rdmaflow
 * is built without verbs, the device listing that says so (the real one is
 * fabric/verbs/verbs_info.c). */
#include <stdio.h>
#include <string.h>

#include "fabric/auto/auto.h"
#include "fabric/provider.h"
#include "rdmaflow/fabric_info.h"

rf_status rf_fabric_choose(rf_fabric *fabric, const char *host,
                           rf_provider_choice *out)
{
    if (!fabric || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_fabric_choose: fabric or out is NULL");
    memset(out, 0, sizeof *out);
    if (fabric->ops != &rf_auto_provider) {
        out->count = 1;
        out->order[0] = fabric->ops->name;
        snprintf(out->why, sizeof out->why,
                 "the fabric is %s, not auto: every peer is reached with it",
                 fabric->ops->name);
        return RF_OK;
    }
    int order[AUTO_N];
    int n = auto_connect_order(AUTO_FAB(fabric), host, order, out->why,
                               sizeof out->why);
    if (n < 0)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rf_fabric_choose: cannot resolve %s: %s",
                            host ? host : "(null)", rf_error_message());
    out->count = n;
    for (int i = 0; i < n; i++)
        out->order[i] = auto_slot_name(order[i]);
    return RF_OK;
}

rf_status rf_fabric_device_info(rf_fabric *fabric, rf_fabric_device *out)
{
    if (!fabric || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_fabric_device_info: fabric or out is NULL");
    memset(out, 0, sizeof *out);
    if (!fabric->ops->device_info)
        return rf_error_set(RF_ERR_UNSUPPORTED,
                            "the %s provider uses no RDMA device",
                            fabric->ops->name);
    return fabric->ops->device_info(fabric, out);
}

#ifndef RF_HAVE_VERBS
rf_status rf_verbs_devices(rf_verbs_device_info **out, int *count)
{
    if (out)
        *out = NULL;
    if (count)
        *count = 0;
    return rf_error_set(RF_ERR_UNSUPPORTED,
                        "rdmaflow was built without the verbs provider "
                        "(libibverbs/librdmacm not found at build time)");
}

void rf_verbs_devices_free(rf_verbs_device_info *devs, int count)
{
    (void)devs;
    (void)count;
}
#endif
