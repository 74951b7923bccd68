// Task files (task.json) on any bytes: JSON that is not a valid task is refused with a message that
// names the file; a valid one writes back (toJson) to a task that reads the same, and its sizes,
// element counts and cost expressions evaluate or are refused with a message, never a crash.

#include "expression.h"
#include "fuzzcheck.h"
#include "taskspec.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

using namespace kforge;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const nlohmann::json root = nlohmann::json::parse(data, data + size, nullptr, false);
    if (root.is_discarded())
        return 0; // not JSON: loadTaskDir says so before a task is read
    const std::string origin = "fuzz/task.json";
    const spec::Expected<spec::TaskSpec> task = spec::TaskSpec::fromJson(root, origin);
    if (!task) {
        KFORGE_FUZZ_CHECK(task.error().rfind(origin, 0) == 0, "an error that does not name the file: " + task.error());
        return 0;
    }
    const nlohmann::json written = task->toJson();
    const spec::Expected<spec::TaskSpec> again = spec::TaskSpec::fromJson(written, origin);
    KFORGE_FUZZ_CHECK(again.ok(), "a task does not read back as written: " + (again ? std::string() : again.error()));
    KFORGE_FUZZ_CHECK(again->toJson() == written, "a task changes on a second trip: " + written.dump());

    for (const std::string& variant : task->variantNames()) {
        const spec::Expected<spec::Sizes> sizes = task->sizesFor(variant);
        KFORGE_FUZZ_CHECK(sizes || !sizes.error().empty(), "variant " + variant + " refused without a message");
        if (!sizes)
            continue;
        const spec::Variables vars = task->variables(*sizes);
        for (const auto* tensors : {&task->inputs, &task->outputs})
            for (const spec::TensorSpec& t : *tensors) {
                const spec::Expected<std::int64_t> count = task->elementCount(t, *sizes);
                KFORGE_FUZZ_CHECK(count || !count.error().empty(), t.name + ": refused without a message");
                if (count)
                    KFORGE_FUZZ_CHECK(*count >= 0 && *count <= spec::kMaxTensorElements,
                                      t.name + " holds " + std::to_string(*count) + " elements");
            }
        for (const std::string* cost : {&task->flops, &task->bytes})
            if (!cost->empty()) {
                const spec::Expected<double> v = spec::Expression::evaluate(*cost, vars);
                KFORGE_FUZZ_CHECK(v || !v.error().empty(), *cost + ": refused without a message");
            }
    }
    (void)task->sizesFor("no such variant"); // refused or the defaults; either way no crash
    return 0;
}
