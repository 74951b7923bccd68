#include "propose/llmbudget.h"

#include <algorithm>

namespace kforge::propose {

namespace {

QString percent(double part, double whole) {
    return QStringLiteral("%1 %").arg(whole > 0.0 ? part / whole * 100.0 : 0.0, 0, 'f', 1);
}

} // namespace

LlmBudget::LlmBudget(qint64 tokens, double usd) : m_tokens(std::max<qint64>(0, tokens)), m_usd(std::max(0.0, usd)) {}

bool LlmBudget::fits(const Amount& spent, const Amount& reserved, const Amount& worst) const {
    if (m_tokens > 0 && spent.tokens + reserved.tokens + worst.tokens > m_tokens)
        return false;
    if (m_usd > 0.0 && spent.usd + reserved.usd + worst.usd > m_usd)
        return false;
    return true;
}

LlmBudget::Admission LlmBudget::admit(const Amount& spent, const Amount& worst) const {
    if (fits(spent, m_reserved, worst))
        return Admission::Send;
    return m_calls > 0 && fits(spent, {}, worst) ? Admission::Wait : Admission::Spent;
}

void LlmBudget::reserve(const Amount& worst) {
    m_reserved.tokens += worst.tokens;
    m_reserved.usd += worst.usd;
    ++m_calls;
}

void LlmBudget::release(const Amount& worst) {
    m_reserved.tokens = std::max<qint64>(0, m_reserved.tokens - worst.tokens);
    m_reserved.usd = std::max(0.0, m_reserved.usd - worst.usd);
    m_calls = std::max(0, m_calls - 1);
    if (m_calls == 0)
        m_reserved = {}; // no rounding left behind by the money sums
}

std::optional<QString> LlmBudget::stopMessage(const Amount& spent, const Amount& next) const {
    if (m_tokens > 0 && spent.tokens + next.tokens > m_tokens)
        return QStringLiteral("LLM token budget reached: %1 of %2 tokens used (%3); the next call may take up to %4")
            .arg(spent.tokens)
            .arg(m_tokens)
            .arg(percent(static_cast<double>(spent.tokens), static_cast<double>(m_tokens)))
            .arg(next.tokens);
    if (m_usd > 0.0 && spent.usd + next.usd > m_usd)
        return QStringLiteral("LLM money budget reached: $%1 of $%2 spent (%3); the next call may cost up to $%4")
            .arg(spent.usd, 0, 'f', 4)
            .arg(m_usd, 0, 'f', 4)
            .arg(percent(spent.usd, m_usd))
            .arg(next.usd, 0, 'f', 4);
    return std::nullopt;
}

} // namespace kforge::propose
