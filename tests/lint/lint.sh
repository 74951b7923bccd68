#!/usr/bin/env bash
# Style checks run by ctest (label `lint`), so CI and the README's test command enforce them.
#
#   lint.sh format SOURCE_DIR          every C++ file of the project matches .clang-format
#   lint.sh tidy SOURCE_DIR BUILD_DIR  the C++ files changed by the last commit (and any not yet
#                                      committed) pass .clang-tidy, warnings as errors
#
# clang-format and clang-tidy 14 (Debian 12's) are the reference: another version formats some
# constructs differently. Kernel files (tests/kernels, resources, tasks) are left as written.
set -uo pipefail

mode=${1:?usage: lint.sh format|tidy SOURCE_DIR [BUILD_DIR]}
src=${2:?usage: lint.sh format|tidy SOURCE_DIR [BUILD_DIR]}
cd "$src" || exit 2

tool() {
  for candidate in "$1-14" "$1"; do
    if command -v "$candidate" >/dev/null 2>&1; then echo "$candidate"; return 0; fi
  done
  echo "lint: $1 is not installed (packaging/install-deps.sh installs $1-14)" >&2
  return 1
}

project_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -- '*.cpp' '*.h'
  else
    find app core ui plugins tests -name '*.cpp' -o -name '*.h'
  fi | grep -v -E '^(tests/kernels|resources|tasks)/'
}

case "$mode" in
format)
  clang_format=$(tool clang-format) || exit 1
  mapfile -t files < <(project_files)
  bad=()
  for f in "${files[@]}"; do
    "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "lint: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
    printf '  %s\n' "${bad[@]}"
    echo "fix with: $clang_format -i ${bad[*]}"
    exit 1
  fi
  echo "lint: ${#files[@]} files formatted as .clang-format says"
  ;;
tidy)
  build=${3:?usage: lint.sh tidy SOURCE_DIR BUILD_DIR}
  clang_tidy=$(tool clang-tidy) || exit 1
  [ -f "$build/compile_commands.json" ] || { echo "lint: $build/compile_commands.json is missing"; exit 1; }
  if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "lint: not a git checkout; nothing is known to have changed"; exit 0
  fi
  changed=$( (git diff --name-only HEAD 2>/dev/null; git rev-parse -q --verify HEAD~1 >/dev/null && git diff --name-only HEAD~1 HEAD) | sort -u)
  files=()
  for f in $changed; do
    case "$f" in
      app/*.cpp|core/*.cpp|ui/*.cpp|plugins/*.cpp)
        # Only what this build compiles (the CUDA worker needs the toolkit).
        [ -f "$f" ] && grep -q "\"file\": \"$PWD/$f\"" "$build/compile_commands.json" && files+=("$f") ;;
    esac
  done
  if [ ${#files[@]} -eq 0 ]; then
    echo "lint: no changed C++ source to check"; exit 0
  fi
  echo "lint: clang-tidy on ${#files[@]} changed file(s)"
  printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 "$clang_tidy" -p "$build" --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-unknown-warning-option 2>&1 | grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter'
  status=${PIPESTATUS[1]}
  [ "$status" -eq 0 ] && echo "lint: clean" || echo "lint: clang-tidy found problems (above)"
  exit "$status"
  ;;
*)
  echo "usage: lint.sh format|tidy SOURCE_DIR [BUILD_DIR]" >&2; exit 2 ;;
esac
