/* ps/ps_spec.h: shard specs on both sides: from the public
 * rf_ps_shard_spec (validated, optimizer fields the kind does not use
 * zeroed so specs compare bitwise), comparison and a one-line description
 * for error messages. */
#ifndef RF_GRAPH_DIST_PS_SPEC_H
#define RF_GRAPH_DIST_PS_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "ps/proto.h"

/* RF_ERR_INVALID_ARG naming the problem (what prefixes the message). */
rf_status ps_spec_from_public(const rf_ps_shard_spec *in, const char *what,
                              ps_spec *out);
/* Zeroes the optimizer fields the kind does not read. */
void ps_spec_canonical_optim(rf_optim_config *cfg);
/* "shape [784,256] float32, adam(learning_rate=0.001, ...), no sync
 * replicas" (or ", sync replicas (replicas_to_aggregate=2, ...)"). */
void ps_spec_describe(const ps_spec *spec, char *buf, size_t len);
/* Same dtype, shape, trainability, sync replicas and (canonical)
 * optimizer, bitwise. */
bool ps_spec_same(const ps_spec *a, const ps_spec *b);

#endif
