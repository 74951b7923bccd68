// The worker's PyTorch bridge, with the Python that packaging/install-deps.sh --torch makes, on the
// CPU (CI has no GPU): a kernel sent to be timed beside PyTorch is refused with a message saying why,
// and the same bridge goes on answering plain timing requests. Its driver-API side (tensor maps,
// cluster launches, kernel arguments) is checked against a stand-in for libcuda
// (torchbridge_driver.py).

#include "inputs.h"
#include "protocol.h"
#include "taskspec.h"
#include "torchbridge.h"

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTest>

using namespace kforge;

class TestTorchBridge : public QObject {
    Q_OBJECT
private slots:
    void kernelBesidePyTorchNeedsAGpu() {
        auto bundle = spec::loadTaskDir(KFORGE_SOURCE_TASKS "/vector_add");
        QVERIFY2(bundle.ok(), bundle.ok() ? "" : bundle.error().c_str());
        const spec::TaskSpec& task = bundle->spec;
        auto sizes = task.sizesFor("small");
        QVERIFY(sizes.ok());
        std::vector<harness::HostTensor> inputs;
        for (const auto& in : task.inputs) { // vector_add's inputs are N floats each
            auto t = harness::makeTensor(in.dtype, static_cast<std::uint64_t>(sizes->at("N")));
            harness::initialise(t, in.init, 7, in.name);
            inputs.push_back(std::move(t));
        }
        const protocol::KernelInput form{
            "yardstick", bundle->referenceFile.at("torch"), bundle->referenceSource.at("torch"), {}, "torch"};
        harness::TorchBridge bridge("cpu");

        const nlohmann::json kernel = {
            {"image", "00"}, {"launches", nlohmann::json::array()}, {"scratch", nlohmann::json::array()}};
        auto beside = bridge.time(form, task, *sizes, inputs, 3, false, &kernel);
        QVERIFY(!beside.ok());
        QVERIFY2(beside.error().find("timed beside PyTorch only on a GPU") != std::string::npos,
                 beside.error().c_str());

        auto plain = bridge.time(form, task, *sizes, inputs, 3, false);
        QVERIFY2(plain.ok(), plain.ok() ? "" : plain.error().c_str());
        QVERIFY(plain->eager && !plain->compile && !plain->kernel);
        QCOMPARE(plain->eager->count, 3);
    }

    // The tensor maps the bridge encodes over PyTorch's tensors, and those it refuses (a tensor
    // not contiguous, too small, or not 16-byte aligned), the cluster launches and the layout of
    // each kernel argument, with every driver call recorded by a stand-in for libcuda.
    void driverCallsAgainstAStandIn() {
        QProcess python;
        python.setProcessChannelMode(QProcess::MergedChannels);
        python.start(qEnvironmentVariable("KFORGE_PYTHON"),
                     {QStringLiteral(KFORGE_DRIVER_CHECKS), QStringLiteral(KFORGE_SOURCE_HARNESS)});
        QVERIFY2(python.waitForFinished(120000), "the driver checks did not finish in 2 minutes");
        const QByteArray said = python.readAll();
        QVERIFY2(python.exitStatus() == QProcess::NormalExit && python.exitCode() == 0, said.constData());
        QVERIFY2(said.contains("all checks passed"), said.constData());
    }
};

QTEST_GUILESS_MAIN(TestTorchBridge)
#include "tst_torchbridge.moc"
