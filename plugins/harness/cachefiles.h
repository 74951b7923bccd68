#pragma once
// Where the workers keep what they cache on disk (compiled CUBINs, measured ceilings), and how they
// write a cache file so that concurrent workers never read a half-written one.

#include <string>

namespace kforge::harness {

// $KFORGE_CACHE_DIR/<sub>, else $XDG_CACHE_HOME/kforge/<sub>, else ~/.cache/kforge/<sub>; empty when
// none of them is set.
std::string cacheDirectory(const std::string& sub);

// Creates the directory of `path` where it is missing, writes `data` to a unique temporary file
// beside `path` and renames it over `path`.
bool writeFileAtomically(const std::string& path, const std::string& data);

} // namespace kforge::harness
