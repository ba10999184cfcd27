/* fabric/verbs/verbs_info.c: rf_verbs_devices (fabric_info.h), the RDMA
 * devices with their limits, ports and non-empty GIDs, as ibv_devinfo -v
 * shows them, for rf-info. Opens each device on its own (not through a
 * fabric) and closes it again; and rf_fabric_device_info of a verbs
 * fabric: the device, port and GID it chose (verbs_device.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/verbs/verbs_internal.h"
#include "rdmaflow/fabric_info.h"

static const char *atomic_name(enum ibv_atomic_cap cap)
{
    switch (cap) {
    case IBV_ATOMIC_NONE:
        return "none";
    case IBV_ATOMIC_HCA:
        return "HCA";
    case IBV_ATOMIC_GLOB:
        return "global";
    default:
        return "unknown";
    }
}

static const char *transport_name(enum ibv_transport_type t)
{
    switch (t) {
    case IBV_TRANSPORT_IB:
        return "InfiniBand";
    case IBV_TRANSPORT_IWARP:
        return "iWARP";
    case IBV_TRANSPORT_USNIC:
        return "usNIC";
    case IBV_TRANSPORT_USNIC_UDP:
        return "usNIC UDP";
    default:
        return "unknown";
    }
}

/* As ibv_devinfo prints it (ibv_port_state_str says "active"). */
static const char *port_state_name(enum ibv_port_state st)
{
    switch (st) {
    case IBV_PORT_NOP:
        return "PORT_NOP";
    case IBV_PORT_DOWN:
        return "PORT_DOWN";
    case IBV_PORT_INIT:
        return "PORT_INIT";
    case IBV_PORT_ARMED:
        return "PORT_ARMED";
    case IBV_PORT_ACTIVE:
        return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
        return "PORT_ACTIVE_DEFER";
    default:
        return "unknown";
    }
}

static int mtu_bytes(enum ibv_mtu m)
{
    return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

rf_status verbs_fabric_device(rf_fabric *fabric, rf_fabric_device *out)
{
    vfab *fab = (vfab *)fabric;
    snprintf(out->device, sizeof out->device, "%s", fab->devname);
    out->port = fab->port;
    struct ibv_port_attr pa;
    int rc = ibv_query_port(fab->ctx, fab->port, &pa);
    if (rc)
        return rf_error_set(RF_ERR_UNAVAILABLE, "ibv_query_port(%s, %u): %s",
                            fab->devname, fab->port, strerror(rc));
    out->active_mtu = mtu_bytes(pa.active_mtu);
    snprintf(out->link_layer, sizeof out->link_layer, "%s",
             fab->link_ib ? "InfiniBand" : "Ethernet");
    out->gid_index = fab->gid_index;
    inet_ntop(AF_INET6, fab->gid.raw, out->gid, sizeof out->gid);
    snprintf(out->gid_type, sizeof out->gid_type, "%s",
             verbs_gid_type_name(fab->gid_type));
    snprintf(out->netdev, sizeof out->netdev, "%s", fab->netdev);
    return RF_OK;
}

void rf_verbs_devices_free(rf_verbs_device_info *devs, int count)
{
    if (!devs)
        return;
    for (int i = 0; i < count; i++) {
        for (int p = 0; p < devs[i].port_count; p++)
            free(devs[i].ports[p].gids);
        free(devs[i].ports);
    }
    free(devs);
}

/* Every non-empty GID of ctx's ports into their port entries. */
static rf_status query_gids(struct ibv_context *ctx, rf_verbs_device_info *d)
{
    size_t total = 0;
    for (int p = 0; p < d->port_count; p++)
        total += (size_t)d->ports[p].gid_tbl_len;
    if (!total)
        return RF_OK;
    struct ibv_gid_entry *e = calloc(total, sizeof *e);
    if (!e)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "rf_verbs_devices: out of memory");
    ssize_t n = ibv_query_gid_table(ctx, e, total, 0);
    if (n < 0) {
        free(e);
        return rf_error_set(RF_ERR_UNAVAILABLE, "ibv_query_gid_table(%s): %s",
                            d->name, strerror((int)-n));
    }
    for (int p = 0; p < d->port_count; p++) {
        rf_port_info *pi = &d->ports[p];
        pi->gids = calloc((size_t)n + 1, sizeof *pi->gids);
        if (!pi->gids) {
            free(e);
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "rf_verbs_devices: out of memory");
        }
        for (ssize_t k = 0; k < n; k++) {
            if ((int)e[k].port_num != pi->port)
                continue;
            rf_gid_info *g = &pi->gids[pi->gid_count++];
            g->index = (int)e[k].gid_index;
            inet_ntop(AF_INET6, e[k].gid.raw, g->gid, sizeof g->gid);
            snprintf(g->type, sizeof g->type, "%s",
                     verbs_gid_type_name((int)e[k].gid_type));
            char ifname[IF_NAMESIZE] = "";
            if (e[k].ndev_ifindex && if_indextoname(e[k].ndev_ifindex, ifname))
                snprintf(g->netdev, sizeof g->netdev, "%s", ifname);
        }
    }
    free(e);
    return RF_OK;
}

static rf_status query_device(struct ibv_device *dev, rf_verbs_device_info *d)
{
    snprintf(d->name, sizeof d->name, "%s", ibv_get_device_name(dev));
    snprintf(d->transport, sizeof d->transport, "%s",
             transport_name(dev->transport_type));
    struct ibv_context *ctx = ibv_open_device(dev);
    if (!ctx)
        return rf_error_set(verbs_errno_status(errno),
                            "ibv_open_device(%s): %s", d->name,
                            strerror(errno));
    rf_status st = RF_OK;
    struct ibv_device_attr a;
    int rc = ibv_query_device(ctx, &a);
    if (rc) {
        st = rf_error_set(RF_ERR_UNAVAILABLE, "ibv_query_device(%s): %s",
                          d->name, strerror(rc));
        goto close_ctx;
    }
    uint64_t guid = be64toh(a.node_guid);
    snprintf(d->node_guid, sizeof d->node_guid, "%04x:%04x:%04x:%04x",
             (unsigned)(guid >> 48) & 0xffff, (unsigned)(guid >> 32) & 0xffff,
             (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
    snprintf(d->fw_ver, sizeof d->fw_ver, "%s", a.fw_ver);
    d->vendor_id = a.vendor_id;
    d->vendor_part_id = a.vendor_part_id;
    d->max_mr_size = a.max_mr_size;
    d->max_qp = a.max_qp;
    d->max_qp_wr = a.max_qp_wr;
    d->max_sge = a.max_sge;
    d->max_cq = a.max_cq;
    d->max_cqe = a.max_cqe;
    d->max_mr = a.max_mr;
    d->max_pd = a.max_pd;
    d->max_qp_rd_atom = a.max_qp_rd_atom;
    snprintf(d->atomic_cap, sizeof d->atomic_cap, "%s",
             atomic_name(a.atomic_cap));
    d->ports = calloc(a.phys_port_cnt ? a.phys_port_cnt : 1, sizeof *d->ports);
    if (!d->ports) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "rf_verbs_devices: out of memory");
        goto close_ctx;
    }
    for (int p = 1; p <= a.phys_port_cnt; p++) {
        struct ibv_port_attr pa;
        rc = ibv_query_port(ctx, (uint8_t)p, &pa);
        if (rc) {
            st = rf_error_set(RF_ERR_UNAVAILABLE, "ibv_query_port(%s, %d): %s",
                              d->name, p, strerror(rc));
            goto close_ctx;
        }
        rf_port_info *pi = &d->ports[d->port_count++];
        pi->port = p;
        snprintf(pi->state, sizeof pi->state, "%s", port_state_name(pa.state));
        pi->active_mtu = mtu_bytes(pa.active_mtu);
        pi->max_mtu = mtu_bytes(pa.max_mtu);
        snprintf(pi->link_layer, sizeof pi->link_layer, "%s",
                 pa.link_layer == IBV_LINK_LAYER_ETHERNET     ? "Ethernet"
                 : pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
                 : pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED
                     ? "InfiniBand" /* older kernels: IB */
                     : "unknown");
        pi->lid = pa.lid;
        pi->gid_tbl_len = pa.gid_tbl_len;
    }
    st = query_gids(ctx, d);
close_ctx:
    ibv_close_device(ctx);
    return st;
}

rf_status rf_verbs_devices(rf_verbs_device_info **out, int *count)
{
    if (!out || !count)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_verbs_devices: out or count is NULL");
    *out = NULL;
    *count = 0;
    verbs_fork_init();
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list) {
        if (errno == ENOSYS || errno == ENODEV || errno == ENOENT)
            return RF_OK; /* no RDMA subsystem: no device */
        return rf_error_set(RF_ERR_UNAVAILABLE, "ibv_get_device_list: %s",
                            strerror(errno));
    }
    rf_status st = RF_OK;
    rf_verbs_device_info *devs = NULL;
    if (n > 0) {
        devs = calloc((size_t)n, sizeof *devs);
        if (!devs)
            st = rf_error_set(RF_ERR_NO_MEMORY,
                              "rf_verbs_devices: out of memory");
    }
    int got = 0;
    for (int i = 0; i < n && st == RF_OK; i++) {
        st = query_device(list[i], &devs[got]);
        got++;
    }
    ibv_free_device_list(list);
    if (st != RF_OK) {
        rf_verbs_devices_free(devs, got);
        return st;
    }
    *out = devs;
    *count = got;
    return RF_OK;
}
