# Tests against a real local Kubernetes control plane (tools/k8s: etcd, kube-apiserver and, for
# e2e, kube-scheduler, kube-controller-manager and kwok), started by tools/k8s/cluster.py.
#
#   include(KubeCluster)
#
#   dovetail_kube_fixture(FIXTURE_NAME <name> [E2E] [LABELS <label>...] [UP_ARGS <arg>...])
#     Adds the CTest tests <name>_up (FIXTURES_SETUP <name>) and <name>_down
#     (FIXTURES_CLEANUP <name>) running `cluster.py up|down --dir ${CMAKE_BINARY_DIR}/kube/<name>`.
#     E2E also starts kube-scheduler, kube-controller-manager and kwok (`up --all`).
#     UP_ARGS are appended to `cluster.py up` (e.g. "--apiserver-arg=--watch-cache-sizes=...";
#     quote arguments holding `#`). Tests that restart the API server
#     (`cluster.py restart-apiserver`) should use a fixture of their own.
#     LABELS defaults to `e2e` with E2E, else `integration`. Calling it again with the same name
#     and options is a no-op, so any directory may declare a fixture it uses.
#
#   dovetail_kube_test(TARGET <gtest target | test name> FIXTURE <name> LABEL integration|e2e
#                      [SERIAL] [TIMEOUT <s>] [COMMAND <cmd> <args>...])
#     Without COMMAND, TARGET is a GoogleTest executable target, registered as one CTest test of
#     that name (all its cases run in one process); with COMMAND, TARGET is the name of one test
#     running COMMAND. The tests require the fixture (declared here
#     if it was not yet: E2E when LABEL is e2e), carry LABEL and get the environment
#       KUBECONFIG=${CMAKE_BINARY_DIR}/kube/<name>/kubeconfig
#       DOVETAIL_KUBE_DIR=${CMAKE_BINARY_DIR}/kube/<name>
#       DOVETAIL_K8S_BIN=<dir with kubectl, kube-apiserver, ...>
#     SERIAL adds RESOURCE_LOCK <name>, so tests sharing that API server do not run in parallel.
#
#   Target `kube-binaries` (not in ALL) runs tools/k8s/build: build it before ctest so the
#   fixture's setup does not spend its timeout compiling Kubernetes (it is a no-op when cached).
#
# Cache variables: DOVETAIL_KUBE_CACHE (default $ENV{DOVETAIL_CACHE} or ~/.cache/dovetail),
# DOVETAIL_KUBE_SETUP_TIMEOUT (s, default 3600), DOVETAIL_KUBE_TEST_TIMEOUT (s, default 600).

include_guard(GLOBAL)

get_filename_component(DOVETAIL_KUBE_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(DOVETAIL_KUBE_HARNESS "${DOVETAIL_KUBE_SOURCE_ROOT}/tools/k8s/cluster.py")
set(DOVETAIL_KUBE_BUILD_SCRIPT "${DOVETAIL_KUBE_SOURCE_ROOT}/tools/k8s/build")

find_program(DOVETAIL_PYTHON3 NAMES python3 REQUIRED)

if(DEFINED ENV{DOVETAIL_CACHE} AND NOT "$ENV{DOVETAIL_CACHE}" STREQUAL "")
  set(_dovetail_kube_cache_default "$ENV{DOVETAIL_CACHE}")
else()
  set(_dovetail_kube_cache_default "$ENV{HOME}/.cache/dovetail")
endif()
set(DOVETAIL_KUBE_CACHE "${_dovetail_kube_cache_default}" CACHE PATH
    "Cache of the locally built Kubernetes binaries (DOVETAIL_CACHE for tools/k8s)")
set(DOVETAIL_KUBE_SETUP_TIMEOUT 3600 CACHE STRING
    "Timeout (s) of the kube fixture setup tests (may include building the binaries)")
set(DOVETAIL_KUBE_TEST_TIMEOUT 600 CACHE STRING "Default timeout (s) of tests using a kube fixture")

execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "DOVETAIL_CACHE=${DOVETAIL_KUBE_CACHE}"
          "${DOVETAIL_KUBE_BUILD_SCRIPT}" --print-bin-dir
  OUTPUT_VARIABLE DOVETAIL_K8S_BIN
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _dovetail_kube_rc)
if(NOT _dovetail_kube_rc EQUAL 0 OR DOVETAIL_K8S_BIN STREQUAL "")
  message(FATAL_ERROR "KubeCluster: '${DOVETAIL_KUBE_BUILD_SCRIPT} --print-bin-dir' failed")
endif()
# The bin dir depends on the pins: re-configure when they change.
set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${DOVETAIL_KUBE_SOURCE_ROOT}/tools/k8s/versions.env")

if(NOT TARGET kube-binaries)
  add_custom_target(kube-binaries
    COMMAND ${CMAKE_COMMAND} -E env "DOVETAIL_CACHE=${DOVETAIL_KUBE_CACHE}" "${DOVETAIL_KUBE_BUILD_SCRIPT}"
    COMMENT "Building/checking the local Kubernetes binaries (tools/k8s/build)"
    USES_TERMINAL
    VERBATIM)
endif()

function(dovetail_kube_fixture)
  cmake_parse_arguments(ARG "E2E" "FIXTURE_NAME" "LABELS;UP_ARGS" ${ARGN})
  if(NOT ARG_FIXTURE_NAME)
    message(FATAL_ERROR "dovetail_kube_fixture: FIXTURE_NAME is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dovetail_kube_fixture: unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(name "${ARG_FIXTURE_NAME}")
  if(NOT ARG_LABELS)
    if(ARG_E2E)
      set(ARG_LABELS e2e)
    else()
      set(ARG_LABELS integration)
    endif()
  endif()
  set(signature "E2E=${ARG_E2E};LABELS=${ARG_LABELS};UP_ARGS=${ARG_UP_ARGS}")

  get_property(defined GLOBAL PROPERTY "DOVETAIL_KUBE_FIXTURE_${name}" SET)
  if(defined)
    get_property(previous GLOBAL PROPERTY "DOVETAIL_KUBE_FIXTURE_${name}")
    if(NOT previous STREQUAL signature)
      message(FATAL_ERROR "dovetail_kube_fixture(${name}): declared before with different options "
                          "(${previous}), now (${signature})")
    endif()
    return()
  endif()
  set_property(GLOBAL PROPERTY "DOVETAIL_KUBE_FIXTURE_${name}" "${signature}")

  set(dir "${CMAKE_BINARY_DIR}/kube/${name}")
  set(extra "")
  if(ARG_E2E)
    set(extra --all)
  endif()
  set(env "DOVETAIL_CACHE=${DOVETAIL_KUBE_CACHE}")
  add_test(NAME ${name}_up
           COMMAND ${DOVETAIL_PYTHON3} "${DOVETAIL_KUBE_HARNESS}" up --dir "${dir}" ${extra}
                   ${ARG_UP_ARGS})
  set_tests_properties(${name}_up PROPERTIES
    FIXTURES_SETUP ${name}
    LABELS "${ARG_LABELS}"
    TIMEOUT ${DOVETAIL_KUBE_SETUP_TIMEOUT}
    ENVIRONMENT "${env}")
  add_test(NAME ${name}_down COMMAND ${DOVETAIL_PYTHON3} "${DOVETAIL_KUBE_HARNESS}" down --dir "${dir}")
  set_tests_properties(${name}_down PROPERTIES
    FIXTURES_CLEANUP ${name}
    LABELS "${ARG_LABELS}"
    TIMEOUT 180
    ENVIRONMENT "${env}")
endfunction()

function(dovetail_kube_test)
  cmake_parse_arguments(ARG "SERIAL" "TARGET;FIXTURE;LABEL;TIMEOUT" "COMMAND" ${ARGN})
  foreach(req TARGET FIXTURE LABEL)
    if(NOT ARG_${req})
      message(FATAL_ERROR "dovetail_kube_test: ${req} is required")
    endif()
  endforeach()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dovetail_kube_test: unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_LABEL MATCHES "^(integration|e2e)$")
    message(FATAL_ERROR "dovetail_kube_test: LABEL must be integration or e2e, not '${ARG_LABEL}'")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT ${DOVETAIL_KUBE_TEST_TIMEOUT})
  endif()

  # Declare the fixture if no directory did yet.
  get_property(defined GLOBAL PROPERTY "DOVETAIL_KUBE_FIXTURE_${ARG_FIXTURE}" SET)
  if(NOT defined)
    if(ARG_LABEL STREQUAL "e2e")
      dovetail_kube_fixture(FIXTURE_NAME ${ARG_FIXTURE} E2E)
    else()
      dovetail_kube_fixture(FIXTURE_NAME ${ARG_FIXTURE})
    endif()
  endif()

  set(dir "${CMAKE_BINARY_DIR}/kube/${ARG_FIXTURE}")
  set(env
    "KUBECONFIG=${dir}/kubeconfig"
    "DOVETAIL_KUBE_DIR=${dir}"
    "DOVETAIL_K8S_BIN=${DOVETAIL_K8S_BIN}")
  set(props
    FIXTURES_REQUIRED ${ARG_FIXTURE}
    LABELS ${ARG_LABEL}
    TIMEOUT ${ARG_TIMEOUT})
  if(ARG_SERIAL)
    list(APPEND props RESOURCE_LOCK ${ARG_FIXTURE})
  endif()

  if(ARG_COMMAND)
    add_test(NAME ${ARG_TARGET} COMMAND ${ARG_COMMAND})
    set_tests_properties(${ARG_TARGET} PROPERTIES ${props} ENVIRONMENT "${env}")
  elseif(TARGET ${ARG_TARGET})
    # One CTest test per GoogleTest binary: its cases share the cluster and run in one process.
    # (gtest_discover_tests cannot carry a list-valued ENVIRONMENT to the discovered tests.)
    add_test(NAME ${ARG_TARGET} COMMAND ${ARG_TARGET} --gtest_color=no)
    set_tests_properties(${ARG_TARGET} PROPERTIES ${props} ENVIRONMENT "${env}")
  else()
    message(FATAL_ERROR "dovetail_kube_test: '${ARG_TARGET}' is not a target; give COMMAND to run")
  endif()
endfunction()
