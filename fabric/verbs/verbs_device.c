/* fabric/verbs/verbs_device.c: choosing the device, port and GID a fabric
 * uses, the provider's probe, and fork support.
 *
 * Device: the one whose netdev carries attr->bind_addr (rdma_bind_addr on a
 * temporary cm_id tells), else RF_VERBS_DEVICE, else the first device with
 * an ACTIVE port. The contexts are librdmacm's own (rdma_get_devices), so
 * every cm_id bound to that device has id->verbs == fab->ctx and QPs can be
 * created on the fabric's PD.
 * Port: RF_VERBS_PORT, else the bound address's port, else the first ACTIVE.
 * GID: RF_VERBS_GID_INDEX, else (RoCE) the RoCE v2 IPv4-mapped GID, the one
 * of bind_addr if given. rdma_cm picks the GID of each connection itself
 * from its source address; what this choice decides is that source
 * address: without bind_addr, connections are resolved from the chosen
 * GID's IPv4 address, so they stay on the chosen device and netdev. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/verbs/verbs_internal.h"
#include "rdmaflow/env.h"
#include "rdmaflow/fabric_info.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_init_once(void)
{
    /* With RDMAV_FORK_SAFE / IBV_FORK_SAFE set, libibverbs does this itself
     * when it loads. On kernels >= 5.13 (copy-on-fork of pinned pages)
     * ibv_fork_init() is a no-op. Otherwise registered pages are marked
     * MADV_DONTFORK: a forked child must exec (or not touch them). */
    if (getenv("RDMAV_FORK_SAFE") || getenv("IBV_FORK_SAFE"))
        return;
    int rc = ibv_fork_init();
    if (rc)
        RF_LOG_WARN("verbs: ibv_fork_init: %s (fork with registered memory "
                    "may be unsafe)",
                    strerror(rc));
}

void verbs_fork_init(void)
{
    pthread_once(&fork_once, fork_init_once);
}

static int port_active(struct ibv_context *ctx, uint8_t port)
{
    struct ibv_port_attr pa;
    return ibv_query_port(ctx, port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE;
}

static int first_active_port(struct ibv_context *ctx)
{
    struct ibv_device_attr da;
    if (ibv_query_device(ctx, &da))
        return 0;
    for (int p = 1; p <= da.phys_port_cnt; p++)
        if (port_active(ctx, (uint8_t)p))
            return p;
    return 0;
}

rf_status verbs_probe(void)
{
    verbs_fork_init();
    int n = 0;
    struct ibv_context **list = rdma_get_devices(&n);
    if (!list || n == 0) {
        int err = errno;
        if (list)
            rdma_free_devices(list);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "verbs: no RDMA device (rdma_get_devices: %s); "
                            "%s",
                            n == 0 && !err ? "none found" : strerror(err),
                            RF_VERBS_NO_DEVICE_FIX);
    }
    int found = 0;
    for (int i = 0; i < n && !found; i++)
        found = first_active_port(list[i]) > 0;
    rdma_free_devices(list);
    if (!found)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "verbs: no RDMA device has an ACTIVE port (rf-info "
                            "shows their ports; is the netdev up?); %s",
                            RF_VERBS_NO_DEVICE_FIX);
    return RF_OK;
}

static int gid_is_v4mapped(const union ibv_gid *g)
{
    static const unsigned char prefix[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
    return memcmp(g->raw, prefix, sizeof prefix) == 0;
}

const char *verbs_gid_type_name(int type)
{
    switch (type) {
    case IBV_GID_TYPE_IB:
        return "IB";
    case IBV_GID_TYPE_ROCE_V1:
        return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2:
        return "RoCE v2";
    default:
        return "unknown";
    }
}

static void device_names(struct ibv_context **list, int n, char *buf,
                         size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i)
            strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, ibv_get_device_name(list[i]->device),
                len - strlen(buf) - 1);
    }
}

/* Finds the device whose netdev carries addr (rdma_bind_addr's choice). */
static rf_status device_of_addr(const char *bind_addr,
                                struct sockaddr_storage *ss,
                                struct ibv_context **ctx, uint8_t *port)
{
    rf_status st = verbs_resolve("rf_fabric_open: bind_addr", bind_addr, 0, ss);
    if (st != RF_OK)
        return st;
    *ctx = NULL;
    *port = 0;
    struct rdma_event_channel *ch = rdma_create_event_channel();
    if (!ch)
        return rf_error_set(verbs_errno_status(errno),
                            "rdma_create_event_channel: %s", strerror(errno));
    struct rdma_cm_id *id = NULL;
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
        int err = errno;
        rdma_destroy_event_channel(ch);
        return rf_error_set(verbs_errno_status(err), "rdma_create_id: %s",
                            strerror(err));
    }
    if (rdma_bind_addr(id, (struct sockaddr *)ss)) {
        int err = errno;
        rdma_destroy_id(id);
        rdma_destroy_event_channel(ch);
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "rdma_bind_addr(%s): %s (is it the address of "
                            "an RDMA-capable netdev?)",
                            bind_addr, strerror(err));
    }
    *ctx = id->verbs; /* NULL for a wildcard address */
    *port = id->port_num;
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return RF_OK;
}

static rf_status pick_gid(vfab *fab, const struct ibv_port_attr *pa,
                          int64_t env_gid, const struct sockaddr_storage *bind)
{
    const struct in_addr *want4 = NULL;
    if (bind && bind->ss_family == AF_INET)
        want4 = &((const struct sockaddr_in *)bind)->sin_addr;
    struct ibv_gid_entry e, best;
    int best_score = -1;
    if (env_gid >= 0) {
        if (env_gid >= pa->gid_tbl_len)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "RF_VERBS_GID_INDEX=%lld: %s port %u has %d "
                                "GIDs",
                                (long long)env_gid, fab->devname, fab->port,
                                pa->gid_tbl_len);
        int rc =
            ibv_query_gid_ex(fab->ctx, fab->port, (uint32_t)env_gid, &best, 0);
        if (rc)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "RF_VERBS_GID_INDEX=%lld: ibv_query_gid_ex(%s "
                                "port %u): %s (empty entry?)",
                                (long long)env_gid, fab->devname, fab->port,
                                strerror(rc));
        best_score = 0;
    } else if (pa->link_layer != IBV_LINK_LAYER_ETHERNET) {
        int rc = ibv_query_gid_ex(fab->ctx, fab->port, 0, &best, 0);
        if (rc)
            return rf_error_set(RF_ERR_UNAVAILABLE,
                                "ibv_query_gid_ex(%s port %u index 0): %s",
                                fab->devname, fab->port, strerror(rc));
        best_score = 0;
    } else {
        for (int i = 0; i < pa->gid_tbl_len; i++) {
            if (ibv_query_gid_ex(fab->ctx, fab->port, (uint32_t)i, &e, 0))
                continue; /* empty entry */
            int v4 = gid_is_v4mapped(&e.gid);
            int score = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 2 : 1;
            if (v4)
                score += 2;
            if (v4 && want4 && memcmp(&e.gid.raw[12], want4, 4) == 0)
                score += 4;
            if (score > best_score) {
                best_score = score;
                best = e;
            }
        }
        if (best_score < 0)
            return rf_error_set(RF_ERR_UNAVAILABLE,
                                "verbs: %s port %u has no usable GID (no IP "
                                "address on its netdev?)",
                                fab->devname, fab->port);
    }
    fab->link_ib = pa->link_layer != IBV_LINK_LAYER_ETHERNET;
    fab->gid_index = (int)best.gid_index;
    fab->gid = best.gid;
    fab->gid_type = (int)best.gid_type;
    fab->netdev[0] = '\0';
    if (best.ndev_ifindex && !if_indextoname(best.ndev_ifindex, fab->netdev))
        fab->netdev[0] = '\0';
    if (!fab->have_src && pa->link_layer == IBV_LINK_LAYER_ETHERNET &&
        gid_is_v4mapped(&fab->gid)) {
        struct sockaddr_in *in = (struct sockaddr_in *)&fab->src;
        memset(&fab->src, 0, sizeof fab->src);
        in->sin_family = AF_INET;
        memcpy(&in->sin_addr, &fab->gid.raw[12], 4);
        fab->have_src = 1;
    }
    return RF_OK;
}

/* The device bind_addr is on, if it is on one: it becomes the device and
 * the source address. */
static rf_status device_from_bind(vfab *fab, const char *bind_addr,
                                  struct sockaddr_storage *bind, int *have_bind,
                                  uint8_t *bind_port)
{
    struct ibv_context *bctx = NULL;
    rf_status st = device_of_addr(bind_addr, bind, &bctx, bind_port);
    if (st != RF_OK)
        return st;
    if (bctx) {
        fab->ctx = bctx;
        *have_bind = 1;
        fab->src = *bind;
        fab->have_src = 1;
    } else {
        RF_LOG_INFO("verbs: bind_addr %s is on no RDMA device (wildcard "
                    "or loopback): the device is chosen as without it",
                    bind_addr);
    }
    return RF_OK;
}

/* RF_VERBS_DEVICE: the device of that name, which must be bind_addr's
 * device when bind_addr chose one. */
static rf_status device_from_env(vfab *fab, const char *env_dev,
                                 const char *bind_addr, int n,
                                 const char *names)
{
    struct ibv_context *ectx = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(ibv_get_device_name(fab->devlist[i]->device), env_dev) == 0)
            ectx = fab->devlist[i];
    if (!ectx)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "RF_VERBS_DEVICE=%s: no such RDMA device "
                            "(have: %s)",
                            env_dev, names);
    if (fab->ctx && fab->ctx != ectx)
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "RF_VERBS_DEVICE=%s, but bind_addr %s is on device %s", env_dev,
            bind_addr, ibv_get_device_name(fab->ctx->device));
    fab->ctx = ectx;
    return RF_OK;
}

/* Without a choice: the first device with an ACTIVE port. */
static rf_status first_active_device(vfab *fab, int n, const char *names)
{
    for (int i = 0; i < n && !fab->ctx; i++)
        if (first_active_port(fab->devlist[i]) > 0)
            fab->ctx = fab->devlist[i];
    if (!fab->ctx)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "verbs: no RDMA device has an ACTIVE port "
                            "(have: %s)",
                            names);
    return RF_OK;
}

/* The port: RF_VERBS_PORT (which must be bind_addr's port when bind_addr
 * chose one), else bind_addr's, else the device's first ACTIVE port. */
static rf_status choose_port(vfab *fab, const char *bind_addr, int64_t env_port,
                             int have_bind, uint8_t bind_port)
{
    if (env_port) {
        if (env_port > fab->dev_attr.phys_port_cnt)
            return rf_error_set(
                RF_ERR_INVALID_ARG, "RF_VERBS_PORT=%lld: %s has %u port(s)",
                (long long)env_port, fab->devname, fab->dev_attr.phys_port_cnt);
        if (have_bind && bind_port && bind_port != env_port)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "RF_VERBS_PORT=%lld, but bind_addr %s is on "
                                "port %u of %s",
                                (long long)env_port, bind_addr, bind_port,
                                fab->devname);
        fab->port = (uint8_t)env_port;
    } else if (have_bind && bind_port) {
        fab->port = bind_port;
    } else {
        fab->port = (uint8_t)first_active_port(fab->ctx);
        if (!fab->port)
            return rf_error_set(RF_ERR_UNAVAILABLE,
                                "verbs: device %s has no ACTIVE port",
                                fab->devname);
    }
    return RF_OK;
}

static void log_device(const vfab *fab, const struct ibv_port_attr *pa)
{
    char gidbuf[INET6_ADDRSTRLEN] = "", srcbuf[80] = "none";
    inet_ntop(AF_INET6, fab->gid.raw, gidbuf, sizeof gidbuf);
    if (fab->have_src)
        verbs_addr_str((struct sockaddr *)&fab->src, srcbuf, sizeof srcbuf);
    RF_LOG_INFO("verbs: device %s port %u (%s) gid[%d] %s (%s) netdev %s, "
                "source address %s, atomics %s, max_qp_wr %d",
                fab->devname, fab->port,
                pa->link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet"
                                                          : "InfiniBand",
                fab->gid_index, gidbuf, verbs_gid_type_name(fab->gid_type),
                fab->netdev[0] ? fab->netdev : "-", srcbuf,
                fab->dev_attr.atomic_cap == IBV_ATOMIC_NONE ? "none" : "yes",
                fab->dev_attr.max_qp_wr);
}

rf_status verbs_select_device(vfab *fab, const rf_fabric_attr *attr)
{
    int64_t env_port = 0, env_gid = -1;
    rf_status st = rf_setting_int("RF_VERBS_PORT", &env_port);
    if (st == RF_OK)
        st = rf_setting_int("RF_VERBS_GID_INDEX", &env_gid);
    if (st != RF_OK)
        return st;
    const char *env_dev = rf_setting_str("RF_VERBS_DEVICE");

    int n = 0;
    fab->devlist = rdma_get_devices(&n);
    if (!fab->devlist || n == 0) {
        int err = errno;
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "verbs: no RDMA device (rdma_get_devices: %s); "
                            "%s",
                            n == 0 && !err ? "none found" : strerror(err),
                            RF_VERBS_NO_DEVICE_FIX);
    }
    char names[256];
    device_names(fab->devlist, n, names, sizeof names);

    struct sockaddr_storage bind;
    int have_bind = 0;
    uint8_t bind_port = 0;
    if (attr->bind_addr && *attr->bind_addr &&
        (st = device_from_bind(fab, attr->bind_addr, &bind, &have_bind,
                               &bind_port)) != RF_OK)
        return st;
    if (env_dev && (st = device_from_env(fab, env_dev, attr->bind_addr, n,
                                         names)) != RF_OK)
        return st;
    if (!fab->ctx && (st = first_active_device(fab, n, names)) != RF_OK)
        return st;
    snprintf(fab->devname, sizeof fab->devname, "%s",
             ibv_get_device_name(fab->ctx->device));
    if (ibv_query_device(fab->ctx, &fab->dev_attr))
        return rf_error_set(verbs_errno_status(errno),
                            "ibv_query_device(%s): %s", fab->devname,
                            strerror(errno));
    fab->iwarp = fab->ctx->device->transport_type == IBV_TRANSPORT_IWARP;

    st = choose_port(fab, attr->bind_addr, env_port, have_bind, bind_port);
    if (st != RF_OK)
        return st;
    struct ibv_port_attr pa;
    if (ibv_query_port(fab->ctx, fab->port, &pa))
        return rf_error_set(RF_ERR_UNAVAILABLE, "ibv_query_port(%s, %u): %s",
                            fab->devname, fab->port, strerror(errno));
    if (pa.state != IBV_PORT_ACTIVE)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "verbs: %s port %u is %s, not ACTIVE", fab->devname,
                            fab->port, ibv_port_state_str(pa.state));
    st = pick_gid(fab, &pa, env_gid, have_bind ? &bind : NULL);
    if (st != RF_OK)
        return st;
    log_device(fab, &pa);
    return RF_OK;
}
