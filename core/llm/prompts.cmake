# LLM prompt side: templates, prompt building, answer parsing, novelty filter.
target_sources(kforge_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/answerparser.cpp ${CMAKE_CURRENT_LIST_DIR}/answerparser.h
  ${CMAKE_CURRENT_LIST_DIR}/novelty.cpp ${CMAKE_CURRENT_LIST_DIR}/novelty.h
  ${CMAKE_CURRENT_LIST_DIR}/promptbuilder.cpp ${CMAKE_CURRENT_LIST_DIR}/promptbuilder.h
  ${CMAKE_CURRENT_LIST_DIR}/prompttemplate.cpp ${CMAKE_CURRENT_LIST_DIR}/prompttemplate.h
)
