#include "safeio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kforge::spec {

namespace fs = std::filesystem;

namespace {

class Fd {
public:
    explicit Fd(int fd) : m_fd(fd) {}
    ~Fd() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

// Opens without blocking (a FIFO with no writer would block open() itself) and checks the type of
// what was opened.
Expected<std::uint64_t> openRegular(const fs::path& path, const std::string& shown, int& fdOut) {
    fdOut = -1;
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return fail(shown + ": cannot be read (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        return fail(shown + ": cannot be read");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(shown + ": is not a regular file");
    }
    fdOut = fd;
    return static_cast<std::uint64_t>(st.st_size);
}

} // namespace

Expected<std::string> readRegularFile(const fs::path& path, std::uint64_t maxBytes, const std::string& shownName) {
    int raw = -1;
    auto size = openRegular(path, shownName, raw);
    if (!size)
        return Error{size.error()};
    Fd fd(raw);
    if (*size > maxBytes)
        return fail(shownName + ": has " + std::to_string(*size) + " bytes, more than the limit of "
                    + std::to_string(maxBytes));
    std::string out;
    out.resize(static_cast<std::size_t>(*size));
    std::size_t done = 0;
    // Read to the end, not to the size stat gave: a file that grows past the limit is refused.
    for (;;) {
        if (done == out.size()) {
            if (out.size() > maxBytes)
                return fail(shownName + ": has more than " + std::to_string(maxBytes) + " bytes, the limit");
            out.resize(std::min<std::uint64_t>(out.size() + 65536, maxBytes + 1));
            if (done == out.size())
                return fail(shownName + ": has more than " + std::to_string(maxBytes) + " bytes, the limit");
        }
        const ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return fail(shownName + ": cannot be read (" + std::strerror(errno) + ")");
        }
        if (n == 0)
            break;
        done += static_cast<std::size_t>(n);
    }
    out.resize(done);
    if (out.size() > maxBytes)
        return fail(shownName + ": has more than " + std::to_string(maxBytes) + " bytes, the limit");
    return out;
}

Expected<std::uint64_t> regularFileSize(const fs::path& path, const std::string& shownName) {
    int raw = -1;
    auto size = openRegular(path, shownName, raw);
    if (raw >= 0)
        ::close(raw);
    return size;
}

Expected<fs::path> resolveInside(const fs::path& root, const std::string& name, const std::string& field) {
    const fs::path rel(name);
    if (name.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
        return fail(field + ": '" + name + "' must be a file name relative to the task folder");
    for (const auto& part : rel)
        if (part == "..")
            return fail(field + ": '" + name + "' must not leave the task folder ('..' is not allowed)");
    std::error_code ec;
    const fs::path base = fs::canonical(root, ec);
    if (ec)
        return fail(field + ": the task folder cannot be resolved");
    const fs::path target = fs::canonical(base / rel, ec);
    // A missing file and a link that leads outside read the same, so that nothing is learnt about
    // the outside.
    const std::string refused =
        field + ": '" + name
        + "' is not a file inside the task folder (it is missing, or a link leads outside the folder)";
    if (ec)
        return fail(refused);
    auto b = base.begin();
    auto t = target.begin();
    for (; b != base.end(); ++b, ++t)
        if (t == target.end() || *t != *b)
            return fail(refused);
    if (t == target.end())
        return fail(refused); // the folder itself
    return target;
}

int jsonDepth(const std::string& text, int stopAbove) {
    int depth = 0, deepest = 0;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) {
                deepest = depth;
                if (deepest > stopAbove)
                    return deepest;
            }
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

Expected<nlohmann::json> parseJson(const std::string& text, int maxDepth) {
    using nlohmann::json;
    if (jsonDepth(text, maxDepth) > maxDepth)
        return fail("invalid JSON: nested deeper than " + std::to_string(maxDepth) + " levels");
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        // nlohmann reports a byte offset; turn it into line:column.
        std::size_t line = 1, col = 1;
        for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
            if (text[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        std::string what = e.what();
        const auto pos = what.find("syntax error");
        if (pos != std::string::npos)
            what = what.substr(pos);
        if (what.size() > 300)
            what = what.substr(0, 297) + "...";
        return fail(std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON: " + what);
    } catch (const json::exception& e) {
        // out_of_range 406: a number such as 1e999 that no double holds.
        std::string what = e.what();
        if (what.size() > 300)
            what = what.substr(0, 297) + "...";
        return fail("invalid JSON: " + what);
    } catch (const std::exception& e) {
        return fail(std::string("invalid JSON: ") + e.what());
    }
}

} // namespace kforge::spec
