/* core/version.c: rf_version(), the library's own version string
 * (rdmaflow/version.h). RF_GIT_COMMIT is defined by core/CMakeLists.txt
 * when the source tree's git commit was known at configure time. */
#include "rdmaflow/version.h"

#ifdef RF_GIT_COMMIT
#define RF_VERSION_FULL RF_VERSION_STRING " (git " RF_GIT_COMMIT ")"
#else
#define RF_VERSION_FULL RF_VERSION_STRING
#endif

const char *rf_version(void)
{
    return RF_VERSION_FULL;
}
