# cmake/rf_layer.cmake: rf_layer(NAME SOURCES... [DEPS layers...]
#                                [LIBS external...])
# One static library per layer folder (docs/DESIGN.md, section 1). Each
# exports only include/ (the public headers) to whoever links it; the
# repository root is a PRIVATE include path, so only the library layers
# themselves can include "core/log.h"-style private headers. Consumers
# outside the layers (tools, examples, bench) that include one no longer
# compile. Which layer may use which is checked by tests/layers/check-layers
# (ctest layers.*), which the compiler alone cannot see.
#
# The same objects also make the installable library (lib/CMakeLists.txt:
# librdmaflow.so and librdmaflow.a), so they are position-independent and
# compiled with hidden visibility: only what a public header marks RF_API
# (rdmaflow/api.h) is exported from librdmaflow.so. Tests link the layers
# themselves and still see everything.
function(rf_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS;LIBS" ${ARGN})
  add_library(${name} STATIC ${L_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                     PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${L_DEPS} PRIVATE ${L_LIBS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden)
  # Calls inside the library to its own RF_API functions stay direct and
  # inlinable, as in the non-PIC executables before (nobody interposes them).
  target_compile_options(${name} PRIVATE -fno-semantic-interposition)
endfunction()
