/* fabric/verbs/verbs_mr.c: memory registration on the fabric's protection
 * domain, with exactly the requested access rights. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/verbs/verbs_internal.h"

static int ibv_access(uint32_t access)
{
    int a = 0;
    if (access & RF_ACCESS_LOCAL_WRITE)
        a |= IBV_ACCESS_LOCAL_WRITE;
    if (access & RF_ACCESS_REMOTE_READ)
        a |= IBV_ACCESS_REMOTE_READ;
    if (access & RF_ACCESS_REMOTE_WRITE)
        a |= IBV_ACCESS_REMOTE_WRITE;
    if (access & RF_ACCESS_REMOTE_ATOMIC)
        a |= IBV_ACCESS_REMOTE_ATOMIC;
    return a;
}

rf_status verbs_mr_reg(rf_fabric *fabric, void *addr, size_t len,
                       uint32_t access, rf_mr **out)
{
    vfab *fab = (vfab *)fabric;
    vmr *m = calloc(1, sizeof *m);
    if (!m)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_mr_reg: out of memory");
    m->mr = ibv_reg_mr(fab->pd, addr, len, ibv_access(access));
    if (!m->mr) {
        int err = errno;
        free(m);
        rf_status st = verbs_errno_status(err);
        if (st != RF_ERR_INVALID_ARG)
            st = RF_ERR_NO_MEMORY; /* pinning limit, out of MTT entries.. */
        return rf_error_set(
            st, "ibv_reg_mr(%s, %p, %zu, access 0x%x): %s%s", fab->devname,
            addr, len, access, strerror(err),
            err == ENOMEM || err == EAGAIN ? " (check ulimit -l)" : "");
    }
    m->base.fabric = fabric;
    m->base.addr = addr;
    m->base.len = len;
    m->base.access = access;
    m->base.rkey = m->mr->rkey;
    m->base.remote_addr = (uint64_t)(uintptr_t)addr;
    *out = &m->base;
    return RF_OK;
}

rf_status verbs_mr_dereg(rf_mr *mr)
{
    vmr *m = (vmr *)mr;
    int rc = ibv_dereg_mr(m->mr);
    if (rc)
        return rf_error_set(verbs_errno_status(rc), "ibv_dereg_mr(%p+%zu): %s",
                            mr->addr, mr->len, strerror(rc));
    free(m);
    return RF_OK;
}
