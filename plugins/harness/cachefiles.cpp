#include "cachefiles.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

namespace kforge::harness {

std::string cacheDirectory(const std::string& sub) {
    auto env = [](const char* name) {
        const char* v = std::getenv(name);
        return v ? std::string(v) : std::string();
    };
    if (auto dir = env("KFORGE_CACHE_DIR"); !dir.empty())
        return dir + "/" + sub;
    if (auto xdg = env("XDG_CACHE_HOME"); !xdg.empty())
        return xdg + "/kforge/" + sub;
    if (auto home = env("HOME"); !home.empty())
        return home + "/.cache/kforge/" + sub;
    return {};
}

bool writeFileAtomically(const std::string& path, const std::string& data) {
    // Unique per process and thread, so concurrent writers of the same entry never share a file.
    static std::atomic<unsigned> counter{0};
    std::ostringstream name;
    name << path << ".tmp." << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id()) << "."
         << counter++;
    const std::string tmp = name.str();
    std::error_code ec;
    if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty()) {
        std::filesystem::create_directories(dir, ec);
        if (ec)
            return false;
    }
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(data.data(), static_cast<std::streamsize>(data.size()));
        out.close();
        if (!out) {
            std::filesystem::remove(tmp, ec);
            return false;
        }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        return false;
    }
    return true;
}

} // namespace kforge::harness
