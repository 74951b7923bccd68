#pragma once
// C/C++ highlighting for kernel files: QsciLexerCPP's C++ words plus those of the kernel dialect
// (CUDA qualifiers, built-in indexes, intrinsics and vector types; or OpenCL C's address spaces,
// work-item functions and vector loads), and `kforge` as a marker word inside comments so that
// directive lines stand out from ordinary comments.

#include "kernelfile.h"

#include <Qsci/qscilexercpp.h>

#include <QByteArray>

namespace kforge::ui {

class KernelLexer : public QsciLexerCPP {
    Q_OBJECT
public:
    explicit KernelLexer(spec::Dialect dialect, QObject* parent = nullptr);

    spec::Dialect dialect() const { return m_dialect; }
    // Changes the word lists; an editor using the lexer must be told (editorfactory's setDialect).
    void setDialect(spec::Dialect dialect);

    const char* language() const override;
    // 1: keywords, 2: built-ins and intrinsics, 3: doc comment words, 4: types, 6: comment markers.
    const char* keywords(int set) const override;

    // The highest keyword set this lexer fills, for editors that re-send the lists.
    static constexpr int kKeywordSets = 6;

private:
    spec::Dialect m_dialect;
    QByteArray m_keywords;
    QByteArray m_builtins;
    QByteArray m_types;
};

} // namespace kforge::ui
