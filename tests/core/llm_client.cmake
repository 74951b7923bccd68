# LLM client tests (against tests/fakes/fakellmserver).
kforge_add_test(llmclient SOURCES tst_llmclient.cpp LIBS kforge_core)
add_dependencies(tst_llmclient kforge-fake-llm-server)
target_compile_definitions(tst_llmclient PRIVATE KFORGE_FAKE_LLM_SERVER="$<TARGET_FILE:kforge-fake-llm-server>")
