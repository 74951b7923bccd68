#include "torchbridge.h"

#include "torchbridge_source.h"

#include "expression.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kforge::harness {

namespace {

using json = nlohmann::json;

std::string diskRoot() {
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

std::string tempRoot() {
    struct stat st {};
    if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    return diskRoot();
}

// Free bytes on the file system that holds `dir`, or none when that cannot be known.
std::optional<std::uint64_t> freeBytes(const std::string& dir) {
    struct statvfs v {};
    if (::statvfs(dir.c_str(), &v) != 0)
        return std::nullopt;
    return static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
}

spec::Expected<std::string> makePrivateDir(const std::string& root) {
    std::string pattern = root + "/kforge-torch-XXXXXX";
    if (!::mkdtemp(pattern.data()))
        return spec::fail("cannot make a folder for the PyTorch reference's tensors in " + root + ": "
                          + std::strerror(errno));
    return pattern;
}

bool writeAll(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

spec::Status writeFile(const std::string& path, const HostTensor& t) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (!f)
        return spec::fail("cannot write " + std::to_string(t.bytes.size()) + " bytes to " + path);
    return spec::success();
}

spec::Status readFile(const std::string& path, HostTensor& t, const std::string& name) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        return spec::fail("the PyTorch reference wrote no output '" + name + "'");
    f.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (f.gcount() != static_cast<std::streamsize>(t.bytes.size()))
        return spec::fail("the PyTorch reference's output '" + name + "' is shorter than its "
                          + std::to_string(t.bytes.size()) + " bytes");
    return spec::success();
}

// `program` itself when it names a path, else the first executable of that name on PATH; empty
// when there is none.
std::string executablePath(const std::string& program) {
    if (program.find('/') != std::string::npos)
        return program;
    const char* path = std::getenv("PATH");
    std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        const std::size_t end = std::min(dirs.find(':', start), dirs.size());
        const std::string dir = dirs.substr(start, end - start);
        std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = end + 1;
    }
    return {};
}

// A tensor's shape at the task's sizes, as the bridge's requests give it.
spec::Expected<json> shapeOf(const spec::TensorSpec& t, const std::string& kind, const spec::Variables& vars) {
    json shape = json::array();
    for (const auto& d : t.shape) {
        auto v = spec::Expression::evaluateInteger(d, vars);
        if (!v)
            return spec::fail(kind + " '" + t.name + "': " + v.error());
        shape.push_back(*v);
    }
    return shape;
}

} // namespace

TorchBridge::~TorchBridge() {
    stop();
    if (!m_dir.empty()) {
        std::remove((m_dir + "/stderr").c_str());
        ::rmdir(m_dir.c_str());
    }
    if (!m_spillDir.empty())
        ::rmdir(m_spillDir.c_str());
}

void TorchBridge::stop() {
    if (m_in >= 0)
        ::close(m_in); // the bridge ends at the end of its input
    if (m_out >= 0)
        ::close(m_out);
    m_in = m_out = -1;
    if (m_pid > 0) {
        int status = 0;
        for (int i = 0; i < 50 && ::waitpid(m_pid, &status, WNOHANG) == 0; ++i)
            ::usleep(20000);
        if (::waitpid(m_pid, &status, WNOHANG) == 0) {
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, &status, 0);
        }
    }
    m_pid = -1;
    m_buffer.clear();
}

std::string TorchBridge::stderrTail() const {
    std::ifstream f(m_dir + "/stderr");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    if (text.size() > 600)
        text = "..." + text.substr(text.size() - 600);
    return text;
}

spec::Status TorchBridge::start() {
    if (m_dir.empty()) {
        auto dir = makePrivateDir(tempRoot());
        if (!dir)
            return spec::Error{dir.error()};
        m_dir = *dir;
    }
    // A bridge that died must not take the worker with it when it is written to.
    std::signal(SIGPIPE, SIG_IGN);
    int in[2];
    int out[2];
    if (::pipe2(in, O_CLOEXEC) != 0)
        return spec::fail(std::string("cannot start the PyTorch reference: pipe: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
        ::close(in[0]);
        ::close(in[1]);
        return spec::fail(std::string("cannot start the PyTorch reference: pipe: ") + std::strerror(errno));
    }
    const std::string py = protocol::torchPython();
    const std::string errPath = m_dir + "/stderr";
    // Everything the child needs is made here: between fork and exec in a process with other
    // threads, only async-signal-safe calls are allowed (no allocation, no PATH search by libc).
    const std::string program = executablePath(py);
    if (program.empty()) {
        for (int fd : {in[0], in[1], out[0], out[1]})
            ::close(fd);
        return spec::fail("the PyTorch reference needs a Python with PyTorch: " + py
                          + " was not found (set KFORGE_PYTHON, or run packaging/install-deps.sh --torch)");
    }
    const std::string execFailed = "cannot run " + program + "\n";
    std::string unbuffered = "-u";
    std::string command = "-c";
    std::string source = kTorchBridgeSource;
    std::string name = program;
    char* const argv[] = {name.data(), unbuffered.data(), command.data(), source.data(), nullptr};
    const pid_t pid = ::fork();
    if (pid < 0) {
        for (int fd : {in[0], in[1], out[0], out[1]})
            ::close(fd);
        return spec::fail(std::string("cannot start the PyTorch reference: fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        // The child: stdin and stdout are the pipes, stderr a file the worker quotes on failure;
        // nothing else of the worker's (its protocol channel, the driver's files) stays open.
        const int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0 || err < 0 || ::dup2(err, 2) < 0)
            ::_exit(127);
        ::close_range(3, ~0U, 0);
        ::execv(program.c_str(), argv);
        (void)!::write(2, execFailed.data(), execFailed.size());
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    m_pid = pid;
    m_in = in[1];
    m_out = out[0];
    auto hello = readLine();
    const auto problem = [&](const std::string& what) {
        const std::string tail = stderrTail();
        stop();
        return spec::fail("the PyTorch reference needs a Python with PyTorch (" + py
                          + "; set KFORGE_PYTHON, or run packaging/install-deps.sh --torch): " + what
                          + (tail.empty() ? "" : ": " + tail));
    };
    if (!hello)
        return problem(hello.error());
    const json h = json::parse(*hello, nullptr, false);
    if (!h.is_object() || h.value("kforge", "") != "torch-bridge")
        return problem("it did not answer as the bridge does: " + hello->substr(0, 200));
    if (h.contains("error"))
        return problem(h.value("error", ""));
    return spec::success();
}

spec::Expected<std::string> TorchBridge::readLine() {
    for (;;) {
        if (const auto nl = m_buffer.find('\n'); nl != std::string::npos) {
            std::string line = m_buffer.substr(0, nl);
            m_buffer.erase(0, nl + 1);
            return line;
        }
        char chunk[4096];
        const ssize_t n = ::read(m_out, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return spec::fail("the PyTorch process ended");
        m_buffer.append(chunk, static_cast<std::size_t>(n));
    }
}

spec::Expected<json> TorchBridge::exchange(const protocol::KernelInput& form, const spec::TaskSpec& task,
                                           const spec::Sizes& sizes, const std::vector<HostTensor>& inputs,
                                           std::vector<HostTensor>* outputs, json extra) {
    if (m_pid <= 0)
        if (auto started = start(); !started)
            return spec::Error{started.error()};
    const std::int64_t id = m_nextId++;
    const auto vars = task.variables(sizes);
    // The tensors go to shared memory while it has room for them (it is often small in containers),
    // else to a private folder on disk.
    std::uint64_t bytes = 0;
    for (const auto& t : inputs)
        bytes += t.byteSize();
    for (std::size_t i = 0; outputs && i < outputs->size(); ++i)
        bytes += (*outputs)[i].byteSize();
    std::string dir = m_dir;
    if (const auto room = freeBytes(m_dir); room && *room < bytes + (std::uint64_t{64} << 20)) {
        if (m_spillDir.empty()) {
            auto spill = makePrivateDir(diskRoot());
            if (!spill)
                return spec::Error{spill.error()};
            m_spillDir = *spill;
        }
        dir = m_spillDir;
    }
    std::vector<std::string> files;
    struct Cleanup {
        std::vector<std::string>& files;
        ~Cleanup() {
            for (const auto& f : files)
                std::remove(f.c_str());
        }
    } cleanup{files};
    const auto describe = [&](const spec::TensorSpec& t, const std::string& kind,
                              std::size_t i) -> spec::Expected<json> {
        auto shape = shapeOf(t, kind, vars);
        if (!shape)
            return spec::Error{shape.error()};
        files.push_back(dir + "/" + std::to_string(id) + "-" + kind + "-" + std::to_string(i));
        return json{{"name", t.name},
                    {"dtype", std::string(spec::dtypeName(t.dtype))},
                    {"shape", *shape},
                    {"path", files.back()}};
    };
    json req = std::move(extra);
    req["id"] = id;
    req["file"] = form.file.empty() ? "reference.py" : form.file;
    req["source"] = form.source;
    req["device"] = m_device;
    req["sizes"] = sizes;
    req["scalars"] = json::object();
    req["inputs"] = json::array();
    req["outputs"] = json::array();
    for (const auto& s : task.scalars)
        req["scalars"][s.name] = spec::isFloating(s.dtype) ? json(s.value) : json(static_cast<std::int64_t>(s.value));
    for (std::size_t i = 0; i < task.inputs.size(); ++i) {
        auto d = describe(task.inputs[i], "input", i);
        if (!d)
            return spec::Error{d.error()};
        if (auto st = writeFile(files.back(), inputs.at(i)); !st)
            return spec::Error{st.error()};
        req["inputs"].push_back(*d);
    }
    for (std::size_t i = 0; outputs && i < task.outputs.size(); ++i) {
        auto d = describe(task.outputs[i], "output", i);
        if (!d)
            return spec::Error{d.error()};
        req["outputs"].push_back(*d);
    }
    // A process that is gone is said so with what it last wrote, and a fresh one starts next time.
    const auto lost = [this](const std::string& what) {
        const std::string tail = stderrTail();
        stop();
        return spec::fail(what + (tail.empty() ? "" : ": " + tail));
    };
    const std::string line = req.dump() + "\n";
    if (!writeAll(m_in, line.data(), line.size()))
        return lost("the PyTorch process is gone");
    auto answer = readLine();
    if (!answer)
        return lost(answer.error());
    json a = json::parse(*answer, nullptr, false);
    if (!a.is_object() || a.value("id", std::int64_t{0}) != id) {
        stop(); // out of step: a fresh one next time
        return spec::fail("the PyTorch process answered out of turn: " + answer->substr(0, 200));
    }
    if (!a.value("ok", false))
        return spec::fail(a.value("error", std::string("failed without saying why")));
    for (std::size_t i = 0; outputs && i < task.outputs.size(); ++i)
        if (auto st = readFile(req["outputs"][i]["path"].get<std::string>(), outputs->at(i), task.outputs[i].name); !st)
            return spec::Error{st.error()};
    return a;
}

spec::Expected<std::string> TorchBridge::compute(const protocol::KernelInput& reference, const spec::TaskSpec& task,
                                                 const spec::Sizes& sizes, const std::vector<HostTensor>& inputs,
                                                 std::vector<HostTensor>& expected) {
    auto a = exchange(reference, task, sizes, inputs, &expected, json::object());
    if (!a)
        return spec::Error{a.error()};
    return a->value("note", std::string());
}

spec::Expected<TorchBridge::Timings> TorchBridge::time(const protocol::KernelInput& form, const spec::TaskSpec& task,
                                                       const spec::Sizes& sizes, const std::vector<HostTensor>& inputs,
                                                       int repetitions, bool withCompile, const json* kernel) {
    const json modes = withCompile ? json::array({"eager", "compile"}) : json::array({"eager"});
    json request{{"op", "time"}, {"reps", repetitions}, {"modes", modes}};
    if (kernel) {
        request["kernel"] = *kernel;
        // The kernel's outputs are made there: their shapes, types and tolerances.
        const auto vars = task.variables(sizes);
        json specs = json::array();
        for (const auto& o : task.outputs) {
            auto shape = shapeOf(o, "output", vars);
            if (!shape)
                return spec::Error{shape.error()};
            specs.push_back({{"name", o.name},
                             {"dtype", std::string(spec::dtypeName(o.dtype))},
                             {"shape", *shape},
                             {"atol", o.atol},
                             {"rtol", o.rtol}});
        }
        request["output_specs"] = specs;
    }
    auto a = exchange(form, task, sizes, inputs, nullptr, std::move(request));
    if (!a)
        return spec::Error{a.error()};
    const auto stats = [&](const char* key) -> std::optional<protocol::TimingStats> {
        if (!a->contains(key) || !a->at(key).is_object())
            return std::nullopt;
        return protocol::timingFromJson(a->at(key));
    };
    const auto samples = [&](const char* key) {
        std::vector<double> v;
        if (a->contains(key) && a->at(key).is_array())
            for (const auto& x : a->at(key))
                if (x.is_number())
                    v.push_back(x.get<double>());
        return v;
    };
    Timings t;
    t.eager = stats("eager");
    t.compile = stats("compile");
    t.kernel = stats("kernel");
    t.eagerSamples = samples("eager_samples");
    t.compileSamples = samples("compile_samples");
    t.kernelSamples = samples("kernel_samples");
    t.note = a->value("note", std::string());
    return t;
}

} // namespace kforge::harness
