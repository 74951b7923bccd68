#include "expression.h"

#include <muParser.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kforge::spec {

namespace {

double cdiv(double a, double b) {
    return std::ceil(a / b);
}
double roundUp(double a, double b) {
    return std::ceil(a / b) * b;
}
double ceilFn(double a) {
    return std::ceil(a);
}
double floorFn(double a) {
    return std::floor(a);
}
// The remainder of a / b with the sign of a, as C's % gives it for integers; b == 0 gives NaN,
// which evaluate() reports as not finite.
double mod(double a, double b) {
    if (b == 0.0)
        return std::numeric_limits<double>::quiet_NaN();
    return std::fmod(a, b);
}

struct UnknownNames {
    std::vector<std::string> names;
    std::vector<std::unique_ptr<double>> storage;
};

double* collectUnknown(const char* name, void* userData) {
    auto* unknown = static_cast<UnknownNames*>(userData);
    unknown->names.emplace_back(name);
    unknown->storage.push_back(std::make_unique<double>(1.0));
    return unknown->storage.back().get();
}

std::string knownList(const Variables& vars) {
    std::string s;
    for (const auto& [name, value] : vars) {
        if (!s.empty())
            s += ", ";
        s += name;
    }
    return s.empty() ? "none" : s;
}

std::string quoted(const std::string& text) {
    return "'" + (text.size() > 80 ? text.substr(0, 77) + "..." : text) + "'";
}

// Bounds checked before muparser sees the text: its stacks and error messages grow with the input,
// and expressions come from hostile kernel files and task files.
Status checkShape(const std::string& text) {
    if (text.size() > kMaxExpressionChars)
        return fail(quoted(text) + ": the expression has " + std::to_string(text.size()) + " characters; at most "
                    + std::to_string(kMaxExpressionChars) + " are allowed");
    int depth = 0;
    for (char c : text) {
        if (c == '(' && ++depth > kMaxExpressionDepth)
            return fail(quoted(text) + ": parentheses nest deeper than " + std::to_string(kMaxExpressionDepth)
                        + " levels");
        if (c == ')')
            --depth;
        if (static_cast<unsigned char>(c) < 0x20 && c != ' ' && c != '\t')
            return fail(quoted(text) + ": the expression contains a control character");
    }
    return success();
}

// A parser with kforge's functions.
void defineFunctions(mu::Parser& parser) {
    parser.DefineFun("ceil", ceilFn);
    parser.DefineFun("floor", floorFn);
    parser.DefineFun("cdiv", cdiv);
    parser.DefineFun("round_up", roundUp);
    parser.DefineFun("mod", mod);
}

} // namespace

Expected<double> Expression::evaluate(const std::string& text, const Variables& vars) {
    if (text.find_first_not_of(" \t") == std::string::npos)
        return fail("empty expression");
    if (auto st = checkShape(text); !st)
        return Error{st.error()};
    Variables values = vars; // muparser binds variables by address
    UnknownNames unknown;
    try {
        mu::Parser parser;
        defineFunctions(parser);
        for (auto& [name, value] : values)
            parser.DefineVar(name, &value);
        parser.SetVarFactory(collectUnknown, &unknown);
        parser.SetExpr(text);
        const double result = parser.Eval();
        if (!unknown.names.empty())
            return fail(quoted(text) + ": unknown name '" + unknown.names.front() + "' (known: " + knownList(vars)
                        + ")");
        if (!std::isfinite(result))
            return fail(quoted(text) + " does not evaluate to a finite number");
        return result;
    } catch (const mu::Parser::exception_type& e) {
        return fail(quoted(text) + ": " + e.GetMsg());
    } catch (const std::exception& e) {
        return fail(quoted(text) + ": " + e.what());
    }
}

Expected<std::int64_t> Expression::evaluateInteger(const std::string& text, const Variables& vars) {
    auto value = evaluate(text, vars);
    if (!value)
        return Error{value.error()};
    const double v = *value;
    const double rounded = std::round(v);
    if (std::fabs(v - rounded) > 1e-9 * std::max(1.0, std::fabs(v)))
        return fail("'" + text + "' evaluates to " + std::to_string(v) + ", not a whole number");
    if (std::fabs(rounded) > 9.0e18)
        return fail("'" + text + "' evaluates to a number too large for a size");
    return static_cast<std::int64_t>(rounded);
}

Status Expression::check(const std::string& text, const Variables& vars) {
    Variables ones;
    for (const auto& [name, value] : vars)
        ones[name] = 1.0;
    auto value = evaluate(text, ones);
    if (!value && value.error().find("finite") == std::string::npos)
        return Error{value.error()};
    return success();
}

// Each condition's parser, bound to one slot per name; muparser evaluates through the slots'
// addresses, so they live in a map that never moves them.
struct Conditions::Parsed {
    std::map<std::string, double> slots;
    std::vector<std::unique_ptr<mu::Parser>> parsers;
};

Conditions::Conditions() = default;
Conditions::~Conditions() = default;
Conditions::Conditions(Conditions&&) noexcept = default;
Conditions& Conditions::operator=(Conditions&&) noexcept = default;

Expected<Conditions> Conditions::compile(const std::vector<std::string>& texts, const std::vector<std::string>& names) {
    Variables ones;
    for (const auto& name : names)
        ones[name] = 1.0;
    Conditions out;
    out.m_parsed = std::make_unique<Parsed>();
    for (const auto& name : names)
        out.m_parsed->slots[name] = 0.0;
    for (const auto& text : texts) {
        // Syntax, names and bounds as evaluate() checks them, with its messages.
        if (auto st = Expression::check(text, ones); !st)
            return Error{st.error()};
        try {
            auto parser = std::make_unique<mu::Parser>();
            defineFunctions(*parser);
            for (auto& [name, slot] : out.m_parsed->slots)
                parser->DefineVar(name, &slot);
            parser->SetExpr(text);
            parser->Eval(); // parses now, so that firstFailing() only evaluates
            out.m_parsed->parsers.push_back(std::move(parser));
        } catch (const mu::Parser::exception_type& e) {
            return fail(quoted(text) + ": " + e.GetMsg());
        }
    }
    return out;
}

int Conditions::firstFailing(const Variables& values) const {
    if (!m_parsed)
        return -1;
    for (auto& [name, slot] : m_parsed->slots) {
        const auto it = values.find(name);
        slot = it != values.end() ? it->second : 0.0;
    }
    for (std::size_t i = 0; i < m_parsed->parsers.size(); ++i) {
        double v = 0.0;
        try {
            v = m_parsed->parsers[i]->Eval();
        } catch (const mu::Parser::exception_type&) {
            return static_cast<int>(i);
        }
        if (!std::isfinite(v) || v == 0.0)
            return static_cast<int>(i);
    }
    return -1;
}

std::size_t Conditions::size() const {
    return m_parsed ? m_parsed->parsers.size() : 0;
}

} // namespace kforge::spec
