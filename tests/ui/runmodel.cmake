# What the views know about a run: the reader thread, RunData, the candidate table, a live session.
kforge_add_test(runmodel SOURCES runmodel/tst_runmodel.cpp LIBS kforge_ui_runmodel)
target_include_directories(tst_runmodel PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/tests/core)
target_compile_definitions(tst_runmodel PRIVATE KFORGE_ENGINE_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/core/data/engine")
add_dependencies(tst_runmodel kforge-worker-fake)
