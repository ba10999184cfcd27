# cmake/rf_package.cmake: the Debian packages, made by `cpack -G DEB` in the
# build tree from the install() rules of cmake/rf_install.cmake, one per
# component, in rdma-core's manner (libibverbs1, libibverbs-dev,
# ibverbs-utils):
#   librdmaflow0     Runtime      /usr/lib/<multiarch>/librdmaflow.so.0*
#   librdmaflow-dev  Development  headers, librdmaflow.so link, librdmaflow.a,
#                                 rdmaflow.pc, the CMake package, the C
#                                 examples (/usr/share/doc/librdmaflow-dev/
#                                 examples)
#   rdmaflow-tools   Tools        rf-trainer, rf-launch, ... and man pages
#   python3-rdmaflow Python       /usr/lib/python3/dist-packages/rdmaflow: the
#                                 package and its extension module (only
#                                 with RF_HAVE_PYTHON, python/CMakeLists.txt)
# Depends come from dpkg-shlibdeps (CPACK_DEBIAN_PACKAGE_SHLIBDEPS) for the
# binaries; the -dev package names the -dev packages of rdmaflow.pc's
# Requires.private, which pkg-config needs; python3-rdmaflow names
# python3-numpy and the python3 versions its extension's ABI fits, as
# dh_python3 does, and byte-compiles and cleans its modules as dh_python3's
# maintainer scripts do (cmake/debian/python3-rdmaflow/); rdmaflow-tools
# Recommends what its scripts run (gnuplot, jq). Tested by install.deb
# (dpkg -x: contents and fields) and install.deb_apt (as root: Depends
# resolved for a minimal Debian, then `apt-get install ./*.deb`, the tools,
# the example and the Python package run from /usr, `apt-get purge`).
set(CPACK_PACKAGE_NAME rdmaflow)
set(CPACK_PACKAGE_VENDOR rdmaflow)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "parameter-server training runtime whose data plane is RDMA")
# The Maintainer field: whoever builds the packages for a site names
# themselves (-DRF_DEB_MAINTAINER="Name <address>"); the project has no
# public address.
set(RF_DEB_MAINTAINER "rdmaflow developers <rdmaflow@localhost>" CACHE STRING
    "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${RF_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL Runtime Development Tools)
if(RF_HAVE_PYTHON)
  list(APPEND CPACK_COMPONENTS_ALL Python)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME librdmaflow${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "rdmaflow shared library\n librdmaflow.so.${PROJECT_VERSION_MAJOR}: fabric (verbs, sock, shm), ps data plane, graph executor and sessions.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
# The verbs provider needs a userspace driver (rxe, mlx5, ...) at run time.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS ibverbs-providers)

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME librdmaflow-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
    "rdmaflow development files\n Headers, static library, pkg-config file and CMake package of librdmaflow.")
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS Runtime)
set(RF_DEB_DEV_DEPENDS libhwloc-dev libsodium-dev libjson-c-dev libopenblas-dev
    libisal-dev zlib1g-dev libprotobuf-c-dev libmicrohttpd-dev)
if(RF_HAVE_VERBS)
  list(APPEND RF_DEB_DEV_DEPENDS libibverbs-dev librdmacm-dev)
endif()
list(JOIN RF_DEB_DEV_DEPENDS ", " CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS)

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME rdmaflow-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
    "rdmaflow tools\n rf-trainer, rf-launch, rf-ckpt, rf-events, rf-bench, rf-fabric-demo and the example trainer.")
set(CPACK_COMPONENT_TOOLS_DEPENDS Runtime)
# What the tools run besides their own binaries (their libraries' Depends
# come from dpkg-shlibdeps): rf-plot and rf-trace-plot draw with jq and
# gnuplot's pngcairo terminal (each of Debian's three gnuplot builds has it
# and installs /usr/bin/gnuplot; gnuplot-nox, the one without X, first; the
# metapackage gnuplot ships no program), and rf-launch --plot runs rf-plot.
# Recommends, not Depends: two scripts of the eleven programs need them, every
# other tool (rf-launch without --plot included) does its whole job without
# them, and rf-plot --check names what is missing. apt installs Recommends
# by default. rf-launch --hostfile starts tasks over ssh: Suggests, as the
# default, a cluster on this machine, needs no ssh.
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS
    "gnuplot-nox | gnuplot-qt | gnuplot-x11, jq")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "openssh-client")
# The extension is built for one CPython (its file name carries the ABI tag,
# _rdmaflow.cpython-311-x86_64-linux-gnu.so), hence python3 (>= 3.11~),
# python3 (<< 3.12) as dh_python3 writes it; numpy is imported at run time.
if(RF_HAVE_PYTHON)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-rdmaflow)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  set(CPACK_COMPONENT_PYTHON_DESCRIPTION
      "rdmaflow for Python 3\n import rdmaflow as tf: TensorFlow 1.x's ps/worker training (ClusterSpec, Server, replica_device_setter, MonitoredTrainingSession, SyncReplicasOptimizer) over librdmaflow, and rdmaflow.ps for models of other frameworks.")
  set(CPACK_COMPONENT_PYTHON_DEPENDS Runtime)
  string(REPLACE "." ";" RF_PY_V "${RF_PYTHON_VERSION}")
  list(GET RF_PY_V 0 RF_PY_MAJOR)
  list(GET RF_PY_V 1 RF_PY_MINOR)
  math(EXPR RF_PY_NEXT "${RF_PY_MINOR} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= ${RF_PYTHON_VERSION}~), python3 (<< ${RF_PY_MAJOR}.${RF_PY_NEXT}), python3-numpy")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA
      ${PROJECT_SOURCE_DIR}/cmake/debian/python3-rdmaflow/postinst
      ${PROJECT_SOURCE_DIR}/cmake/debian/python3-rdmaflow/prerm)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_STRICT_PERMISSION ON)
endif()

# dpkg-shlibdeps finds librdmaflow.so.0 of the Runtime component here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)

include(CPack)
