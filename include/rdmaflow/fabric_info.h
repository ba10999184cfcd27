/* rdmaflow/fabric_info.h: what the fabric layer finds on this host, for
 * rf-info and for programs that explain themselves: the RDMA devices with
 * their ports, GIDs and limits (as ibv_devinfo -v prints them), and which
 * provider a fabric uses for a peer and why (the auto provider's own
 * decision, so the answer is what rf_connect does).
 *
 *   rf_verbs_device_info *devs;
 *   int n;
 *   if (rf_verbs_devices(&devs, &n) == RF_OK) {
 *       if (n == 0)
 *           printf("no RDMA device: %s\n", RF_VERBS_NO_DEVICE_FIX);
 *       for (int i = 0; i < n; i++)
 *           printf("%s: %d port(s)\n", devs[i].name, devs[i].port_count);
 *       rf_verbs_devices_free(devs, n);
 *   }
 *   rf_fabric *fab;
 *   rf_provider_choice c;
 *   if (rf_fabric_open("auto", NULL, &fab) == RF_OK &&
 *       rf_fabric_choose(fab, "10.0.0.2", &c) == RF_OK)
 *       printf("%s: %s\n", c.order[0], c.why);
 */
#ifndef RDMAFLOW_FABRIC_INFO_H
#define RDMAFLOW_FABRIC_INFO_H

#include <stdint.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The fix for "no RDMA device", named by the verbs provider's error and by
 * rf-info. */
#define RF_VERBS_NO_DEVICE_FIX                                                 \
    "use RF_FABRIC=sock (or RF_FABRIC=auto, which falls back to sock), or "    \
    "add a soft-RoCE device: modprobe rdma_rxe; rdma link add rxe0 type rxe "  \
    "netdev eth0"

/* --- RDMA devices -------------------------------------------------------- */

typedef struct rf_gid_info {
    int index;
    char gid[48];    /* as inet_ntop prints it, e.g. "::ffff:10.77.0.1" */
    char type[12];   /* "IB", "RoCE v1", "RoCE v2" or "unknown" */
    char netdev[20]; /* the GID's network interface, "" if none */
} rf_gid_info;

typedef struct rf_port_info {
    int port;            /* 1-based */
    char state[24];      /* as ibv_devinfo: "PORT_ACTIVE", "PORT_DOWN", ... */
    int active_mtu;      /* bytes (256 .. 4096) */
    int max_mtu;         /* bytes */
    char link_layer[16]; /* "Ethernet", "InfiniBand" or "unknown" */
    int lid;
    int gid_tbl_len; /* entries in the table, empty ones included */
    int gid_count;   /* non-empty entries in gids */
    rf_gid_info *gids;
} rf_port_info;

typedef struct rf_verbs_device_info {
    char name[64];      /* "rxe0", "mlx5_0" */
    char transport[16]; /* "InfiniBand" (IB and RoCE), "iWARP", ... */
    char node_guid[24]; /* "xxxx:xxxx:xxxx:xxxx" */
    char fw_ver[64];
    uint32_t vendor_id, vendor_part_id;
    /* Device limits (ibv_query_device). */
    uint64_t max_mr_size;
    int max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd;
    int max_qp_rd_atom;
    char atomic_cap[12]; /* "none", "HCA" or "global" */
    int port_count;
    rf_port_info *ports;
} rf_verbs_device_info;

/* Lists the RDMA devices libibverbs sees (every port, every non-empty GID).
 * No device at all is RF_OK with *count 0; a device that cannot be opened
 * or queried is an error naming it. RF_ERR_UNSUPPORTED when rdmaflow was
 * built without the verbs provider. Free with rf_verbs_devices_free. */
RF_API rf_status rf_verbs_devices(rf_verbs_device_info **out, int *count);
RF_API void rf_verbs_devices_free(rf_verbs_device_info *devs, int count);

/* --- the device a fabric uses -------------------------------------------- */

typedef struct rf_fabric_device {
    char device[64];     /* "rxe0" */
    int port;            /* 1-based */
    int active_mtu;      /* bytes */
    char link_layer[16]; /* "Ethernet" or "InfiniBand" */
    int gid_index;
    char gid[48];      /* "::ffff:10.77.0.1" */
    char gid_type[12]; /* "IB", "RoCE v1", "RoCE v2" */
    char netdev[20];   /* the GID's interface, "" if none */
} rf_fabric_device;

/* The RDMA device, port and GID the fabric's verbs endpoints use (for an
 * auto fabric: its verbs provider's), as the verbs provider chose them
 * (RF_VERBS_DEVICE, RF_VERBS_PORT, RF_VERBS_GID_INDEX, else by address and
 * port state). RF_ERR_UNSUPPORTED when the fabric uses no RDMA device (sock,
 * shm, auto without verbs). */
RF_API rf_status rf_fabric_device_info(rf_fabric *fabric,
                                       rf_fabric_device *out);

/* --- which provider reaches a peer -----------------------------------------
 */

#define RF_CHOICE_MAX 4
typedef struct rf_provider_choice {
    /* The providers rf_connect tries for the host, in order: order[0] is
     * the one used when the peer listens with it; the next is tried only
     * when the peer has no listener of that one. */
    int count;
    const char *order[RF_CHOICE_MAX];
    /* Why, one clause per provider considered, e.g. "shm: 127.0.0.1 is an
     * address of this host; verbs: not in use here (verbs: no RDMA device
     * ...); sock: reaches every peer (the fallback)". */
    char why[1024];
} rf_provider_choice;

/* What rf_connect(fabric, host, ...) would try, without connecting. For an
 * auto fabric this is the auto provider's own choice (the same code); for
 * any other fabric, that provider alone. A host that does not resolve is
 * RF_ERR_UNAVAILABLE, as rf_connect gives. */
RF_API rf_status rf_fabric_choose(rf_fabric *fabric, const char *host,
                                  rf_provider_choice *out);

#ifdef __cplusplus
}
#endif
#endif
