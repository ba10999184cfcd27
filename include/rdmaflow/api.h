/* rdmaflow/api.h: RF_API, the mark on every public function and object of
 * rdmaflow. The library is compiled with -fvisibility=hidden, so only what
 * carries RF_API is exported by librdmaflow.so (and kept global in
 * librdmaflow.a); everything else stays inside the library. The linker
 * version script (lib/librdmaflow.map) puts the exports in the RDMAFLOW_0.1
 * version node. Every public header that declares a library function or
 * object includes this one (byteorder.h, all inline, needs none); programs
 * never need to. */
#ifndef RDMAFLOW_API_H
#define RDMAFLOW_API_H

#if defined(__GNUC__) || defined(__clang__)
#define RF_API __attribute__((visibility("default")))
#else
#define RF_API
#endif

#endif
