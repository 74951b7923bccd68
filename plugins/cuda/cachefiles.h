#pragma once
// Where the CUDA worker keeps what it caches on disk (compiled cubins, measured ceilings), and how it
// writes a cache file so that concurrent workers never read a half-written one.

#include <string>

namespace kforge::cuda {

// $KFORGE_CACHE_DIR/<sub>, else $XDG_CACHE_HOME/kforge/<sub>, else ~/.cache/kforge/<sub>; empty when
// none of them is set.
std::string cacheDirectory(const std::string& sub);

// Writes `data` to a unique temporary file beside `path` and renames it over `path`.
bool writeFileAtomically(const std::string& path, const std::string& data);

} // namespace kforge::cuda
