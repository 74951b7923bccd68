#pragma once
// A value or an error message a user can act on. The worker side has no Qt, so this is the
// Qt-free counterpart of the result type used across kforge.

#include <string>
#include <utility>
#include <variant>

namespace kforge::spec {

struct Error {
    std::string message;
};

// [[nodiscard]]: a failure nobody looks at is a failure lost. A caller that truly has nothing to do
// with one says so where it happens (`(void)` with a comment why).
template <typename T> class [[nodiscard]] Expected {
public:
    Expected(T value) : m_v(std::move(value)) {}
    Expected(Error error) : m_v(std::move(error)) {}

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() { return std::get<0>(m_v); }
    const T& value() const { return std::get<0>(m_v); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const std::string& error() const { return std::get<1>(m_v).message; }

private:
    std::variant<T, Error> m_v;
};

// For operations that produce nothing but can fail.
struct Done {};
using Status = Expected<Done>;
inline Status success() {
    return Done{};
}

inline Error fail(std::string message) {
    return Error{std::move(message)};
}

} // namespace kforge::spec
