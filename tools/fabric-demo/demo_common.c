/* tools/fabric-demo/demo_common.c: content, completion and printing helpers
 * shared by both sides of rf-fabric-demo. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "demo.h"

void demo_content(unsigned char *out, size_t len, int which)
{
    static const char greet[] = "hello from the rdmaflow target; ";
    static const char reply[] = "overwritten by the initiator; ";
    const char *s = which ? reply : greet;
    size_t n = strlen(s);
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)s[i % n];
}

size_t demo_mismatch(const unsigned char *p, size_t len, int which)
{
    unsigned char want[DEMO_DATA_LEN];
    demo_content(want, len < sizeof want ? len : sizeof want, which);
    for (size_t i = 0; i < len && i < sizeof want; i++)
        if (p[i] != want[i])
            return i;
    return len;
}

rf_status demo_wait(rf_cq *cq, rf_completion *out)
{
    int n = rf_cq_wait(cq, out, 1, DEMO_TIMEOUT_MS);
    if (n < 0)
        return (rf_status)n;
    return n == 1 ? RF_OK : RF_ERR_TIMEOUT;
}

void demo_say(const char *role, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("[%-9s] %s\n", role, line);
    fflush(stdout);
}
