# Helpers shared by every directory. Each product directory is one library target named
# dovetail_<dir> (for nested directories the path joined with '_', e.g. dovetail_apis_v1).

# dovetail_library(NAME SOURCES ... DEPS ...)
function(dovetail_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# dovetail_unit_test(NAME SOURCES ... DEPS ...): a GoogleTest binary labelled `unit`.
function(dovetail_unit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name} TEST_PREFIX "${name}." PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
endfunction()
