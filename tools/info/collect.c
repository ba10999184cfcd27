/* tools/info/collect.c: asks the library what it finds on this host and
 * puts it into one JSON document: "providers" (each compiled-in provider,
 * whether it opens here and why not), "verbs" (the RDMA devices with their
 * limits, ports and GIDs, or that there is none and the fix), "address"
 * (with --addr: the provider rf_connect uses for it, the order and why, its
 * NUMA node) and "settings" (every RF_* variable, its value and source). */
#include <stdio.h>
#include <string.h>

#include "info.h"
#include "rdmaflow/env.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/fabric_info.h"
#include "rdmaflow/topology.h"

static void put_str(json_object *o, const char *key, const char *v)
{
    json_object_object_add(o, key, v ? json_object_new_string(v) : NULL);
}

static void put_int(json_object *o, const char *key, int64_t v)
{
    json_object_object_add(o, key, json_object_new_int64(v));
}

static json_object *choice_json(const rf_provider_choice *c)
{
    json_object *order = json_object_new_array();
    for (int i = 0; i < c->count; i++)
        json_object_array_add(order, json_object_new_string(c->order[i]));
    return order;
}

/* The NUMA node for device (an address, a netdev or a verbs device). */
static json_object *numa_json(rf_topology *topo, const char *topo_err,
                              const char *device)
{
    json_object *o = json_object_new_object();
    if (!topo) {
        put_str(o, "error", topo_err);
        return o;
    }
    rf_binding b;
    if (rf_topology_choose(topo, device, &b) != RF_OK) {
        put_str(o, "error", rf_error_message());
        return o;
    }
    put_int(o, "node", b.numa_node);
    put_str(o, "cpus", b.cpus);
    put_str(o, "why", b.why);
    return o;
}

static json_object *providers_json(rf_fabric *def, const char *def_err)
{
    json_object *arr = json_object_new_array();
    for (const char *const *p = rf_fabric_providers(); *p; p++) {
        json_object *o = json_object_new_object();
        put_str(o, "name", *p);
        if (strcmp(*p, "auto") == 0) {
            /* What programs asking for auto get: the default fabric. */
            if (!def) {
                json_object_object_add(o, "usable", json_object_new_boolean(0));
                put_str(o, "why", def_err);
            } else if (strcmp(rf_fabric_provider(def), "auto") != 0) {
                json_object_object_add(o, "usable", json_object_new_boolean(1));
                char why[200];
                snprintf(why, sizeof why,
                         "RF_FABRIC=%s: a program asking for auto gets %s",
                         rf_fabric_provider(def), rf_fabric_provider(def));
                put_str(o, "why", why);
            } else {
                json_object_object_add(o, "usable", json_object_new_boolean(1));
                /* For a local address auto lists every provider it holds. */
                rf_provider_choice c;
                if (rf_fabric_choose(def, "127.0.0.1", &c) == RF_OK)
                    json_object_object_add(o, "holds", choice_json(&c));
            }
        } else {
            rf_fabric *f = NULL;
            rf_status st = rf_fabric_open(*p, NULL, &f);
            json_object_object_add(o, "usable",
                                   json_object_new_boolean(st == RF_OK));
            if (st != RF_OK)
                put_str(o, "why", rf_error_message());
            rf_fabric_close(f);
        }
        json_object_array_add(arr, o);
    }
    return arr;
}

static json_object *port_json(const rf_port_info *p)
{
    json_object *o = json_object_new_object();
    put_int(o, "port", p->port);
    put_str(o, "state", p->state);
    put_int(o, "active_mtu", p->active_mtu);
    put_int(o, "max_mtu", p->max_mtu);
    put_str(o, "link_layer", p->link_layer);
    put_int(o, "lid", p->lid);
    put_int(o, "gid_tbl_len", p->gid_tbl_len);
    json_object *gids = json_object_new_array();
    for (int g = 0; g < p->gid_count; g++) {
        json_object *e = json_object_new_object();
        put_int(e, "index", p->gids[g].index);
        put_str(e, "gid", p->gids[g].gid);
        put_str(e, "type", p->gids[g].type);
        put_str(e, "netdev", p->gids[g].netdev);
        json_object_array_add(gids, e);
    }
    json_object_object_add(o, "gids", gids);
    return o;
}

static json_object *device_json(const rf_verbs_device_info *d,
                                rf_topology *topo, const char *topo_err)
{
    json_object *o = json_object_new_object();
    put_str(o, "name", d->name);
    put_str(o, "transport", d->transport);
    put_str(o, "node_guid", d->node_guid);
    put_str(o, "fw_ver", d->fw_ver);
    put_int(o, "vendor_id", d->vendor_id);
    put_int(o, "vendor_part_id", d->vendor_part_id);
    json_object *lim = json_object_new_object();
    json_object_object_add(lim, "max_mr_size",
                           json_object_new_uint64(d->max_mr_size));
    put_int(lim, "max_mr", d->max_mr);
    put_int(lim, "max_qp", d->max_qp);
    put_int(lim, "max_qp_wr", d->max_qp_wr);
    put_int(lim, "max_sge", d->max_sge);
    put_int(lim, "max_cq", d->max_cq);
    put_int(lim, "max_cqe", d->max_cqe);
    put_int(lim, "max_pd", d->max_pd);
    put_int(lim, "max_qp_rd_atom", d->max_qp_rd_atom);
    put_str(lim, "atomic_cap", d->atomic_cap);
    json_object_object_add(o, "limits", lim);
    json_object_object_add(o, "numa", numa_json(topo, topo_err, d->name));
    json_object *ports = json_object_new_array();
    for (int p = 0; p < d->port_count; p++)
        json_object_array_add(ports, port_json(&d->ports[p]));
    json_object_object_add(o, "ports", ports);
    return o;
}

static json_object *verbs_json(rf_topology *topo, const char *topo_err,
                               int *failed)
{
    json_object *o = json_object_new_object();
    rf_verbs_device_info *devs = NULL;
    int n = 0;
    rf_status st = rf_verbs_devices(&devs, &n);
    json_object_object_add(o, "built_in",
                           json_object_new_boolean(st != RF_ERR_UNSUPPORTED));
    json_object *arr = json_object_new_array();
    if (st != RF_OK) {
        put_str(o, "error", rf_error_message());
        if (st != RF_ERR_UNSUPPORTED)
            *failed = 1;
    }
    for (int i = 0; i < n; i++)
        json_object_array_add(arr, device_json(&devs[i], topo, topo_err));
    json_object_object_add(o, "devices", arr);
    if (st == RF_OK && n == 0)
        put_str(o, "error", "no RDMA device on this host");
    if (n == 0)
        put_str(o, "fix", RF_VERBS_NO_DEVICE_FIX);
    rf_verbs_devices_free(devs, n);
    return o;
}

static json_object *address_json(const char *addr, rf_fabric *def,
                                 const char *def_err, rf_topology *topo,
                                 const char *topo_err, int *failed)
{
    json_object *o = json_object_new_object();
    put_str(o, "host", addr);
    if (!def) {
        put_str(o, "error", def_err);
        *failed = 1;
    } else {
        put_str(o, "fabric", rf_fabric_provider(def));
        rf_provider_choice c;
        if (rf_fabric_choose(def, addr, &c) == RF_OK) {
            put_str(o, "provider", c.order[0]);
            json_object_object_add(o, "order", choice_json(&c));
            put_str(o, "why", c.why);
        } else {
            put_str(o, "error", rf_error_message());
            *failed = 1;
        }
    }
    json_object_object_add(o, "numa", numa_json(topo, topo_err, addr));
    return o;
}

/* Every setting with its value; one that does not read as its row says
 * (what a program would refuse) carries the error and fails rf-info. */
static json_object *settings_json(int *failed)
{
    json_object *arr = json_object_new_array();
    for (const rf_env_var *v = rf_env_vars(); v->name; v++) {
        json_object *o = json_object_new_object();
        const char *value = NULL;
        rf_env_source src = rf_env_effective(v, &value);
        put_str(o, "name", v->name);
        put_str(o, "value", value);
        put_str(o, "source",
                src == RF_ENV_ENVIRONMENT ? "environment" : "default");
        put_str(o, "default", v->def);
        put_str(o, "reader", v->reader);
        put_str(o, "meaning", v->meaning);
        if (rf_fabric_setting_check(v) != RF_OK) {
            put_str(o, "error", rf_error_message());
            /* also where a script looks for why rf-info failed */
            fprintf(stderr, "rf-info: %s would be refused: %s\n", v->name,
                    rf_error_message());
            *failed = 1;
        }
        json_object_array_add(arr, o);
    }
    return arr;
}

json_object *info_collect(const char *addr, int *failed)
{
    *failed = 0;
    json_object *doc = json_object_new_object();
    if (!doc)
        return NULL;
    char def_err[512] = "", topo_err[512] = "";
    rf_fabric *def = NULL;
    if (rf_fabric_open(NULL, NULL, &def) != RF_OK)
        snprintf(def_err, sizeof def_err, "%s", rf_error_message());
    rf_topology *topo = NULL;
    if (rf_topology_open(&topo) != RF_OK)
        snprintf(topo_err, sizeof topo_err, "%s", rf_error_message());

    json_object_object_add(doc, "providers", providers_json(def, def_err));
    json_object_object_add(doc, "verbs", verbs_json(topo, topo_err, failed));
    if (addr)
        json_object_object_add(
            doc, "address",
            address_json(addr, def, def_err, topo, topo_err, failed));
    json_object_object_add(doc, "settings", settings_json(failed));

    rf_topology_close(topo);
    rf_fabric_close(def);
    return doc;
}
