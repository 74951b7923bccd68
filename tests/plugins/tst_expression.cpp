#include "expression.h"

#include <QTest>

using kforge::spec::Conditions;
using kforge::spec::Expression;
using kforge::spec::Variables;

class TestExpression : public QObject {
    Q_OBJECT
private slots:
    void evaluates_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<double>("expected");
        QTest::newRow("product") << "2 * M * N * 4" << 2.0 * 64 * 100 * 4;
        QTest::newRow("cdiv") << "cdiv(N, BLOCK)" << 1.0;
        QTest::newRow("cdiv exact") << "cdiv(M, 32)" << 2.0;
        QTest::newRow("ceil of division") << "ceil(N / 64)" << 2.0;
        QTest::newRow("floor") << "floor(N / 64)" << 1.0;
        QTest::newRow("round_up") << "round_up(N, 32)" << 128.0;
        QTest::newRow("min max") << "max(min(M, N), 7)" << 64.0;
        QTest::newRow("power") << "2^10" << 1024.0;
        QTest::newRow("parentheses") << "(M + N) * 2" << 328.0;
        QTest::newRow("literal") << "4096" << 4096.0;
        QTest::newRow("mod") << "mod(N, 32)" << 4.0;
        QTest::newRow("mod exact") << "mod(M, 32)" << 0.0;
        QTest::newRow("mod negative") << "mod(-7, 3)" << -1.0;
        QTest::newRow("comparison") << "mod(N, 4) == 0" << 1.0;
        QTest::newRow("not equal") << "M != 64" << 0.0;
        QTest::newRow("and or") << "M < 100 && (N > 1000 || N == 100)" << 1.0;
        QTest::newRow("conditional") << "N >= 128 ? 2 : 1" << 1.0;
    }
    void evaluates() {
        QFETCH(QString, text);
        QFETCH(double, expected);
        const Variables vars{{"M", 64}, {"N", 100}, {"BLOCK", 256}};
        auto v = Expression::evaluate(text.toStdString(), vars);
        QVERIFY2(v.ok(), v.ok() ? "" : v.error().c_str());
        QCOMPARE(*v, expected);
    }

    void errors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown name") << "M * K"
                                      << "unknown name 'K'";
        QTest::newRow("lists known names") << "Q + 1"
                                           << "known: M, N";
        QTest::newRow("syntax") << "M * * N"
                                << "M * * N";
        QTest::newRow("unbalanced") << "(M + N"
                                    << "(M + N";
        QTest::newRow("empty") << "  "
                               << "empty expression";
        QTest::newRow("division by zero") << "M / 0"
                                          << "finite";
        QTest::newRow("mod by zero") << "mod(M, N - 100)"
                                     << "'mod(M, N - 100)' does not evaluate to a finite number";
        QTest::newRow("mod of one argument") << "mod(M)"
                                             << "'mod(M)'";
        QTest::newRow("deep parentheses")
            << QString(100000, QLatin1Char('(')) + QLatin1Char('M') + QString(100000, QLatin1Char(')'))
            << "at most 1024 are allowed";
        QTest::newRow("33 levels") << QString(33, QLatin1Char('(')) + QLatin1Char('M') + QString(33, QLatin1Char(')'))
                                   << "nest deeper than 32";
        QTest::newRow("long") << QStringLiteral("M+").repeated(600) + QStringLiteral("M") << "at most 1024";
        QTest::newRow("control character") << "M +\x01 N"
                                           << "control character";
        QTest::newRow("huge number") << "1e999 * M"
                                     << "";
    }
    void errors() {
        QFETCH(QString, text);
        QFETCH(QString, mentions);
        auto v = Expression::evaluate(text.toStdString(), {{"M", 64}, {"N", 100}});
        QVERIFY(!v.ok());
        QVERIFY2(QString::fromStdString(v.error()).contains(mentions), v.error().c_str());
        QVERIFY(v.error().size() < 2000); // a runaway expression is not repeated whole
    }

    void integerResults() {
        auto whole = Expression::evaluateInteger("cdiv(N, 3)", {{"N", 10}});
        QVERIFY(whole.ok());
        QCOMPARE(*whole, 4);
        auto fraction = Expression::evaluateInteger("N / 3", {{"N", 10}});
        QVERIFY(!fraction.ok());
        QVERIFY(QString::fromStdString(fraction.error()).contains(QStringLiteral("not a whole number")));
    }

    void checkIgnoresValues() {
        QVERIFY(Expression::check("N / (M - 1)", {{"N", 0}, {"M", 0}}).ok());
        QVERIFY(!Expression::check("N / Z", {{"N", 0}}).ok());
        QVERIFY(Expression::check("mod(N, M - 1) == 0", {{"N", 0}, {"M", 0}}).ok());
    }

    // Conditions parse once and evaluate many times; a missing name counts as 0, a zero or a
    // result that is not finite fails, and compile errors quote the condition.
    void conditions() {
        auto c = Conditions::compile({"A <= B", "mod(B, A) == 0"}, {"A", "B"});
        QVERIFY2(c.ok(), c.ok() ? "" : c.error().c_str());
        QCOMPARE(c->size(), 2u);
        QCOMPARE(c->firstFailing({{"A", 2}, {"B", 8}}), -1);
        QCOMPARE(c->firstFailing({{"A", 16}, {"B", 8}}), 0);
        QCOMPARE(c->firstFailing({{"A", 3}, {"B", 8}}), 1);
        QCOMPARE(c->firstFailing({{"A", 0}, {"B", 8}}), 1); // mod by zero is not finite
        QCOMPARE(c->firstFailing({{"B", 8}}), 1);           // A missing: 0
        for (int i = 0; i < 1000; ++i)
            QCOMPARE(c->firstFailing({{"A", 1 + i % 8}, {"B", 8}}), (8 % (1 + i % 8)) == 0 ? -1 : 1);

        auto unknown = Conditions::compile({"A <= C"}, {"A", "B"});
        QVERIFY(!unknown.ok());
        QVERIFY2(QString::fromStdString(unknown.error()).contains(QStringLiteral("unknown name 'C'")),
                 unknown.error().c_str());
        auto broken = Conditions::compile({"A <= (B"}, {"A", "B"});
        QVERIFY(!broken.ok());
        QVERIFY2(QString::fromStdString(broken.error()).startsWith(QStringLiteral("'A <= (B'")),
                 broken.error().c_str());
        QCOMPARE(Conditions().firstFailing({}), -1);
    }
};

QTEST_GUILESS_MAIN(TestExpression)
#include "tst_expression.moc"
