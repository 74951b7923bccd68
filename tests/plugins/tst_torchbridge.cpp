// The worker's PyTorch bridge, with the Python that packaging/install-deps.sh --torch makes, on the
// CPU (CI has no GPU): a kernel sent to be timed beside PyTorch is refused with a message saying why,
// and the same bridge goes on answering plain timing requests.

#include "inputs.h"
#include "protocol.h"
#include "taskspec.h"
#include "torchbridge.h"

#include <nlohmann/json.hpp>

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
};

QTEST_GUILESS_MAIN(TestTorchBridge)
#include "tst_torchbridge.moc"
