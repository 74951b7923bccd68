// kforge import: a PyTorch operator (KernelBench format, or a function with example inputs) into a
// task folder whose reference is PyTorch itself. The module is read by torchimport.py, built into
// kforge as text and run with a Python that has PyTorch; what it writes is then loaded the way
// every task is, so a task that kforge could not use is never left behind.

#include "cli/cli.h"
#include "cli/cliio.h"

#include "task/taskcatalog.h"

#include "protocol.h"
#include "torchimport_source.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>

namespace kforge::cli {

namespace {

QString taskNameFor(const QString& file) {
    QString name = QFileInfo(file).completeBaseName();
    name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_-]")), QStringLiteral("_"));
    return name.isEmpty() ? QStringLiteral("imported") : name;
}

} // namespace

int importCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Imports a PyTorch operator as a task whose trusted reference is the PyTorch code itself.\n"
        "  KernelBench format: class Model(nn.Module), get_inputs(), get_init_inputs(), and module-level\n"
        "  integer constants for the sizes. A plain function: --function NAME (default: forward) with\n"
        "  get_inputs() giving example inputs.\n"
        "The task's sizes are the constants that shape a tensor; its inputs are forward's tensors, then the\n"
        "Model's parameters and buffers; its outputs are every tensor forward returns. Tolerances follow each\n"
        "output's dtype, FLOPs come from PyTorch's FLOP counter, and a 'small' variant is made by running\n"
        "the module at smaller sizes where it allows that. Evaluating needs a Python with PyTorch on the\n"
        "worker's machine ($KFORGE_PYTHON; packaging/install-deps.sh --torch makes one).\n"
        "  kforge import model.py [--name N] [--out DIR]\n"
        "  kforge eval --task N --kernel my_kernel.cu --backend cuda"));
    addHelpOption(p);
    p.addPositionalArgument(QStringLiteral("file"), QStringLiteral("The Python file to import."));
    p.addOption({QStringLiteral("name"), QStringLiteral("The task's name (default: the file's name)."),
                 QStringLiteral("NAME")});
    p.addOption({QStringLiteral("out"),
                 QStringLiteral("The task folder to write (default: %1/NAME).").arg(task::TaskCatalog::userDir()),
                 QStringLiteral("DIR")});
    p.addOption({QStringLiteral("family"),
                 QStringLiteral("The operator family (default: from the operators forward calls)."),
                 QStringLiteral("F")});
    p.addOption({QStringLiteral("function"), QStringLiteral("Import this function instead of a Model class."),
                 QStringLiteral("NAME")});
    p.addOption({QStringLiteral("atol"), QStringLiteral("Absolute tolerance of every output (default: by dtype)."),
                 QStringLiteral("X")});
    p.addOption({QStringLiteral("rtol"), QStringLiteral("Relative tolerance of every output (default: by dtype)."),
                 QStringLiteral("X")});
    p.addOption({QStringLiteral("force"), QStringLiteral("Replace the task folder if it exists.")});
    process(p, args, QStringLiteral("import"));

    const QStringList files = p.positionalArguments();
    if (files.size() != 1)
        return fail(ExitUsage, QStringLiteral("give one Python file to import (kforge import --help)"));
    const QString& file = files.front();
    if (!QFileInfo(file).isFile())
        return fail(ExitSetup, QStringLiteral("%1: no such file").arg(file));
    const QString name = p.isSet(QStringLiteral("name")) ? p.value(QStringLiteral("name")) : taskNameFor(file);
    if (!QRegularExpression(QStringLiteral("^[A-Za-z0-9_-]+$")).match(name).hasMatch())
        return fail(ExitUsage, QStringLiteral("--name %1: a task name is letters, digits, '_' and '-'").arg(name));
    for (const char* number : {"atol", "rtol"}) {
        const QString key = QString::fromLatin1(number);
        bool ok = true;
        if (p.isSet(key) && (p.value(key).toDouble(&ok) < 0.0 || !ok))
            return fail(ExitUsage, QStringLiteral("--%1 %2: not a non-negative number").arg(key, p.value(key)));
    }
    const QString outDir = p.isSet(QStringLiteral("out")) ? p.value(QStringLiteral("out"))
                                                          : QDir(task::TaskCatalog::userDir()).filePath(name);

    QStringList pyArgs{QStringLiteral("-c"),
                       QString::fromUtf8(kTorchImportSource),
                       QFileInfo(file).absoluteFilePath(),
                       QStringLiteral("--out"),
                       outDir,
                       QStringLiteral("--name"),
                       name};
    for (const char* option : {"family", "function", "atol", "rtol"}) {
        const QString key = QString::fromLatin1(option);
        if (p.isSet(key))
            pyArgs << QStringLiteral("--") + key << p.value(key);
    }
    if (p.isSet(QStringLiteral("force")))
        pyArgs << QStringLiteral("--force");

    const QString python = QString::fromStdString(protocol::torchPython());
    QProcess proc;
    proc.setProcessChannelMode(QProcess::SeparateChannels);
    // Its progress and notes go straight to the user.
    QObject::connect(&proc, &QProcess::readyReadStandardError, &proc,
                     [&proc] { err() << QString::fromUtf8(proc.readAllStandardError()) << Qt::flush; });
    proc.start(python, pyArgs);
    if (!proc.waitForStarted(30000))
        return fail(ExitSetup, QStringLiteral("cannot run %1 (%2): kforge import needs a Python with PyTorch; set "
                                              "KFORGE_PYTHON or run packaging/install-deps.sh --torch")
                                   .arg(python, proc.errorString()));
    proc.waitForFinished(-1);
    err() << QString::fromUtf8(proc.readAllStandardError()) << Qt::flush;
    if (proc.exitStatus() != QProcess::NormalExit)
        return fail(ExitSetup, QStringLiteral("%1 ended abnormally while importing %2").arg(python, file));
    if (proc.exitCode() == 3)
        return fail(ExitSetup, QStringLiteral("%1 has no PyTorch: set KFORGE_PYTHON to a Python that has it, or run "
                                              "packaging/install-deps.sh --torch")
                                   .arg(python));
    if (proc.exitCode() != 0)
        return ExitUsage; // the importer named what is wrong

    // What it wrote must be a task kforge can use.
    auto bundle = spec::loadTaskDir(outDir.toStdString());
    if (!bundle)
        return fail(ExitSetup, QStringLiteral("the imported task does not load (please report this): %1")
                                   .arg(QString::fromStdString(bundle.error())));
    const auto& s = bundle->spec;
    QStringList sizes;
    for (const auto& [k, v] : s.sizes)
        sizes << QStringLiteral("%1=%2").arg(QString::fromStdString(k)).arg(v);
    QStringList inputs;
    for (const auto& t : s.inputs)
        inputs << QString::fromStdString(t.name);
    QStringList outputs;
    for (const auto& t : s.outputs)
        outputs << QString::fromStdString(t.name);
    out() << "imported " << file << " as task '" << name << "' (" << QString::fromStdString(s.family) << ") in "
          << outDir << "\n"
          << "  sizes:   " << sizes.join(QLatin1Char(' ')) << "\n"
          << "  inputs:  " << inputs.join(QStringLiteral(", ")) << "\n"
          << "  outputs: " << outputs.join(QStringLiteral(", ")) << "\n"
          << "  FLOPs:   " << QString::fromStdString(s.flops) << "\n"
          << "  variants: "
          << (s.variants.count("small") ? QStringLiteral("small") : QStringLiteral("none besides the defaults")) << "\n"
          << "  reference: PyTorch (reference.py); no baseline kernel: evaluate your own with\n"
          << "    kforge eval --task " << outDir << " --kernel KERNEL --backend opencl|cuda\n";
    return ExitCorrect;
}

} // namespace kforge::cli
