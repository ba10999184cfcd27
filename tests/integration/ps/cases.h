/* tests/integration/ps/cases.h: the case functions (cases.def) and the small
 * cluster fixture most of them use: n ps helper processes and a chief
 * client (id 0) in the driver. */
#ifndef RF_TESTS_INTEGRATION_PS_CASES_H
#define RF_TESTS_INTEGRATION_PS_CASES_H

#include "tests/integration/ps/fixture.h"

#define PT_CASE(n, b, d) void case_##n(void);
#include "tests/integration/ps/cases.def"
#undef PT_CASE

#define PT_MAX_PS 4

typedef struct pt_cluster {
    pt_ps ps[PT_MAX_PS];
    size_t n;
    const char *addrs[PT_MAX_PS];
    rf_fabric *f;
    rf_ps_client *chief;
} pt_cluster;

void pt_cluster_start(pt_cluster *c, size_t nps);
/* The chief shuts every ps down; each must exit 0. */
void pt_cluster_stop(pt_cluster *c);

/* Creates (chief) and initialises a float variable with seeded values;
 * returns the handle and fills vals (n floats) with what was written. */
rf_ps_var *pt_make_var(rf_ps_client *c, size_t ps, const rf_ps_shard_spec *spec,
                       uint64_t seed, float *vals);
/* Reads field of var into a fresh registered buffer (freed by caller with
 * free(); its region stays registered with the client). */
float *pt_read_field(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
                     size_t n);

#endif
