#pragma once
// The expert library: known optimisation patterns per operator family (tiling, vectorisation,
// warp reductions, online softmax, ...) written as parameterised kernel files, used to seed
// islands and tuned by the template tuner. Each file lives in resources/experts/<family>/ and
// starts with a header of `// expert:` lines:
//   // expert:name tiled_register
//   // expert:tasks sgemm gemm_bias_relu
//   // expert:pattern shared-memory tiles of A and B, a TMxTN block of C per thread
// followed by an ordinary kernel file (device code plus // kforge: directives). Users add their
// own under <app data>/experts/<family>/.

#include "expected.h"
#include "kernelfile.h"
#include "taskspec.h"

#include "model/kinds.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace kforge::propose {

struct Expert {
    QString name;      // unique within its family
    QString family;    // the folder name: gemm, softmax, reduction, norm, elementwise, ...
    QStringList tasks; // task names the kernel's arguments bind to
    QString pattern;   // one line: what the pattern does
    model::Backend backend = model::Backend::OpenCL; // by the file's extension: .cu or .cl
    QString file;                                    // where it was read from
    QString source;                                  // the whole file, header included
};

class ExpertLibrary {
public:
    // Reads every expert file under `roots` (each holding <family>/<name>.cu|.cl). Files that
    // cannot be read or parsed are skipped and listed in problems(), naming the file and line.
    static ExpertLibrary load(const QStringList& roots);
    // resources/experts (found through ResourceLocator) and the user's <app data>/experts.
    static QStringList defaultRoots();

    const QList<Expert>& experts() const { return m_experts; }
    const QStringList& problems() const { return m_problems; }

    // The experts for a task on a backend, in a stable order (family, then name).
    QList<Expert> forTask(const QString& taskName, model::Backend backend) const;

private:
    QList<Expert> m_experts;
    QStringList m_problems;
};

} // namespace kforge::propose
