/* rdmaflow/version.h: which rdmaflow this is. The RF_VERSION_* macros are
 * the version of the headers a program was compiled against (and the one
 * source of the project's version: CMakeLists.txt reads them for project()
 * and the library's soversion); rf_version() is the version of the library
 * the program runs with. Implemented in core/version.c. */
#ifndef RDMAFLOW_VERSION_H
#define RDMAFLOW_VERSION_H

#include "rdmaflow/api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RF_VERSION_MAJOR 0
#define RF_VERSION_MINOR 1
#define RF_VERSION_PATCH 0
/* "MAJOR.MINOR.PATCH" of the headers. */
#define RF_VERSION_STRING "0.1.0"

/* The version of the library in use: RF_VERSION_STRING as it was when the
 * library was built, followed by " (git COMMIT)" when the build knew the
 * git commit of its source tree at configure time, e.g. "0.1.0 (git
 * d1e8d38a1b2c)". A program prints it for --version; it may compare the
 * part before the first space with RF_VERSION_STRING. Never NULL. */
RF_API const char *rf_version(void);

#ifdef __cplusplus
}
#endif

#endif
