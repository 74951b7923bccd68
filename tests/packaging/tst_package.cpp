// The Debian package, as a user gets it: cpack makes it from this build tree, and the suite reads its
// control fields and files, validates the desktop entry and AppStream metainfo, then unpacks it
// (dpkg-deb -x) and runs the kforge inside with an environment that names no kforge folder, to show
// that the unpacked binaries find the unpacked tasks, data and workers by themselves.

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

namespace {

// Generous: cpack strips and compresses a few hundred MB on a loaded CI machine. Never a timing assertion.
constexpr int kCpackMs = 480000;
constexpr int kRunMs = 120000;

struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env,
        const QString& workDir = QString(), int timeoutMs = kRunMs) {
    QProcess p;
    p.setProcessEnvironment(env);
    if (!workDir.isEmpty())
        p.setWorkingDirectory(workDir);
    p.start(program, args);
    if (!p.waitForStarted())
        return {-1, {}, p.errorString().toUtf8()};
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {-1, p.readAllStandardOutput(), "did not finish: " + p.readAllStandardError()};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

QString described(const QString& what, const Run& r) {
    return QStringLiteral("%1 exited with %2\nstdout:\n%3\nstderr:\n%4")
        .arg(what)
        .arg(r.exitCode)
        .arg(QString::fromUtf8(r.out), QString::fromUtf8(r.err));
}

QStringList listOf(const char* commaSeparated) {
    return QString::fromUtf8(commaSeparated).split(u',', Qt::SkipEmptyParts);
}

// Every file under `root`, relative to it.
QStringList filesUnder(const QString& root) {
    QStringList files;
    QDirIterator it(root, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    while (it.hasNext())
        files << QDir(root).relativeFilePath(it.next());
    files.sort();
    return files;
}

} // namespace

class TestPackage : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    QString m_deb;
    QString m_root;   // where the package is unpacked
    QString m_prefix; // m_root + the installation prefix (/usr)
    QProcessEnvironment m_env;

    QString installed(const QString& relative) const { return QDir(m_prefix).filePath(relative); }
    QString bin(const QString& name) const { return installed(QStringLiteral(KFORGE_INSTALL_BINDIR "/") + name); }
    QString dataDir() const { return installed(QStringLiteral(KFORGE_INSTALL_DATADIR "/kforge")); }
    QString workerDir() const { return installed(QStringLiteral(KFORGE_INSTALL_LIBEXECDIR "/kforge")); }

    QString field(const QString& name) const {
        const Run r = run(QStringLiteral("dpkg-deb"), {QStringLiteral("--field"), m_deb, name},
                          QProcessEnvironment::systemEnvironment());
        return QString::fromUtf8(r.out).trimmed();
    }

private slots:
    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        if (QStandardPaths::findExecutable(QStringLiteral("dpkg-deb")).isEmpty())
            QSKIP("dpkg-deb is not installed: the Debian package cannot be built or read here");
        const QString cpack = qEnvironmentVariable("KFORGE_CPACK");
        const QString build = qEnvironmentVariable("KFORGE_BUILD_DIR");
        QVERIFY2(!cpack.isEmpty() && !build.isEmpty(),
                 "run through ctest, which sets KFORGE_CPACK and KFORGE_BUILD_DIR");

        const QString out = m_tmp.filePath(QStringLiteral("out"));
        const Run made = run(cpack,
                             {QStringLiteral("-G"), QStringLiteral("DEB"), QStringLiteral("--config"),
                              QDir(build).filePath(QStringLiteral("CPackConfig.cmake")), QStringLiteral("-B"), out},
                             QProcessEnvironment::systemEnvironment(), m_tmp.path(), kCpackMs);
        QVERIFY2(made.exitCode == 0, qPrintable(described(QStringLiteral("cpack -G DEB"), made)));
        const QStringList debs = QDir(out).entryList({QStringLiteral("kforge_*.deb")}, QDir::Files);
        QVERIFY2(debs.size() == 1, qPrintable(QStringLiteral("cpack made %1 in %2, not one kforge_*.deb")
                                                  .arg(QDir(out).entryList(QDir::Files).join(u' '), out)));
        m_deb = QDir(out).filePath(debs.first());

        m_root = m_tmp.filePath(QStringLiteral("root"));
        const Run unpacked = run(QStringLiteral("dpkg-deb"), {QStringLiteral("-x"), m_deb, m_root},
                                 QProcessEnvironment::systemEnvironment());
        QVERIFY2(unpacked.exitCode == 0, qPrintable(described(QStringLiteral("dpkg-deb -x"), unpacked)));
        m_prefix = m_root + QStringLiteral("/usr");

        // Nothing points kforge at a folder: no KFORGE_* variable, and a home of its own, so neither
        // the build tree nor the user's data can stand in for what the package holds.
        m_env = QProcessEnvironment::systemEnvironment();
        for (const QString& key : m_env.keys())
            if (key.startsWith(QLatin1String("KFORGE_")))
                m_env.remove(key);
        const QString home = m_tmp.filePath(QStringLiteral("home"));
        QDir().mkpath(home);
        m_env.insert(QStringLiteral("HOME"), home);
        m_env.insert(QStringLiteral("XDG_DATA_HOME"), home + QStringLiteral("/.local/share"));
        m_env.insert(QStringLiteral("XDG_CONFIG_HOME"), home + QStringLiteral("/.config"));
        m_env.insert(QStringLiteral("XDG_CACHE_HOME"), home + QStringLiteral("/.cache"));
        m_env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    }

    void controlFields() {
        QCOMPARE(field(QStringLiteral("Package")), QStringLiteral("kforge"));
        QCOMPARE(field(QStringLiteral("Version")), QStringLiteral(KFORGE_VERSION));
        QVERIFY(!field(QStringLiteral("Maintainer")).isEmpty());
        QVERIFY(!field(QStringLiteral("Section")).isEmpty());
        QVERIFY(!field(QStringLiteral("Description")).isEmpty());
        QVERIFY2(field(QStringLiteral("Recommends")).contains(QStringLiteral("opencl-icd")),
                 "an OpenCL driver is recommended, so that the OpenCL worker has a device");
    }

    // The shared libraries the binaries link become dependencies; NVIDIA's never do: the package must
    // install and run on a machine without a GPU, a driver or the CUDA toolkit.
    void dependencies() {
        const QString depends = field(QStringLiteral("Depends"));
        for (const char* lib : {"libc6", "libqt6core6", "libqt6widgets6", "libmuparser"})
            QVERIFY2(depends.contains(QLatin1String(lib)),
                     qPrintable(QStringLiteral("Depends lacks %1 (dpkg-shlibdeps, from dpkg-dev, computes them): %2")
                                    .arg(QLatin1String(lib), depends)));
        const QRegularExpression nvidia(QStringLiteral("nvidia|cuda|nvrtc|cupti"),
                                        QRegularExpression::CaseInsensitiveOption);
        for (const QString& relation : {QStringLiteral("Depends"), QStringLiteral("Pre-Depends")})
            QVERIFY2(!field(relation).contains(nvidia), qPrintable(relation + QStringLiteral(": ") + field(relation)));
    }

    void contents_data() {
        QTest::addColumn<QString>("path");
        QTest::newRow("kforge") << QStringLiteral(KFORGE_INSTALL_BINDIR "/kforge");
        QTest::newRow("kforge-headless") << QStringLiteral(KFORGE_INSTALL_BINDIR "/kforge-headless");
        for (const QString& worker : listOf(KFORGE_PACKAGED_WORKERS))
            QTest::newRow(qPrintable(worker)) << QStringLiteral(KFORGE_INSTALL_LIBEXECDIR "/kforge/") + worker;
        QTest::newRow("desktop entry") << QStringLiteral(KFORGE_INSTALL_DATADIR "/applications/" KFORGE_APP_ID
                                                                                ".desktop");
        QTest::newRow("metainfo") << QStringLiteral(KFORGE_INSTALL_DATADIR "/metainfo/" KFORGE_APP_ID ".metainfo.xml");
        QTest::newRow("scalable icon") << QStringLiteral(KFORGE_INSTALL_DATADIR
                                                         "/icons/hicolor/scalable/apps/kforge.svg");
        for (const QString& size : listOf(KFORGE_ICON_SIZES))
            QTest::newRow(qPrintable(QStringLiteral("icon %1").arg(size)))
                << QStringLiteral(KFORGE_INSTALL_DATADIR "/icons/hicolor/%1x%1/apps/kforge.png").arg(size);
        // Every built-in task, and every data folder of resources/ (icons/ is compiled in), whole.
        const QString tasks = QStringLiteral(KFORGE_SOURCE_DIR "/tasks");
        for (const QString& file : filesUnder(tasks))
            QTest::newRow(qPrintable(QStringLiteral("tasks/") + file))
                << QStringLiteral(KFORGE_INSTALL_DATADIR "/kforge/tasks/") + file;
        const QDir resources(QStringLiteral(KFORGE_SOURCE_DIR "/resources"));
        for (const QString& folder : resources.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            if (folder == QLatin1String("icons"))
                continue;
            for (const QString& file : filesUnder(resources.filePath(folder)))
                QTest::newRow(qPrintable(QStringLiteral("resources/%1/%2").arg(folder, file)))
                    << QStringLiteral(KFORGE_INSTALL_DATADIR "/kforge/resources/%1/%2").arg(folder, file);
        }
    }

    void contents() {
        QFETCH(QString, path);
        QVERIFY2(QFileInfo(installed(path)).isFile(), qPrintable(QStringLiteral("the package has no /usr/") + path));
    }

    void programsAreExecutable() {
        QStringList programs{bin(QStringLiteral("kforge")), bin(QStringLiteral("kforge-headless"))};
        for (const QString& worker : listOf(KFORGE_PACKAGED_WORKERS))
            programs << QDir(workerDir()).filePath(worker);
        for (const QString& program : programs)
            QVERIFY2(QFileInfo(program).isExecutable(), qPrintable(program));
    }

    // Test programs, fakes and benchmarks stay in the build tree.
    void nothingFromTheTests() {
        for (const QString& file : filesUnder(m_root)) {
            const QString name = QFileInfo(file).fileName();
            QVERIFY2(!name.startsWith(QLatin1String("tst_")) && !name.contains(QLatin1String("fake"))
                         && !name.contains(QLatin1String("bench")) && !name.contains(QLatin1String("gpucheck")),
                     qPrintable(file));
        }
    }

    void desktopEntry() {
        const QString entry =
            installed(QStringLiteral(KFORGE_INSTALL_DATADIR "/applications/" KFORGE_APP_ID ".desktop"));
        QFile f(entry);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(f.readAll());
        // It starts the kforge on PATH, with the icon the package installs.
        QVERIFY2(
            text.contains(QRegularExpression(QStringLiteral("^Exec=kforge( |$)"), QRegularExpression::MultilineOption)),
            qPrintable(text));
        QVERIFY2(
            text.contains(QRegularExpression(QStringLiteral("^Icon=kforge$"), QRegularExpression::MultilineOption)),
            qPrintable(text));
        if (QStandardPaths::findExecutable(QStringLiteral("desktop-file-validate")).isEmpty())
            QSKIP("desktop-file-validate is not installed (desktop-file-utils; packaging/install-deps.sh installs it)");
        const Run r = run(QStringLiteral("desktop-file-validate"), {entry}, QProcessEnvironment::systemEnvironment());
        QVERIFY2(r.exitCode == 0 && r.out.trimmed().isEmpty(),
                 qPrintable(described(QStringLiteral("desktop-file-validate"), r)));
    }

    void metainfo() {
        const QString metainfo =
            installed(QStringLiteral(KFORGE_INSTALL_DATADIR "/metainfo/" KFORGE_APP_ID ".metainfo.xml"));
        QFile f(metainfo);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(f.readAll());
        QVERIFY2(text.contains(QStringLiteral("<id>" KFORGE_APP_ID "</id>")), qPrintable(text));
        QVERIFY2(
            text.contains(QStringLiteral("<launchable type=\"desktop-id\">" KFORGE_APP_ID ".desktop</launchable>")),
            qPrintable(text));
        if (QStandardPaths::findExecutable(QStringLiteral("appstreamcli")).isEmpty())
            QSKIP("appstreamcli is not installed (appstream; packaging/install-deps.sh installs it)");
        const Run r =
            run(QStringLiteral("appstreamcli"), {QStringLiteral("validate"), QStringLiteral("--no-net"), metainfo},
                QProcessEnvironment::systemEnvironment());
        QVERIFY2(r.exitCode == 0, qPrintable(described(QStringLiteral("appstreamcli validate"), r)));
    }

    void runs() {
        const Run version = run(bin(QStringLiteral("kforge")), {QStringLiteral("--version")}, m_env);
        QVERIFY2(version.exitCode == 0, qPrintable(described(QStringLiteral("kforge --version"), version)));
        QVERIFY(version.out.startsWith("kforge " KFORGE_VERSION));
        const Run help = run(bin(QStringLiteral("kforge")), {QStringLiteral("--help")}, m_env);
        QVERIFY2(help.exitCode == 0 && help.out.contains("doctor"),
                 qPrintable(described(QStringLiteral("kforge --help"), help)));
        const Run headless = run(bin(QStringLiteral("kforge-headless")), {QStringLiteral("--version")}, m_env);
        QVERIFY2(headless.exitCode == 0, qPrintable(described(QStringLiteral("kforge-headless --version"), headless)));
    }

    // Every built-in task is listed, from the package's own folder.
    void findsItsTasks() {
        for (const QString& program : {QStringLiteral("kforge"), QStringLiteral("kforge-headless")}) {
            const Run r = run(bin(program), {QStringLiteral("tasks")}, m_env);
            QVERIFY2(r.exitCode == 0, qPrintable(described(program + QStringLiteral(" tasks"), r)));
            const QString listed = QString::fromUtf8(r.out);
            QVERIFY2(!listed.contains(QLatin1String("INVALID")), qPrintable(listed));
            const QDir tasks(QStringLiteral(KFORGE_SOURCE_DIR "/tasks"));
            for (const QString& task : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
                if (!QFileInfo::exists(tasks.filePath(task + QStringLiteral("/task.json"))))
                    continue;
                QVERIFY2(listed.contains(QRegularExpression(QStringLiteral("^%1 +built-in ").arg(task),
                                                            QRegularExpression::MultilineOption)),
                         qPrintable(task + QStringLiteral(" is not listed:\n") + listed));
            }
        }
    }

    // `kforge doctor` says where tasks, data and workers come from: the package's folders come first
    // (the first folder that has a file wins), whatever else this build could fall back to.
    void usesItsOwnDataAndWorkers() {
        const Run r = run(bin(QStringLiteral("kforge")), {QStringLiteral("doctor"), QStringLiteral("--json")}, m_env);
        QVERIFY2(r.exitCode == 0, qPrintable(described(QStringLiteral("kforge doctor --json"), r)));
        const QJsonObject report = QJsonDocument::fromJson(r.out).object();
        const QJsonObject data = report[QStringLiteral("data")].toObject();
        QCOMPARE(data[QStringLiteral("tasks")].toArray().first().toString(), dataDir() + QStringLiteral("/tasks"));
        QCOMPARE(data[QStringLiteral("resources")].toArray().first().toString(),
                 dataDir() + QStringLiteral("/resources"));
        const QJsonObject backends = report[QStringLiteral("backends")].toObject();
        for (const QString& worker : listOf(KFORGE_PACKAGED_WORKERS)) {
            const QString backend = worker.mid(QStringLiteral("kforge-worker-").size());
            QCOMPARE(backends[backend].toObject()[QStringLiteral("worker")].toString(),
                     QDir(workerDir()).filePath(worker));
        }
    }

    // A whole evaluation on the package's OpenCL worker: task, kernels and worker from the package.
    void evaluates() {
        if (!listOf(KFORGE_PACKAGED_WORKERS).contains(QStringLiteral("kforge-worker-opencl")))
            QSKIP("this build has no OpenCL worker");
        const Run doctor =
            run(bin(QStringLiteral("kforge-headless")), {QStringLiteral("doctor"), QStringLiteral("--json")}, m_env);
        const QJsonObject opencl = QJsonDocument::fromJson(doctor.out)
                                       .object()[QStringLiteral("backends")]
                                       .toObject()[QStringLiteral("opencl")]
                                       .toObject();
        if (!opencl[QStringLiteral("available")].toBool())
            QSKIP("no OpenCL device here (PoCL provides one on the CPU)");
        const Run r = run(bin(QStringLiteral("kforge-headless")),
                          {QStringLiteral("eval"), QStringLiteral("--task"), QStringLiteral("vector_add"),
                           QStringLiteral("--variant"), QStringLiteral("small"), QStringLiteral("--json")},
                          m_env);
        QVERIFY2(r.exitCode == 0, qPrintable(described(QStringLiteral("kforge-headless eval --task vector_add"), r)));
        QCOMPARE(QJsonDocument::fromJson(r.out).object()[QStringLiteral("status")].toString(), QStringLiteral("ok"));
    }
};

QTEST_GUILESS_MAIN(TestPackage)
#include "tst_package.moc"
