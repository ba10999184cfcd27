/* fabric/verbs/verbs_provider.c: the verbs provider's ops table (libibverbs
 * RC QPs + librdmacm), registered in fabric/fabric.c as "verbs". */
#include "fabric/verbs/verbs_internal.h"

const rf_provider_ops rf_verbs_provider = {
    .name = "verbs",
    .probe = verbs_probe,
    .fabric_open = verbs_fabric_open,
    .fabric_close = verbs_fabric_close,
    .mr_reg = verbs_mr_reg,
    .mr_dereg = verbs_mr_dereg,
    .cq_create = verbs_cq_create,
    .cq_destroy = verbs_cq_destroy,
    .cq_poll = verbs_cq_poll,
    .cq_wait = verbs_cq_wait,
    .listen = verbs_listen,
    .listener_close = verbs_listener_close,
    .get_request = verbs_get_request,
    .accept = verbs_accept,
    .reject = verbs_reject,
    .connect = verbs_connect,
    .ep_close = verbs_ep_close,
    .ep_state = verbs_ep_state,
    .ep_enable_remote_access = verbs_ep_enable_remote_access,
    .device_info = verbs_fabric_device,
    .post = verbs_post,
    .post_recv = verbs_post_recv,
};
