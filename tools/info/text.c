/* tools/info/text.c: rf-info's text output, printed from the same JSON
 * document --json prints (collect.c): providers, then the RDMA devices in
 * ibv_devinfo's shape, the address's choice, and the RF_* settings. */
#include <inttypes.h>
#include <string.h>

#include "info.h"
#include "rdmaflow/escape.h"

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A string member as printed: escaped (rf_esc), since device names, the
 * RF_* settings' values and --addr come from outside; NULL when absent. */
static const char *str(json_object *o, const char *key)
{
    json_object *v = get(o, key);
    return v ? rf_esc(json_object_get_string(v)) : NULL;
}

static int64_t num(json_object *o, const char *key)
{
    return json_object_get_int64(get(o, key));
}

static void print_list(FILE *out, json_object *arr, const char *sep)
{
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
        fprintf(
            out, "%s%s", i ? sep : "",
            rf_esc(json_object_get_string(json_object_array_get_idx(arr, i))));
}

static void print_numa(FILE *out, const char *indent, json_object *numa)
{
    if (str(numa, "error"))
        fprintf(out, "%snuma_node:\t\tunknown (%s)\n", indent,
                str(numa, "error"));
    else
        fprintf(out, "%snuma_node:\t\t%" PRId64 " (cpus %s: %s)\n", indent,
                num(numa, "node"), str(numa, "cpus"), str(numa, "why"));
}

static void print_providers(FILE *out, json_object *arr)
{
    fprintf(out, "providers:\n");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *p = json_object_array_get_idx(arr, i);
        const char *name = str(p, "name");
        int usable = json_object_get_boolean(get(p, "usable"));
        fprintf(out, "\t%-6s %s", name, usable ? "usable" : "not usable here");
        if (get(p, "holds")) {
            fprintf(out, " (holds ");
            print_list(out, get(p, "holds"), ", ");
            fprintf(out, "; chooses one per peer)");
        }
        if (str(p, "why"))
            fprintf(out, ": %s", str(p, "why"));
        fprintf(out, "\n");
    }
}

static void print_port(FILE *out, json_object *p)
{
    fprintf(out, "\t\tport:\t%" PRId64 "\n", num(p, "port"));
    fprintf(out, "\t\t\tstate:\t\t\t%s\n", str(p, "state"));
    fprintf(out, "\t\t\tmax_mtu:\t\t%" PRId64 "\n", num(p, "max_mtu"));
    fprintf(out, "\t\t\tactive_mtu:\t\t%" PRId64 "\n", num(p, "active_mtu"));
    fprintf(out, "\t\t\tlink_layer:\t\t%s\n", str(p, "link_layer"));
    fprintf(out, "\t\t\tport_lid:\t\t%" PRId64 "\n", num(p, "lid"));
    fprintf(out, "\t\t\tgid_tbl_len:\t\t%" PRId64 "\n", num(p, "gid_tbl_len"));
    json_object *gids = get(p, "gids");
    for (size_t g = 0; g < json_object_array_length(gids); g++) {
        json_object *e = json_object_array_get_idx(gids, g);
        const char *nd = str(e, "netdev");
        fprintf(out, "\t\t\tGID[%3" PRId64 "]:\t\t%s, %s%s%s\n",
                num(e, "index"), str(e, "gid"), str(e, "type"),
                nd && *nd ? ", netdev " : "", nd && *nd ? nd : "");
    }
}

static void print_verbs(FILE *out, json_object *v)
{
    json_object *devs = get(v, "devices");
    size_t n = json_object_array_length(devs);
    fprintf(out, "\nverbs devices:\n");
    if (n == 0) {
        fprintf(out, "\t%s\n", str(v, "error"));
        fprintf(out, "\tfix: %s\n", str(v, "fix"));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(devs, i);
        json_object *lim = get(d, "limits");
        fprintf(out, "\thca_id:\t%s\n", str(d, "name"));
        fprintf(out, "\t\ttransport:\t\t%s\n", str(d, "transport"));
        fprintf(out, "\t\tfw_ver:\t\t\t%s\n", str(d, "fw_ver"));
        fprintf(out, "\t\tnode_guid:\t\t%s\n", str(d, "node_guid"));
        fprintf(out, "\t\tvendor_id:\t\t0x%04" PRIx64 "\n",
                num(d, "vendor_id"));
        fprintf(out, "\t\tvendor_part_id:\t\t%" PRId64 "\n",
                num(d, "vendor_part_id"));
        fprintf(out, "\t\tmax_mr_size:\t\t0x%" PRIx64 "\n",
                json_object_get_uint64(get(lim, "max_mr_size")));
        static const char *const keys[] = {
            "max_mr", "max_qp",  "max_qp_wr", "max_sge",
            "max_cq", "max_cqe", "max_pd",    "max_qp_rd_atom"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            fprintf(out, "\t\t%s:%s%" PRId64 "\n", keys[k],
                    strlen(keys[k]) < 7 ? "\t\t\t" : "\t\t", num(lim, keys[k]));
        fprintf(out, "\t\tatomic_cap:\t\t%s\n", str(lim, "atomic_cap"));
        print_numa(out, "\t\t", get(d, "numa"));
        json_object *ports = get(d, "ports");
        for (size_t p = 0; p < json_object_array_length(ports); p++)
            print_port(out, json_object_array_get_idx(ports, p));
    }
}

static void print_address(FILE *out, json_object *a)
{
    fprintf(out, "\naddress %s:\n", str(a, "host"));
    if (str(a, "fabric"))
        fprintf(out, "\tfabric:\t\t%s\n", str(a, "fabric"));
    if (str(a, "provider")) {
        fprintf(out, "\tprovider:\t%s", str(a, "provider"));
        json_object *order = get(a, "order");
        if (json_object_array_length(order) > 1) {
            fprintf(out, " (tried in order: ");
            print_list(out, order, ", ");
            fprintf(out, ")");
        }
        fprintf(out, "\n\twhy:\t\t%s\n", str(a, "why"));
    }
    if (str(a, "error"))
        fprintf(out, "\terror:\t\t%s\n", str(a, "error"));
    print_numa(out, "\t", get(a, "numa"));
}

static void print_settings(FILE *out, json_object *arr)
{
    fprintf(out, "\nsettings (RF_* environment variables):\n");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *s = json_object_array_get_idx(arr, i);
        fprintf(out, "\t%-32s %-20s %s\n", str(s, "name"), str(s, "value"),
                str(s, "source"));
        if (str(s, "error"))
            fprintf(out, "\t\terror: %s\n", str(s, "error"));
    }
}

void info_print_text(FILE *out, json_object *doc)
{
    print_providers(out, get(doc, "providers"));
    json_object *v = get(doc, "verbs");
    if (str(v, "error") && !json_object_get_boolean(get(v, "built_in")))
        fprintf(out, "\nverbs devices:\n\t%s\n", str(v, "error"));
    else
        print_verbs(out, v);
    if (get(doc, "address"))
        print_address(out, get(doc, "address"));
    print_settings(out, get(doc, "settings"));
}
