#include "protocol.h"

#include <QTest>

using namespace kforge;
using nlohmann::json;

namespace {

const char* kTask = R"({"name": "t", "family": "elementwise", "sizes": {"N": 8},
  "inputs": [{"name": "x", "dtype": "float32", "shape": ["N"], "init": {"kind": "uniform", "low": -1, "high": 1}}],
  "outputs": [{"name": "y", "dtype": "float32", "shape": ["N"], "atol": 0, "rtol": 0}],
  "flops": "N", "bytes": "8 * N", "reference": {"opencl": "r.cl"}, "baseline": {"opencl": "b.cl"}})";

protocol::EvaluateRequest sampleRequest() {
    protocol::EvaluateRequest r;
    r.id = 42;
    r.task = *spec::TaskSpec::fromJson(json::parse(kTask), "test");
    r.reference = {"reference", "r.cl", "// ref", {}};
    r.candidate = {"candidate", "c.cl", "// cand\n\"quoted\"\t", {{"BLOCK", 128}}};
    r.baseline = protocol::KernelInput{"baseline", "b.cl", "// base", {}};
    r.options.seeds = {7, 8};
    r.options.timing = false;
    return r;
}

} // namespace

class TestProtocol : public QObject {
    Q_OBJECT
private slots:
    void helloRoundTrip() {
        const std::string line =
            protocol::encode(protocol::Hello{"opencl", "1.2.3", protocol::kVersion, 99, "node7", "4242"});
        auto h = protocol::decodeHello(line);
        QVERIFY(h.ok());
        QCOMPARE(h->backend, std::string("opencl"));
        QCOMPARE(h->pid, 99);
        QCOMPARE(h->host, std::string("node7"));
        QCOMPARE(h->job, std::string("4242"));
        // A worker that says nothing of where it runs (an older one) is still understood.
        auto older = protocol::decodeHello(R"({"kforge": "kforge-worker", "protocol": )"
                                           + std::to_string(protocol::kVersion) + R"(, "backend": "cuda"})");
        QVERIFY(older.ok());
        QVERIFY(older->host.empty() && older->job.empty());
    }

    void helloRejects_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("not json") << "Segmentation fault"
                                  << "not JSON";
        QTest::newRow("other program") << R"({"hello": 1})"
                                       << "does not identify";
        QTest::newRow("newer protocol") << R"({"kforge": "kforge-worker", "protocol": 999})"
                                        << "protocol 999";
    }
    void helloRejects() {
        QFETCH(QString, line);
        QFETCH(QString, mentions);
        auto h = protocol::decodeHello(line.toStdString());
        QVERIFY(!h.ok());
        QVERIFY2(QString::fromStdString(h.error()).contains(mentions), h.error().c_str());
    }

    void requestRoundTrip() {
        const auto original = sampleRequest();
        const std::string line = protocol::encode(protocol::Request{original});
        QVERIFY(line.find('\n') == std::string::npos);
        auto decoded = protocol::decodeRequest(line);
        QVERIFY2(decoded.ok(), decoded.ok() ? "" : decoded.error().c_str());
        const auto& r = std::get<protocol::EvaluateRequest>(*decoded);
        QCOMPARE(r.id, 42);
        QCOMPARE(r.candidate.source, original.candidate.source);
        QCOMPARE(r.candidate.params.at("BLOCK"), 128);
        QVERIFY(r.baseline.has_value());
        QCOMPARE(r.options.seeds, (std::vector<std::uint64_t>{7, 8}));
        QCOMPARE(r.options.timing, false);
        QVERIFY(r.task.toJson() == original.task.toJson());
        QCOMPARE(r.reference.form, std::string("kernel"));

        auto torch = original;
        torch.reference.form = "torch";
        auto back = protocol::decodeRequest(protocol::encode(protocol::Request{torch}));
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().c_str());
        QCOMPARE(std::get<protocol::EvaluateRequest>(*back).reference.form, std::string("torch"));

        // PyTorch timed beside the candidate in a process of its own unless the request says not.
        QVERIFY(r.options.pytorchBeside);
        auto apart = original;
        apart.options.pytorch = true;
        apart.options.pytorchBeside = false;
        auto backApart = protocol::decodeRequest(protocol::encode(protocol::Request{apart}));
        QVERIFY2(backApart.ok(), backApart.ok() ? "" : backApart.error().c_str());
        QVERIFY(!std::get<protocol::EvaluateRequest>(*backApart).options.pytorchBeside);
        QCOMPARE(r.options.pytorchRounds, 20);
        apart.options.pytorchRounds = 80;
        auto backRounds = protocol::decodeRequest(protocol::encode(protocol::Request{apart}));
        QVERIFY(backRounds.ok());
        QCOMPARE(std::get<protocol::EvaluateRequest>(*backRounds).options.pytorchRounds, 80);
    }

    void malformedRequests_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("garbage") << "hello there"
                                 << "not JSON";
        QTest::newRow("array") << "[1, 2]"
                               << "not a JSON object";
        QTest::newRow("truncated") << "{\"id\": 3, \"type\": \"evalu"
                                   << "not JSON";
        QTest::newRow("no id") << R"({"type": "probe"})"
                               << "'id'";
        QTest::newRow("string id") << R"({"id": "3", "type": "probe"})"
                                   << "'id'";
        QTest::newRow("unknown type") << R"({"id": 3, "type": "dance"})"
                                      << "unknown type 'dance'";
        QTest::newRow("no task") << R"({"id": 3, "type": "evaluate"})"
                                 << "'task' is missing";
        QTest::newRow("bad task") << R"({"id": 3, "type": "evaluate", "task": {"name": "t"}})"
                                  << "evaluate.task";
        QTest::newRow("no candidate") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "task": )" + std::string(kTask) + "}")
                                      << "'candidate' is missing";
        QTest::newRow("bad params") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "candidate": {"source": "", "params": {"B": "x"}}, "task": )"
            + std::string(kTask) + "}")
                                    << "params.B";
        QTest::newRow("bad variant") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "variant": "huge", "task": )" + std::string(kTask) + "}")
                                     << "no variant 'huge'";
        QTest::newRow("unknown form") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": "", "form": "jax"}, "candidate": {"source": ""}, "task": )"
            + std::string(kTask) + "}")
                                      << "evaluate.reference.form: unknown form 'jax'";
        // PyTorch may compute the reference; candidates are always kernels.
        QTest::newRow("torch candidate") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "candidate": {"role": "candidate", "source": "", "form": "torch"}, "task": )"
            + std::string(kTask) + "}") << "evaluate.candidate.form: must be a kernel";
        QTest::newRow("bad options") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "candidate": {"source": ""}, "options": {"seeds": []}, "task": )"
            + std::string(kTask) + "}")
                                     << "seeds";
        QTest::newRow("negative seed") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "candidate": {"source": ""}, "options": {"seeds": [1, -1]}, "task": )"
            + std::string(kTask) + "}") << "evaluate.options.seeds: -1 is not a seed";
        QTest::newRow("fractional timing seed") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "candidate": {"source": ""}, "options": {"timing_seeds": [2.5]}, "task": )"
            + std::string(kTask) + "}") << "evaluate.options.timing_seeds: 2.5 is not a seed";
        QTest::newRow("param beyond 64 bits") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "candidate": {"source": "", "params": {"B": 18446744073709551615}}, "task": )"
            + std::string(kTask) + "}") << "candidate.params.B: must be an integer";
        QTest::newRow("too few PyTorch rounds") << QString::fromStdString(
            R"({"id": 3, "type": "evaluate", "reference": {"source": ""}, "candidate": {"source": ""}, "options": {"pytorch_rounds": 2}, "task": )"
            + std::string(kTask) + "}") << "evaluate.options.pytorch_rounds: 2 is not between 6 and 1000";
    }
    void malformedRequests() {
        QFETCH(QString, line);
        QFETCH(QString, mentions);
        auto r = protocol::decodeRequest(line.toStdString());
        QVERIFY(!r.ok());
        QVERIFY2(QString::fromStdString(r.error()).contains(mentions), r.error().c_str());
    }

    void resultRoundTrip() {
        protocol::EvaluateResult r;
        r.id = 5;
        r.status = protocol::Status::Incorrect;
        r.message = "wrong";
        r.outputs.push_back({"y", 100, 3, 1, 0, 0.5, 0.1, 17, 1.0, 2.0, 3, 1e-5, 1e-3});
        r.checks.push_back({"all_written", false, "1 element"});
        r.candidateTiming = protocol::TimingStats{"opencl-profiling", 10, 5.0, 5.1, 4.9, 6.0, 0.01};
        r.diagnostics.push_back({"compile", "warning", "unused", "candidate", 3, 7});
        r.seeds = {9007199254740991ull, 2, 3};
        r.timingSeeds = {11, 12};
        r.stressSets = {"identical_rows"};
        r.phaseSeconds = {{"inputs", 0.025}, {"reference", 0.02}};
        auto decoded = protocol::decodeResponse(protocol::encode(r));
        QVERIFY(decoded.ok());
        const auto& back = std::get<protocol::EvaluateResult>(*decoded);
        QCOMPARE(back.status, protocol::Status::Incorrect);
        QCOMPARE(back.outputs.at(0).firstMismatch.value(), 17u);
        QCOMPARE(back.outputs.at(0).atol.value(), 1e-5);
        QCOMPARE(back.outputs.at(0).rtol.value(), 1e-3);
        QCOMPARE(back.checks.at(0).passed, false);
        QCOMPARE(back.candidateTiming->medianUs, 5.0);
        QCOMPARE(back.diagnostics.at(0).line, 3);
        QVERIFY(!back.speedup.has_value());
        // What reproduces the evaluation, and where its time went.
        QCOMPARE(back.seeds, r.seeds);
        QCOMPARE(back.timingSeeds, r.timingSeeds);
        QCOMPARE(back.stressSets, r.stressSets);
        QCOMPARE(back.phaseSeconds, r.phaseSeconds);
        QVERIFY(!back.eagerTiming && !back.speedupVsEager);

        // PyTorch beside the kernel: both timings, both speedups and the note come back.
        r.status = protocol::Status::Ok;
        r.eagerTiming = protocol::TimingStats{"torch-profiler", 20, 10.0, 10.2, 9.8, 11.0, 0.02};
        r.compileTiming = protocol::TimingStats{"torch-profiler", 20, 7.5, 7.6, 7.4, 8.0, 0.01};
        r.speedupVsEager = 2.0;
        r.speedupVsCompile = 1.5;
        r.pytorchNote = "PyTorch 2.11 on cuda:0";
        auto withTorch = protocol::decodeResponse(protocol::encode(r));
        QVERIFY(withTorch.ok());
        const auto& t = std::get<protocol::EvaluateResult>(*withTorch);
        QCOMPARE(t.eagerTiming->medianUs, 10.0);
        QCOMPARE(t.compileTiming->medianUs, 7.5);
        QCOMPARE(t.speedupVsEager.value(), 2.0);
        QCOMPARE(t.speedupVsCompile.value(), 1.5);
        QCOMPARE(t.pytorchNote, r.pytorchNote);
        QVERIFY(!t.besideTiming);
        QVERIFY(!t.speedupVsEagerInterval && !t.speedupVsCompileInterval);

        // The candidate timed in PyTorch's process, beside eager and torch.compile.
        r.besideTiming = protocol::TimingStats{"torch-profiler, side by side", 20, 5.0, 5.1, 4.9, 5.5, 0.01};
        r.speedupVsEagerInterval = protocol::RatioInterval{1.9, 2.1, 20};
        r.speedupVsCompileInterval = protocol::RatioInterval{0.99, 1.01, 20};
        auto beside = protocol::decodeResponse(protocol::encode(r));
        QVERIFY(beside.ok());
        const auto& b = std::get<protocol::EvaluateResult>(*beside);
        QVERIFY(b.speedupVsEagerInterval && b.speedupVsEagerInterval->faster());
        QCOMPARE(b.speedupVsCompileInterval->low, 0.99);
        QCOMPARE(b.speedupVsCompileInterval->high, 1.01);
        QCOMPARE(b.speedupVsCompileInterval->rounds, 20);
        QVERIFY(b.speedupVsCompileInterval->tie());
        // The JSON names the verdict, for scripts reading `kforge eval --json`.
        QVERIFY(protocol::encode(r).find(R"("verdict":"a tie")") != std::string::npos);
        QVERIFY(b.besideTiming);
        QCOMPARE(b.besideTiming->medianUs, 5.0);
        QCOMPARE(b.besideTiming->method, r.besideTiming->method);
    }

    void responseErrors_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("garbage") << "#### progress 10%"
                                 << "not JSON";
        QTest::newRow("unknown type") << R"({"id": 1, "type": "hello"})"
                                      << "unknown type 'hello'";
        QTest::newRow("bad status") << R"({"id": 1, "type": "result", "status": "great"})"
                                    << "unknown status 'great'";
        QTest::newRow("no id") << R"({"type": "result", "status": "ok"})"
                               << "result: 'id' is missing";
        QTest::newRow("probe, id a string") << R"({"id": "1", "type": "probe"})"
                                            << "probe: 'id' is missing or not an integer";
        QTest::newRow("ceilings, no id") << R"({"type": "ceilings", "ok": true})"
                                         << "ceilings: 'id' is missing";
        QTest::newRow("disassembly, no id") << R"({"type": "disassembly", "ok": true})"
                                            << "disassembly: 'id' is missing";
        QTest::newRow("1e999") << R"({"id": 1, "type": "result", "status": "ok", "x": 1e999})"
                               << "not JSON";
        QTest::newRow("-1e999") << R"({"id": -1e999, "type": "result"})"
                                << "not JSON";
        QTest::newRow("deep nesting") << QStringLiteral("{\"id\": 1, \"x\": ") + QString(100000, QLatin1Char('['))
                                             + QString(100000, QLatin1Char(']')) + QStringLiteral("}")
                                      << "nested deeper than 64";
        QTest::newRow("unclosed deep nesting") << QString(100000, QLatin1Char('[')) << "not JSON";
        QTest::newRow("huge string") << QStringLiteral("{\"id\": \"") + QString(5000000, QLatin1Char('x'))
                                            + QStringLiteral("\"}")
                                     << "unknown type";
    }
    void responseErrors() {
        QFETCH(QString, line);
        QFETCH(QString, mentions);
        auto r = protocol::decodeResponse(line.toStdString());
        QVERIFY(!r.ok());
        QVERIFY2(QString::fromStdString(r.error()).contains(mentions), r.error().c_str());
    }

    void disassembleRoundTrip() {
        protocol::DisassembleRequest request;
        request.id = 5;
        request.task = *spec::TaskSpec::fromJson(json::parse(kTask), "test");
        request.kernel = {"candidate", "candidate 7", "// kernel\n", {{"BLOCK", 64}}};
        request.arch = 90;
        request.machineCode = false;
        auto decoded = protocol::decodeRequest(protocol::encode(protocol::Request{request}));
        QVERIFY2(decoded.ok(), decoded.ok() ? "" : decoded.error().c_str());
        const auto& d = std::get<protocol::DisassembleRequest>(*decoded);
        QCOMPARE(d.id, 5);
        QCOMPARE(d.arch, 90);
        QVERIFY(!d.machineCode);
        QCOMPARE(d.kernel.params.at("BLOCK"), 64);
        QCOMPARE(d.task.name, std::string("t"));

        // What is wrong is named.
        json bad = json::parse(protocol::encode(protocol::Request{request}));
        bad["arch"] = "sm_90";
        auto wrongArch = protocol::decodeRequest(bad.dump());
        QVERIFY(!wrongArch.ok());
        QVERIFY2(wrongArch.error().find("disassemble.arch") != std::string::npos, wrongArch.error().c_str());
        bad = json::parse(protocol::encode(protocol::Request{request}));
        bad.erase("kernel");
        auto noKernel = protocol::decodeRequest(bad.dump());
        QVERIFY(!noKernel.ok());
        QVERIFY2(noKernel.error().find("'kernel' is missing") != std::string::npos, noKernel.error().c_str());

        protocol::DisassembleResult result;
        result.id = 5;
        result.ok = true;
        result.arch = "sm_90a";
        result.compiler = "NVRTC 13.0";
        result.intermediate = ".version 9.0\n\t.loc\t1 3 0\n";
        result.machineCodeNote = "no nvdisasm";
        auto back = protocol::decodeResponse(protocol::encode(result));
        QVERIFY(back.ok());
        QCOMPARE(protocol::responseId(*back).value(), 5);
        const auto& r = std::get<protocol::DisassembleResult>(*back);
        QCOMPARE(r.intermediate, result.intermediate);
        QCOMPARE(r.machineCodeNote, result.machineCodeNote);
        QCOMPARE(r.intermediateFormat, std::string("ptx"));
        // "ok" without code is not a listing.
        json empty = json::parse(protocol::encode(result));
        empty["intermediate"] = "";
        QVERIFY(!protocol::decodeResponse(empty.dump()).ok());
    }

    void ceilingsAndProfile() {
        auto req = protocol::decodeRequest(protocol::encode(protocol::Request{protocol::CeilingsRequest{9, 1, true}}));
        QVERIFY(req.ok());
        const auto& c = std::get<protocol::CeilingsRequest>(*req);
        QCOMPARE(c.id, 9);
        QCOMPARE(c.device, 1);
        QVERIFY(c.refresh);

        protocol::CeilingsResult result;
        result.id = 9;
        result.ok = true;
        result.cached = true;
        result.ceilings["dram_bytes_per_s"] = 4.2e12;
        auto back = protocol::decodeResponse(protocol::encode(result));
        QVERIFY(back.ok());
        QCOMPARE(protocol::responseId(*back).value(), 9);
        QCOMPARE(std::get<protocol::CeilingsResult>(*back).ceilings.at("dram_bytes_per_s"), 4.2e12);

        protocol::EvaluateResult r;
        r.id = 2;
        r.status = protocol::Status::Ok;
        r.profile = protocol::ProfileResult{"not_permitted", "counters are restricted", {}};
        auto decoded = protocol::decodeResponse(protocol::encode(r));
        QVERIFY(decoded.ok());
        QCOMPARE(std::get<protocol::EvaluateResult>(*decoded).profile->status, std::string("not_permitted"));
    }

    void errorResponse() {
        auto r = protocol::decodeResponse(protocol::encodeError(std::nullopt, "bad line"));
        QVERIFY(r.ok());
        QVERIFY(!protocol::responseId(*r).has_value());
        QCOMPARE(std::get<protocol::ErrorResponse>(*r).message, std::string("bad line"));
    }

    void hostileRequestLines() {
        // Numbers no double holds, deep nesting and invalid UTF-8 are errors, never exceptions.
        const std::string valid = R"({"id": 7, "type": "probe"})";
        for (const std::string& line :
             {std::string(R"({"id": 7, "type": "ceilings", "device": 1e999})"),
              std::string(R"({"id": 7, "type": "evaluate", "task": {"name": "t", "sizes": {"N": -1e999}}})"),
              "{\"id\": 7, \"type\": \"evaluate\", \"task\": " + std::string(100000, '[') + std::string(100000, ']')
                  + "}",
              std::string("{\"id\": 7, \"type\": \"probe\", \"x\": \"\xff\xfe\"}"), std::string(100000, '{')}) {
            auto r = protocol::decodeRequest(line);
            QVERIFY(!r.ok());
            QVERIFY(r.error().size() < 2000);
        }
        QVERIFY(protocol::decodeRequest(valid).ok());
    }

    void invalidUtf8IsReplaced() {
        protocol::EvaluateResult r;
        r.id = 1;
        r.message = std::string("log \xff\xfe end");
        const std::string line = protocol::encode(r);
        QVERIFY(protocol::decodeResponse(line).ok());

        // Every line kforge or a worker writes, whatever its strings hold: a host name, a request.
        protocol::Hello hello;
        hello.protocol = protocol::kVersion;
        hello.host = "h\xe9te";
        const auto decodedHello = protocol::decodeHello(protocol::encode(hello));
        QVERIFY(decodedHello.ok());
        QCOMPARE(decodedHello->host, std::string("h\xef\xbf\xbdte"));
        protocol::EvaluateRequest request;
        request.id = 2;
        request.candidate.source = "// \xb5s";
        QVERIFY(!protocol::encode(protocol::Request{request}).empty());
    }

    void numbersOutOfRangeAreNotTaken() {
        // An integer field with a number its type cannot hold reads as absent, never as a wrapped or
        // undefined value.
        const auto result = protocol::decodeResponse(
            R"({"id": 1, "type": "result", "status": "ok", "timing": {"candidate": {"count": 5.1e86, "median_us": 3.5}}})");
        QVERIFY2(result.ok(), result ? "" : result.error().c_str());
        const auto& r = std::get<protocol::EvaluateResult>(*result);
        QVERIFY(r.candidateTiming);
        QCOMPARE(r.candidateTiming->count, 0);
        QCOMPARE(r.candidateTiming->medianUs, 3.5);
        const auto ceilings = protocol::decodeRequest(R"({"id": 4, "type": "ceilings", "device": 4294967296})");
        QVERIFY(ceilings.ok());
        QCOMPARE(std::get<protocol::CeilingsRequest>(*ceilings).device, 0);
        QVERIFY(!protocol::decodeRequest(R"({"id": 1.5, "type": "probe"})").ok());
        QVERIFY(!protocol::decodeRequest(R"({"id": 18446744073709551615, "type": "probe"})").ok());
    }
};

QTEST_GUILESS_MAIN(TestProtocol)
#include "tst_protocol.moc"
