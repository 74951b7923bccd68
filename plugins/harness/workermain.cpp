#include "workermain.h"

#include "disassembly.h"
#include "evaluator.h"
#include "safeio.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace kforge::harness {

namespace {

// The protocol's own copy of stdout. File descriptor 1 itself is pointed at stderr, so that whatever
// a driver, a compiler or a kernel's printf writes to stdout can never corrupt the protocol.
FILE* g_protocol = stdout;

void writeLine(const std::string& line) {
    std::fwrite(line.data(), 1, line.size(), g_protocol);
    std::fputc('\n', g_protocol);
    std::fflush(g_protocol);
}

void isolateProtocolStream() {
    std::fflush(stdout);
    const int fd = ::dup(STDOUT_FILENO);
    if (fd < 0)
        return;
    if (FILE* f = ::fdopen(fd, "w")) {
        g_protocol = f;
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
    } else {
        ::close(fd);
    }
}

void printUsage(const Backend& backend) {
    std::cout << "usage: kforge-worker-" << backend.name() << " [--probe | --version | --help]\n\n"
              << "A kforge evaluation worker (" << backend.name() << " backend). Started by kforge, it reads one JSON\n"
              << "request per line on stdin and answers one JSON line per request on stdout (protocol "
              << protocol::kVersion << ").\n"
              << "  --probe    print the devices this worker can use, as JSON, and exit\n"
              << "  --version  print the worker and protocol versions and exit\n\n"
              << "Environment:\n"
              << "  KFORGE_WORKER_HOST_MEMORY  host memory an evaluation's input sets may hold at once (e.g. 64G,\n"
              << "                             512M; default half of the available memory). Sets that do not all\n"
              << "                             fit are made one at a time and timing uses fewer of them.\n"
              << "  KFORGE_PYTHON              the Python with PyTorch for tasks whose reference is PyTorch.\n"
              << "  KFORGE_NVDISASM            (CUDA) the nvdisasm program for SASS listings, where it is not in the\n"
              << "                             toolkit's bin folder or on PATH.\n";
}

} // namespace

int runWorker(Backend& backend, int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--probe") {
            writeLine(protocol::encode(backend.probe()));
            return ExitOk;
        }
        if (arg == "--version") {
            std::cout << "kforge-worker-" << backend.name() << " " << KFORGE_VERSION << " (protocol "
                      << protocol::kVersion << ")\n";
            return ExitOk;
        }
        if (arg == "--help" || arg == "-h") {
            printUsage(backend);
            return ExitOk;
        }
        std::cerr << "kforge-worker-" << backend.name() << ": unknown argument '" << arg << "' (try --help)\n";
        return ExitUsage;
    }

    isolateProtocolStream();
    protocol::Hello hello{
        backend.name(), KFORGE_VERSION, protocol::kVersion, static_cast<std::int64_t>(::getpid()), {}, {}};
    protocol::sayWhere(hello);
    writeLine(protocol::encode(hello));

    Evaluator evaluator(backend);
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty() || line == "\r")
            continue;
        // A request that cannot be decoded is answered with an error, whatever it holds.
        spec::Expected<protocol::Request> request = spec::Error{"request could not be decoded"};
        try {
            request = protocol::decodeRequest(line);
        } catch (const std::exception& e) {
            request = spec::Error{std::string("request could not be decoded: ") + e.what()};
        }
        if (!request) {
            // Try to recover the id so the caller can match the error to its request.
            std::optional<std::int64_t> id;
            if (auto j = spec::parseJson(line); j && j->is_object()) {
                const auto it = j->find("id");
                if (it != j->end() && it->is_number_integer())
                    id = it->get<std::int64_t>();
            }
            writeLine(protocol::encodeError(id, request.error()));
            continue;
        }
        if (const auto* probe = std::get_if<protocol::ProbeRequest>(&*request)) {
            auto p = backend.probe();
            p.id = probe->id;
            writeLine(protocol::encode(p));
        } else if (std::holds_alternative<protocol::ShutdownRequest>(*request)) {
            return ExitOk;
        } else if (const auto* ceil = std::get_if<protocol::CeilingsRequest>(&*request)) {
            protocol::CeilingsResult c;
            if (auto st = backend.open(ceil->device); !st) {
                c.message = st.error();
            } else {
                // Micro-kernels measure the device alone, as timed runs are.
                const auto hold = evaluator.deviceLocks().forKey(backend.deviceKey()).exclusive();
                c = backend.ceilings(ceil->refresh);
                c.device = backend.deviceName();
            }
            c.id = ceil->id;
            writeLine(protocol::encode(c));
        } else if (const auto* dis = std::get_if<protocol::DisassembleRequest>(&*request)) {
            auto d = disassemble(backend, *dis);
            d.id = dis->id;
            writeLine(protocol::encode(d));
        } else {
            const auto& eval = std::get<protocol::EvaluateRequest>(*request);
            writeLine(protocol::encode(evaluator.evaluate(eval)));
            if (backend.deviceLost()) {
                std::cerr << "kforge-worker-" << backend.name()
                          << ": the device is unusable after this request; exiting\n";
                return ExitDeviceLost;
            }
        }
    }
    return ExitOk;
}

} // namespace kforge::harness
