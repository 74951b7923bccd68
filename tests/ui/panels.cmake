# kforge_ui_panels suites
kforge_add_test(panels SOURCES panels/tst_panels.cpp LIBS kforge_ui_panels)
