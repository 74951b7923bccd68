#include "cliio.h"

namespace kforge::cli {

QTextStream& out() {
    static QTextStream s(stdout);
    return s;
}

QTextStream& err() {
    static QTextStream s(stderr);
    return s;
}

int fail(int code, const QString& message) {
    err() << "kforge: " << message << Qt::endl;
    return code;
}

} // namespace kforge::cli
