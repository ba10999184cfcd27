/* fabric/local_addr.h: whether an address names this host, for the
 * providers that only reach peers on one host (shm) and for the auto
 * provider's choice per peer. */
#ifndef RF_FABRIC_LOCAL_ADDR_H
#define RF_FABRIC_LOCAL_ADDR_H

/* 1 if host (a name or a numeric address) resolves to an address assigned
 * to this host, or is empty or a wildcard ("0.0.0.0", "::", "*"); 0 if it
 * resolves only to other hosts' addresses; -1 if it does not resolve (the
 * thread's error message says why). */
int rf_addr_is_local(const char *host);

#endif
