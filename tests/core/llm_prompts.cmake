# Prompt, answer-parser and novelty tests.
kforge_add_test(prompts SOURCES tst_prompts.cpp LIBS kforge_core)
target_compile_definitions(tst_prompts PRIVATE KFORGE_PROMPTS_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data/prompts")
kforge_add_test(answerparser SOURCES tst_answerparser.cpp LIBS kforge_core)
kforge_add_test(novelty SOURCES tst_novelty.cpp LIBS kforge_core)
