#pragma once
// The task definition (task.json): sizes and variants, inputs with initialisers, outputs with
// tolerances, FLOP and byte formulas, reference and baseline kernels per backend. Validation errors
// name the file, the field and what is wrong, e.g. "tasks/x/task.json: outputs[0].atol: ...".

#include "dtype.h"
#include "expected.h"
#include "expression.h"
#include "safeio.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kforge::spec {

using Sizes = std::map<std::string, std::int64_t>;

// A tensor larger than this is a mistake or an attack, not a benchmark (2^36 elements: 256 GiB of
// float32); the bound also keeps every byte count far from overflowing.
constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 36;

struct InitSpec {
    enum class Kind { Uniform, Normal, Constant, RandInt, Arange };
    Kind kind = Kind::Uniform;
    double a = -1.0; // low / mean / value / start
    double b = 1.0;  // high / std / - / step
};

struct TensorSpec {
    std::string name;
    DType dtype = DType::Float32;
    std::vector<std::string> shape; // size expressions
    InitSpec init;                  // inputs only
    double atol = 0.0;              // outputs only
    double rtol = 0.0;
};

struct ScalarSpec {
    std::string name;
    DType dtype = DType::Float32;
    double value = 0.0;
};

// Inputs a correct kernel must survive although random inputs rarely contain them: each stress set
// is one extra verification run whose inputs are a random seed's, transformed. Tasks name the sets
// that apply to them (softmax: exp_overflow; norms: zero_rows...).
//   identical_rows   every row (last dimension) holds one repeated value
//   zero_rows        every other row is all zeros (a norm without eps divides by zero)
//   large_magnitude  values scaled towards the top of the dtype's range (1e4 for float32)
//   exp_overflow     values shifted to where exp() overflows the dtype (about 90 for float32)
struct StressSpec {
    std::string set;
    std::vector<std::string> inputs; // empty: every floating-point input
};
const std::vector<std::string>& stressSetNames();

// Inputs and expected outputs computed elsewhere (e.g. by PyTorch) for one variant and seed.
struct ReferenceData {
    std::string variant;
    std::uint64_t seed = 0;
    std::map<std::string, std::string> inputs; // tensor name -> file (absolute once loaded)
    std::map<std::string, std::string> outputs;
};

struct TaskSpec {
    std::string name;
    std::string title;
    std::string family;
    std::string description;
    Sizes sizes;
    std::map<std::string, Sizes> variants;
    std::vector<ScalarSpec> scalars;
    std::vector<TensorSpec> inputs;
    std::vector<TensorSpec> outputs;
    std::string flops;
    std::string bytes;
    std::map<std::string, std::string> reference; // backend -> kernel file
    std::map<std::string, std::string> baseline;
    std::vector<ReferenceData> referenceData;
    std::vector<StressSpec> stress;

    // Parses and validates; `origin` prefixes every error (usually the file path).
    static Expected<TaskSpec> fromJson(const nlohmann::json& json, const std::string& origin);
    nlohmann::json toJson() const;

    // The sizes of a variant ("" or "default" for the defaults).
    Expected<Sizes> sizesFor(const std::string& variant) const;
    std::vector<std::string> variantNames() const;
    // Sizes and scalars as expression variables.
    Variables variables(const Sizes& sizes) const;
    Expected<std::int64_t> elementCount(const TensorSpec& t, const Sizes& sizes) const;
    const TensorSpec* findInput(const std::string& name) const;
    const TensorSpec* findOutput(const std::string& name) const;
    const ScalarSpec* findScalar(const std::string& name) const;
    const ReferenceData* findReferenceData(const std::string& variant, std::uint64_t seed) const;
};

// A task folder on disk: the validated spec plus the kernel sources of each backend. Every file the
// task names must be a regular file inside the folder (symlinks followed): task.json up to 1 MiB,
// kernel files up to kMaxSourceBytes, reference data exactly its tensor's size.
struct TaskBundle {
    std::filesystem::path dir;
    TaskSpec spec;
    std::map<std::string, std::string> referenceSource; // backend -> source text
    std::map<std::string, std::string> baselineSource;
    std::map<std::string, std::string> referenceFile; // backend -> path, for messages
    std::map<std::string, std::string> baselineFile;
};

Expected<TaskBundle> loadTaskDir(const std::filesystem::path& dir);

// A kernel source file: a regular file of at most kMaxSourceBytes, of UTF-8 text (the worker
// protocol carries nothing else). Errors name the file as `shownName` (default: the path).
Expected<std::string> readTextFile(const std::filesystem::path& path, const std::string& shownName = {});

bool isIdentifier(const std::string& s);

} // namespace kforge::spec
