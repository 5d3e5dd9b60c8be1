# Helpers shared by every directory. Each product directory is one library target named
# dovetail_<dir> (for nested directories the path joined with '_', e.g. dovetail_apis_v1).

# dovetail_library(NAME SOURCES ... DEPS ...)
function(dovetail_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# dovetail_unit_test(NAME SOURCES ... DEPS ...): a GoogleTest binary labelled `unit`. With
# DOVETAIL_BUILD_TESTS=OFF (the release preset) the target still exists, so a directory may set
# its properties, but it is left out of `all` and of CTest.
function(dovetail_unit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  if(DOVETAIL_BUILD_TESTS)
    add_executable(${name} ${ARG_SOURCES})
  else()
    add_executable(${name} EXCLUDE_FROM_ALL ${ARG_SOURCES})
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  if(DOVETAIL_BUILD_TESTS)
    gtest_discover_tests(${name} TEST_PREFIX "${name}." PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# dovetail_targets_below(DIR OUT): every build-system target defined in DIR and below.
function(dovetail_targets_below dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    dovetail_targets_below("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()

# dovetail_target_kind(TARGET OUT): `test` for a compiled target that links GoogleTest, `code`
# for any other compiled target, empty for the rest (custom and interface targets).
function(dovetail_target_kind t out)
  get_target_property(type ${t} TYPE)
  if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$")
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  get_target_property(libs ${t} LINK_LIBRARIES)
  if(libs MATCHES "GTest::")
    set(${out} test PARENT_SCOPE)
  else()
    set(${out} code PARENT_SCOPE)
  endif()
endfunction()

# dovetail_unity_all(): with DOVETAIL_UNITY (the default), the product libraries and the binary
# (targets under dovetail/ that do not link GoogleTest) compile as unity builds, up to 8 files per
# translation unit: each header and template is then compiled once per batch instead of once per
# file (docs/development.md has the measurements). Test targets keep one translation unit per
# file. A file-local name must therefore be unique within its library.
option(DOVETAIL_UNITY "Unity builds for the product code under dovetail/" ON)
function(dovetail_unity_all)
  if(NOT DOVETAIL_UNITY)
    return()
  endif()
  dovetail_targets_below("${PROJECT_SOURCE_DIR}/dovetail" targets)
  foreach(t IN LISTS targets)
    dovetail_target_kind(${t} kind)
    if(kind STREQUAL "code")
      set_target_properties(${t} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    endif()
  endforeach()
endfunction()
