# kforge_ui_code suites
kforge_add_test(codeviews SOURCES code/tst_codeviews.cpp LIBS kforge_ui_code)
target_include_directories(tst_codeviews PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
