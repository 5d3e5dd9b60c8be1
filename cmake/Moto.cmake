# Tests against a local moto server (PyPI moto[server], pinned by scripts/install-deps into
# .cache/venv): the AWS provider's EC2, SSM, STS, IAM and SQS endpoint in integration tests.
#
#   include(Moto)
#
#   dovetail_moto_fixture(FIXTURE_NAME <name> [ENV <KEY=VALUE>...])
#     Adds the CTest tests <name>_up (FIXTURES_SETUP <name>) and <name>_down (FIXTURES_CLEANUP
#     <name>), labelled `integration`, running test/integration/aws/moto_fixture.py up|down with
#     --dir ${CMAKE_BINARY_DIR}/moto/<name>. `up` starts moto_server on a free loopback port and
#     writes the endpoint to <dir>/endpoint; nothing is seeded. ENV entries go to moto's
#     environment (e.g. INITIAL_NO_AUTH_ACTION_COUNT=3 makes moto verify SigV4 signatures after
#     three requests). Declaring the same fixture again with the same options is a no-op.
#
#   dovetail_moto_test(TARGET <gtest target> FIXTURE <name> [TIMEOUT <s>])
#     Registers the GoogleTest binary as one CTest test (label `integration`, RESOURCE_LOCK on the
#     fixture: tests sharing a moto do not run in parallel) that requires the fixture and gets
#     DOVETAIL_MOTO_DIR=<dir>; tests read <dir>/endpoint.
#
# Cache variable: DOVETAIL_MOTO_SERVER (default <source>/.cache/venv/bin/moto_server).

include_guard(GLOBAL)

get_filename_component(DOVETAIL_MOTO_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(DOVETAIL_MOTO_SCRIPT "${DOVETAIL_MOTO_SOURCE_ROOT}/test/integration/aws/moto_fixture.py")
set(DOVETAIL_MOTO_SERVER "${DOVETAIL_MOTO_SOURCE_ROOT}/.cache/venv/bin/moto_server" CACHE FILEPATH
    "moto_server executable used by the AWS integration tests (scripts/install-deps installs it)")
find_program(DOVETAIL_PYTHON3 NAMES python3 REQUIRED)

function(dovetail_moto_fixture)
  # include_guard(GLOBAL) sets DOVETAIL_MOTO_SCRIPT only in the directory that included this file
  # first: find the script from here in the others.
  if(NOT DOVETAIL_MOTO_SCRIPT)
    set(DOVETAIL_MOTO_SCRIPT
        "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../test/integration/aws/moto_fixture.py")
  endif()
  cmake_parse_arguments(ARG "" "FIXTURE_NAME" "ENV" ${ARGN})
  if(NOT ARG_FIXTURE_NAME)
    message(FATAL_ERROR "dovetail_moto_fixture: FIXTURE_NAME is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dovetail_moto_fixture: unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(name "${ARG_FIXTURE_NAME}")
  set(signature "ENV=${ARG_ENV}")
  get_property(defined GLOBAL PROPERTY "DOVETAIL_MOTO_FIXTURE_${name}" SET)
  if(defined)
    get_property(previous GLOBAL PROPERTY "DOVETAIL_MOTO_FIXTURE_${name}")
    if(NOT previous STREQUAL signature)
      message(FATAL_ERROR "dovetail_moto_fixture(${name}): declared before with other options")
    endif()
    return()
  endif()
  set_property(GLOBAL PROPERTY "DOVETAIL_MOTO_FIXTURE_${name}" "${signature}")

  set(dir "${CMAKE_BINARY_DIR}/moto/${name}")
  set(env_args "")
  foreach(pair IN LISTS ARG_ENV)
    list(APPEND env_args --env "${pair}")
  endforeach()
  add_test(NAME ${name}_up
           COMMAND ${DOVETAIL_PYTHON3} "${DOVETAIL_MOTO_SCRIPT}" up --dir "${dir}"
                   --moto-server "${DOVETAIL_MOTO_SERVER}" ${env_args})
  set_tests_properties(${name}_up PROPERTIES FIXTURES_SETUP ${name} LABELS integration TIMEOUT 240)
  add_test(NAME ${name}_down COMMAND ${DOVETAIL_PYTHON3} "${DOVETAIL_MOTO_SCRIPT}" down --dir "${dir}")
  set_tests_properties(${name}_down PROPERTIES FIXTURES_CLEANUP ${name} LABELS integration TIMEOUT 60)
endfunction()

function(dovetail_moto_test)
  cmake_parse_arguments(ARG "" "TARGET;FIXTURE;TIMEOUT" "" ${ARGN})
  foreach(req TARGET FIXTURE)
    if(NOT ARG_${req})
      message(FATAL_ERROR "dovetail_moto_test: ${req} is required")
    endif()
  endforeach()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  get_property(defined GLOBAL PROPERTY "DOVETAIL_MOTO_FIXTURE_${ARG_FIXTURE}" SET)
  if(NOT defined)
    dovetail_moto_fixture(FIXTURE_NAME ${ARG_FIXTURE})
  endif()
  add_test(NAME ${ARG_TARGET} COMMAND ${ARG_TARGET} --gtest_color=no)
  set_tests_properties(${ARG_TARGET} PROPERTIES
    FIXTURES_REQUIRED ${ARG_FIXTURE}
    RESOURCE_LOCK ${ARG_FIXTURE}
    LABELS integration
    TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "DOVETAIL_MOTO_DIR=${CMAKE_BINARY_DIR}/moto/${ARG_FIXTURE}")
endfunction()
