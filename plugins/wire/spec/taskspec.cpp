#include "taskspec.h"

#include "safeio.h"
#include "sourcescan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace kforge::spec {

using nlohmann::json;

namespace {

// Collects the first validation error with its field path.
class Validator {
public:
    explicit Validator(std::string origin) : m_origin(std::move(origin)) {}

    bool failed() const { return !m_error.empty(); }
    Error error() const { return Error{m_error}; }

    void fail(const std::string& field, const std::string& what) {
        if (m_error.empty())
            m_error = m_origin + ": " + field + ": " + what;
        // Hostile files quote huge values; a message says where and what, not the whole value.
        if (m_error.size() > 1000)
            m_error = m_error.substr(0, 997) + "...";
    }

    const json* member(const json& obj, const std::string& path, const char* key, bool required) {
        auto it = obj.find(key);
        if (it == obj.end()) {
            if (required)
                fail(join(path, key), "missing (required)");
            return nullptr;
        }
        return &*it;
    }

    bool getString(const json& obj, const std::string& path, const char* key, std::string& out, bool required) {
        const json* v = member(obj, path, key, required);
        if (!v)
            return !required;
        if (!v->is_string()) {
            fail(join(path, key), "must be a string, not " + std::string(v->type_name()));
            return false;
        }
        out = v->get<std::string>();
        return true;
    }

    bool getNumber(const json& obj, const std::string& path, const char* key, double& out, bool required) {
        const json* v = member(obj, path, key, required);
        if (!v)
            return !required;
        if (!v->is_number()) {
            fail(join(path, key), "must be a number, not " + std::string(v->type_name()));
            return false;
        }
        out = v->get<double>();
        return true;
    }

    // A size expression may be written as a JSON integer or a string.
    bool getExpression(const json& v, const std::string& field, std::string& out) {
        if (v.is_number_integer()) {
            out = std::to_string(v.get<std::int64_t>());
            return true;
        }
        if (v.is_string() && !v.get<std::string>().empty()) {
            out = v.get<std::string>();
            return true;
        }
        fail(field, "must be an integer or an expression string");
        return false;
    }

    static std::string join(const std::string& path, const std::string& key) {
        return path.empty() ? key : path + "." + key;
    }

private:
    std::string m_origin;
    std::string m_error;
};

bool parseSizes(Validator& v, const json& obj, const std::string& field, Sizes& out) {
    if (!obj.is_object()) {
        v.fail(field, "must be an object of name: positive integer");
        return false;
    }
    for (const auto& [name, value] : obj.items()) {
        if (!isIdentifier(name)) {
            v.fail(std::string(field).append(".").append(name),
                   "is not a valid name (letters, digits and _, not starting with a digit)");
            return false;
        }
        if (!value.is_number_integer() || value.get<std::int64_t>() <= 0) {
            v.fail(std::string(field).append(".").append(name), "must be a positive integer");
            return false;
        }
        out[name] = value.get<std::int64_t>();
    }
    return true;
}

bool parseInit(Validator& v, const json& obj, const std::string& field, InitSpec& init) {
    if (!obj.is_object()) {
        v.fail(field, "must be an object such as {\"kind\": \"uniform\", \"low\": -1, \"high\": 1}");
        return false;
    }
    std::string kind;
    if (!v.getString(obj, field, "kind", kind, true))
        return false;
    struct KindInfo {
        const char* name;
        InitSpec::Kind kind;
        const char* a;
        const char* b;
    };
    static const KindInfo kinds[] = {
        {"uniform", InitSpec::Kind::Uniform, "low", "high"},      {"normal", InitSpec::Kind::Normal, "mean", "std"},
        {"constant", InitSpec::Kind::Constant, "value", nullptr}, {"randint", InitSpec::Kind::RandInt, "low", "high"},
        {"arange", InitSpec::Kind::Arange, "start", "step"},
    };
    for (const KindInfo& k : kinds) {
        if (kind != k.name)
            continue;
        init.kind = k.kind;
        if (!v.getNumber(obj, field, k.a, init.a, true))
            return false;
        if (k.b && !v.getNumber(obj, field, k.b, init.b, true))
            return false;
        if ((k.kind == InitSpec::Kind::Uniform || k.kind == InitSpec::Kind::RandInt) && init.b < init.a) {
            v.fail(field, "high must not be below low");
            return false;
        }
        if (k.kind == InitSpec::Kind::Normal && init.b < 0) {
            v.fail(field + ".std", "must not be negative");
            return false;
        }
        return true;
    }
    v.fail(field + ".kind", "unknown initialiser '" + kind + "' (known: uniform, normal, constant, randint, arange)");
    return false;
}

bool parseTensors(Validator& v, const json& root, const char* key, bool outputs, std::vector<TensorSpec>& out) {
    const json* arr = v.member(root, "", key, true);
    if (!arr)
        return false;
    if (!arr->is_array() || arr->empty()) {
        v.fail(key, "must be a non-empty array");
        return false;
    }
    for (std::size_t i = 0; i < arr->size(); ++i) {
        const json& t = (*arr)[i];
        const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
        if (!t.is_object()) {
            v.fail(field, "must be an object");
            return false;
        }
        TensorSpec spec;
        std::string dtype;
        if (!v.getString(t, field, "name", spec.name, true) || !v.getString(t, field, "dtype", dtype, true))
            return false;
        if (!isIdentifier(spec.name)) {
            v.fail(field + ".name", "'" + spec.name + "' is not a valid name");
            return false;
        }
        auto dt = parseDType(dtype);
        if (!dt) {
            v.fail(field + ".dtype", "unknown dtype '" + dtype + "' (known: " + dtypeNames() + ")");
            return false;
        }
        spec.dtype = *dt;
        const json* shape = v.member(t, field, "shape", true);
        if (!shape)
            return false;
        if (!shape->is_array() || shape->empty()) {
            v.fail(field + ".shape", "must be a non-empty array of size expressions");
            return false;
        }
        for (std::size_t d = 0; d < shape->size(); ++d) {
            std::string e;
            if (!v.getExpression((*shape)[d], field + ".shape[" + std::to_string(d) + "]", e))
                return false;
            spec.shape.push_back(e);
        }
        if (outputs) {
            if (!v.getNumber(t, field, "atol", spec.atol, true) || !v.getNumber(t, field, "rtol", spec.rtol, true))
                return false;
            if (spec.atol < 0 || spec.rtol < 0) {
                v.fail(field, "atol and rtol must not be negative");
                return false;
            }
        } else {
            const json* init = v.member(t, field, "init", true);
            if (!init || !parseInit(v, *init, field + ".init", spec.init))
                return false;
        }
        out.push_back(std::move(spec));
    }
    return true;
}

// `reference` (required) names a kernel file per backend and may name a PyTorch form ("torch": a
// .py file); `baseline` (optional: a task imported from PyTorch has none) names kernel files only.
bool parseKernelFiles(Validator& v, const json& root, const char* key, std::map<std::string, std::string>& out) {
    const bool reference = std::string(key) == "reference";
    const json* obj = v.member(root, "", key, reference);
    if (!obj)
        return !reference;
    const std::string known = reference ? "opencl, cuda, torch" : "opencl, cuda";
    if (!obj->is_object() || obj->empty()) {
        v.fail(key, "must be an object of backend: kernel file, e.g. {\"opencl\": \"" + std::string(key) + ".cl\"}");
        return false;
    }
    for (const auto& [backend, file] : obj->items()) {
        if (backend != "opencl" && backend != "cuda" && !(reference && backend == "torch")) {
            v.fail(std::string(key) + "." + backend, "unknown backend (known: " + known + ")");
            return false;
        }
        if (!file.is_string() || file.get<std::string>().empty()) {
            v.fail(std::string(key) + "." + backend,
                   backend == "torch" ? "must be a Python file name" : "must be a kernel file name");
            return false;
        }
        out[backend] = file.get<std::string>();
    }
    return true;
}

bool parseReferenceData(Validator& v, const json& root, std::vector<ReferenceData>& out) {
    const json* arr = v.member(root, "", "reference_data", false);
    if (!arr)
        return true;
    if (!arr->is_array()) {
        v.fail("reference_data", "must be an array");
        return false;
    }
    for (std::size_t i = 0; i < arr->size(); ++i) {
        const json& e = (*arr)[i];
        const std::string field = "reference_data[" + std::to_string(i) + "]";
        if (!e.is_object()) {
            v.fail(field, "must be an object");
            return false;
        }
        ReferenceData rd;
        double seed = 0;
        if (!v.getString(e, field, "variant", rd.variant, true) || !v.getNumber(e, field, "seed", seed, true))
            return false;
        if (seed < 0 || seed != static_cast<double>(static_cast<std::uint64_t>(seed))) {
            v.fail(field + ".seed", "must be a non-negative integer");
            return false;
        }
        rd.seed = static_cast<std::uint64_t>(seed);
        for (const char* key : {"inputs", "outputs"}) {
            const json* files = v.member(e, field, key, true);
            if (!files)
                return false;
            if (!files->is_object()) {
                v.fail(field + "." + key, "must be an object of tensor name: file");
                return false;
            }
            for (const auto& [name, file] : files->items()) {
                if (!file.is_string()) {
                    v.fail(std::string(field).append(".").append(key).append(".").append(name), "must be a file name");
                    return false;
                }
                (std::string(key) == "inputs" ? rd.inputs : rd.outputs)[name] = file.get<std::string>();
            }
        }
        out.push_back(std::move(rd));
    }
    return true;
}

// Cross-field checks: unique names, shapes and formulas that evaluate for every variant.
void checkConsistency(Validator& v, const TaskSpec& t) {
    std::set<std::string> names;
    auto claim = [&](const std::string& name, const std::string& field) {
        if (!names.insert(name).second)
            v.fail(field, "name '" + name + "' is used twice (sizes, scalars, inputs and outputs share one namespace)");
    };
    for (const auto& [name, value] : t.sizes)
        claim(name, "sizes." + name);
    for (const auto& s : t.scalars)
        claim(s.name, "scalars." + s.name);
    for (std::size_t i = 0; i < t.inputs.size(); ++i)
        claim(t.inputs[i].name, "inputs[" + std::to_string(i) + "].name");
    for (std::size_t i = 0; i < t.outputs.size(); ++i)
        claim(t.outputs[i].name, "outputs[" + std::to_string(i) + "].name");
    if (v.failed())
        return;

    for (const auto& [variant, sizes] : t.variants)
        for (const auto& [name, value] : sizes)
            if (!t.sizes.count(name))
                v.fail(std::string("variants.").append(variant).append(".").append(name),
                       "is not one of the task's sizes");

    std::vector<std::string> variants = t.variantNames();
    for (const std::string& variant : variants) {
        auto sizes = t.sizesFor(variant);
        const Variables vars = t.variables(*sizes);
        const std::string where = variant == "default" ? "" : " (variant '" + variant + "')";
        auto checkTensors = [&](const std::vector<TensorSpec>& list, const char* key) {
            for (std::size_t i = 0; i < list.size(); ++i)
                for (std::size_t d = 0; d < list[i].shape.size(); ++d) {
                    auto n = Expression::evaluateInteger(list[i].shape[d], vars);
                    const std::string field =
                        std::string(key) + "[" + std::to_string(i) + "].shape[" + std::to_string(d) + "]";
                    if (!n)
                        v.fail(field, n.error() + where);
                    else if (*n <= 0)
                        v.fail(field, "evaluates to " + std::to_string(*n) + where + "; dimensions must be positive");
                }
        };
        checkTensors(t.inputs, "inputs");
        checkTensors(t.outputs, "outputs");
        if (!v.failed())
            for (const auto* list : {&t.inputs, &t.outputs})
                for (const auto& tensor : *list)
                    if (auto n = t.elementCount(tensor, *sizes); !n)
                        v.fail(list == &t.inputs ? "inputs" : "outputs", n.error() + where);
        for (const auto& [key, text] : {std::pair{"flops", t.flops}, std::pair{"bytes", t.bytes}}) {
            auto n = Expression::evaluate(text, vars);
            if (!n)
                v.fail(key, n.error() + where);
            else if (*n < 0)
                v.fail(key, "evaluates to a negative number" + where);
        }
    }
    for (std::size_t i = 0; i < t.referenceData.size(); ++i) {
        const ReferenceData& rd = t.referenceData[i];
        const std::string field = "reference_data[" + std::to_string(i) + "]";
        if (rd.variant != "default" && !t.variants.count(rd.variant))
            v.fail(field + ".variant", "unknown variant '" + rd.variant + "'");
        for (const auto& in : t.inputs)
            if (!rd.inputs.count(in.name))
                v.fail(field + ".inputs", "no file for input '" + in.name + "'");
        for (const auto& out : t.outputs)
            if (!rd.outputs.count(out.name))
                v.fail(field + ".outputs", "no file for output '" + out.name + "'");
    }
}

} // namespace

bool isIdentifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
        return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

const std::vector<std::string>& stressSetNames() {
    static const std::vector<std::string> names{"identical_rows", "zero_rows", "large_magnitude", "exp_overflow"};
    return names;
}

namespace {

// "stress": ["exp_overflow", {"set": "zero_rows", "inputs": ["x"]}]
void parseStress(Validator& v, const json& root, TaskSpec& t) {
    const json* list = v.member(root, "", "stress", false);
    if (!list)
        return;
    if (!list->is_array()) {
        v.fail("stress", "must be an array of stress set names or {\"set\": ..., \"inputs\": [...]}");
        return;
    }
    std::string known;
    for (const auto& n : stressSetNames())
        known += (known.empty() ? "" : ", ") + n;
    for (std::size_t i = 0; i < list->size() && !v.failed(); ++i) {
        const json& e = (*list)[i];
        const std::string field = "stress[" + std::to_string(i) + "]";
        StressSpec s;
        if (e.is_string()) {
            s.set = e.get<std::string>();
        } else if (e.is_object()) {
            if (!v.getString(e, field, "set", s.set, true))
                return;
            if (const json* inputs = v.member(e, field, "inputs", false)) {
                if (!inputs->is_array()) {
                    v.fail(field + ".inputs", "must be an array of input names");
                    return;
                }
                for (const auto& name : *inputs) {
                    if (!name.is_string() || !t.findInput(name.get<std::string>())) {
                        v.fail(field + ".inputs", (name.is_string() ? "'" + name.get<std::string>() + "'" : name.dump())
                                                      + " is not one of the task's inputs");
                        return;
                    }
                    s.inputs.push_back(name.get<std::string>());
                }
            }
        } else {
            v.fail(field, "must be a stress set name or an object with \"set\"");
            return;
        }
        const auto& names = stressSetNames();
        if (std::find(names.begin(), names.end(), s.set) == names.end()) {
            v.fail(field, "unknown stress set '" + s.set + "' (known: " + known + ")");
            return;
        }
        t.stress.push_back(std::move(s));
    }
}

} // namespace

Expected<TaskSpec> TaskSpec::fromJson(const json& root, const std::string& origin) {
    Validator v(origin);
    TaskSpec t;
    if (!root.is_object())
        return Error{origin + ": the task must be a JSON object"};

    v.getString(root, "", "name", t.name, true);
    if (!v.failed()
        && (t.name.empty()
            || t.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
                   != std::string::npos))
        v.fail("name", "'" + t.name + "' must be letters, digits, _ and - only");
    if (!v.failed())
        v.getString(root, "", "title", t.title, false);
    if (!v.failed())
        v.getString(root, "", "family", t.family, true);
    if (!v.failed())
        v.getString(root, "", "description", t.description, false);
    if (!v.failed()) {
        if (const json* sizes = v.member(root, "", "sizes", true))
            parseSizes(v, *sizes, "sizes", t.sizes);
    }
    if (!v.failed()) {
        if (const json* variants = v.member(root, "", "variants", false)) {
            if (!variants->is_object())
                v.fail("variants", "must be an object of variant name: sizes");
            else
                for (const auto& [name, sizes] : variants->items()) {
                    if (name == "default") {
                        v.fail("variants.default", "'default' names the task's own sizes and cannot be redefined");
                        break;
                    }
                    if (!parseSizes(v, sizes, "variants." + name, t.variants[name]))
                        break;
                }
        }
    }
    if (!v.failed()) {
        if (const json* scalars = v.member(root, "", "scalars", false)) {
            if (!scalars->is_object())
                v.fail("scalars", "must be an object of name: {\"dtype\": ..., \"value\": ...}");
            else
                for (const auto& [name, s] : scalars->items()) {
                    const std::string field = "scalars." + name;
                    if (!isIdentifier(name)) {
                        v.fail(field, "is not a valid name");
                        break;
                    }
                    if (!s.is_object()) {
                        v.fail(field, "must be an object with dtype and value");
                        break;
                    }
                    ScalarSpec sc;
                    sc.name = name;
                    std::string dtype;
                    if (!v.getString(s, field, "dtype", dtype, true) || !v.getNumber(s, field, "value", sc.value, true))
                        break;
                    auto dt = parseDType(dtype);
                    if (!dt) {
                        v.fail(field + ".dtype", "unknown dtype '" + dtype + "' (known: " + dtypeNames() + ")");
                        break;
                    }
                    sc.dtype = *dt;
                    t.scalars.push_back(sc);
                }
        }
    }
    if (!v.failed())
        parseTensors(v, root, "inputs", false, t.inputs);
    if (!v.failed())
        parseTensors(v, root, "outputs", true, t.outputs);
    if (!v.failed()) {
        const json* f = v.member(root, "", "flops", true);
        if (f)
            v.getExpression(*f, "flops", t.flops);
    }
    if (!v.failed()) {
        const json* b = v.member(root, "", "bytes", true);
        if (b)
            v.getExpression(*b, "bytes", t.bytes);
    }
    if (!v.failed())
        parseKernelFiles(v, root, "reference", t.reference);
    if (!v.failed())
        parseKernelFiles(v, root, "baseline", t.baseline);
    if (!v.failed())
        parseReferenceData(v, root, t.referenceData);
    if (!v.failed())
        parseStress(v, root, t);
    if (!v.failed())
        checkConsistency(v, t);
    if (v.failed())
        return v.error();
    return t;
}

json TaskSpec::toJson() const {
    static const char* initKinds[] = {"uniform", "normal", "constant", "randint", "arange"};
    static const char* initA[] = {"low", "mean", "value", "low", "start"};
    static const char* initB[] = {"high", "std", nullptr, "high", "step"};
    json j;
    j["name"] = name;
    if (!title.empty())
        j["title"] = title;
    j["family"] = family;
    if (!description.empty())
        j["description"] = description;
    j["sizes"] = sizes;
    if (!variants.empty())
        j["variants"] = variants;
    if (!scalars.empty()) {
        json s = json::object();
        for (const auto& sc : scalars)
            s[sc.name] = {{"dtype", std::string(dtypeName(sc.dtype))}, {"value", sc.value}};
        j["scalars"] = s;
    }
    auto tensors = [](const std::vector<TensorSpec>& list, bool outputs) {
        json arr = json::array();
        for (const auto& t : list) {
            json e{{"name", t.name}, {"dtype", std::string(dtypeName(t.dtype))}, {"shape", t.shape}};
            if (outputs) {
                e["atol"] = t.atol;
                e["rtol"] = t.rtol;
            } else {
                const int k = static_cast<int>(t.init.kind);
                json init{{"kind", initKinds[k]}, {initA[k], t.init.a}};
                if (initB[k])
                    init[initB[k]] = t.init.b;
                e["init"] = init;
            }
            arr.push_back(e);
        }
        return arr;
    };
    j["inputs"] = tensors(inputs, false);
    j["outputs"] = tensors(outputs, true);
    j["flops"] = flops;
    j["bytes"] = bytes;
    j["reference"] = reference;
    if (!baseline.empty())
        j["baseline"] = baseline;
    if (!referenceData.empty()) {
        json arr = json::array();
        for (const auto& rd : referenceData)
            arr.push_back({{"variant", rd.variant}, {"seed", rd.seed}, {"inputs", rd.inputs}, {"outputs", rd.outputs}});
        j["reference_data"] = arr;
    }
    if (!stress.empty()) {
        json arr = json::array();
        for (const auto& st : stress) {
            if (st.inputs.empty())
                arr.push_back(st.set);
            else
                arr.push_back({{"set", st.set}, {"inputs", st.inputs}});
        }
        j["stress"] = arr;
    }
    return j;
}

Expected<Sizes> TaskSpec::sizesFor(const std::string& variant) const {
    if (variant.empty() || variant == "default")
        return sizes;
    auto it = variants.find(variant);
    if (it == variants.end()) {
        std::string known = "default";
        for (const auto& [name, s] : variants)
            known += ", " + name;
        return fail("task '" + name + "' has no variant '" + variant + "' (known: " + known + ")");
    }
    Sizes result = sizes;
    for (const auto& [k, value] : it->second)
        result[k] = value;
    return result;
}

std::vector<std::string> TaskSpec::variantNames() const {
    std::vector<std::string> names{"default"};
    for (const auto& [name, s] : variants)
        names.push_back(name);
    return names;
}

Variables TaskSpec::variables(const Sizes& s) const {
    Variables vars;
    for (const auto& [k, value] : s)
        vars[k] = static_cast<double>(value);
    for (const auto& sc : scalars)
        vars[sc.name] = sc.value;
    return vars;
}

Expected<std::int64_t> TaskSpec::elementCount(const TensorSpec& t, const Sizes& s) const {
    const Variables vars = variables(s);
    std::int64_t count = 1;
    for (const auto& dim : t.shape) {
        auto n = Expression::evaluateInteger(dim, vars);
        if (!n)
            return Error{"tensor '" + t.name + "': " + n.error()};
        if (*n <= 0)
            return fail("tensor '" + t.name + "': dimension '" + dim + "' is " + std::to_string(*n));
        if (__builtin_mul_overflow(count, *n, &count) || count > kMaxTensorElements)
            return fail("tensor '" + t.name + "': more than " + std::to_string(kMaxTensorElements)
                        + " elements (the limit per tensor)");
    }
    return count;
}

const TensorSpec* TaskSpec::findInput(const std::string& n) const {
    for (const auto& t : inputs)
        if (t.name == n)
            return &t;
    return nullptr;
}

const TensorSpec* TaskSpec::findOutput(const std::string& n) const {
    for (const auto& t : outputs)
        if (t.name == n)
            return &t;
    return nullptr;
}

const ScalarSpec* TaskSpec::findScalar(const std::string& n) const {
    for (const auto& s : scalars)
        if (s.name == n)
            return &s;
    return nullptr;
}

const ReferenceData* TaskSpec::findReferenceData(const std::string& variant, std::uint64_t seed) const {
    const std::string v = variant.empty() ? "default" : variant;
    for (const auto& rd : referenceData)
        if (rd.variant == v && rd.seed == seed)
            return &rd;
    return nullptr;
}

Expected<std::string> readTextFile(const std::filesystem::path& path, const std::string& shownName) {
    const std::string name = shownName.empty() ? path.string() : shownName;
    auto text = readRegularFile(path, kMaxSourceBytes, name);
    if (!text)
        return text;
    if (const auto bad = findNotUtf8(*text))
        return fail(name + ": line " + std::to_string(bad->line) + ", column " + std::to_string(bad->column) + ": "
                    + bad->what + "; kernel files are UTF-8 text (save the file as UTF-8)");
    return text;
}

Expected<TaskBundle> loadTaskDir(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    const fs::path file = dir / "task.json";
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return fail(dir.string() + ": not a task folder (it does not exist or is not a directory)");
    // Every file a task names must lie inside its folder (symlinks followed) and be a regular file
    // of a plausible size: task folders come from users and downloads.
    auto jsonPath = resolveInside(dir, "task.json", "task.json");
    if (!jsonPath)
        return fail(dir.string() + ": " + jsonPath.error());
    auto text = readRegularFile(*jsonPath, kMaxTaskJsonBytes, file.string());
    if (!text)
        return Error{text.error()};
    auto root = parseJson(*text);
    if (!root)
        return fail(file.string() + ":" + root.error());
    auto spec = TaskSpec::fromJson(*root, file.string());
    if (!spec)
        return Error{spec.error()};

    TaskBundle bundle;
    bundle.dir = fs::absolute(dir, ec).lexically_normal();
    bundle.spec = std::move(*spec);
    for (auto [map, files, paths, key] :
         {std::tuple{&bundle.referenceSource, &bundle.spec.reference, &bundle.referenceFile, "reference"},
          std::tuple{&bundle.baselineSource, &bundle.spec.baseline, &bundle.baselineFile, "baseline"}}) {
        for (const auto& [backend, name] : *files) {
            const std::string field = std::string(key) + "." + backend;
            auto p = resolveInside(bundle.dir, name, field);
            if (!p)
                return fail(file.string() + ": " + p.error());
            auto src = readTextFile(*p, name);
            if (!src)
                return fail(file.string() + ": " + field + ": " + src.error());
            (*map)[backend] = *src;
            (*paths)[backend] = p->string();
        }
    }
    // Reference data: resolve inside the folder and check each file's size against its tensor.
    for (std::size_t i = 0; i < bundle.spec.referenceData.size(); ++i) {
        ReferenceData& rd = bundle.spec.referenceData[i];
        auto sizes = bundle.spec.sizesFor(rd.variant);
        if (!sizes)
            return fail(file.string() + ": reference_data[" + std::to_string(i) + "]: " + sizes.error());
        for (auto [files, isInput] : {std::pair{&rd.inputs, true}, std::pair{&rd.outputs, false}}) {
            for (auto& [name, f] : *files) {
                const std::string field =
                    "reference_data[" + std::to_string(i) + "]." + (isInput ? "inputs." : "outputs.") + name;
                const TensorSpec* t = isInput ? bundle.spec.findInput(name) : bundle.spec.findOutput(name);
                if (!t)
                    return fail(file.string() + ": " + field + ": no such " + (isInput ? "input" : "output"));
                auto p = resolveInside(bundle.dir, f, field);
                if (!p)
                    return fail(file.string() + ": " + p.error());
                const auto actual = regularFileSize(*p, f);
                if (!actual)
                    return fail(file.string() + ": " + field + ": " + actual.error());
                const auto count = bundle.spec.elementCount(*t, *sizes);
                if (!count)
                    return fail(file.string() + ": " + field + ": " + count.error());
                const auto expected = static_cast<std::uint64_t>(*count) * dtypeSize(t->dtype);
                if (*actual != expected)
                    return fail(file.string().append(": ").append(field).append(": ").append(f).append(" has ")
                                + std::to_string(*actual) + " bytes, expected " + std::to_string(expected));
                f = p->string();
            }
        }
    }
    return bundle;
}

} // namespace kforge::spec
