#include "runsetupdialog.h"

#include "util/text.h"

#include "eval/workerlocator.h"
#include "eval/workerpool.h"
#include "llm/endpoints.h"
#include "task/taskcatalog.h"
#include "theme.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QVBoxLayout>

#include <algorithm>

namespace kforge::ui {

namespace {

constexpr int kDirRole = Qt::UserRole + 1;

using util::q;

QSpinBox* spin(int min, int max, int value, const QString& tip) {
    auto* box = new QSpinBox;
    box->setRange(min, max);
    box->setValue(value);
    box->setToolTip(tip);
    return box;
}

QDoubleSpinBox* realSpin(double min, double max, double value, int decimals, const QString& tip) {
    auto* box = new QDoubleSpinBox;
    box->setRange(min, max);
    box->setDecimals(decimals);
    box->setValue(value);
    box->setToolTip(tip);
    return box;
}

} // namespace

RunSetupDialog::RunSetupDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("New Run"));
    const search::RunConfig defaults;

    m_tasks = new QListWidget;
    m_tasks->setMinimumWidth(180);
    m_taskInfo = new QLabel;
    m_taskInfo->setWordWrap(true);
    m_taskInfo->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* browse = new QPushButton(tr("Task Folder…"));
    browse->setToolTip(tr("Use a task from any folder (a task.json with its reference and baseline kernels)"));
    m_backend = new QComboBox;
    m_backend->setToolTip(
        tr("opencl runs anywhere (PoCL on the CPU); cuda needs an NVIDIA GPU and driver on the worker's machine"));
    m_variant = new QComboBox;
    m_variant->setToolTip(tr("The problem sizes to tune for"));

    auto* taskBox = new QGroupBox(tr("Task"));
    auto* taskLayout = new QVBoxLayout(taskBox);
    auto* taskRow = new QHBoxLayout;
    auto* taskLeft = new QVBoxLayout;
    taskLeft->addWidget(m_tasks);
    taskLeft->addWidget(browse);
    taskRow->addLayout(taskLeft);
    auto* taskRight = new QFormLayout;
    taskRight->addRow(m_taskInfo);
    taskRight->addRow(tr("&Backend:"), m_backend);
    taskRight->addRow(tr("Si&zes:"), m_variant);
    taskRow->addLayout(taskRight, 1);
    taskLayout->addLayout(taskRow);

    m_islands = spin(1, 64, defaults.islands, tr("Independent populations; elites migrate around a ring"));
    m_children = spin(1, 256, defaults.childrenPerIsland, tr("Children proposed per island and generation"));
    m_migration = spin(0, 1000, defaults.migrationInterval, tr("Generations between migrations (0: never)"));
    m_seed = spin(0, 1 << 30, static_cast<int>(defaults.seed), tr("The same seed and results give the same run"));
    m_workers = spin(1, 64, defaults.workers,
                     tr("Worker processes. Several can share a GPU: they take turns at it for each timed run, so "
                        "timings stay as repeatable (4 give 1.9x the small evaluations of one on an H200); on a CPU "
                        "OpenCL device they compete for the cores the kernels run on"));
    auto* searchBox = new QGroupBox(tr("Search"));
    auto* searchForm = new QFormLayout(searchBox);
    searchForm->addRow(tr("&Islands:"), m_islands);
    searchForm->addRow(tr("&Children per island:"), m_children);
    searchForm->addRow(tr("&Migration every:"), m_migration);
    searchForm->addRow(tr("See&d:"), m_seed);
    searchForm->addRow(tr("&Workers:"), m_workers);
    m_workersOn = new QLineEdit;
    m_workersOn->setPlaceholderText(tr("this machine"));
    m_workersOn->setToolTip(tr("Where the workers run, separated by spaces (each gets the number above): local; "
                               "ssh://[user@]host[:port][/path/to/kforge-worker-cuda], reached with OpenSSH in "
                               "batch mode (keys or an agent); or slurm[:/path/to/worker], pilot workers that run "
                               "as Slurm jobs for the run. A host that cannot be reached is left out and the "
                               "run goes on with the others."));
    searchForm->addRow(tr("Workers o&n:"), m_workersOn);
    m_slurmArgs = new QLineEdit;
    m_slurmArgs->setPlaceholderText(tr("e.g. --partition=gpu --time=4:00:00"));
    m_slurmArgs->setToolTip(tr("srun options for the Slurm pilots (used when \"Workers on\" names slurm). A CUDA "
                               "pilot asks for one GPU (--gres=gpu:1) unless these ask for GPUs themselves."));
    searchForm->addRow(tr("Sl&urm options:"), m_slurmArgs);
    const auto slurmNamed = [this] {
        const QStringList places = m_workersOn->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
        m_slurmArgs->setEnabled(std::any_of(places.begin(), places.end(), [](const QString& place) {
            return place == QLatin1String("slurm") || place.startsWith(QLatin1String("slurm:"));
        }));
    };
    connect(m_workersOn, &QLineEdit::textChanged, this, slurmNamed);
    slurmNamed();

    m_budgetEvaluations = spin(0, 10000000, static_cast<int>(defaults.budgetEvaluations),
                               tr("Every evaluation counts, re-measurements included (0: no limit)"));
    m_budgetMinutes = realSpin(0, 100000, 0, 1, tr("Wall time over all sessions of the run (0: no limit)"));
    m_budgetMinutes->setSuffix(tr(" min"));
    // 0 is "no limit": the boxes say so rather than showing a limit of nothing.
    m_budgetEvaluations->setSpecialValueText(tr("no limit"));
    m_budgetMinutes->setSpecialValueText(tr("no limit"));
    auto* budgetBox = new QGroupBox(tr("Budget"));
    auto* budgetForm = new QFormLayout(budgetBox);
    budgetForm->addRow(tr("E&valuations:"), m_budgetEvaluations);
    budgetForm->addRow(tr("Wall &time:"), m_budgetMinutes);

    m_pytorch = new QCheckBox(tr("Compare with PyTorch (e&ager and torch.compile)"));
    m_pytorch->setToolTip(tr("Times the task's PyTorch form beside the first seed at the start and beside the "
                             "confirmed best at the end (one evaluation, not counted against the budget): the "
                             "run's speedups over PyTorch. Needs a Python with PyTorch where the workers run; "
                             "tasks without a PyTorch form are not compared."));
    m_pytorch->setChecked(defaults.pytorch);
    m_pytorchRounds = spin(protocol::kMinPyTorchRounds, protocol::kMaxPyTorchRounds, defaults.pytorchRounds,
                           tr("Each round times the kernel, eager and torch.compile once after the same cache "
                              "flush. More rounds narrow the interval that tells a speedup near 1x from a tie "
                              "(about half as wide at 80 as at 20)."));
    connect(m_pytorch, &QCheckBox::toggled, m_pytorchRounds, &QSpinBox::setEnabled);
    auto* pytorchBox = new QGroupBox(tr("Yardstick"));
    auto* pytorchForm = new QFormLayout(pytorchBox);
    pytorchForm->addRow(m_pytorch);
    pytorchForm->addRow(tr("&Paired rounds:"), m_pytorchRounds);

    m_confirmBest = new QCheckBox(tr("Re-measure a new best before promoting it"));
    m_confirmBest->setToolTip(tr("On fresh inputs, paired with the baseline again: a lucky first timing does not "
                                 "become the run's best"));
    m_confirmBest->setChecked(defaults.confirmBest);
    m_reviewCeiling = realSpin(0, 10, defaults.reviewCeiling, 2,
                               tr("Compute throughput above this share of the measured compute roof waits for your "
                                  "review instead of being accepted (0: never)"));
    m_memoryReviewCeiling =
        realSpin(0, 10, defaults.memoryReviewCeiling, 2,
                 tr("Memory throughput above this share of the measured DRAM bandwidth waits for "
                    "review (well-tuned memory-bound kernels reach 0.90-0.98 of it, the best up to 1.02; 0: never)"));
    m_rejectCeiling = realSpin(1, 10, defaults.rejectCeiling, 2,
                               tr("Throughput above this multiple of the roof that binds the kernel is impossible: "
                                  "it is rejected (the margin over 1 is the roof's own measurement error)"));
    for (auto* box : {m_reviewCeiling, m_memoryReviewCeiling, m_rejectCeiling})
        box->setSingleStep(0.05);
    m_reviewCeiling->setSuffix(tr(" of the compute roof"));
    m_memoryReviewCeiling->setSuffix(tr(" of DRAM bandwidth"));
    m_rejectCeiling->setSuffix(tr("x the roof"));
    m_reviewCeiling->setSpecialValueText(tr("never"));
    m_memoryReviewCeiling->setSpecialValueText(tr("never"));
    auto* reviewBox = new QGroupBox(tr("Review"));
    auto* reviewForm = new QFormLayout(reviewBox);
    reviewForm->addRow(m_confirmBest);
    reviewForm->addRow(tr("Review &flops above:"), m_reviewCeiling);
    reviewForm->addRow(tr("Review b&ytes above:"), m_memoryReviewCeiling);
    reviewForm->addRow(tr("Re&ject above:"), m_rejectCeiling);

    m_expertRate =
        realSpin(0, 1, defaults.expertRate, 2, tr("Chance a child is an expert kernel not yet tried on its island"));
    m_useExperts = new QCheckBox(tr("Expert library (known patterns for the task's family)"));
    m_useExperts->setChecked(true);
    m_useExperience = new QCheckBox(tr("Experience library (start from what earlier runs learned)"));
    m_useExperience->setChecked(true);
    m_useTuningCache = new QCheckBox(tr("Tuning cache (the tuner starts from the times earlier runs measured)"));
    m_useTuningCache->setToolTip(tr("Kept in the experience library per task, sizes, device and kernel template; "
                                    "`kforge experience forget-tuning` clears it"));
    m_useTuningCache->setChecked(true);
    connect(m_useExperience, &QCheckBox::toggled, m_useTuningCache, &QCheckBox::setEnabled);
    m_useLlm = new QCheckBox(tr("Language models"));
    m_models = new QLineEdit;
    m_models->setPlaceholderText(QStringLiteral("openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5=2@0,1"));
    m_models->setToolTip(tr("ENDPOINT:MODEL[=WEIGHT][@ISLANDS], separated by commas. Keys come from the endpoint's "
                            "environment variable or the system keyring (kforge llm set-key NAME)."));
    m_helper = new QLineEdit;
    m_helper->setPlaceholderText(tr("the first model"));
    m_helper->setToolTip(tr("The model that rewrites prompt strategies (meta-prompt evolution)"));
    m_endpoints = new QLineEdit;
    m_endpoints->setPlaceholderText(QStringLiteral("local=http://127.0.0.1:8000/v1"));
    m_endpoints->setToolTip(tr("Extra endpoints NAME=URL[,api=openai|anthropic][,key=ENV], separated by spaces; "
                               "built in: openai, anthropic, ollama, vllm, llamacpp"));
    m_llmRate = realSpin(0, 1, 0.5, 2, tr("Share of children a language model proposes"));
    m_llmBudgetUsd =
        realSpin(0, 100000, 0, 2, tr("Hard stop on money spent (0: none); models without a price are not counted"));
    m_llmBudgetUsd->setPrefix(QStringLiteral("$ "));
    m_llmBudgetTokens = spin(0, 2000000000, 0, tr("Hard stop on tokens, input plus output (0: none)"));
    m_llmBudgetUsd->setSpecialValueText(tr("no limit"));
    m_llmBudgetTokens->setSpecialValueText(tr("no limit"));
    auto* proposerBox = new QGroupBox(tr("Proposers"));
    auto* proposerForm = new QFormLayout(proposerBox);
    proposerForm->addRow(m_useExperts);
    proposerForm->addRow(tr("Expert &rate:"), m_expertRate);
    proposerForm->addRow(m_useExperience);
    proposerForm->addRow(m_useTuningCache);
    proposerForm->addRow(m_useLlm);
    proposerForm->addRow(tr("&Models:"), m_models);
    proposerForm->addRow(tr("&Helper model:"), m_helper);
    proposerForm->addRow(tr("&Endpoints:"), m_endpoints);
    proposerForm->addRow(tr("LLM &share:"), m_llmRate);
    proposerForm->addRow(tr("LLM budget (&money):"), m_llmBudgetUsd);
    proposerForm->addRow(tr("LLM budget (t&okens):"), m_llmBudgetTokens);
    const auto llmEnabled = [this](bool on) {
        for (QWidget* w : std::initializer_list<QWidget*>{m_models, m_helper, m_endpoints, m_llmRate, m_llmBudgetUsd,
                                                          m_llmBudgetTokens})
            w->setEnabled(on);
    };
    connect(m_useLlm, &QCheckBox::toggled, this, llmEnabled);
    llmEnabled(false);

    m_store = new QLineEdit;
    m_store->setToolTip(tr("The SQLite file the run is stored in; a run can be resumed from it"));
    auto* browseStoreButton = new QPushButton(tr("Browse…"));
    auto* storeRow = new QHBoxLayout;
    storeRow->addWidget(m_store, 1);
    storeRow->addWidget(browseStoreButton);

    m_problem = new QLabel;
    m_problem->setWordWrap(true);
    const auto styleProblem = [this] {
        m_problem->setStyleSheet(theme::isDark(palette()) ? QStringLiteral("color: #ff7b72")
                                                          : QStringLiteral("color: #c62828"));
    };
    styleProblem();
    theme::onPaletteChange(this, styleProblem);
    m_problem->hide();

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    m_start = buttons->button(QDialogButtonBox::Ok);
    m_start->setText(tr("&Start Run"));
    connect(buttons, &QDialogButtonBox::accepted, this, &RunSetupDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &RunSetupDialog::reject);

    auto* columns = new QHBoxLayout;
    auto* left = new QVBoxLayout;
    left->addWidget(taskBox, 1);
    left->addWidget(budgetBox);
    left->addWidget(pytorchBox);
    left->addWidget(reviewBox);
    auto* right = new QVBoxLayout;
    right->addWidget(searchBox);
    right->addWidget(proposerBox);
    right->addStretch();
    columns->addLayout(left, 3);
    columns->addLayout(right, 2);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(columns, 1);
    auto* storeForm = new QFormLayout;
    storeForm->addRow(tr("Run file:"), storeRow);
    layout->addLayout(storeForm);
    layout->addWidget(m_problem);
    layout->addWidget(buttons);

    // Names for tests and style sheets.
    for (auto [widget, name] :
         std::initializer_list<std::pair<QWidget*, const char*>>{{m_tasks, "tasks"},
                                                                 {m_backend, "backend"},
                                                                 {m_variant, "variant"},
                                                                 {m_islands, "islands"},
                                                                 {m_children, "children"},
                                                                 {m_budgetEvaluations, "budgetEvaluations"},
                                                                 {m_pytorch, "pytorch"},
                                                                 {m_pytorchRounds, "pytorchRounds"},
                                                                 {m_confirmBest, "confirmBest"},
                                                                 {m_reviewCeiling, "reviewCeiling"},
                                                                 {m_memoryReviewCeiling, "memoryReviewCeiling"},
                                                                 {m_rejectCeiling, "rejectCeiling"},
                                                                 {m_useExperts, "useExperts"},
                                                                 {m_useLlm, "useLlm"},
                                                                 {m_models, "models"},
                                                                 {m_endpoints, "endpoints"},
                                                                 {m_workersOn, "workersOn"},
                                                                 {m_slurmArgs, "slurmArgs"},
                                                                 {m_llmRate, "llmRate"},
                                                                 {m_store, "store"},
                                                                 {m_problem, "problem"}})
        widget->setObjectName(QLatin1String(name));
    connect(m_tasks, &QListWidget::currentRowChanged, this, &RunSetupDialog::taskChanged);
    connect(browse, &QPushButton::clicked, this, &RunSetupDialog::browseTask);
    connect(browseStoreButton, &QPushButton::clicked, this, &RunSetupDialog::browseStore);
    loadTasks();
    restoreChoices();
    resize(900, 720);
}

void RunSetupDialog::loadTasks() {
    m_tasks->clear();
    for (const auto& entry : task::TaskCatalog::list()) {
        auto* item = new QListWidgetItem(entry.builtIn ? entry.name : tr("%1 (yours)").arg(entry.name), m_tasks);
        item->setData(kDirRole, entry.dir);
        item->setToolTip(entry.dir);
    }
}

void RunSetupDialog::taskChanged() {
    auto* item = m_tasks->currentItem();
    const QString previousBackend = m_backend->currentText();
    m_backend->clear();
    m_variant->clear();
    if (!item) {
        m_taskInfo->clear();
        return;
    }
    auto bundle = task::TaskCatalog::load(item->data(kDirRole).toString());
    if (!bundle) {
        m_taskInfo->setText(tr("<b>This task cannot be loaded:</b> %1").arg(q(bundle.error()).toHtmlEscaped()));
        return;
    }
    const auto& spec = bundle->spec;
    QStringList sizes;
    for (const auto& [name, value] : spec.sizes)
        sizes << QStringLiteral("%1=%2").arg(q(name)).arg(value);
    m_taskInfo->setText(QStringLiteral("<b>%1</b> <i>(%2)</i><br>%3<br><small>%4</small>")
                            .arg(q(spec.title).toHtmlEscaped(), q(spec.family).toHtmlEscaped(),
                                 q(spec.description).toHtmlEscaped(), sizes.join(QStringLiteral(", "))));
    for (const auto& [backend, file] : spec.baseline)
        m_backend->addItem(q(backend));
    const int keep = m_backend->findText(previousBackend);
    const int opencl = m_backend->findText(QStringLiteral("opencl"));
    m_backend->setCurrentIndex(keep >= 0 ? keep : std::max(0, opencl));
    m_variant->addItem(QStringLiteral("default"));
    for (const auto& [name, sizesOfVariant] : spec.variants)
        m_variant->addItem(q(name));
    if (!m_store->isModified())
        m_store->setText(defaultStorePath());
}

void RunSetupDialog::browseTask() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Task Folder"));
    if (dir.isEmpty())
        return;
    auto* item = new QListWidgetItem(QDir(dir).dirName(), m_tasks);
    item->setData(kDirRole, dir);
    item->setToolTip(dir);
    m_tasks->setCurrentItem(item);
}

void RunSetupDialog::browseStore() {
    const QString file =
        QFileDialog::getSaveFileName(this, tr("Run File"), m_store->text(), tr("kforge runs (*.kforge)"), nullptr,
                                     QFileDialog::DontConfirmOverwrite);
    if (!file.isEmpty()) {
        m_store->setText(file);
        m_store->setModified(true);
    }
}

QString RunSetupDialog::defaultStorePath() const {
    auto* item = m_tasks->currentItem();
    const QString name = item ? QDir(item->data(kDirRole).toString()).dirName() : QStringLiteral("run");
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation))
        .filePath(QStringLiteral("runs/%1-%2.kforge")
                      .arg(name, QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
}

void RunSetupDialog::choose(const QString& taskName, const QString& backend, int evaluations) {
    for (int i = 0; i < m_tasks->count(); ++i)
        if (QDir(m_tasks->item(i)->data(kDirRole).toString()).dirName() == taskName)
            m_tasks->setCurrentRow(i);
    m_backend->setCurrentIndex(std::max(0, m_backend->findText(backend)));
    m_budgetEvaluations->setValue(evaluations);
}

void RunSetupDialog::setStorePath(const QString& path) {
    m_store->setText(path);
    m_store->setModified(true);
}

void RunSetupDialog::setExperiencePath(const QString& path) {
    m_experiencePath = path;
}

bool RunSetupDialog::check() {
    const auto problem = [this](const QString& message) {
        m_problem->setText(message);
        m_problem->show();
        return false;
    };
    m_problem->hide();
    auto* item = m_tasks->currentItem();
    if (!item)
        return problem(tr("Choose a task."));
    if (m_backend->count() == 0)
        return problem(tr("This task has no baseline kernel for any backend; see its task.json."));
    if (m_store->text().trimmed().isEmpty())
        return problem(tr("Choose a run file."));

    search::Engine::Setup s;
    auto& c = s.config;
    c.task = item->data(kDirRole).toString();
    const auto backend = model::parseBackend(m_backend->currentText());
    if (!backend)
        return problem(tr("kforge has no %1 backend; choose cuda or opencl.").arg(m_backend->currentText()));
    c.backend = *backend;
    c.variant = m_variant->currentText();
    c.islands = m_islands->value();
    c.childrenPerIsland = m_children->value();
    c.migrationInterval = m_migration->value();
    c.seed = static_cast<std::uint64_t>(m_seed->value());
    c.workers = m_workers->value();
    c.workerPlaces = m_workersOn->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (m_slurmArgs->isEnabled())
        c.slurmArgs = m_slurmArgs->text().trimmed();
    c.budgetEvaluations = m_budgetEvaluations->value();
    c.budgetSeconds = m_budgetMinutes->value() * 60.0;
    c.pytorch = m_pytorch->isChecked();
    c.pytorchRounds = m_pytorchRounds->value();
    c.confirmBest = m_confirmBest->isChecked();
    c.reviewCeiling = m_reviewCeiling->value();
    c.memoryReviewCeiling = m_memoryReviewCeiling->value();
    c.rejectCeiling = m_rejectCeiling->value();
    c.expertRate = m_useExperts->isChecked() ? m_expertRate->value() : 0.0;
    if (m_useLlm->isChecked()) {
        auto known = llm::loadEndpoints();
        if (!known)
            return problem(tr("Endpoints: %1").arg(q(known.error())));
        QList<llm::Endpoint> endpoints = *known;
        for (const QString& spec : m_endpoints->text().split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            auto e = llm::parseEndpointSpec(spec, endpoints);
            if (!e)
                return problem(tr("Endpoints: %1").arg(q(e.error())));
            endpoints.erase(std::remove_if(endpoints.begin(), endpoints.end(),
                                           [&](const llm::Endpoint& x) { return x.name == e->name; }),
                            endpoints.end());
            endpoints << *e;
        }
        QStringList models;
        for (const QString& m : m_models->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
            models << m.trimmed();
        // "a:b@0,1": the island list continues after a comma; glue such pieces back on.
        QStringList joined;
        for (const QString& m : models) {
            if (!joined.isEmpty() && !m.contains(QLatin1Char(':')))
                joined.last() += QLatin1Char(',') + m;
            else
                joined << m;
        }
        if (joined.isEmpty())
            return problem(tr("Language models: name at least one model as ENDPOINT:MODEL, or turn them off."));
        if (auto used = c.llm.useModels(joined, m_helper->text().trimmed(), endpoints); !used)
            return problem(tr("Language models: %1").arg(q(used.error())));
        c.llm.rate = m_llmRate->value();
        c.llm.budgetUsd = m_llmBudgetUsd->value();
        c.llm.budgetTokens = m_llmBudgetTokens->value();
    }
    if (auto valid = c.validate(); !valid)
        return problem(q(valid.error()));
    s.storePath = QFileInfo(m_store->text().trimmed()).absoluteFilePath();
    s.useExperts = m_useExperts->isChecked();
    s.useExperience = m_useExperience->isChecked();
    s.useTuningCache = m_useTuningCache->isChecked();
    s.experiencePath = m_experiencePath;
    m_setup = std::move(s);
    return true;
}

void RunSetupDialog::accept() {
    if (m_deviceCheck || !check())
        return;
    if (needsDeviceCheck()) {
        checkDevices();
        return;
    }
    finishAccept();
}

void RunSetupDialog::finishAccept() {
    saveChoices();
    QDialog::accept();
}

bool RunSetupDialog::needsDeviceCheck() const {
    if (m_setup.config.backend != model::Backend::Cuda)
        return false;
    // Workers elsewhere (ssh://, slurm) are checked by the run where they start.
    const QStringList& places = m_setup.config.workerPlaces;
    return std::all_of(places.begin(), places.end(), [](const QString& p) { return p == QLatin1String("local"); });
}

void RunSetupDialog::checkDevices() {
    const QString backend = model::backendName(model::Backend::Cuda);
    auto worker = eval::WorkerLocator::find(backend);
    if (!worker) {
        devicesChecked(tr("CUDA runs need kforge's CUDA worker: %1").arg(q(worker.error())));
        return;
    }
    m_problem->hide();
    m_start->setEnabled(false);
    m_start->setText(tr("Looking for a GPU…"));
    auto* pool = new eval::WorkerPool(backend, *worker, {}, 1, this);
    pool->setProbeTimeout(std::chrono::seconds(60));
    m_deviceCheck = pool;
    const auto done = [this, pool](const QString& problem) {
        if (m_deviceCheck != pool)
            return;
        m_deviceCheck.clear();
        connect(pool, &eval::Executor::shutDown, pool, &QObject::deleteLater);
        pool->shutdown();
        devicesChecked(problem);
    };
    connect(pool, &eval::Executor::probed, this, [done](const protocol::ProbeResult& p) {
        if (p.available && !p.devices.empty())
            return done({});
        QStringList problems;
        for (const auto& problem : p.problems)
            problems << q(problem);
        done(problems.isEmpty() ? tr("the CUDA worker found no device it can use")
                                : problems.join(QStringLiteral("; ")));
    });
    connect(pool, &eval::Executor::probeFailed, this,
            [done](const QString& why) { done(tr("the CUDA worker did not answer: %1").arg(why)); });
    pool->probe();
}

void RunSetupDialog::devicesChecked(const QString& problem) {
    m_start->setEnabled(true);
    m_start->setText(tr("&Start Run"));
    if (problem.isEmpty()) {
        finishAccept();
        return;
    }
    m_problem->setText(tr("This machine cannot run CUDA kernels: %1. Choose the opencl backend, or run the workers "
                          "on a GPU host (Workers on: ssh://host or slurm). kforge doctor says more.")
                           .arg(problem));
    m_problem->show();
}

void RunSetupDialog::restoreChoices() {
    QSettings settings;
    settings.beginGroup(QStringLiteral("runsetup"));
    const QString taskName = settings.value(QStringLiteral("task"), QStringLiteral("softmax")).toString();
    for (int i = 0; i < m_tasks->count(); ++i)
        if (QDir(m_tasks->item(i)->data(kDirRole).toString()).dirName() == taskName)
            m_tasks->setCurrentRow(i);
    if (m_tasks->currentRow() < 0 && m_tasks->count() > 0)
        m_tasks->setCurrentRow(0);
    const int backend = m_backend->findText(settings.value(QStringLiteral("backend")).toString());
    if (backend >= 0)
        m_backend->setCurrentIndex(backend);
    m_islands->setValue(settings.value(QStringLiteral("islands"), m_islands->value()).toInt());
    m_children->setValue(settings.value(QStringLiteral("children"), m_children->value()).toInt());
    m_migration->setValue(settings.value(QStringLiteral("migration"), m_migration->value()).toInt());
    m_workers->setValue(settings.value(QStringLiteral("workers"), m_workers->value()).toInt());
    m_workersOn->setText(settings.value(QStringLiteral("workersOn")).toString());
    m_slurmArgs->setText(settings.value(QStringLiteral("slurmArgs")).toString());
    m_budgetEvaluations->setValue(settings.value(QStringLiteral("evaluations"), m_budgetEvaluations->value()).toInt());
    m_budgetMinutes->setValue(settings.value(QStringLiteral("minutes"), m_budgetMinutes->value()).toDouble());
    m_pytorch->setChecked(settings.value(QStringLiteral("pytorch"), m_pytorch->isChecked()).toBool());
    m_pytorchRounds->setValue(settings.value(QStringLiteral("pytorchRounds"), m_pytorchRounds->value()).toInt());
    m_confirmBest->setChecked(settings.value(QStringLiteral("confirmBest"), m_confirmBest->isChecked()).toBool());
    for (auto [box, key] :
         {std::pair{m_reviewCeiling, "reviewCeiling"}, std::pair{m_memoryReviewCeiling, "memoryReviewCeiling"},
          std::pair{m_rejectCeiling, "rejectCeiling"}})
        box->setValue(settings.value(QLatin1String(key), box->value()).toDouble());
    m_useExperts->setChecked(settings.value(QStringLiteral("experts"), true).toBool());
    m_useExperience->setChecked(settings.value(QStringLiteral("experience"), true).toBool());
    m_useTuningCache->setChecked(settings.value(QStringLiteral("tuningCache"), true).toBool());
    m_useLlm->setChecked(settings.value(QStringLiteral("llm"), false).toBool());
    m_models->setText(settings.value(QStringLiteral("models")).toString());
    m_helper->setText(settings.value(QStringLiteral("helper")).toString());
    m_endpoints->setText(settings.value(QStringLiteral("endpoints")).toString());
    m_llmBudgetUsd->setValue(settings.value(QStringLiteral("llmUsd"), 0.0).toDouble());
}

void RunSetupDialog::saveChoices() const {
    QSettings settings;
    settings.beginGroup(QStringLiteral("runsetup"));
    if (auto* item = m_tasks->currentItem())
        settings.setValue(QStringLiteral("task"), QDir(item->data(kDirRole).toString()).dirName());
    settings.setValue(QStringLiteral("backend"), m_backend->currentText());
    settings.setValue(QStringLiteral("islands"), m_islands->value());
    settings.setValue(QStringLiteral("children"), m_children->value());
    settings.setValue(QStringLiteral("migration"), m_migration->value());
    settings.setValue(QStringLiteral("workers"), m_workers->value());
    settings.setValue(QStringLiteral("workersOn"), m_workersOn->text());
    settings.setValue(QStringLiteral("slurmArgs"), m_slurmArgs->text());
    settings.setValue(QStringLiteral("evaluations"), m_budgetEvaluations->value());
    settings.setValue(QStringLiteral("minutes"), m_budgetMinutes->value());
    settings.setValue(QStringLiteral("pytorch"), m_pytorch->isChecked());
    settings.setValue(QStringLiteral("pytorchRounds"), m_pytorchRounds->value());
    settings.setValue(QStringLiteral("confirmBest"), m_confirmBest->isChecked());
    for (auto [box, key] :
         {std::pair{m_reviewCeiling, "reviewCeiling"}, std::pair{m_memoryReviewCeiling, "memoryReviewCeiling"},
          std::pair{m_rejectCeiling, "rejectCeiling"}})
        settings.setValue(QLatin1String(key), box->value());
    settings.setValue(QStringLiteral("experts"), m_useExperts->isChecked());
    settings.setValue(QStringLiteral("experience"), m_useExperience->isChecked());
    settings.setValue(QStringLiteral("tuningCache"), m_useTuningCache->isChecked());
    settings.setValue(QStringLiteral("llm"), m_useLlm->isChecked());
    settings.setValue(QStringLiteral("models"), m_models->text());
    settings.setValue(QStringLiteral("helper"), m_helper->text());
    settings.setValue(QStringLiteral("endpoints"), m_endpoints->text());
    settings.setValue(QStringLiteral("llmUsd"), m_llmBudgetUsd->value());
}

} // namespace kforge::ui
