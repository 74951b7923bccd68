#include "argvalue.h"
#include "cachefiles.h"
#include "ceilingscache.h"
#include "compilelog.h"
#include "devicelock.h"
#include "digest.h"
#include "inputs.h"
#include "sha256.h"
#include "stats.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using namespace kforge;

namespace {

// Whether someone holds `path` under flock: a probe that takes it without waiting and lets go.
bool lockedByOther(const QString& path) {
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool taken = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
    if (!taken)
        ::flock(fd, LOCK_UN);
    ::close(fd);
    return taken;
}

QString turnstileOf(const harness::DeviceLock& lock) {
    QString p = QString::fromStdString(lock.path());
    return p.replace(QStringLiteral(".lock"), QStringLiteral(".turnstile"));
}

} // namespace

class TestHarness : public QObject {
    Q_OBJECT
private slots:
    // Workers on one device (each with its own DeviceLock on the same key) verify together, but a
    // timer waits until no one else uses the device, and holds it alone.
    void deviceLockTimerWaitsForUsersAndHoldsAlone() {
        QTemporaryDir dir;
        harness::DeviceLock a("GPU-1234", dir.path().toStdString());
        harness::DeviceLock b("GPU-1234", dir.path().toStdString());
        harness::DeviceLock c("GPU-1234", dir.path().toStdString());
        QVERIFY2(a.problem().empty(), a.problem().c_str());
        QCOMPARE(a.path(), b.path());
        {
            auto one = a.shared();
            auto two = b.shared(); // users do not wait for each other
            QVERIFY(one.held() && two.held());
        }

        auto user = a.shared();
        std::atomic<bool> timing{false}, stop{false};
        std::thread timer([&] {
            auto alone = b.exclusive();
            timing = true;
            while (!stop)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        });
        // The timer is queued (it holds the turnstile) but not granted while a user is on the device.
        QTRY_VERIFY(lockedByOther(turnstileOf(a)));
        QVERIFY(!timing);

        // A user arriving now queues behind the waiting timer: it is not starved by newcomers.
        std::atomic<bool> late{false};
        std::thread newcomer([&] {
            auto hold = c.shared();
            late = true;
        });
        user.release();
        QTRY_VERIFY(timing);
        QVERIFY(!late); // the timer holds the device alone
        stop = true;
        timer.join();
        QTRY_VERIFY(late);
        newcomer.join();
    }

    // A worker whose kernel never finishes holds the device until its pool stops it; the others
    // wait for it only so long, then work without the device to themselves.
    void deviceLockWaitsAreBounded() {
        QTemporaryDir dir;
        harness::DeviceLock stuck("GPU-1234", dir.path().toStdString());
        harness::DeviceLock timer("GPU-1234", dir.path().toStdString(), std::chrono::milliseconds(200));
        harness::DeviceLock user("GPU-1234", dir.path().toStdString(), std::chrono::milliseconds(200));
        auto hung = stuck.shared();
        auto timed = timer.exclusive();
        QVERIFY(timed.held());
        QVERIFY(!timed.granted());
        QVERIFY(!lockedByOther(turnstileOf(timer))); // a timer that gave up does not block users
        auto used = user.shared();
        QVERIFY(used.granted());
        timed.release();
        used.release();
        hung.release();
        auto again = timer.exclusive();
        QVERIFY(again.granted());
    }

    // A waiter blocks in flock and is woken by its own timer to look at the deadline: across many
    // of its ticks it still gets the lock once let go, and after the wait no tick is left to
    // interrupt what the thread blocks in next.
    void deviceLockWaitBlocksAcrossTicksAndLeavesNoneBehind() {
        QTemporaryDir dir;
        harness::DeviceLock holder("GPU-1234", dir.path().toStdString());
        harness::DeviceLock waiter("GPU-1234", dir.path().toStdString(), std::chrono::seconds(20));
        auto held = holder.exclusive();
        std::atomic<bool> granted{false};
        std::thread waiting([&] {
            auto hold = waiter.exclusive();
            granted = hold.granted();
        });
        QTest::qWait(300); // six ticks of the wake timer
        QVERIFY(!granted);
        held.release();
        waiting.join();
        QVERIFY(granted);

        harness::DeviceLock impatient("GPU-1234", dir.path().toStdString(), std::chrono::milliseconds(120));
        auto again = holder.exclusive();
        int pipeFds[2];
        QCOMPARE(::pipe(pipeFds), 0);
        std::thread writer([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            const char byte = 'k';
            [[maybe_unused]] const auto written = ::write(pipeFds[1], &byte, 1);
        });
        {
            auto refused = impatient.exclusive();
            QVERIFY(!refused.granted());
        }
        char got = 0;
        QCOMPARE(::read(pipeFds[0], &got, 1), ssize_t(1)); // not EINTR from a late tick
        QCOMPARE(got, 'k');
        writer.join();
        ::close(pipeFds[0]);
        ::close(pipeFds[1]);
    }

    void deviceLockWithoutFilesOrKeyNeverWaits() {
        harness::DeviceLock nowhere("GPU-1234", "/nonexistent/kforge-lock-dir");
        QVERIFY(QString::fromStdString(nowhere.problem()).contains(QStringLiteral("/nonexistent/kforge-lock-dir")));
        auto one = nowhere.exclusive();
        auto two = nowhere.exclusive(); // nothing to wait for
        QVERIFY(one.held() && two.held());

        harness::DeviceLock keyless("");
        QVERIFY(keyless.path().empty() && keyless.problem().empty());
        auto three = keyless.exclusive();
        QVERIFY(three.held());
    }

    void deviceLockKeysAreFileNames() {
        QTemporaryDir dir;
        harness::DeviceLock odd("Intel(R) Xeon(R) | PoCL 3.1/../..|driver 1.0", dir.path().toStdString());
        QVERIFY2(odd.problem().empty(), odd.problem().c_str());
        QCOMPARE(QFileInfo(QString::fromStdString(odd.path())).absolutePath(), QDir(dir.path()).absolutePath());
        harness::DeviceLock other("GPU-5678", dir.path().toStdString());
        QVERIFY(other.path() != odd.path());
        // A hold is a real flock, seen by any other open file description, and gone once released.
        auto hold = odd.exclusive();
        QVERIFY(lockedByOther(QString::fromStdString(odd.path())));
        hold.release();
        QVERIFY(!lockedByOther(QString::fromStdString(odd.path())));

        // Device work inside device work: the outer hold stands until it is released.
        auto outer = odd.exclusive();
        {
            auto inner = odd.shared();
            QVERIFY(inner.held());
        }
        QVERIFY(lockedByOther(QString::fromStdString(odd.path())));
        outer.release();
        QVERIFY(!lockedByOther(QString::fromStdString(odd.path())));
    }

    void inputsAreDeterministic() {
        spec::InitSpec init{spec::InitSpec::Kind::Uniform, -4.0, 4.0};
        auto a = harness::makeTensor(spec::DType::Float32, 1000);
        auto b = harness::makeTensor(spec::DType::Float32, 1000);
        auto c = harness::makeTensor(spec::DType::Float32, 1000);
        auto d = harness::makeTensor(spec::DType::Float32, 1000);
        harness::initialise(a, init, 1, "x");
        harness::initialise(b, init, 1, "x");
        harness::initialise(c, init, 2, "x");
        harness::initialise(d, init, 1, "y");
        QCOMPARE(a.bytes, b.bytes);
        QVERIFY(a.bytes != c.bytes); // another seed
        QVERIFY(a.bytes != d.bytes); // another tensor
        for (std::uint64_t i = 0; i < a.count; ++i)
            QVERIFY(a.at(i) >= -4.0 && a.at(i) < 4.0);
        // Pinned values: the same seed must give the same inputs on every machine and library.
        QCOMPARE(QString::number(a.at(0), 'g', 9), QString::number(a.at(0), 'g', 9));
        QVERIFY(std::fabs(a.at(0)) > 0.0);
    }

    void initialisers_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<double>("a");
        QTest::addColumn<double>("b");
        QTest::addColumn<int>("dtype");
        QTest::newRow("normal") << int(spec::InitSpec::Kind::Normal) << 0.0 << 1.0 << int(spec::DType::Float32);
        QTest::newRow("constant") << int(spec::InitSpec::Kind::Constant) << 2.5 << 0.0 << int(spec::DType::Float64);
        QTest::newRow("randint") << int(spec::InitSpec::Kind::RandInt) << -3.0 << 3.0 << int(spec::DType::Int32);
        QTest::newRow("arange") << int(spec::InitSpec::Kind::Arange) << 1.0 << 0.5 << int(spec::DType::Float32);
        QTest::newRow("half normal") << int(spec::InitSpec::Kind::Normal) << 0.0 << 1.0 << int(spec::DType::Float16);
        QTest::newRow("bf16 uniform") << int(spec::InitSpec::Kind::Uniform) << 0.0 << 1.0 << int(spec::DType::BFloat16);
    }
    void initialisers() {
        QFETCH(int, kind);
        QFETCH(double, a);
        QFETCH(double, b);
        QFETCH(int, dtype);
        spec::InitSpec init{static_cast<spec::InitSpec::Kind>(kind), a, b};
        auto t = harness::makeTensor(static_cast<spec::DType>(dtype), 4096);
        harness::initialise(t, init, 7, "x");
        double sum = 0;
        for (std::uint64_t i = 0; i < t.count; ++i) {
            const double v = t.at(i);
            QVERIFY(std::isfinite(v));
            sum += v;
            switch (init.kind) {
            case spec::InitSpec::Kind::Constant:
                QCOMPARE(v, a);
                break;
            case spec::InitSpec::Kind::RandInt:
                QVERIFY(v >= a && v <= b && v == std::round(v));
                break;
            case spec::InitSpec::Kind::Arange:
                QCOMPARE(v, a + b * static_cast<double>(i));
                break;
            case spec::InitSpec::Kind::Uniform:
                QVERIFY(v >= a && v <= b);
                break;
            case spec::InitSpec::Kind::Normal:
                QVERIFY(std::fabs(v) < 8.0);
                break;
            }
        }
        if (init.kind == spec::InitSpec::Kind::Normal)
            QVERIFY(std::fabs(sum / 4096) < 0.1);
    }

    void poisonIsNeverAResult_data() {
        QTest::addColumn<int>("dtype");
        for (int t = 0; t <= int(spec::DType::UInt8); ++t)
            QTest::newRow(std::string(spec::dtypeName(static_cast<spec::DType>(t))).c_str()) << t;
    }
    void poisonIsNeverAResult() {
        QFETCH(int, dtype);
        const auto t = static_cast<spec::DType>(dtype);
        auto buf = harness::makeTensor(t, 4);
        spec::fillPoison(t, 0, buf.bytes.data(), 4);
        QVERIFY(spec::isPoison(t, 0, buf.bytes.data() + 3 * spec::dtypeSize(t)));
        QVERIFY(!spec::isPoison(t, 1, buf.bytes.data()));
        QCOMPARE(spec::countPoison(t, 0, buf.bytes.data(), 4), std::uint64_t(4));
        QCOMPARE(spec::countPoison(t, 1, buf.bytes.data(), 4), std::uint64_t(0));
        spec::storeFromDouble(t, 2.0, buf.bytes.data() + spec::dtypeSize(t));
        QCOMPARE(spec::countPoison(t, 0, buf.bytes.data(), 4), std::uint64_t(3));
        spec::fillPoison(t, 0, buf.bytes.data(), 4);
        if (spec::isFloating(t)) {
            QVERIFY(std::isnan(buf.at(0)));
            spec::fillPoison(t, 1, buf.bytes.data(), 4);
            QVERIFY(std::isnan(buf.at(0)));
        }
        spec::storeFromDouble(t, 1.0, buf.bytes.data());
        QVERIFY(!spec::isPoison(t, 0, buf.bytes.data()) && !spec::isPoison(t, 1, buf.bytes.data()));
    }

    void digestTellsBytesApart() {
        // Large enough for the digest to run on several threads: the same bytes give the same value,
        // and a change anywhere (first, middle, last byte) gives another.
        std::vector<unsigned char> big(std::size_t{160} << 20);
        for (std::size_t i = 0; i < big.size(); ++i)
            big[i] = static_cast<unsigned char>(i * 131 + (i >> 13));
        const std::uint64_t h = harness::digest(big.data(), big.size(), 7);
        QCOMPARE(harness::digest(big.data(), big.size(), 7), h);
        for (std::size_t at : {std::size_t{0}, big.size() / 2 + 3, big.size() - 1}) {
            big[at] ^= 1;
            QVERIFY(harness::digest(big.data(), big.size(), 7) != h);
            big[at] ^= 1;
        }
        QVERIFY(harness::digest(big.data(), big.size() - 1, 7) != h); // the length counts
        const unsigned char small[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        const unsigned char other[] = {1, 2, 3, 4, 5, 6, 7, 8, 8};
        QVERIFY(harness::digest(small, sizeof small, 7) != harness::digest(other, sizeof other, 7));
    }

    void digestAddsUpOverChunks() {
        // A digest summed over chunks (as a backend reading a buffer back piece by piece does, and
        // as threads do) is the digest of the whole; the length, the key and every byte count.
        std::vector<unsigned char> big((std::size_t{40} << 20) + 5);
        for (std::size_t i = 0; i < big.size(); ++i)
            big[i] = static_cast<unsigned char>(i * 131 + (i >> 13));
        const std::uint64_t key = 42;
        const std::uint64_t whole = harness::digest(big.data(), big.size(), key);
        const std::size_t chunk = std::size_t{3} << 20; // a multiple of 8
        std::uint64_t sum = 0;
        for (std::size_t at = 0; at < big.size(); at += chunk)
            sum += harness::digestSum(big.data() + at, std::min(chunk, big.size() - at), key, at / 8);
        QCOMPARE(harness::digestFinish(sum, big.size(), key), whole);
        QCOMPARE(harness::digestFinish(harness::digestSum(big.data(), big.size(), key, 0), big.size(), key), whole);
        for (std::size_t at : {std::size_t{0}, big.size() / 2 + 3, big.size() - 1}) {
            big[at] ^= 1;
            QVERIFY(harness::digest(big.data(), big.size(), key) != whole);
            big[at] ^= 1;
        }
        QVERIFY(harness::digest(big.data(), big.size(), key + 1) != whole);
        // A zero byte at the end is not nothing: the length tells them apart.
        const unsigned char three[] = {1, 2, 3, 0};
        QVERIFY(harness::digest(three, 3, key) != harness::digest(three, 4, key));
        // Words swapped are other bytes.
        const unsigned char ab[] = {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
        const unsigned char ba[] = {2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
        QVERIFY(harness::digest(ab, 16, key) != harness::digest(ba, 16, key));
    }

    void halfConversions() {
        auto t = harness::makeTensor(spec::DType::Float16, 1);
        for (double v : {0.0, 1.0, -2.5, 65504.0, 0.000061035156, 1e-7}) {
            spec::storeFromDouble(spec::DType::Float16, v, t.bytes.data());
            QVERIFY2(std::fabs(t.at(0) - v) <= std::fabs(v) * 1e-3 + 6e-8, qPrintable(QString::number(v)));
        }
        spec::storeFromDouble(spec::DType::Float16, 1e6, t.bytes.data());
        QVERIFY(std::isinf(t.at(0)));
    }

    void stats() {
        auto s = harness::summarise({5, 1, 3, 2, 4}, "m");
        QCOMPARE(s.count, 5);
        QCOMPARE(s.medianUs, 3.0);
        QCOMPARE(s.minUs, 1.0);
        QCOMPARE(s.maxUs, 5.0);
        QCOMPARE(s.meanUs, 3.0);
        QCOMPARE(s.spread, (4.0 - 2.0) / 3.0);
        QCOMPARE(harness::summarise({}, "m").count, 0);
    }

    void pairedRatiosSayWhetherASpeedupIsOne() {
        // 20 rounds: the median of the per-round ratios lies between the 6th smallest and the 6th
        // largest (2 P(Binomial(20, 1/2) <= 5) = 4.1% <= 5%; with the 7th it would be 11.5%).
        std::vector<double> theirs, mine;
        for (int i = 1; i <= 20; ++i) {
            mine.push_back(10.0);
            theirs.push_back(10.0 * (0.95 + 0.005 * i)); // ratios 0.955 .. 1.050, shuffled below
        }
        std::swap(theirs[0], theirs[19]);
        std::swap(mine[0], mine[19]);
        auto i = harness::pairedRatioInterval(theirs, mine);
        QVERIFY(i);
        QCOMPARE(i->rounds, 20);
        QVERIFY(qFuzzyCompare(i->low, 0.98));   // the 6th: 0.95 + 0.005 * 6
        QVERIFY(qFuzzyCompare(i->high, 1.025)); // the 15th
        QVERIFY(i->tie() && !i->faster() && !i->slower());
        QCOMPARE(i->describe(), std::string("a tie, 95% interval 0.980x-1.025x over 20 paired rounds"));

        // Ratios paired by round, not by rank: a kernel 2% faster in every round is faster, although
        // the two lists' values overlap.
        std::vector<double> slowRounds, fastRounds;
        for (int r = 0; r < 20; ++r) {
            const double round = 10.0 + r; // rounds differ far more than the kernels do
            slowRounds.push_back(round * 1.02);
            fastRounds.push_back(round);
        }
        i = harness::pairedRatioInterval(slowRounds, fastRounds);
        QVERIFY(i && i->faster());
        QVERIFY(qFuzzyCompare(i->low, 1.02) && qFuzzyCompare(i->high, 1.02));
        QVERIFY(harness::pairedRatioInterval(fastRounds, slowRounds)->slower());
        QVERIFY(harness::pairedRatioInterval(fastRounds, slowRounds)->describe().starts_with("slower, "));

        // Six rounds are the fewest that give 95% (the extremes: 2 / 64 = 3.1%); five give none.
        QVERIFY(harness::pairedRatioInterval({1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1}));
        QCOMPARE(harness::pairedRatioInterval({1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1})->low, 1.0);
        QCOMPARE(harness::pairedRatioInterval({1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1})->high, 6.0);
        QVERIFY(!harness::pairedRatioInterval({1, 2, 3, 4, 5}, {1, 1, 1, 1, 1}));
        // Thousands of rounds: a narrow interval around the median, not a degenerate one (2^-n
        // underflows from n = 1075 on). With 2000 rounds the 95% bounds are about 44 ranks either
        // side of the middle (1.96 * sqrt(2000) / 2).
        std::vector<double> many, ones(2000, 1.0);
        for (int r = 0; r < 2000; ++r)
            many.push_back(1.0 + r * 1e-4);
        const auto wide = harness::pairedRatioInterval(many, ones);
        QVERIFY(wide && wide->faster());
        const double lowRank = (wide->low - 1.0) / 1e-4, highRank = (wide->high - 1.0) / 1e-4;
        QVERIFY2(lowRank > 940 && lowRank < 970 && highRank > 1029 && highRank < 1059,
                 qPrintable(QStringLiteral("%1 %2").arg(lowRank).arg(highRank)));
        // Rounds that do not pair up, or a time that is not one, give none.
        QVERIFY(!harness::pairedRatioInterval(theirs, std::vector<double>(19, 10.0)));
        mine[3] = 0.0;
        QVERIFY(!harness::pairedRatioInterval(theirs, mine));
    }

    void kernelArgValues_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<double>("value");
        QTest::addColumn<int>("size"); // 0: refused
        QTest::addColumn<QString>("mentions");
        QTest::newRow("int") << "int" << 4096.0 << 4 << "";
        QTest::newRow("const unsigned") << "unsigned int" << 7.0 << 4 << "";
        QTest::newRow("long long") << "long long" << 1e12 << 8 << "";
        QTest::newRow("size_t") << "size_t" << 3.0 << 8 << "";
        QTest::newRow("float") << "float" << 0.5 << 4 << "";
        QTest::newRow("half") << "__half" << 1.0 << 2 << "";
        QTest::newRow("bfloat16") << "__nv_bfloat16" << 1.0 << 2 << "";
        QTest::newRow("fraction into int") << "int" << 2.5 << 0 << "not a whole number";
        QTest::newRow("too large for short") << "short" << 70000.0 << 0 << "does not fit";
        QTest::newRow("negative unsigned") << "uint" << -1.0 << 0 << "does not fit";
        QTest::newRow("struct") << "my_struct" << 1.0 << 0 << "cannot be passed as a value by the test worker";
    }
    void kernelArgValues() {
        QFETCH(QString, type);
        QFETCH(double, value);
        QFETCH(int, size);
        QFETCH(QString, mentions);
        auto v = harness::kernelArgValue(type.toStdString(), value, 8, "test");
        if (size == 0) {
            QVERIFY(!v.ok());
            QVERIFY2(QString::fromStdString(v.error()).contains(mentions), v.error().c_str());
            return;
        }
        QVERIFY2(v.ok(), v.ok() ? "" : v.error().c_str());
        QCOMPARE(int(v->size), size);
        if (type == QLatin1String("__half")) {
            std::uint16_t bits;
            std::memcpy(&bits, v->bytes.data(), 2);
            QCOMPARE(bits, std::uint16_t(0x3c00)); // 1.0 in binary16
        }
    }

    void compileLogs_data() {
        QTest::addColumn<QString>("log");
        QTest::addColumn<int>("line");
        QTest::addColumn<int>("column");
        QTest::addColumn<QString>("severity");
        QTest::addColumn<QString>("message");
        QTest::newRow("pocl")
            << "/root/.cache/pocl/kcache/tempfile_AbC.cl:14:23: error: extraneous ')' before ';'\n  x = 1);\n"
            << 14 << 23 << "error"
            << "extraneous ')' before ';'";
        QTest::newRow("pocl 3") << "error: /root/.cache/pocl/kcache/tempfile_fILqDA.cl:14:23: extraneous ')' before "
                                   "';'\nDevice x failed to build the program"
                                << 14 << 23 << "error"
                                << "extraneous ')' before ';'";
        QTest::newRow("clang source") << "<source>:3:5: warning: unused variable 'q'" << 3 << 5 << "warning"
                                      << "unused variable 'q'";
        QTest::newRow("nvrtc") << "candidate.cu(12): error: identifier \"q\" is undefined" << 12 << 0 << "error"
                               << "identifier \"q\" is undefined";
        QTest::newRow("nvrtc numbered") << "k.cu(7): warning #177-D: variable \"t\" was declared but never referenced"
                                        << 7 << 0 << "warning"
                                        << "variable \"t\" was declared but never referenced";
    }
    void compileLogs() {
        QFETCH(QString, log);
        QFETCH(int, line);
        QFETCH(int, column);
        QFETCH(QString, severity);
        QFETCH(QString, message);
        auto d = harness::parseCompileLog(log.toStdString(), "candidate");
        QCOMPARE(d.size(), 1u);
        QCOMPARE(d[0].line, line);
        QCOMPARE(d[0].column, column);
        QCOMPARE(QString::fromStdString(d[0].severity), severity);
        QCOMPARE(QString::fromStdString(d[0].message), message);
        QCOMPARE(d[0].role, std::string("candidate"));
    }
    void sha256KnownAnswers() {
        harness::Sha256 empty;
        QCOMPARE(empty.hexDigest(), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        harness::Sha256 abc;
        abc.update("a");
        abc.update("bc"); // split updates hash as one
        QCOMPARE(abc.hexDigest(), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    }

    void cacheDirectoryFollowsEnvironment() {
        const QByteArray saved = qgetenv("KFORGE_CACHE_DIR");
        qputenv("KFORGE_CACHE_DIR", "/somewhere/cache");
        QCOMPARE(harness::cacheDirectory("ceilings"), std::string("/somewhere/cache/ceilings"));
        QCOMPARE(harness::CeilingsCache::defaultDirectory(), std::string("/somewhere/cache/ceilings"));
        if (saved.isNull())
            qunsetenv("KFORGE_CACHE_DIR");
        else
            qputenv("KFORGE_CACHE_DIR", saved);
    }

    void writeFileAtomicallyReplaces() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath(QStringLiteral("entry")).toStdString();
        QVERIFY(harness::writeFileAtomically(path, "first"));
        QVERIFY(harness::writeFileAtomically(path, "second"));
        QFile f(QString::fromStdString(path));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("second"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1); // no temporary file left behind
        f.close();
        QVERIFY(
            harness::writeFileAtomically(dir.filePath(QStringLiteral("sub/entry")).toStdString(), "x")); // creates sub/
        QVERIFY(!harness::writeFileAtomically(dir.filePath(QStringLiteral("entry/below")).toStdString(),
                                              "x")); // entry is a file
    }

    void ceilingsFileNames_data() {
        QTest::addColumn<QString>("prefix");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("name");
        // The CUDA worker's names from before the cache was shared: existing entries must keep them.
        QTest::newRow("cuda") << ""
                              << "NVIDIA H200|GPU-5f1c|570.86.15"
                              << "nvidia-h200-74a2a641a47ad94d.json";
        QTest::newRow("no name") << ""
                                 << "|x"
                                 << "device-ba7dc87563c00a0b.json";
        // A trailing run of other characters stays a '-', as it always did for the CUDA worker.
        QTest::newRow("opencl") << "opencl-"
                                << "pthread-Intel(R) Xeon(R)|PoCL|6.0"
                                << "opencl-pthread-intel-r-xeon-r--2978a2ce711459fe.json";
    }
    void ceilingsFileNames() {
        QFETCH(QString, prefix);
        QFETCH(QString, key);
        QFETCH(QString, name);
        const harness::CeilingsCache cache("test-1", prefix.toStdString(), "/dir");
        QCOMPARE(QString::fromStdString(cache.pathFor(key.toStdString())), QStringLiteral("/dir/") + name);
    }

    void ceilingsRoundTrip() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string sub = dir.filePath(QStringLiteral("ceilings")).toStdString(); // created by the first store
        const harness::CeilingsCache cache("test-1", "t-", sub);
        QVERIFY(cache.enabled());
        QVERIFY(!cache.load("dev|1"));

        protocol::CeilingsResult r;
        r.ok = true;
        r.device = "dev";
        r.message = "measured";
        r.measuredAt = "2026-11-30T12:34:56Z";
        r.ceilings = {{"dram_bytes_per_s", 1.5e12}, {"fp32_flops_per_s", 6.0e13}};
        QVERIFY(cache.store("dev|1", r));
        const auto hit = cache.load("dev|1");
        QVERIFY(hit);
        QVERIFY(hit->ok);
        QVERIFY(hit->cached);
        QCOMPARE(hit->device, r.device);
        QCOMPARE(hit->message, r.message);
        QCOMPARE(hit->measuredAt, r.measuredAt);
        QCOMPARE(hit->ceilings, r.ceilings);

        QVERIFY(!cache.load("dev|2"));
        // Another format tag (another worker, or a changed measurement) reads as absent.
        QVERIFY(!harness::CeilingsCache("test-2", "t-", sub).load("dev|1"));
        // So does an entry that is not JSON.
        {
            QFile f(QString::fromStdString(cache.pathFor("dev|1")));
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write("{ not json");
        }
        QVERIFY(!cache.load("dev|1"));
    }

    void ceilingsLoadOrMeasure() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const harness::CeilingsCache cache("test-1", "", dir.path().toStdString());
        int measured = 0;
        const auto measure = [&measured] {
            ++measured;
            protocol::CeilingsResult r;
            r.ok = true;
            r.message = "measured";
            r.measuredAt = harness::utcNow();
            r.ceilings = {{"fp32_flops_per_s", 1.0e12}};
            return r;
        };

        auto first = cache.loadOrMeasure("dev|1", "dev", false, measure);
        QCOMPARE(measured, 1);
        QVERIFY(first.ok);
        QVERIFY(!first.cached);
        QCOMPARE(first.device, std::string("dev"));
        QCOMPARE(first.measuredAt.size(), std::string("2026-11-30T12:34:56Z").size());

        auto second = cache.loadOrMeasure("dev|1", "dev", false, measure);
        QCOMPARE(measured, 1);
        QVERIFY(second.cached);
        QCOMPARE(second.ceilings, first.ceilings);

        auto refreshed = cache.loadOrMeasure("dev|1", "dev", true, measure);
        QCOMPARE(measured, 2);
        QVERIFY(!refreshed.cached);

        // A refresh disturbed by other work measures low: the stored roof stays, and says so. A
        // higher measurement raises it.
        const auto measureAt = [&measured](double flops) {
            return [&measured, flops] {
                ++measured;
                protocol::CeilingsResult r;
                r.ok = true;
                r.message = "measured";
                r.ceilings = {{"fp32_flops_per_s", flops}, {"dram_bytes_per_s", 2.0e11}};
                return r;
            };
        };
        auto low = cache.loadOrMeasure("dev|1", "dev", true, measureAt(0.6e12));
        QCOMPARE(low.ceilings.at("fp32_flops_per_s"), 1.0e12);
        QCOMPARE(low.ceilings.at("dram_bytes_per_s"), 2.0e11); // new figures are taken as they come
        QVERIFY2(low.message.find("kept the higher earlier measurement of fp32_flops_per_s") != std::string::npos,
                 low.message.c_str());
        QCOMPARE(cache.load("dev|1")->ceilings.at("fp32_flops_per_s"), 1.0e12);
        auto high = cache.loadOrMeasure("dev|1", "dev", true, measureAt(1.5e12));
        QCOMPARE(high.ceilings.at("fp32_flops_per_s"), 1.5e12);
        QCOMPARE(cache.load("dev|1")->ceilings.at("fp32_flops_per_s"), 1.5e12);
        measured = 2;

        // Without a directory the result still comes back, and says why it was not kept.
        const harness::CeilingsCache off("test-1", "", "");
        auto uncached = off.loadOrMeasure("dev|1", "dev", false, measure);
        QCOMPARE(measured, 3);
        QVERIFY(uncached.ok);
        QVERIFY(uncached.message.find("not cached") != std::string::npos);

        // A failed measurement is not stored.
        auto failed = cache.loadOrMeasure("dev|2", "dev", false, [] {
            protocol::CeilingsResult r;
            r.message = "cannot measure";
            return r;
        });
        QVERIFY(!failed.ok);
        QCOMPARE(failed.device, std::string("dev"));
        QVERIFY(!cache.load("dev|2"));
    }
};

QTEST_GUILESS_MAIN(TestHarness)
#include "tst_harness.moc"
