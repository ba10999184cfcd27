/* fabric/verbs/verbs_provider.c: the verbs provider's ops table (libibverbs
 * RC QPs + librdmacm), registered in fabric/fabric.c as "verbs". */
#include "fabric/verbs/verbs_internal.h"

const rf_provider_ops rf_verbs_provider = {
    .name = "verbs",
    .probe = rf_verbs_probe,
    .fabric_open = rf_verbs_fabric_open,
    .fabric_close = rf_verbs_fabric_close,
    .mr_reg = rf_verbs_mr_reg,
    .mr_dereg = rf_verbs_mr_dereg,
    .cq_create = rf_verbs_cq_create,
    .cq_destroy = rf_verbs_cq_destroy,
    .cq_poll = rf_verbs_cq_poll,
    .cq_wait = rf_verbs_cq_wait,
    .listen = rf_verbs_listen,
    .listener_close = rf_verbs_listener_close,
    .get_request = rf_verbs_get_request,
    .accept = rf_verbs_accept,
    .reject = rf_verbs_reject,
    .connect = rf_verbs_connect,
    .ep_close = rf_verbs_ep_close,
    .ep_state = rf_verbs_ep_state,
    .ep_enable_remote_access = rf_verbs_ep_enable_remote_access,
    .device_info = rf_verbs_fabric_device,
    .post = rf_verbs_post,
    .post_recv = rf_verbs_post_recv,
};
