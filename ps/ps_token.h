/* ps/ps_token.h: a task's token, the proof without a cluster secret that a
 * connection comes from the same task as before (its restart included).
 * See ps_token.c and docs/DESIGN.md "Task tokens". */
#ifndef RF_PS_TOKEN_H
#define RF_PS_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ps/proto.h"

/* The token of client_id derived from the job token (RF_JOB_TOKEN): false
 * when that is unset or empty. */
bool ps_token_from_job(uint32_t client_id, unsigned char out[PS_TOKEN_LEN]);

/* The token this process presents as client_id to the cluster whose first
 * ps task is ps0 ("host:port"): from the job token, else read from (or
 * created in) the token directory, else a random one for this process
 * (logged: a restart of it will not be recognised). Says in src which. */
void ps_token_for(uint32_t client_id, const char *ps0,
                  unsigned char out[PS_TOKEN_LEN], char *src, size_t src_len);

/* Constant-time comparison. */
bool ps_token_equal(const unsigned char a[PS_TOKEN_LEN],
                    const unsigned char b[PS_TOKEN_LEN]);

#endif
