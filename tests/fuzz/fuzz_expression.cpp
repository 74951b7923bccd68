// Size and launch expressions as task and kernel files write them ("cdiv(N, BLOCK)"), on any text:
// each evaluates or is refused with a message; an integer result is a whole value of the real one;
// a condition that compiles evaluates without failing.

#include "expression.h"
#include "fuzzcheck.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

using namespace kforge;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const spec::Variables vars{{"N", 4096.0}, {"M", 3.0}, {"K", 0.0}, {"BLOCK", 256.0}, {"eps", 1e-5}};
    const spec::Status checked = spec::Expression::check(text, vars);
    KFORGE_FUZZ_CHECK(checked || !checked.error().empty(), "check refused without a message");
    const spec::Expected<double> real = spec::Expression::evaluate(text, vars);
    KFORGE_FUZZ_CHECK(real || !real.error().empty(), "evaluate refused without a message");
    const spec::Expected<std::int64_t> whole = spec::Expression::evaluateInteger(text, vars);
    KFORGE_FUZZ_CHECK(whole || !whole.error().empty(), "evaluateInteger refused without a message");
    if (whole) {
        KFORGE_FUZZ_CHECK(real.ok(), "an integer without a value");
        KFORGE_FUZZ_CHECK(std::abs(static_cast<double>(*whole) - *real) <= 1e-9 * std::max(1.0, std::abs(*real)),
                          text + " reads " + std::to_string(*real) + " and the whole " + std::to_string(*whole));
    }
    auto conditions = spec::Conditions::compile({text}, {"N", "M", "BLOCK"});
    KFORGE_FUZZ_CHECK(conditions || !conditions.error().empty(), "a condition refused without a message");
    if (conditions) {
        const int failing = conditions->firstFailing({{"N", 4096.0}, {"BLOCK", 0.0}});
        KFORGE_FUZZ_CHECK(failing == -1 || failing == 0, "firstFailing out of range");
    }
    return 0;
}
