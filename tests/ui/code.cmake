# kforge_ui_code suites
kforge_add_test(codeviews SOURCES code/tst_codeviews.cpp LIBS kforge_ui_code)
