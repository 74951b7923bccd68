// The main window starts without any GPU driver and evaluates a task's baseline in a worker.

#include "mainwindow.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QFile>
#include <QListView>
#include <QPlainTextEdit>
#include <QTest>

using kforge::ui::MainWindow;

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("kforge-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_mainwindow"));
    }

    void startsAndListsTasks() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* view = w.findChild<QListView*>();
        QVERIFY(view);
        QAbstractItemModelTester tester(view->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(view->model()->rowCount() >= 6);
    }

    void evaluatesBaseline() {
        MainWindow w;
        w.show();
        auto* report = w.findChild<QPlainTextEdit*>();
        QVERIFY(report);
        w.evaluateBaseline(QStringLiteral("vector_add"));
        QVERIFY(report->toPlainText().startsWith(QStringLiteral("Evaluating")));
        QTRY_VERIFY_WITH_TIMEOUT(!report->toPlainText().startsWith(QStringLiteral("Evaluating")), 120000);
        QVERIFY2(report->toPlainText().contains(QStringLiteral("): ok")), qPrintable(report->toPlainText()));
    }

    // A CUDA-only task goes to the CUDA worker; without a driver the report says so.
    void cudaOnlyTaskUsesCuda() {
        MainWindow w;
        w.show();
        auto* report = w.findChild<QPlainTextEdit*>();
        w.evaluateBaseline(QStringLiteral("transpose"));
        QTRY_VERIFY_WITH_TIMEOUT(!report->toPlainText().startsWith(QStringLiteral("Evaluating")), 120000);
        const QString text = report->toPlainText();
        QVERIFY2(text.contains(QStringLiteral("transpose on cuda")) || text.contains(QStringLiteral("kforge-worker-cuda")), qPrintable(text));
        if (!QFile::exists(QStringLiteral("/proc/driver/nvidia/version")) && text.contains(QStringLiteral("transpose on cuda")))
            QVERIFY2(text.contains(QStringLiteral("no NVIDIA driver")), qPrintable(text));
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
