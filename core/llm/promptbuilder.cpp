#include "llm/promptbuilder.h"

#include "util/text.h"

#include "expression.h"
#include "kernelfile.h"
#include "util/jsonreader.h"
#include "util/resourcelocator.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <set>

namespace kforge::llm {

namespace {

using util::q;

// Values end without a line break, so that templates decide the layout alone.
QString clean(QString text) {
    text.replace(QLatin1String("\r\n"), QLatin1String("\n"));
    while (!text.isEmpty() && text.back().isSpace())
        text.chop(1);
    return text;
}

// Whole numbers with thousands separators; the C locale would leave them out, and a user's
// locale must not change the prompt's bytes.
QString grouped(double value) {
    if (!std::isfinite(value) || std::fabs(value) >= 1e18 || value != std::floor(value))
        return QString::number(value, 'g', 6);
    const qint64 v = static_cast<qint64>(value);
    QString digits = QString::number(v < 0 ? -v : v);
    for (qsizetype i = digits.size() - 3; i > 0; i -= 3)
        digits.insert(i, QLatin1Char(','));
    return v < 0 ? QLatin1Char('-') + digits : digits;
}

QString scaled(double value, const QString& unit) {
    static const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
    int i = 0;
    while (std::fabs(value) >= 1000.0 && i < 5) {
        value /= 1000.0;
        ++i;
    }
    return QStringLiteral("%1 %2%3").arg(QString::number(value, 'f', i == 0 ? 0 : 1), QLatin1String(prefixes[i]), unit);
}

QString number(double v) {
    return QString::number(v, 'g', 6);
}

QString languageOf(const QString& backend) {
    return backend == QLatin1String("cuda") ? QStringLiteral("CUDA C++") : QStringLiteral("OpenCL C");
}

QString fenceOf(const QString& backend) {
    return backend == QLatin1String("cuda") ? QStringLiteral("cuda") : QStringLiteral("opencl");
}

QString initText(const spec::InitSpec& init) {
    switch (init.kind) {
    case spec::InitSpec::Kind::Uniform:
        return QStringLiteral("uniform random in [%1, %2]").arg(number(init.a), number(init.b));
    case spec::InitSpec::Kind::Normal:
        return QStringLiteral("normal random, mean %1, std %2").arg(number(init.a), number(init.b));
    case spec::InitSpec::Kind::Constant:
        return QStringLiteral("the constant %1").arg(number(init.a));
    case spec::InitSpec::Kind::RandInt:
        return QStringLiteral("random integers in [%1, %2]").arg(number(init.a), number(init.b));
    case spec::InitSpec::Kind::Arange:
        return QStringLiteral("%1, %2, ... (start %1, step %3)")
            .arg(number(init.a), number(init.a + init.b), number(init.b));
    }
    return {};
}

QString sizesText(const spec::Sizes& sizes) {
    QStringList parts;
    for (const auto& [name, value] : sizes)
        parts << QStringLiteral("%1 = %2").arg(q(name)).arg(value);
    return parts.join(QStringLiteral(", "));
}

QString shapeText(const spec::TaskSpec& task, const spec::TensorSpec& t, const spec::Sizes& sizes) {
    QStringList exprs, values;
    bool allKnown = true;
    const spec::Variables vars = task.variables(sizes);
    for (const std::string& dim : t.shape) {
        exprs << q(dim);
        auto v = spec::Expression::evaluateInteger(dim, vars);
        if (v)
            values << QString::number(*v);
        else
            allKnown = false;
    }
    QString text = QStringLiteral("[%1]").arg(exprs.join(QStringLiteral(", ")));
    if (allKnown && exprs != values)
        text += QStringLiteral(" = [%1]").arg(values.join(QStringLiteral(", ")));
    return text;
}

QString formulaText(const std::string& formula, const spec::TaskSpec& task, const spec::Sizes& sizes,
                    const QString& unit, double* valueOut) {
    auto v = spec::Expression::evaluate(formula, task.variables(sizes));
    if (!v)
        return q(formula);
    *valueOut = *v;
    return QStringLiteral("%1 = %2 %3 (%4)").arg(q(formula), grouped(*v), unit, scaled(*v, unit));
}

// A list where an item may span lines (an insight with a diff): later lines are indented under it.
QString listItem(const QString& marker, const QString& text) {
    QStringList lines = clean(text).split(QLatin1Char('\n'));
    const QString indent(marker.size() + 1, QLatin1Char(' '));
    for (qsizetype i = 1; i < lines.size(); ++i)
        if (!lines[i].isEmpty())
            lines[i] = indent + lines[i];
    return marker + QLatin1Char(' ') + lines.join(QLatin1Char('\n'));
}

QString experienceText(const QStringList& items) {
    QStringList out;
    int used = 0;
    for (const QString& raw : items) {
        if (out.size() >= PromptBuilder::kMaxExperienceItems)
            break;
        QString item = clean(raw).trimmed();
        if (item.isEmpty())
            continue;
        const int left = PromptBuilder::kMaxExperienceChars - used;
        if (item.size() > left) {
            // A long first item is cut rather than lost; later ones that do not fit are left out.
            if (!out.isEmpty() || left < 200)
                break;
            item = item.left(left);
            const qsizetype lastBreak = item.lastIndexOf(QLatin1Char('\n'));
            if (lastBreak > left / 2)
                item.truncate(lastBreak);
            item += QStringLiteral("\n[... cut]");
        }
        used += static_cast<int>(item.size());
        out << listItem(QStringLiteral("%1.").arg(out.size() + 1), item);
    }
    return out.join(QStringLiteral("\n\n"));
}

QString compileLogText(const QString& log) {
    QString text = clean(log);
    while (text.startsWith(QLatin1Char('\n')))
        text.remove(0, 1);
    if (text.size() <= PromptBuilder::kMaxCompileLogChars)
        return text;
    QString head = text.left(PromptBuilder::kMaxCompileLogChars);
    const qsizetype lastBreak = head.lastIndexOf(QLatin1Char('\n'));
    if (lastBreak > head.size() / 2)
        head.truncate(lastBreak);
    return head + QStringLiteral("\n[... %1 more characters of the log cut]").arg(text.size() - head.size());
}

QString findingsText(const QStringList& findings) {
    QStringList out;
    for (const QString& f : findings) {
        const QString line = clean(f).trimmed();
        if (line.isEmpty())
            continue;
        if (out.size() == PromptBuilder::kMaxFindings) {
            out << QStringLiteral("- ... and more");
            break;
        }
        out << listItem(QStringLiteral("-"), line);
    }
    return out.join(QLatin1Char('\n'));
}

// Models cannot count lines reliably: the lines that messages point at are quoted with their
// numbers, so a fix lands where the compiler or the checker says.
QString pointedLines(const KernelContext& k) {
    static const QRegularExpression ref(QStringLiteral(R"(\((\d+)\): |:(\d+):(?:\d+:)? |\bline (\d+)\b)"));
    const QStringList source = k.source.split(QLatin1Char('\n'));
    std::set<int> lines;
    for (const QString& text : QStringList{k.compileLog, k.findings.join(QLatin1Char('\n')), k.parseError}) {
        auto it = ref.globalMatch(text);
        while (it.hasNext() && lines.size() < 12) {
            const auto m = it.next();
            for (int g = 1; g <= 3; ++g)
                if (m.hasCaptured(g)) {
                    const int n = m.captured(g).toInt();
                    if (n >= 1 && n <= source.size())
                        lines.insert(n);
                }
        }
    }
    QStringList out;
    const int width = static_cast<int>(QString::number(source.size()).size());
    for (int n : lines)
        out << QStringLiteral("%1 | %2").arg(n, width).arg(source[n - 1].trimmed().isEmpty() ? QString()
                                                                                             : source[n - 1]);
    return clean(out.join(QLatin1Char('\n')));
}

// A fence longer than any backtick run in the text, so that quoting cannot end early.
QString fenceFor(const QString& text) {
    qsizetype longest = 0, run = 0;
    for (QChar c : text) {
        run = c == QLatin1Char('`') ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    return QString(std::max<qsizetype>(3, longest + 1), QLatin1Char('`'));
}

QString statusText(const QString& status) {
    if (status == QLatin1String("compile_error"))
        return QStringLiteral("does not compile");
    if (status == QLatin1String("unparsable"))
        return QStringLiteral("the answer that should have held it could not be used");
    if (status == QLatin1String("incorrect"))
        return QStringLiteral("compiles, but its output is wrong");
    QString s = status;
    return s.replace(QLatin1Char('_'), QLatin1Char(' '));
}

QString paramsOf(const std::string& source, spec::Dialect dialect) {
    auto kf = spec::KernelFile::parse(source, dialect);
    if (!kf)
        return {};
    QStringList parts;
    for (const auto& p : kf->params)
        parts << QStringLiteral("%1=%2").arg(q(p.name)).arg(p.value);
    return parts.join(QLatin1Char(' '));
}

int parentsNeeded(Operator op) {
    switch (op) {
    case Operator::Mutate:
    case Operator::Repair:
        return 1;
    case Operator::Crossover:
        return 2;
    case Operator::Init:
    case Operator::Meta:
        return 0;
    }
    return 0;
}

QString yes(bool b) {
    return b ? QStringLiteral("yes") : QString();
}

} // namespace

QString deviceKindOf(const QString& kind, const QString& backend, const QString& device) {
    QString given = kind.trimmed().toLower();
    if (!given.isEmpty())
        return given;
    if (backend == QLatin1String("cuda"))
        return QStringLiteral("gpu");
    const QString name = device.trimmed().toLower();
    if (name.startsWith(QLatin1String("cpu-")) || name.startsWith(QLatin1String("pthread-")))
        return QStringLiteral("cpu");
    return {};
}

QString stageName(Stage stage) {
    return stage == Stage::Structure ? QStringLiteral("structure") : QStringLiteral("tuning");
}

std::optional<Stage> parseStage(const QString& name) {
    for (Stage s : {Stage::Structure, Stage::Tuning})
        if (stageName(s) == name)
            return s;
    return std::nullopt;
}

PromptBuilder::PromptBuilder(PromptTemplates templates) : m_templates(std::move(templates)) {}

spec::Expected<PromptBuilder> PromptBuilder::builtIn() {
    auto templates = PromptTemplates::builtIn();
    if (!templates)
        return spec::Error{templates.error()};
    return PromptBuilder(std::move(*templates));
}

spec::Expected<std::map<QString, QString>> PromptBuilder::values(const PromptContext& c) const {
    if (!c.task)
        return spec::fail("a prompt needs a task");
    if (c.backend != QLatin1String("cuda") && c.backend != QLatin1String("opencl"))
        return spec::fail(
            QStringLiteral("unknown backend \"%1\" (expected cuda or opencl)").arg(c.backend).toStdString());
    const int needed = parentsNeeded(c.op);
    if (c.parents.size() != needed)
        return spec::fail(QStringLiteral("the %1 operator takes %2 kernel(s), not %3")
                              .arg(llmOperatorName(c.op))
                              .arg(needed)
                              .arg(c.parents.size())
                              .toStdString());
    const spec::TaskSpec& task = c.task->spec;
    spec::Sizes sizes = c.sizes;
    if (sizes.empty()) {
        auto s = task.sizesFor(c.variant.toStdString());
        if (!s)
            return spec::Error{s.error()};
        sizes = *s;
    }

    std::map<QString, QString> v;
    v[QStringLiteral("operator")] = llmOperatorName(c.op);
    v[QStringLiteral("stage")] = stageName(c.stage);
    v[QStringLiteral("stage_title")] =
        c.stage == Stage::Structure ? QStringLiteral("algorithmic structure") : QStringLiteral("hardware tuning");
    v[QStringLiteral("backend")] = c.backend;
    v[QStringLiteral("language")] = languageOf(c.backend);
    v[QStringLiteral("fence")] = fenceOf(c.backend);
    v[QStringLiteral("is_cuda")] = yes(c.backend == QLatin1String("cuda"));
    v[QStringLiteral("is_opencl")] = yes(c.backend == QLatin1String("opencl"));

    v[QStringLiteral("task_name")] = q(task.name);
    v[QStringLiteral("task_title")] = q(task.title.empty() ? task.name : task.title);
    v[QStringLiteral("task_family")] = q(task.family);
    v[QStringLiteral("task_description")] = clean(q(task.description));
    v[QStringLiteral("variant")] = c.variant.isEmpty() ? QStringLiteral("default") : c.variant;
    v[QStringLiteral("sizes")] = sizesText(sizes);
    // Each set of sizes once, with every variant that has it ("default" first, as variantNames()
    // gives it); the timed one is not repeated.
    std::vector<std::pair<spec::Sizes, QStringList>> otherSizes;
    for (const std::string& name : task.variantNames()) {
        auto s = task.sizesFor(name);
        if (!s || *s == sizes)
            continue;
        auto same = std::find_if(otherSizes.begin(), otherSizes.end(), [&](const auto& o) { return o.first == *s; });
        if (same == otherSizes.end())
            otherSizes.emplace_back(*s, QStringList{q(name)});
        else
            same->second << q(name);
    }
    QStringList others;
    for (const auto& [s, names] : otherSizes)
        others << QStringLiteral("%1 (%2)").arg(sizesText(s), names.join(QStringLiteral(", ")));
    v[QStringLiteral("other_sizes")] = others.join(QStringLiteral("; "));

    QStringList scalars, inputs, outputs;
    for (const auto& s : task.scalars)
        scalars << QStringLiteral("- `%1`: %2 = %3")
                       .arg(q(s.name), q(std::string(spec::dtypeName(s.dtype))), number(s.value));
    for (const auto& t : task.inputs)
        inputs << QStringLiteral("- `%1`: %2 %3, %4")
                      .arg(q(t.name), q(std::string(spec::dtypeName(t.dtype))), shapeText(task, t, sizes),
                           initText(t.init));
    for (const auto& t : task.outputs)
        outputs << QStringLiteral("- `%1`: %2 %3, correct where |got - expected| <= %4 + %5 * |expected|")
                       .arg(q(t.name), q(std::string(spec::dtypeName(t.dtype))), shapeText(task, t, sizes),
                            number(t.atol), number(t.rtol));
    v[QStringLiteral("scalars")] = scalars.join(QLatin1Char('\n'));
    v[QStringLiteral("inputs")] = inputs.join(QLatin1Char('\n'));
    v[QStringLiteral("outputs")] = outputs.join(QLatin1Char('\n'));
    double flops = 0.0, bytes = 0.0;
    v[QStringLiteral("flops")] = formulaText(task.flops, task, sizes, QStringLiteral("FLOP"), &flops);
    v[QStringLiteral("bytes")] = formulaText(task.bytes, task, sizes, QStringLiteral("B"), &bytes);
    v[QStringLiteral("intensity")] = flops > 0.0 && bytes > 0.0
                                         ? QStringLiteral("%1 FLOP/B").arg(QString::number(flops / bytes, 'g', 3))
                                         : QString();
    v[QStringLiteral("device")] = clean(c.device);
    const QString kind = deviceKindOf(c.deviceKind, c.backend, c.device);
    v[QStringLiteral("device_kind")] = kind == QLatin1String("gpu")   ? QStringLiteral("GPU")
                                       : kind == QLatin1String("cpu") ? QStringLiteral("CPU")
                                                                      : kind;
    v[QStringLiteral("device_is_gpu")] = yes(kind == QLatin1String("gpu"));
    v[QStringLiteral("device_is_cpu")] = yes(kind == QLatin1String("cpu"));
    v[QStringLiteral("ceilings")] = clean(c.ceilings);

    v[QStringLiteral("strategy")] = clean(c.strategy);
    v[QStringLiteral("persona_name")] = clean(c.personaName);
    v[QStringLiteral("persona_skill")] = clean(c.personaSkill);
    v[QStringLiteral("experience")] = experienceText(c.experience);

    v[QStringLiteral("weak_strategy")] = clean(c.weakStrategy);
    v[QStringLiteral("weak_stats")] = clean(c.weakStats);
    v[QStringLiteral("best_strategy")] = clean(c.bestStrategy);
    v[QStringLiteral("best_stats")] = clean(c.bestStats);

    // Empty unless the operator uses them; every template sees every name, so that a template may
    // test any of them.
    for (const char* name :
         {"baseline", "parent", "second_parent", "failure_parse", "failure_compile", "failure_checks", "parse_error"})
        v[QLatin1String(name)] = QString();
    for (const char* name :
         {"kernel_role", "kernel_id", "kernel_label", "kernel_status", "kernel_speedup", "kernel_params",
          "kernel_source", "kernel_findings", "kernel_compile_log", "kernel_roofline", "kernel_parse_error",
          "kernel_pointed_lines", "kernel_answer", "code_fence"})
        v[QLatin1String(name)] = QString();
    v[QStringLiteral("stage_guidance")] = QString();
    // The stage's guidance is a template of its own (stage_structure.md, stage_tuning.md), so that
    // it can speak of the backend's terms.
    auto guidance = m_templates.render(QStringLiteral("stage_") + stageName(c.stage), v);
    if (!guidance)
        return spec::Error{guidance.error()};
    v[QStringLiteral("stage_guidance")] = clean(*guidance);
    // A persona's skill speaks of the device too, so it is a template with the same values: what
    // it says of an NVIDIA GPU never reaches a prompt for a CPU.
    if (!v[QStringLiteral("persona_skill")].isEmpty()) {
        auto skill = m_templates.renderText(QStringLiteral("the skill of persona \"%1\"").arg(clean(c.personaName)),
                                            c.personaSkill, v);
        if (!skill)
            return spec::Error{skill.error()};
        v[QStringLiteral("persona_skill")] = clean(*skill).trimmed();
    }
    return v;
}

spec::Expected<QString> PromptBuilder::renderKernel(const KernelContext& k, const QString& role,
                                                    const QString& backend) const {
    std::map<QString, QString> v;
    v[QStringLiteral("fence")] = fenceOf(backend);
    v[QStringLiteral("language")] = languageOf(backend);
    v[QStringLiteral("kernel_role")] = role;
    v[QStringLiteral("kernel_id")] = k.id != 0 ? QString::number(k.id) : QString();
    v[QStringLiteral("kernel_label")] = clean(k.label);
    v[QStringLiteral("kernel_status")] = statusText(k.status);
    v[QStringLiteral("kernel_speedup")] =
        k.speedup > 0.0 ? QString::number(k.speedup, 'f', 2) + QLatin1Char('x') : QString();
    v[QStringLiteral("kernel_params")] = clean(k.params);
    QString source = clean(k.source);
    while (source.startsWith(QLatin1Char('\n')))
        source.remove(0, 1);
    // An answer that could not be parsed is shown as the text it was, not as a kernel file: its
    // line numbers are not the kernel's and it may hold fences of its own.
    const bool answer = k.status == QLatin1String("unparsable");
    v[QStringLiteral("kernel_source")] = answer ? QString() : source;
    v[QStringLiteral("kernel_answer")] = answer ? source : QString();
    v[QStringLiteral("code_fence")] = fenceFor(source);
    v[QStringLiteral("kernel_findings")] = findingsText(k.findings);
    v[QStringLiteral("kernel_compile_log")] = compileLogText(k.compileLog);
    v[QStringLiteral("kernel_roofline")] = clean(k.roofline);
    v[QStringLiteral("kernel_parse_error")] = clean(k.parseError);
    KernelContext pointed = k;
    pointed.source = source;
    v[QStringLiteral("kernel_pointed_lines")] = answer ? QString() : pointedLines(pointed);
    auto text = m_templates.render(QStringLiteral("kernel"), v);
    if (!text)
        return text;
    return clean(*text);
}

spec::Expected<Prompt> PromptBuilder::build(const PromptContext& c) const {
    auto valuesOr = values(c);
    if (!valuesOr)
        return spec::Error{valuesOr.error()};
    std::map<QString, QString>& v = *valuesOr;

    if (c.op == Operator::Init) {
        const std::string backend = c.backend.toStdString();
        const auto it = c.task->baselineSource.find(backend);
        if (it == c.task->baselineSource.end())
            return spec::fail(
                QStringLiteral("task %1 has no %2 baseline").arg(q(c.task->spec.name), c.backend).toStdString());
        KernelContext baseline;
        baseline.status = QStringLiteral("correct");
        baseline.source = q(it->second);
        baseline.params = paramsOf(it->second, backend == "cuda" ? spec::Dialect::Cuda : spec::Dialect::OpenCL);
        auto text = renderKernel(baseline, QStringLiteral("Baseline"), c.backend);
        if (!text)
            return spec::Error{text.error()};
        v[QStringLiteral("baseline")] = *text;
    }
    if (!c.parents.isEmpty()) {
        QString role = QStringLiteral("Parent");
        if (c.op == Operator::Crossover)
            role = QStringLiteral("Parent A");
        else if (c.op == Operator::Repair)
            role = QStringLiteral("Failed kernel");
        auto first = renderKernel(c.parents[0], role, c.backend);
        if (!first)
            return spec::Error{first.error()};
        v[QStringLiteral("parent")] = *first;
        if (c.parents.size() > 1) {
            auto second = renderKernel(c.parents[1], QStringLiteral("Parent B"), c.backend);
            if (!second)
                return spec::Error{second.error()};
            v[QStringLiteral("second_parent")] = *second;
        }
        if (c.op == Operator::Repair) {
            const KernelContext& k = c.parents[0];
            // One failure at a time, the earliest in the pipeline: a kernel that did not parse
            // never compiled, one that did not compile never ran.
            v[QStringLiteral("parse_error")] = clean(k.parseError);
            if (!k.parseError.trimmed().isEmpty() || k.status == QLatin1String("unparsable"))
                v[QStringLiteral("failure_parse")] = QStringLiteral("yes");
            else if (k.status == QLatin1String("compile_error"))
                v[QStringLiteral("failure_compile")] = QStringLiteral("yes");
            else
                v[QStringLiteral("failure_checks")] = QStringLiteral("yes");
        }
    }

    Prompt prompt;
    prompt.templateName = llmOperatorName(c.op);
    auto system =
        m_templates.render(c.op == Operator::Meta ? QStringLiteral("system_meta") : QStringLiteral("system"), v);
    if (!system)
        return spec::Error{system.error()};
    auto user = m_templates.render(prompt.templateName, v);
    if (!user)
        return spec::Error{user.error()};
    prompt.system = clean(*system) + QLatin1Char('\n');
    prompt.messages << Message{QStringLiteral("user"), clean(*user) + QLatin1Char('\n')};
    return prompt;
}

// ---- personas and strategy seeds ----

spec::Expected<QList<Persona>> loadPersonas(const QStringList& dirs) {
    std::map<QString, Persona> byId;
    for (const QString& dir : dirs) {
        if (dir.isEmpty() || !QFileInfo(dir).isDir())
            continue;
        const QDir d(dir);
        for (const QString& entry : d.entryList({QStringLiteral("*.md")}, QDir::Files, QDir::Name)) {
            const QString path = d.filePath(entry);
            QFile file(path);
            if (!file.open(QIODevice::ReadOnly))
                return spec::fail(
                    QStringLiteral("%1: cannot read the skill file: %2").arg(path, file.errorString()).toStdString());
            const QString text = QString::fromUtf8(file.readAll()).replace(QLatin1String("\r\n"), QLatin1String("\n"));
            const qsizetype firstBreak = text.indexOf(QLatin1Char('\n'));
            const QString first = (firstBreak < 0 ? text : text.left(firstBreak)).trimmed();
            if (!first.startsWith(QLatin1String("# ")) || first.mid(2).trimmed().isEmpty())
                return spec::fail(
                    QStringLiteral("%1:1: a skill file starts with a line '# <persona name>'").arg(path).toStdString());
            Persona p;
            p.id = entry.chopped(3);
            p.name = first.mid(2).trimmed();
            p.skill = firstBreak < 0 ? QString() : clean(text.mid(firstBreak + 1)).trimmed();
            if (p.skill.isEmpty())
                return spec::fail(
                    QStringLiteral("%1: the skill text after the first line is empty").arg(path).toStdString());
            byId[p.id] = p;
        }
    }
    QList<Persona> result;
    for (auto& [id, p] : byId)
        result << p;
    return result;
}

spec::Expected<QList<Persona>> loadPersonas() {
    const QString relative = QStringLiteral("skills");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(util::ResourceLocator::notFound(relative, QStringLiteral("skills")).toStdString());
    const QString data = util::ResourceLocator::userDir();
    return loadPersonas({path, data.isEmpty() ? QString() : data + QStringLiteral("/skills")});
}

spec::Expected<QList<StrategySeed>> loadStrategySeeds(const QString& file) {
    auto root = util::JsonReader::readObjectFile(file, QStringLiteral("the strategy seeds"),
                                                 QStringLiteral("an object {\"strategies\": [...]}"));
    if (!root)
        return spec::Error{root.error()};
    const util::JsonReader r(file, QStringLiteral("."));
    if (auto e = r.checkKeys(*root, {}, {QStringLiteral("strategies")}))
        return *e;
    const QJsonValue list = root->value(QStringLiteral("strategies"));
    if (!list.isArray() || list.toArray().isEmpty())
        return r.error(QStringLiteral("strategies"), QStringLiteral("expected a non-empty array"));
    QList<StrategySeed> result;
    const QJsonArray array = list.toArray();
    for (qsizetype i = 0; i < array.size(); ++i) {
        const QString path = QStringLiteral("strategies[%1]").arg(i);
        if (!array[i].isObject())
            return r.error(path, QStringLiteral("expected an object {\"id\", \"stage\", \"text\"}"));
        const QJsonObject o = array[i].toObject();
        if (auto e = r.checkKeys(o, path, {QStringLiteral("id"), QStringLiteral("stage"), QStringLiteral("text")}))
            return *e;
        StrategySeed seed;
        QString stage;
        const std::pair<const char*, QString*> fields[] = {{"id", &seed.id}, {"stage", &stage}, {"text", &seed.text}};
        for (const auto& [key, out] : fields)
            if (auto e = r.string(o, path, QLatin1String(key), true, out))
                return *e;
        const auto parsed = parseStage(stage);
        if (!parsed)
            return r.error(r.keyPath(path, QStringLiteral("stage")),
                           QStringLiteral("unknown stage \"%1\" (expected structure or tuning)").arg(stage));
        seed.stage = *parsed;
        seed.text = clean(seed.text).trimmed();
        for (const StrategySeed& other : result)
            if (other.id == seed.id)
                return r.error(r.keyPath(path, QStringLiteral("id")),
                               QStringLiteral("\"%1\" is used twice").arg(seed.id));
        result << seed;
    }
    return result;
}

spec::Expected<QList<StrategySeed>> loadStrategySeeds() {
    const QString relative = QStringLiteral("llm/strategies.json");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(util::ResourceLocator::notFound(relative, QStringLiteral("strategy seeds")).toStdString());
    return loadStrategySeeds(path);
}

} // namespace kforge::llm
