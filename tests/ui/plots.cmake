# kforge_ui_plots suites: the heatmap model and the plot views, clicked through under offscreen Qt.
kforge_add_test(plots SOURCES plots/tst_plots.cpp LIBS kforge_ui_plots)
target_include_directories(tst_plots PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
