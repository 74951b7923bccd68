# Warning flags for every kforge target; -Werror in CI (KFORGE_WERROR=ON).
add_library(kforge_warnings INTERFACE)
target_compile_options(kforge_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor -Woverloaded-virtual
  $<$<BOOL:${KFORGE_WERROR}>:-Werror>)
# No silent conversion of char* text to QString: every literal says its encoding
# (QStringLiteral, QLatin1String, QString::fromUtf8), so bytes from a worker, a file or a model's
# answer never become text without a decision.
target_compile_definitions(kforge_warnings INTERFACE QT_NO_CAST_FROM_ASCII)
