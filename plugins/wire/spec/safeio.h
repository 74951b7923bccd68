#pragma once
// Reading untrusted files and JSON without trusting them. Task folders, kernel files, reference data,
// protocol lines and model answers all come from outside kforge: a path may lead out of its folder
// through "..", an absolute name or a symlink; a "file" may be a FIFO (which blocks a reader forever)
// or /dev/zero (which never ends); JSON may nest a hundred thousand arrays deep or hold 1e999. The
// functions here never throw and never block on such input; their errors name the field and say
// nothing about files outside the folder they guard.

#include "expected.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace kforge::spec {

constexpr std::uint64_t kMaxTaskJsonBytes = std::uint64_t{1024} * 1024;
constexpr int kMaxJsonDepth = 64;

// Reads `path` if it is a regular file of at most `maxBytes` bytes (checked on the opened file, so a
// file swapped for a FIFO after a check cannot block the read). Errors start with `shownName`.
Expected<std::string> readRegularFile(const std::filesystem::path& path, std::uint64_t maxBytes,
                                      const std::string& shownName);

// The size of `path` if it is a regular file, checked as readRegularFile() would.
Expected<std::uint64_t> regularFileSize(const std::filesystem::path& path, const std::string& shownName);

// Resolves `name`, written in a file of folder `root`, to a canonical path inside `root` (symlinks
// followed). Absolute names, ".." and links that lead outside are refused with one message that
// does not say whether the outside file exists. `field` names the setting ("reference.cuda").
Expected<std::filesystem::path> resolveInside(const std::filesystem::path& root, const std::string& name,
                                              const std::string& field);

// Parses untrusted JSON. Nesting deeper than `maxDepth` is refused before parsing (the library's
// copies, comparisons and dumps recurse); numbers beyond double's range, invalid UTF-8 and syntax
// errors become errors "LINE:COLUMN: invalid JSON: ..." (or "invalid JSON: ..." without a place).
Expected<nlohmann::json> parseJson(const std::string& text, int maxDepth = kMaxJsonDepth);

// Nesting depth of JSON text ({ and [ outside strings), scanning at most until `stopAbove` is passed.
int jsonDepth(const std::string& text, int stopAbove);

} // namespace kforge::spec
