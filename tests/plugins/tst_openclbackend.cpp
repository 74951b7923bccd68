// The OpenCL backend on a real device (PoCL on the CPU in CI): measured ceilings, their cache, and
// what happens without an open device.

#include "openclbackend.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace kforge;

class TestOpenClBackend : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_cache;

    static void checkPlausible(const protocol::CeilingsResult& c) {
        QVERIFY2(c.ok, c.message.c_str());
        QVERIFY(!c.device.empty());
        QVERIFY2(c.ceilings.count("dram_bytes_per_s") && c.ceilings.count("fp32_flops_per_s"), c.message.c_str());
        const double bytes = c.ceilings.at("dram_bytes_per_s");
        const double flops = c.ceilings.at("fp32_flops_per_s");
        QVERIFY2(bytes > 1e8 && bytes < 1e13, c.message.c_str());
        QVERIFY2(flops > 1e8 && flops < 1e14, c.message.c_str());
        // ISO 8601 UTC, as the protocol promises: 2026-11-30T12:34:56Z
        QCOMPARE(c.measuredAt.size(), std::size_t{20});
        QCOMPARE(c.measuredAt[10], 'T');
        QCOMPARE(c.measuredAt.back(), 'Z');
    }

private slots:
    void initTestCase() {
        // A private ceilings cache, so that the first request below measures.
        QVERIFY(m_cache.isValid());
        qputenv("KFORGE_CACHE_DIR", m_cache.path().toLocal8Bit());
    }

    void ceilingsWithoutDevice() {
        opencl::OpenClBackend backend;
        const auto c = backend.ceilings(false);
        QVERIFY(!c.ok);
        QVERIFY2(QString::fromStdString(c.message).contains(QStringLiteral("no OpenCL device is open")),
                 c.message.c_str());
    }

    void digestOnDeviceIsTheHostDigest() {
        // The device computes harness::digest exactly, at every length (tails of 1 to 7 bytes,
        // one word, more words than the kernel has work-items), in buffers and in views; a change
        // of one byte anywhere changes it, and so does the key.
        opencl::OpenClBackend backend;
        if (auto st = backend.open(0); !st)
            QSKIP(("no OpenCL device: " + st.error()).c_str());
        for (const std::size_t bytes : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                                        std::size_t{4000012}, (std::size_t{3} << 20) + 5}) {
            std::vector<unsigned char> data(bytes);
            for (std::size_t i = 0; i < bytes; ++i)
                data[i] = static_cast<unsigned char>(i * 167 + (i >> 11) + 1);
            auto parent = backend.allocate(bytes + 8192);
            QVERIFY2(parent, parent ? "" : parent.error().c_str());
            auto id = backend.view(*parent, 4096, bytes);
            QVERIFY2(id, id ? "" : id.error().c_str());
            QVERIFY(backend.upload(*id, data.data(), bytes));
            const std::uint64_t key = 0x1234567890abcdefull + bytes;
            auto device = backend.digest(*id, bytes, key);
            QVERIFY2(device, device ? "" : device.error().c_str());
            QCOMPARE(*device, harness::digest(data.data(), bytes, key));
            QVERIFY(*backend.digest(*id, bytes, key + 1) != *device);
            for (const std::size_t at : {std::size_t{0}, bytes / 2, bytes - 1}) {
                data[at] ^= 0x40;
                QVERIFY(backend.upload(*id, data.data(), bytes));
                auto changed = backend.digest(*id, bytes, key);
                QVERIFY(changed && *changed != *device);
                QCOMPARE(*changed, harness::digest(data.data(), bytes, key));
                data[at] ^= 0x40;
            }
            backend.release(*id);
            backend.release(*parent);
        }
    }

    void ceilingsMeasuredThenCached() {
        opencl::OpenClBackend backend;
        if (auto st = backend.open(0); !st)
            QSKIP(("no OpenCL device: " + st.error()).c_str());

        const auto first = backend.ceilings(false);
        checkPlausible(first);
        QVERIFY(!first.cached);
        QCOMPARE(first.device, backend.deviceName());
        const QStringList files = QDir(m_cache.filePath(QStringLiteral("ceilings"))).entryList(QDir::Files);
        QCOMPARE(files.size(), 1);
        QVERIFY2(files.front().startsWith(QStringLiteral("opencl-")) && files.front().endsWith(QStringLiteral(".json")),
                 qPrintable(files.front()));

        // Another backend (another worker process, in real use) reads the same entry.
        opencl::OpenClBackend other;
        QVERIFY(other.open(0));
        const auto second = other.ceilings(false);
        checkPlausible(second);
        QVERIFY(second.cached);
        QCOMPARE(second.ceilings, first.ceilings);
        QCOMPARE(second.measuredAt, first.measuredAt);
        QCOMPARE(second.device, first.device);

        const auto refreshed = other.ceilings(true);
        checkPlausible(refreshed);
        QVERIFY(!refreshed.cached);
        // The new measurement replaces the entry.
        const auto third = backend.ceilings(false);
        QVERIFY(third.cached);
        QCOMPARE(third.ceilings, refreshed.ceilings);
        QVERIFY(!backend.deviceLost());
    }

    void unreadableCacheEntryIsMeasuredAgain() {
        opencl::OpenClBackend backend;
        if (auto st = backend.open(0); !st)
            QSKIP(("no OpenCL device: " + st.error()).c_str());
        QDir dir(m_cache.filePath(QStringLiteral("ceilings")));
        const QStringList files = dir.entryList(QDir::Files);
        QVERIFY(!files.isEmpty());
        for (const auto& f : files) {
            QFile file(dir.filePath(f));
            QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
            file.write("{ not json");
        }
        const auto c = backend.ceilings(false);
        checkPlausible(c);
        QVERIFY(!c.cached);
    }
};

QTEST_GUILESS_MAIN(TestOpenClBackend)
#include "tst_openclbackend.moc"
