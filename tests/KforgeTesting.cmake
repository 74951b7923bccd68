# kforge_add_test(<name> SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s] [ENVIRONMENT ...])
# Builds tst_<name> and registers it with ctest under the offscreen Qt platform.
function(kforge_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ENVIRONMENT" ${ARGN})
  add_executable(tst_${name} ${T_SOURCES})
  target_link_libraries(tst_${name} PRIVATE Qt6::Test ${T_LIBS} kforge_warnings)
  # Tests read fixtures from the source tree and compare against the version they were built with.
  target_compile_definitions(tst_${name} PRIVATE KFORGE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    KFORGE_VERSION="${PROJECT_VERSION}")
  add_test(NAME ${name} COMMAND tst_${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    LABELS "${T_LABELS}"
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen;KFORGE_TASKS_DIR=${PROJECT_SOURCE_DIR}/tasks;KFORGE_TEST_KERNELS=${PROJECT_SOURCE_DIR}/tests/kernels;KFORGE_WORKER_DIR=${CMAKE_BINARY_DIR}/bin;${T_ENVIRONMENT}")
endfunction()
