#include "cli/cli.h"

#include "cli/cliio.h"

namespace kforge::cli {

std::optional<int> dispatch(const QString& command, const QStringList& args) {
    if (command == QLatin1String("eval"))
        return evalCommand(args);
    if (command == QLatin1String("import"))
        return importCommand(args);
    if (command == QLatin1String("bench"))
        return benchCommand(args);
    if (command == QLatin1String("doctor"))
        return doctorCommand(args);
    if (command == QLatin1String("tasks"))
        return tasksCommand(args);
    if (command == QLatin1String("run"))
        return runCommand(args);
    if (command == QLatin1String("runs"))
        return runsCommand(args);
    if (command == QLatin1String("export"))
        return exportCommand(args);
    if (command == QLatin1String("review"))
        return reviewCommand(args);
    if (command == QLatin1String("experience"))
        return experienceCommand(args);
    if (command == QLatin1String("llm"))
        return llmCommand(args);
    return std::nullopt;
}

QString usage(bool gui) {
    QString text =
        gui ? QStringLiteral(
            "usage: kforge [command | RUN.kforge] [options]\n\n"
            "Without a command kforge opens the workbench window; with a run file it shows that run.\n\n")
            : QStringLiteral("usage: kforge-headless command [options]\n\n"
                             "The headless commands of kforge, for servers without a display or GUI libraries.\n\n");
    text += QStringLiteral(
        "commands:\n"
        "  run           evolve kernels for a task, headless (kforge run --help)\n"
        "  runs          list the runs in a run store, or show one (kforge runs --help)\n"
        "  export        write a run's best kernel, its launch plan and a report (kforge export --help)\n"
        "  review        the results waiting for a person's review (kforge review --help)\n"
        "  experience    the experience library: list, export, import (kforge experience --help)\n"
        "  llm           language-model endpoints, keys, prices, and a run's LLM calls (kforge llm --help)\n"
        "  eval          evaluate one kernel on a task (kforge eval --help)\n"
        "  import        a PyTorch operator (KernelBench format) as a task (kforge import --help)\n"
        "  bench         import and search many KernelBench problems; a table with fast_p (kforge bench --help)\n"
        "  doctor        list backends and devices, and how to get what is missing\n"
        "  tasks         list the built-in and user tasks\n");
    if (gui)
        text += QStringLiteral(
            "  demo          open the workbench and run a short search of the built-in demo task on OpenCL;\n"
            "                without a display, evaluate it headless\n"
            "  render-views  write every view of a stored run as PNG files (kforge render-views --help)\n");
    text += QStringLiteral("options:\n"
                           "  --version     print the version\n"
                           "  --help        print this help\n");
    return text;
}

} // namespace kforge::cli
