/* cluster/cluster_addr.c: HOST:PORT parsing and formatting (hostnames,
 * IPv4, bracketed IPv6 with an optional zone), the canonical key that the
 * duplicate-address check compares, and quoting of input in messages. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/status.h"

#define HOSTNAME_MAX 253
#define LABEL_MAX    63

const char *cl_quote(const char *text, size_t len, char buf[80])
{
    if (len <= 64 && rf_escape(buf, 80, text, len, RF_ESCAPE_ALL) < 80)
        return buf;
    size_t n = len > 61 ? 61 : len;
    while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
        n--; /* do not split a UTF-8 sequence */
    rf_escape(buf, 77, text, n, RF_ESCAPE_ALL); /* cut between escapes */
    strcat(buf, "...");
    return buf;
}

static bool is_ipv4(const char *s)
{
    struct in_addr a;
    return inet_pton(AF_INET, s, &a) == 1;
}

/* A character of an IPv6 zone (an interface name or number). */
static bool zone_char(int ch)
{
    return isalnum(ch) || ch == '-' || ch == '_' || ch == '.';
}

/* "addr" or "addr%zone" inside brackets. */
static bool is_ipv6(const char *s)
{
    char addr[INET6_ADDRSTRLEN + 1];
    const char *pct = strchr(s, '%');
    size_t alen = pct ? (size_t)(pct - s) : strlen(s);
    if (alen == 0 || alen >= sizeof addr)
        return false;
    memcpy(addr, s, alen);
    addr[alen] = '\0';
    struct in6_addr a;
    if (inet_pton(AF_INET6, addr, &a) != 1)
        return false;
    if (pct) {
        if (!pct[1])
            return false;
        for (const char *z = pct + 1; *z; z++)
            if (!zone_char((unsigned char)*z))
                return false;
    }
    return true;
}

/* A hostname or dotted-quad IPv4 address; on error *why describes it. */
static bool check_host_name(const char *h, char *why, size_t whylen)
{
    size_t len = strlen(h);
    size_t body = (len > 1 && h[len - 1] == '.') ? len - 1 : len;
    if (body > HOSTNAME_MAX) {
        snprintf(why, whylen, "host is %zu characters long (at most %d)", body,
                 HOSTNAME_MAX);
        return false;
    }
    if (strspn(h, "0123456789.") == len) {
        if (is_ipv4(h))
            return true;
        snprintf(why, whylen, "\"%s\" is not a valid IPv4 address", h);
        return false;
    }
    size_t start = 0;
    for (size_t i = 0; i <= body; i++) {
        if (i < body && h[i] != '.') {
            unsigned char ch = (unsigned char)h[i];
            if (isalnum(ch) || ch == '-' || ch == '_')
                continue;
            if (isprint(ch))
                snprintf(why, whylen,
                         "character '%c' at offset %zu is not allowed in a "
                         "host name",
                         ch, i);
            else
                snprintf(why, whylen,
                         "byte 0x%02x at offset %zu is not allowed in a host "
                         "name",
                         ch, i);
            return false;
        }
        size_t llen = i - start;
        if (llen == 0) {
            snprintf(why, whylen, "empty label at offset %zu in host name", i);
            return false;
        }
        if (llen > LABEL_MAX) {
            snprintf(why, whylen,
                     "label at offset %zu is %zu characters long (at most "
                     "%d)",
                     start, llen, LABEL_MAX);
            return false;
        }
        if (h[start] == '-' || h[i - 1] == '-') {
            snprintf(why, whylen, "label \"%.*s\" begins or ends with '-'",
                     (int)llen, h + start);
            return false;
        }
        start = i + 1;
    }
    return true;
}

/* Port text: 1-65535 in decimal, digits only. */
static rf_status parse_port(const char *p, const char *what, const char *q,
                            uint16_t *port)
{
    char pq[80];
    if (!*p)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\" has an empty port (expected "
                            "HOST:PORT)",
                            what, q);
    size_t digits = strspn(p, "0123456789");
    if (p[digits] != '\0')
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\" has a bad port \"%s\" (not a decimal "
                            "number)",
                            what, q, cl_quote(p, strlen(p), pq));
    long v = digits > 5 ? 0 : strtol(p, NULL, 10);
    if (v < 1 || v > 65535)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\" has a bad port \"%s\" (must be "
                            "1-65535)",
                            what, q, cl_quote(p, strlen(p), pq));
    *port = (uint16_t)v;
    return RF_OK;
}

rf_status rf_parse_host_port(const char *text, const char *what,
                             char host[RF_HOST_MAX], uint16_t *port)
{
    char q[80], why[160];
    if (!what)
        what = "address";
    if (host)
        host[0] = '\0';
    if (!host || !port)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: no output buffer", what);
    if (!text || !*text)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s is empty", what);
    cl_quote(text, strlen(text), q);

    const char *h = text, *colon;
    size_t hlen;
    bool v6 = text[0] == '[';
    if (v6) {
        const char *close = strchr(text, ']');
        if (!close)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\" has no ']' after the IPv6 address",
                                what, q);
        h = text + 1;
        hlen = (size_t)(close - h);
        if (close[1] == '\0')
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\" has no port (expected "
                                "[IPV6]:PORT)",
                                what, q);
        if (close[1] != ':')
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\" has '%c' after ']' (expected "
                                "[IPV6]:PORT)",
                                what, q, close[1]);
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\" has no port (expected HOST:PORT)",
                                what, q);
        if (memchr(text, ':', (size_t)(colon - text)))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\" has more than one ':' (an IPv6 "
                                "address goes in brackets: [::1]:2222)",
                                what, q);
        hlen = (size_t)(colon - text);
    }
    if (hlen == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s \"%s\" has an empty host",
                            what, q);
    if (hlen >= RF_HOST_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\" has a bad host: host is %zu characters "
                            "long (at most %d)",
                            what, q, hlen, HOSTNAME_MAX);
    rf_status st = parse_port(colon + 1, what, q, port);
    if (st != RF_OK)
        return st;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (v6 ? !is_ipv6(host) : !check_host_name(host, why, sizeof why)) {
        if (v6) {
            char hq[80];
            snprintf(why, sizeof why, "\"%s\" is not a valid IPv6 address",
                     cl_quote(host, hlen, hq));
        }
        host[0] = '\0';
        return rf_error_set(RF_ERR_INVALID_ARG, "%s \"%s\" has a bad host: %s",
                            what, q, why);
    }
    return RF_OK;
}

rf_status rf_format_host_port(const char *host, uint16_t port, char *buf,
                              size_t len)
{
    if (!buf || len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_format_host_port: no buffer");
    buf[0] = '\0';
    if (!host || !*host)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_format_host_port: empty host");
    int n = strchr(host, ':') ? snprintf(buf, len, "[%s]:%u", host, port)
                              : snprintf(buf, len, "%s:%u", host, port);
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_format_host_port: %d bytes do not fit in %zu",
                            n + 1, len);
    }
    return RF_OK;
}

char *cl_address_key(const char *host, uint16_t port)
{
    char canon[RF_HOST_MAX + 8];
    const char *pct = strchr(host, '%');
    size_t alen = pct ? (size_t)(pct - host) : strlen(host);
    unsigned char bin[16];
    char addr[RF_HOST_MAX];
    memcpy(addr, host, alen < sizeof addr ? alen : sizeof addr - 1);
    addr[alen < sizeof addr ? alen : sizeof addr - 1] = '\0';
    if (strchr(host, ':') && inet_pton(AF_INET6, addr, bin) == 1) {
        char nt[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, bin, nt, sizeof nt);
        snprintf(canon, sizeof canon, "[%s%s]", nt, pct ? pct : "");
    } else if (inet_pton(AF_INET, host, bin) == 1) {
        inet_ntop(AF_INET, bin, canon, sizeof canon);
    } else {
        size_t n = strlen(host);
        if (n > 1 && host[n - 1] == '.')
            n--;
        if (n >= sizeof canon)
            n = sizeof canon - 1;
        for (size_t i = 0; i < n; i++)
            canon[i] = (char)tolower((unsigned char)host[i]);
        canon[n] = '\0';
    }
    char *key = NULL;
    if (asprintf(&key, "%s:%u", canon, port) < 0)
        return NULL;
    return key;
}
