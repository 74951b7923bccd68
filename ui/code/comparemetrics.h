#pragma once
// What two evaluated candidates differ in, beside their code in the Compare view: kernel time,
// speedup, registers, occupancy, shared and local (spill) memory, DRAM bytes and the fraction of the
// roofline bound, each with the right one's change against the left one. A metric neither has is
// left out; one only a side has shows a dash on the other.

#include "candidatedetails.h"

#include <QList>
#include <QString>

namespace kforge::ui {

struct MetricRow {
    QString name;
    QString left;
    QString right;
    QString change; // right against left; empty when either side lacks it
    int better = 0; // 1: the right one is better, -1: worse, 0: the same or no judgement
};

QList<MetricRow> compareMetrics(const CandidateDetail& left, const CandidateDetail& right);
// The rows as a small HTML table headed by the two candidates' ids.
QString metricsTable(const QList<MetricRow>& rows, qint64 leftId, qint64 rightId, const QPalette& palette);

} // namespace kforge::ui
