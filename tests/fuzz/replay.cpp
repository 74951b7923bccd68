// Runs a fuzz target over files without libFuzzer: every file named, and every regular file under
// every folder named. The suite runs each target over its corpus (tests/fuzz/corpus/TARGET) and the
// real inputs of its kind (task files, kernel files) this way, so what a fuzzing session found stays
// found.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    for (int i = 1; i < argc; ++i) {
        const fs::path arg = argv[i];
        std::error_code ec;
        if (fs::is_directory(arg, ec)) {
            for (const auto& e : fs::recursive_directory_iterator(arg, ec))
                if (e.is_regular_file())
                    files.push_back(e.path());
        } else if (fs::is_regular_file(arg, ec)) {
            files.push_back(arg);
        } else {
            std::cerr << "replay: " << arg.string() << " is neither a file nor a folder\n";
            return 2;
        }
    }
    if (files.empty()) {
        std::cerr << "usage: " << argv[0] << " FILE|FOLDER...  (no input found)\n";
        return 2;
    }
    for (const fs::path& f : files) {
        std::ifstream in(f, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof()) {
            std::cerr << "replay: cannot read " << f.string() << "\n";
            return 2;
        }
        std::cerr << "replay: " << f.string() << "\n";
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    std::cout << "replay: " << files.size() << " inputs, every check held\n";
    return 0;
}
