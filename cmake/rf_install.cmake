# cmake/rf_install.cmake: what `cmake --install` puts under the prefix
# (GNUInstallDirs paths), in three components:
#   Runtime      lib/librdmaflow.so.0.1.0 and its soname link
#   Development  the librdmaflow.so link, librdmaflow.a, include/rdmaflow/*.h,
#                lib/pkgconfig/rdmaflow.pc and lib/cmake/rdmaflow/ (the CMake
#                package: find_package(rdmaflow) gives rdmaflow::rdmaflow,
#                the shared library, and rdmaflow::rdmaflow_static), and
#                the C examples' sources in share/doc/librdmaflow-dev/examples
#                (Debian's place for a package's examples)
#   Tools        bin/: the tools (RF_INSTALLED_TOOLS), and their man pages in
#                share/man/man1, made at build time by help2man from each
#                tool's --help and --version (skipped, with a message,
#                without help2man; and in sanitizer builds)
# cmake/rf_package.cmake makes the Debian package from the same rules.
include(CMakePackageConfigHelpers)

set(RF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rdmaflow)
set(RF_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS rdmaflow_shared rdmaflow_static EXPORT rdmaflowTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime
          NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rdmaflow
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT Development
  FILES_MATCHING PATTERN "*.h")

# rdmaflow.pc: relocatable (prefix from ${pcfiledir}) unless LIBDIR is
# absolute, so `cmake --install --prefix DIR` gives a working file.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(RF_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH RF_PC_UP /${RF_PC_DIR} /)
  string(REGEX REPLACE "/$" "" RF_PC_UP "${RF_PC_UP}")
  set(RF_PC_PREFIX "\${pcfiledir}/${RF_PC_UP}")
endif()
list(JOIN RF_PC_REQUIRES " " RF_PC_REQUIRES_PRIVATE)
configure_file(${PROJECT_SOURCE_DIR}/cmake/rdmaflow.pc.in
               ${PROJECT_BINARY_DIR}/rdmaflow.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rdmaflow.pc DESTINATION ${RF_PC_DIR}
        COMPONENT Development)

install(EXPORT rdmaflowTargets NAMESPACE rdmaflow:: DESTINATION ${RF_CMAKE_DIR}
        COMPONENT Development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rdmaflowConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rdmaflowConfig.cmake INSTALL_DESTINATION ${RF_CMAKE_DIR})
# 0.x: a minor release may break the API, so only 0.1.* satisfies 0.1.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rdmaflowConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rdmaflowConfig.cmake
              ${PROJECT_BINARY_DIR}/rdmaflowConfigVersion.cmake
        DESTINATION ${RF_CMAKE_DIR} COMPONENT Development)
# The examples a user builds against the installed library (README "Install
# and build against rdmaflow"; tests/install/deb_apt_test.sh builds one).
install(FILES ${PROJECT_SOURCE_DIR}/examples/fabric_hello.c
              ${PROJECT_SOURCE_DIR}/examples/trainer.c
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/librdmaflow-dev/examples
        COMPONENT Development)

# The tools and one line for each man page's NAME section.
set(RF_INSTALLED_TOOLS rf-trainer rf-launch rf-ckpt rf-fabric-demo
    rf-example-trainer rf-bench rf-info rf-ctr-data rf-events)
set(RF_MAN_rf-trainer "train a model on Fashion-MNIST, in this process or as one task of a ps/worker cluster")
set(RF_MAN_rf-launch "run a whole ps/worker cluster on this machine")
set(RF_MAN_rf-ckpt "list, verify and compare rdmaflow checkpoints")
set(RF_MAN_rf-events "print the events of TensorBoard event files as text or JSON lines")
set(RF_MAN_rf-fabric-demo "one-sided RDMA operations between two processes over an rdmaflow fabric provider")
set(RF_MAN_rf-example-trainer "the classic distributed TensorFlow example trainer, in C on rdmaflow")
set(RF_MAN_rf-info "the fabric providers, RDMA devices, the provider chosen for an address, and every RF_ setting")
set(RF_MAN_rf-ctr-data "summarise or dump rdmaflow's synthetic click-through data set")
set(RF_MAN_rf-plot "plot an rdmaflow run's metrics and event files with gnuplot")
set(RF_MAN_rf-trace-plot "draw one training step across the tasks of a merged rdmaflow trace")
set(RF_MAN_rf-bench "latency and bandwidth of rdmaflow's fabric operations, in the manner of perftest")

# Not in sanitizer builds (test builds, never installed), where a leak
# report at exit would fail the page.
find_program(RF_HELP2MAN help2man)
if(NOT RF_HELP2MAN)
  message(STATUS "rdmaflow: help2man not found, no man pages (tools/rf-setup deps installs it)")
elseif(RF_SANITIZERS)
  set(RF_HELP2MAN "")
endif()
set(RF_MAN_PAGES)
# rf_man_page(NAME PROGRAM DEPENDS...): man/NAME.1.gz from PROGRAM's --help
# and --version, compressed as Debian policy asks (gzip -9n: no name or
# time stamp in the header, so the page is reproducible).
function(rf_man_page name program)
  set(page ${PROJECT_BINARY_DIR}/man/${name}.1)
  add_custom_command(OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${RF_HELP2MAN} --no-info --section=1 --name=${RF_MAN_${name}}
            --output=${page} ${program}
    COMMAND gzip -9nf ${page}
    DEPENDS ${ARGN}
    COMMENT "Generating the man page ${name}.1.gz (help2man)"
    VERBATIM)
  set(RF_MAN_PAGES ${RF_MAN_PAGES} ${page}.gz PARENT_SCOPE)
endfunction()
foreach(tool ${RF_INSTALLED_TOOLS})
  if(NOT TARGET ${tool})
    continue()
  endif()
  install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Tools)
  if(RF_HELP2MAN)
    rf_man_page(${tool} $<TARGET_FILE:${tool}> ${tool})
  endif()
endforeach()
# the plotting scripts (tools/plot), as configured into the build tree
install(PROGRAMS ${PROJECT_BINARY_DIR}/tools/rf-plot
                 ${PROJECT_BINARY_DIR}/tools/rf-trace-plot
        DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Tools)
if(RF_HELP2MAN)
  foreach(script rf-plot rf-trace-plot)
    rf_man_page(${script} ${PROJECT_BINARY_DIR}/tools/${script}
                ${PROJECT_BINARY_DIR}/tools/${script})
  endforeach()
endif()
if(RF_MAN_PAGES)
  add_custom_target(rf_man_pages ALL DEPENDS ${RF_MAN_PAGES})
  install(FILES ${RF_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT Tools)
endif()
