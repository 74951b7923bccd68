// cudaemu-run: one CUDA kernel file, at one configuration of its parameters, run on the host
// (cudaemu.h) over a task's inputs as the worker would launch it: the task's inputs drawn from a
// seed, outputs poisoned, scratch zeroed, the launch plan resolved by kforge's own resolver and
// every argument bound as the worker binds it. It writes the outputs (--out), or compares them
// with a reference's (--against, the task's tolerances, an output element left unwritten counts as
// wrong). Built once per kernel file and configuration (see CMakeLists.txt):
//   cudaemu-run --task DIR [--variant NAME] [--size NAME=VALUE ...] [--seed S] (--out FILE | --against FILE)

#include "inputs.h"
#include "kernelfile.h"
#include "launchplan.h"
#include "taskspec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace emu {

struct Arg {
    void* ptr = nullptr; // buffers
    double value = 0.0;  // sizes and scalars
};
using Args = std::vector<Arg>;
using Extents = std::array<std::uint64_t, 3>;
using Launch =
    std::function<void(const Extents& grid, const Extents& block, std::uint64_t smemBytes, const Args& args)>;

struct Kernels {
    std::map<std::string, Launch> launch; // by kernel name
    std::string params;                   // "NAME=VALUE,...": the configuration compiled in
    std::string source;                   // the kernel file's path
};
Kernels kernels(); // defined after the kernel file, at the end

using namespace kforge;

[[noreturn]] void die(const std::string& message) {
    std::cerr << "cudaemu-run: " << message << "\n";
    std::exit(2);
}

std::pair<std::string, std::int64_t> nameValue(const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        die("'" + text + "' is not NAME=VALUE");
    return {text.substr(0, eq), std::stoll(text.substr(eq + 1))};
}

harness::HostTensor tensorFor(const spec::TaskSpec& task, const spec::TensorSpec& t, const spec::Sizes& sizes) {
    auto count = task.elementCount(t, sizes);
    if (!count)
        die(count.error());
    return harness::makeTensor(t.dtype, static_cast<std::uint64_t>(*count));
}

int run(int argc, char** argv) {
    std::string taskDir, variant = "small", out, against;
    std::map<std::string, std::int64_t> sizeOverrides;
    std::uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc)
            die("option " + a + " needs a value");
        const std::string v = argv[++i];
        if (a == "--task")
            taskDir = v;
        else if (a == "--variant")
            variant = v;
        else if (a == "--size")
            sizeOverrides.insert(nameValue(v));
        else if (a == "--seed")
            seed = std::stoull(v);
        else if (a == "--out")
            out = v;
        else if (a == "--against")
            against = v;
        else
            die("unknown option " + a);
    }
    if (taskDir.empty() || out.empty() == against.empty())
        die("usage: cudaemu-run --task DIR [--variant NAME] [--size NAME=VALUE ...] [--seed S] "
            "(--out FILE | --against FILE)");

    auto bundle = spec::loadTaskDir(taskDir);
    if (!bundle)
        die(bundle.error());
    const spec::TaskSpec& task = bundle->spec;
    auto sizes = task.sizesFor(variant);
    if (!sizes)
        die(sizes.error());
    for (const auto& [name, value] : sizeOverrides)
        (*sizes)[name] = value;

    const Kernels compiled = kernels();
    auto source = spec::readTextFile(compiled.source);
    if (!source)
        die(source.error());
    auto kf = spec::KernelFile::parse(*source, spec::Dialect::Cuda);
    if (!kf)
        die(compiled.source + ": " + kf.error());
    std::map<std::string, std::int64_t> params;
    std::stringstream list(compiled.params);
    for (std::string item; std::getline(list, item, ',');)
        params.insert(nameValue(item));
    auto plan = spec::LaunchPlan::resolve(*kf, task, *sizes, params, spec::DeviceLimits::anyCurrentGpu(false));
    if (!plan)
        die(compiled.source + ": " + plan.error());

    std::vector<harness::HostTensor> inputs, outputs, scratch;
    for (const auto& t : task.inputs) {
        inputs.push_back(tensorFor(task, t, *sizes));
        harness::initialise(inputs.back(), t.init, seed, t.name);
    }
    for (const auto& t : task.outputs) {
        outputs.push_back(tensorFor(task, t, *sizes));
        std::memset(outputs.back().bytes.data(), 0xFF, outputs.back().byteSize()); // NaN in every float type
    }
    for (const auto& s : plan->scratch)
        scratch.push_back(harness::makeTensor(s.dtype, s.count)); // zeroed

    for (const auto& l : plan->launches) {
        const auto it = compiled.launch.find(l.kernel);
        if (it == compiled.launch.end())
            die("line " + std::to_string(l.line) + ": kernel " + l.kernel + " was not compiled in");
        Args args;
        for (const auto& b : l.args) {
            using K = spec::ArgBinding::Kind;
            Arg a;
            if (b.kind == K::Input)
                a.ptr = inputs.at(static_cast<std::size_t>(b.index)).bytes.data();
            else if (b.kind == K::Output)
                a.ptr = outputs.at(static_cast<std::size_t>(b.index)).bytes.data();
            else if (b.kind == K::Scratch)
                a.ptr = scratch.at(static_cast<std::size_t>(b.index)).bytes.data();
            else if (b.kind == K::TensorMap)
                die("line " + std::to_string(l.line) + ": tensor maps are not emulated");
            else
                a.value = b.value;
            args.push_back(a);
        }
        it->second(l.grid, l.block, l.smemBytes, args);
    }

    if (!out.empty()) {
        std::ofstream f(out, std::ios::binary);
        for (const auto& t : outputs)
            f.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.byteSize()));
        return f ? 0 : 1;
    }
    std::ifstream f(against, std::ios::binary);
    int wrongOutputs = 0;
    for (std::size_t o = 0; o < outputs.size(); ++o) {
        harness::HostTensor want = harness::makeTensor(outputs[o].dtype, outputs[o].count);
        if (!f.read(reinterpret_cast<char*>(want.bytes.data()), static_cast<std::streamsize>(want.byteSize())))
            die(against + ": shorter than the task's outputs");
        const auto& spec = task.outputs[o];
        std::uint64_t wrong = 0, first = 0;
        double worst = 0.0;
        for (std::uint64_t i = 0; i < outputs[o].count; ++i) {
            const double got = outputs[o].at(i), ref = want.at(i);
            if (std::isnan(ref) && std::isnan(got))
                continue;
            const double err = std::fabs(got - ref);
            if (!(err <= spec.atol + spec.rtol * std::fabs(ref))) {
                if (wrong++ == 0)
                    first = i;
                worst = std::isnan(err) ? NAN : std::max(worst, err);
            }
        }
        std::cout << compiled.source << " (" << compiled.params << ") output " << spec.name << ": " << outputs[o].count
                  << " elements, " << wrong << " wrong";
        if (wrong)
            std::cout << " (first at " << first << ": " << outputs[o].at(first) << " against " << want.at(first)
                      << "; max abs error " << worst << ")";
        std::cout << "\n";
        wrongOutputs += wrong ? 1 : 0;
    }
    return wrongOutputs ? 1 : 0;
}

} // namespace emu

int main(int argc, char** argv) {
    try {
        return emu::run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "cudaemu-run: " << e.what() << "\n";
        return 2;
    }
}

// ---- the kernel file, compiled for the host -----------------------------------------------------
// After everything above, so that its parameters' #defines touch nothing but the kernel itself.

#include "cudaemu.h"

#include KFORGE_EMU_HEADER
#include KFORGE_EMU_COPY

namespace emu {

template <typename T_kf_> T_kf_ argAs_(const Arg& a_) {
    if constexpr (std::is_pointer_v<T_kf_>)
        return static_cast<T_kf_>(a_.ptr);
    else
        return static_cast<T_kf_>(a_.value);
}

template <typename... A_kf_, std::size_t... I_kf_>
void call_(void (*f_)(A_kf_...), const Args& a_, std::index_sequence<I_kf_...>) {
    f_(argAs_<A_kf_>(a_[I_kf_])...);
}

template <typename... A_kf_> Launch launcher_(void (*f_)(A_kf_...), const char* name_) {
    return [f_, name_](const Extents& g_, const Extents& b_, std::uint64_t s_, const Args& a_) {
        if (a_.size() != sizeof...(A_kf_))
            throw std::runtime_error(std::string("kernel ") + name_ + " takes " + std::to_string(sizeof...(A_kf_))
                                     + " arguments; the plan binds " + std::to_string(a_.size()));
        const auto d_ = [](const Extents& e_) {
            return dim3{static_cast<unsigned>(e_[0]), static_cast<unsigned>(e_[1]), static_cast<unsigned>(e_[2])};
        };
        cudaemu::launch(d_(g_), d_(b_), static_cast<std::size_t>(s_), KFORGE_EMU_THREADED != 0,
                        [&] { call_(f_, a_, std::index_sequence_for<A_kf_...>{}); });
    };
}

Kernels kernels() {
    Kernels k_;
    k_.params = KFORGE_EMU_PARAMS;
    k_.source = KFORGE_EMU_SOURCE;
#define KFORGE_EMU_ENTRY(name_) k_.launch[#name_] = launcher_(&(name_), #name_);
    KFORGE_EMU_KERNELS(KFORGE_EMU_ENTRY)
#undef KFORGE_EMU_ENTRY
    return k_;
}

} // namespace emu
