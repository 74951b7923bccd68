# Warning flags for every kforge target; -Werror in CI (KFORGE_WERROR=ON).
add_library(kforge_warnings INTERFACE)
target_compile_options(kforge_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor -Woverloaded-virtual
  $<$<BOOL:${KFORGE_WERROR}>:-Werror>)
