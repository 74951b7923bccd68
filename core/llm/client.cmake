# LLM transport: HTTP client (libcurl multi), streaming, retries, prices, keys.
target_sources(kforge_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/apiformat.cpp ${CMAKE_CURRENT_LIST_DIR}/apiformat.h
  ${CMAKE_CURRENT_LIST_DIR}/apikeys.cpp ${CMAKE_CURRENT_LIST_DIR}/apikeys.h
  ${CMAKE_CURRENT_LIST_DIR}/endpoints.cpp ${CMAKE_CURRENT_LIST_DIR}/endpoints.h
  ${CMAKE_CURRENT_LIST_DIR}/llmclient.cpp ${CMAKE_CURRENT_LIST_DIR}/llmclient.h
  ${CMAKE_CURRENT_LIST_DIR}/llmtypes.cpp ${CMAKE_CURRENT_LIST_DIR}/llmtypes.h
  ${CMAKE_CURRENT_LIST_DIR}/pricetable.cpp ${CMAKE_CURRENT_LIST_DIR}/pricetable.h
  ${CMAKE_CURRENT_LIST_DIR}/sse.cpp ${CMAKE_CURRENT_LIST_DIR}/sse.h
)
