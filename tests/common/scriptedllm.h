#pragma once
// A fake LLM server scripted to answer like a model writing OpenCL vector_add kernels: a float4
// kernel, a work-items-per-thread kernel, a broken one (first persona answer), an answer without
// code (first mutation), strategy rewrites for the meta step. Every answer differs (`{{n}}` is the
// request number), so none is a duplicate. Used by the tests that run a real search on PoCL with
// language models.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>

namespace kforgetest {

inline QString fenced(const QString& code) {
    return QStringLiteral("Here is the kernel.\n\n```c\n%1```\n\nIt keeps BLOCK tunable.\n").arg(code);
}

// `{{n}}` is the request's number: every answer is a different kernel.
inline const char* kFloat4 = R"(// kforge:param BLOCK in {64, 128, 256} = 128
// kforge:launch vector_add grid=(cdiv(N, BLOCK * 4)) block=(BLOCK)
__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int base = get_global_id(0) * 4;
    const int tag_{{n}} = 0;
    if (base + 3 < N) {
        vstore4(vload4(0, x + base) + vload4(0, y + base), 0, z + base);
    } else {
        for (int i = base; i < N; ++i)
            z[i] = x[i] + y[i] + tag_{{n}};
    }
}
)";

inline const char* kItems = R"(// kforge:param BLOCK in {64, 128, 256} = 256
// kforge:param ITEMS in {2, 4} = 4
// kforge:launch vector_add grid=(cdiv(N, BLOCK * ITEMS)) block=(BLOCK)
__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int start = get_group_id(0) * BLOCK * ITEMS + get_local_id(0);
    for (int k = 0; k < ITEMS; ++k) {
        const int i = start + k * BLOCK + 0 * {{n}};
        if (i < N)
            z[i] = x[i] + y[i];
    }
}
)";

inline const char* kBroken = R"(// kforge:param BLOCK in {64, 128, 256} = 128
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)
__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int i = get_global_id(0) + {{n}} * 0;
    if (i < N)
        z[i] = x[i] + w[i];
}
)";

inline QJsonObject rule(const QString& match, const QString& text, int times = -1) {
    QJsonObject r{
        {QStringLiteral("match"), match},
        {QStringLiteral("text"), text},
        {QStringLiteral("usage"), QJsonObject{{QStringLiteral("input"), 3000}, {QStringLiteral("output"), 800}}}};
    if (times > 0)
        r.insert(QStringLiteral("times"), times);
    return r;
}

inline QJsonArray vectorAddRules() {
    QJsonArray rules;
    rules << rule(QStringLiteral("The strategy to rewrite"),
                  QStringLiteral("```text\nRewrite {{n}}: four elements per work-item with vector loads.\n```"));
    rules << rule(QStringLiteral("# The kernel to repair"), fenced(QString::fromLatin1(kItems)));
    rules << rule(QStringLiteral("# Your expertise"), fenced(QString::fromLatin1(kBroken)), 1);
    rules << rule(QStringLiteral("# The kernel to improve"),
                  QStringLiteral("Use float4 loads; I can write it if you want."), 1);
    rules << rule(QStringLiteral("# Two kernels to combine"), fenced(QString::fromLatin1(kItems)));
    rules << rule(QStringLiteral("# The kernel to improve"), fenced(QString::fromLatin1(kFloat4)));
    rules << rule(QStringLiteral("# Your expertise"), fenced(QString::fromLatin1(kFloat4)));
    return rules;
}

// Starts the server on 127.0.0.1 with the vector_add script written into `dir`; returns its port,
// or 0 when it did not start.
// The fake LLM server (tests/fakes) as a suite's fixture: started with a script on 127.0.0.1, ended
// with the suite (asked first, then killed).
class ScriptedLlmServer {
public:
    ScriptedLlmServer() = default;
    ScriptedLlmServer(const ScriptedLlmServer&) = delete;
    ScriptedLlmServer& operator=(const ScriptedLlmServer&) = delete;
    ~ScriptedLlmServer() { stop(); }

    // The port it listens on, or 0 when it did not start. The script goes to `dir`; with `log`,
    // every request is written there.
    int start(const QString& program, const QString& dir, const QJsonObject& script, const QString& log = {}) {
        const QString path = dir + QStringLiteral("/llm-script.json");
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly))
            return 0;
        f.write(QJsonDocument(script).toJson());
        f.close();
        QStringList args{QStringLiteral("--script"), path};
        if (!log.isEmpty())
            args << QStringLiteral("--log") << log;
        m_process.start(program, args);
        if (!m_process.waitForStarted(10000))
            return 0;
        for (int waited = 0; !m_process.canReadLine() && waited < 200; ++waited)
            m_process.waitForReadyRead(100);
        const QString line = QString::fromUtf8(m_process.readLine()).trimmed();
        return line.startsWith(QLatin1String("listening ")) ? line.section(QLatin1Char(' '), 1).toInt() : 0;
    }
    // The vector_add script of the searches with language models.
    int start(const QString& program, const QString& dir) {
        return start(program, dir, QJsonObject{{QStringLiteral("rules"), vectorAddRules()}});
    }

    void stop() {
        if (m_process.state() == QProcess::NotRunning)
            return;
        m_process.terminate();
        if (!m_process.waitForFinished(5000))
            m_process.kill();
        m_process.waitForFinished(5000);
    }

private:
    QProcess m_process;
};

} // namespace kforgetest
