# Precompiled headers for the whole tree, applied after every target exists:
#
#   include(Precompiled)
#   dovetail_precompile_all()      # at the end of the top-level CMakeLists.txt
#
# Two headers are compiled once each, cmake/pch/product.h (target dovetail_pch) and
# cmake/pch/test.h (dovetail_test_pch, which adds gtest and gmock), and every C++ target of the
# tree reuses one of them: the test one when it links GoogleTest, else the product one. Reusing
# (REUSE_FROM) instead of one header per target saves compiling the same header ~80 times; it
# needs the same compile options on both sides, which holds because the tree sets its options
# globally (CMakeLists.txt). A target's own definitions (e.g. DOVETAIL_SOURCE_DIR) do not matter:
# the headers do not use them. DOVETAIL_PCH=OFF turns it off (e.g. to check that every file
# includes what it uses).
#
# Off by default for Release builds: at -O3 parsing is a small part of a compile (7% on
# controllers/provisioning/provisioner.cc), and with the headers included first GCC 12 reports a
# false -Warray-bounds inside std::string's inlined copy in controllers/nodeclaim/lifecycle.cc
# that it does not report without them.

include_guard(GLOBAL)

if(CMAKE_BUILD_TYPE STREQUAL "Release")
  set(_dovetail_pch_default OFF)
else()
  set(_dovetail_pch_default ON)
endif()
option(DOVETAIL_PCH "Precompile the common third-party headers (cmake/pch/)" ${_dovetail_pch_default})

# _dovetail_pch_target(NAME HEADER LIBS...): an object library that compiles HEADER, with the
# include directories of LIBS.
function(_dovetail_pch_target name header)
  add_library(${name} OBJECT EXCLUDE_FROM_ALL "${PROJECT_SOURCE_DIR}/cmake/pch/empty.cc")
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARGN})
  target_precompile_headers(${name} PRIVATE "${PROJECT_SOURCE_DIR}/cmake/pch/${header}")
endfunction()

# dovetail_precompile_all(): after every target exists (end of the top-level CMakeLists.txt).
function(dovetail_precompile_all)
  if(NOT DOVETAIL_PCH)
    return()
  endif()
  set(libs absl::status absl::statusor absl::strings absl::synchronization absl::time
           absl::flat_hash_map absl::flat_hash_set nlohmann_json::nlohmann_json)
  _dovetail_pch_target(dovetail_pch product.h ${libs})
  _dovetail_pch_target(dovetail_test_pch test.h ${libs} GTest::gtest GTest::gmock)

  dovetail_targets_below("${PROJECT_SOURCE_DIR}" targets)
  foreach(t IN LISTS targets)
    dovetail_target_kind(${t} kind)
    if(t MATCHES "^dovetail(_test)?_pch$" OR kind STREQUAL "")
      continue()
    elseif(kind STREQUAL "test")
      target_precompile_headers(${t} REUSE_FROM dovetail_test_pch)
    else()
      target_precompile_headers(${t} REUSE_FROM dovetail_pch)
    endif()
  endforeach()
endfunction()
