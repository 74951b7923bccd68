#include "llmcallmodel.h"

#include "panelstyle.h"
#include "rundata.h"

#include <QLocale>

namespace kforge::ui {

LlmCallModel::LlmCallModel(RunData* data, QObject* parent)
    : AppendOnlyTableModel(ColumnCount, static_cast<int>(data->llmCalls().size()), parent), m_data(data) {
    connect(data, &RunData::llmCallsAdded, this, &LlmCallModel::appendRows);
    connect(data, &RunData::llmCallsChanged, this, &LlmCallModel::onChanged);
    connect(data, &RunData::cleared, this, &LlmCallModel::resetRows);
}

int LlmCallModel::sourceRows() const {
    return m_data ? static_cast<int>(m_data->llmCalls().size()) : 0;
}

const store::LlmCallRecord* LlmCallModel::callAt(int row) const {
    return isShown(row) ? &m_data->llmCalls()[row] : nullptr;
}

QVariant LlmCallModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const store::LlmCallRecord* call = callAt(index.row());
    if (!call)
        return {};
    const QLocale locale;
    switch (role) {
    case CallIdRole:
        return call->id;
    case CandidateRole:
        return call->candidateId.value_or(0);
    case StatusRole:
        return call->status;
    case Qt::ForegroundRole:
        if (index.column() == StatusColumn)
            return statusColor(call->status);
        return {};
    case Qt::ToolTipRole:
        if (index.column() == StatusColumn && !call->message.isEmpty())
            return call->message;
        if (index.column() == CostColumn && !call->costUsd)
            return tr("The model's price is unknown or the server reported no usage");
        if (index.column() == CandidateColumn && call->candidateId)
            return tr("Activate to select candidate #%1").arg(*call->candidateId);
        if (index.column() == CachedTokensColumn && (call->cachedInputTokens || call->cacheWriteTokens))
            return tr("Of the prompt's tokens, %1 were read from the API's prompt cache and %2 written to it; "
                      "each is priced apart from the rest")
                .arg(locale.toString(call->cachedInputTokens.value_or(0)),
                     locale.toString(call->cacheWriteTokens.value_or(0)));
        return {};
    case Qt::TextAlignmentRole:
        switch (index.column()) {
        case CallColumn:
        case GenerationColumn:
        case IslandColumn:
        case InputTokensColumn:
        case CachedTokensColumn:
        case OutputTokensColumn:
        case CostColumn:
        case LatencyColumn:
        case CandidateColumn:
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        default:
            return {};
        }
    case SortRole:
        switch (index.column()) { // unknown figures sort first; the rest as shown
        case InputTokensColumn:
            return call->inputTokens.value_or(-1);
        case CachedTokensColumn:
            return call->cachedInputTokens.value_or(-1);
        case OutputTokensColumn:
            return call->outputTokens.value_or(-1);
        case CostColumn:
            return call->costUsd.value_or(-1.0);
        case LatencyColumn:
            return call->latencySeconds;
        case CandidateColumn:
            return call->candidateId.value_or(0);
        default:
            return data(index, Qt::DisplayRole);
        }
    case Qt::DisplayRole:
        switch (index.column()) {
        case CallColumn:
            return call->id;
        case GenerationColumn:
            return call->generation;
        case IslandColumn:
            return call->island;
        case OperatorColumn:
            return call->op;
        case StageColumn:
            return call->stage;
        case ModelColumn:
            return call->endpoint.isEmpty() ? call->model : call->endpoint + QLatin1Char(':') + call->model;
        case StatusColumn:
            return call->status;
        case InputTokensColumn:
            return call->inputTokens ? locale.toString(*call->inputTokens) : QStringLiteral("?");
        case CachedTokensColumn: // most servers never say: blank, not "?" in every row
            return call->cachedInputTokens ? locale.toString(*call->cachedInputTokens) : QString();
        case OutputTokensColumn:
            return call->outputTokens ? locale.toString(*call->outputTokens) : QStringLiteral("?");
        case CostColumn:
            return call->costUsd ? locale.toString(*call->costUsd, 'f', 4) : QStringLiteral("?");
        case LatencyColumn:
            return locale.toString(call->latencySeconds, 'f', 1);
        case CandidateColumn:
            return call->candidateId ? QStringLiteral("#%1").arg(*call->candidateId) : QString();
        }
        return {};
    default:
        return {};
    }
}

QVariant LlmCallModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case OperatorColumn:
            return tr("init, mutate, crossover, repair or meta (a strategy rewrite)");
        case StageColumn:
            return tr("structure or tuning");
        case InputTokensColumn:
            return tr("The prompt's tokens, cached ones included");
        case CachedTokensColumn:
            return tr("Of the prompt's tokens, those the API's prompt cache served, at its discount; blank where "
                      "the server did not say");
        case CostColumn:
            return tr("US dollars; ? where the price or the usage is unknown");
        case CandidateColumn:
            return tr("The candidate made from the answer");
        default:
            return {};
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case CallColumn:
        return tr("Call");
    case GenerationColumn:
        return tr("Gen");
    case IslandColumn:
        return tr("Island");
    case OperatorColumn:
        return tr("Operator");
    case StageColumn:
        return tr("Stage");
    case ModelColumn:
        return tr("Model");
    case StatusColumn:
        return tr("Status");
    case InputTokensColumn:
        return tr("In tokens");
    case CachedTokensColumn:
        return tr("Cached");
    case OutputTokensColumn:
        return tr("Out tokens");
    case CostColumn:
        return tr("Cost $");
    case LatencyColumn:
        return tr("Latency s");
    case CandidateColumn:
        return tr("Candidate");
    }
    return {};
}

void LlmCallModel::onChanged(const QList<int>& rows) {
    for (int row : rows)
        if (row >= 0 && row < rowCount())
            emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

} // namespace kforge::ui
