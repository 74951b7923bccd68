#include "doctor/doctor.h"

#include "eval/workerlocator.h"
#include "eval/workerpool.h"
#include "task/taskcatalog.h"
#include "util/resourcelocator.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSysInfo>

namespace kforge::doctor {

namespace {

// The probe as the worker sent it, in the wire format.
QJsonObject toQt(const protocol::ProbeResult& p) {
    return QJsonDocument::fromJson(QByteArray::fromStdString(protocol::encode(p))).object();
}

QString findLibrary(const QString& name) {
    QStringList dirs = qEnvironmentVariable("LD_LIBRARY_PATH").split(QLatin1Char(':'), Qt::SkipEmptyParts);
    dirs << QStringLiteral("/usr/lib/x86_64-linux-gnu") << QStringLiteral("/usr/lib/aarch64-linux-gnu")
         << QStringLiteral("/usr/lib64") << QStringLiteral("/usr/lib") << QStringLiteral("/usr/local/nvidia/lib64")
         << QStringLiteral("/usr/local/cuda/lib64") << QStringLiteral("/usr/local/cuda/extras/CUPTI/lib64")
         << QStringLiteral("/usr/lib/wsl/lib");
    for (const QString& d : dirs) {
        const QDir dir(d);
        const QStringList hits = dir.entryList({name + QStringLiteral("*")}, QDir::Files | QDir::System);
        if (!hits.isEmpty())
            return dir.filePath(hits.first());
    }
    return {};
}

} // namespace

QJsonObject cudaHostFacts() {
    QJsonObject facts;
    QFile version(QStringLiteral("/proc/driver/nvidia/version"));
    if (version.open(QIODevice::ReadOnly))
        facts[QStringLiteral("driver")] = QString::fromUtf8(version.readLine()).trimmed();
    const QString libcuda = findLibrary(QStringLiteral("libcuda.so.1"));
    facts[QStringLiteral("libcuda")] = libcuda;
    facts[QStringLiteral("nvrtc")] = findLibrary(QStringLiteral("libnvrtc.so"));
    facts[QStringLiteral("cupti")] = findLibrary(QStringLiteral("libcupti.so"));
#ifdef KFORGE_CUDA_TOOLKIT_VERSION
    facts[QStringLiteral("toolkit_at_build")] = QStringLiteral(KFORGE_CUDA_TOOLKIT_VERSION);
#endif
    QJsonArray problems;
    if (!facts.contains(QStringLiteral("driver")) && libcuda.isEmpty())
        problems.append(QStringLiteral(
            "no NVIDIA driver: install the NVIDIA driver for your GPU (e.g. `apt install nvidia-driver` "
            "on Debian, `ubuntu-drivers install` on Ubuntu); CUDA evaluation needs a machine with an NVIDIA GPU"));
    if (facts[QStringLiteral("nvrtc")].toString().isEmpty())
        problems.append(
            QStringLiteral("NVRTC not found: install the CUDA Toolkit (https://developer.nvidia.com/cuda-downloads) "
                           "or set LD_LIBRARY_PATH to its lib64 folder"));
    if (facts[QStringLiteral("cupti")].toString().isEmpty())
        problems.append(
            QStringLiteral("CUPTI not found: it ships with the CUDA Toolkit (extras/CUPTI/lib64); needed for "
                           "kernel timing from activity records and for profiling"));
    facts[QStringLiteral("problems")] = problems;
    return facts;
}

QJsonObject dataFacts() {
    QJsonObject facts;
    facts[QStringLiteral("tasks")] = QJsonArray::fromStringList(task::TaskCatalog::builtInDirs());
    facts[QStringLiteral("resources")] = QJsonArray::fromStringList(util::ResourceLocator::dirs());
    facts[QStringLiteral("user")] = util::ResourceLocator::userDir();
    return facts;
}

Doctor::Doctor(QObject* parent) : QObject(parent) {}

Doctor::~Doctor() = default;

void Doctor::run() {
    m_report = {};
    m_report[QStringLiteral("kforge")] = QStringLiteral(KFORGE_VERSION);
    m_report[QStringLiteral("host")] =
        QSysInfo::prettyProductName() + QStringLiteral(" (") + QSysInfo::currentCpuArchitecture() + QLatin1Char(')');
    m_report[QStringLiteral("data")] = dataFacts();
    m_report[QStringLiteral("backends")] = QJsonObject();
    constexpr model::Backend backends[] = {model::Backend::OpenCL, model::Backend::Cuda};
    m_pending = static_cast<int>(std::size(backends));
    for (const model::Backend b : backends)
        probeBackend(b);
}

void Doctor::probeBackend(model::Backend kind) {
    const QString backend = model::backendName(kind);
    QJsonObject section;
    section[QStringLiteral("available")] = false;
    if (kind == model::Backend::Cuda)
        section[QStringLiteral("host")] = cudaHostFacts();

    auto worker = eval::WorkerLocator::find(backend);
    if (!worker) {
        section[QStringLiteral("worker")] = QString();
        QJsonArray problems;
        problems.append(QString::fromStdString(worker.error()));
        if (kind == model::Backend::Cuda)
            for (const auto& p : section[QStringLiteral("host")].toObject()[QStringLiteral("problems")].toArray())
                problems.append(p);
        section[QStringLiteral("problems")] = problems;
        // Finish asynchronously so that finished() always follows run() through the event loop.
        QMetaObject::invokeMethod(
            this, [this, backend, section] { backendDone(backend, section); }, Qt::QueuedConnection);
        return;
    }
    section[QStringLiteral("worker")] = *worker;
    auto* pool = new eval::WorkerPool(backend, *worker, {}, 1, this);
    m_pools.append(pool);
    connect(pool, &eval::WorkerPool::probed, this,
            [this, backend, section, pool](const protocol::ProbeResult& p) mutable {
                QJsonObject probe = toQt(p);
                section[QStringLiteral("available")] = p.available;
                section[QStringLiteral("devices")] = probe[QStringLiteral("devices")];
                QJsonArray problems = probe[QStringLiteral("problems")].toArray();
                section[QStringLiteral("problems")] = problems;
                section[QStringLiteral("details")] = probe[QStringLiteral("details")];
                pool->shutdown();
                backendDone(backend, section);
            });
    connect(pool, &eval::WorkerPool::probeFailed, this, [this, backend, section, pool](const QString& why) mutable {
        QJsonArray problems;
        problems.append(QStringLiteral("the worker did not answer a probe: ") + why);
        section[QStringLiteral("problems")] = problems;
        pool->shutdown();
        backendDone(backend, section);
    });
    pool->probe();
}

void Doctor::backendDone(const QString& backend, const QJsonObject& section) {
    QJsonObject backends = m_report[QStringLiteral("backends")].toObject();
    backends[backend] = section;
    m_report[QStringLiteral("backends")] = backends;
    if (--m_pending == 0)
        emit finished(m_report);
}

QString Doctor::formatText(const QJsonObject& report) {
    QString out;
    out += QStringLiteral("kforge %1 on %2\n")
               .arg(report[QStringLiteral("kforge")].toString(), report[QStringLiteral("host")].toString());
    const QJsonObject data = report[QStringLiteral("data")].toObject();
    out += QStringLiteral("\nData (the first folder that has a file wins):\n");
    auto folders = [&](const QString& key, const QString& variable) {
        QStringList dirs;
        for (const auto& d : data[key].toArray())
            dirs << d.toString();
        out +=
            QStringLiteral("  %1: %2\n")
                .arg(key, dirs.isEmpty() ? QStringLiteral("not found (set %1 to kforge's %2 folder)").arg(variable, key)
                                         : dirs.join(QStringLiteral(", then ")));
    };
    folders(QStringLiteral("tasks"), QStringLiteral("KFORGE_TASKS_DIR"));
    folders(QStringLiteral("resources"), QStringLiteral("KFORGE_RESOURCES_DIR"));
    out += QStringLiteral("  your own: %1\n").arg(data[QStringLiteral("user")].toString());
    const QJsonObject backends = report[QStringLiteral("backends")].toObject();
    for (const model::Backend backend : {model::Backend::OpenCL, model::Backend::Cuda}) {
        const QJsonObject b = backends[model::backendName(backend)].toObject();
        const bool ok = b[QStringLiteral("available")].toBool();
        out +=
            QStringLiteral("\n%1 backend: %2\n")
                .arg(model::backendTitle(backend), ok ? QStringLiteral("available") : QStringLiteral("not available"));
        const QString worker = b[QStringLiteral("worker")].toString();
        out += QStringLiteral("  worker: %1\n").arg(worker.isEmpty() ? QStringLiteral("not found") : worker);
        const QJsonArray devices = b[QStringLiteral("devices")].toArray();
        for (int i = 0; i < devices.size(); ++i) {
            const QJsonObject d = devices[i].toObject();
            out += QStringLiteral("  device %1: %2 (%3)")
                       .arg(i)
                       .arg(d[QStringLiteral("name")].toString(), d[QStringLiteral("kind")].toString());
            if (!d[QStringLiteral("platform")].toString().isEmpty())
                out += QStringLiteral(", platform %1").arg(d[QStringLiteral("platform")].toString());
            if (!d[QStringLiteral("driver")].toString().isEmpty())
                out += QStringLiteral(", driver %1").arg(d[QStringLiteral("driver")].toString());
            out += QLatin1Char('\n');
        }
        const QJsonObject host = b[QStringLiteral("host")].toObject();
        if (!host.isEmpty()) {
            auto fact = [&](const QString& key, const QString& label) {
                const QString v = host[key].toString();
                out += QStringLiteral("  %1: %2\n").arg(label, v.isEmpty() ? QStringLiteral("not found") : v);
            };
            fact(QStringLiteral("driver"), QStringLiteral("NVIDIA driver"));
            fact(QStringLiteral("libcuda"), QStringLiteral("libcuda"));
            fact(QStringLiteral("nvrtc"), QStringLiteral("NVRTC"));
            fact(QStringLiteral("cupti"), QStringLiteral("CUPTI"));
            if (host.contains(QStringLiteral("toolkit_at_build")))
                fact(QStringLiteral("toolkit_at_build"), QStringLiteral("CUDA toolkit at build time"));
        }
        for (const auto& p : b[QStringLiteral("problems")].toArray())
            out += QStringLiteral("  missing: %1\n").arg(p.toString());
    }
    return out;
}

} // namespace kforge::doctor
