#pragma once
// What every fuzz target asserts beyond "does not crash": a property that must hold for any input.
// A broken one prints what broke and aborts, which libFuzzer keeps as a crash input and the corpus
// replay reports as a failed test.

#include <cstdio>
#include <cstdlib>
#include <string>

#define KFORGE_FUZZ_CHECK(cond, what)                                                                                  \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            std::fprintf(stderr, "%s:%d: %s does not hold: %s\n", __FILE__, __LINE__, #cond,                           \
                         std::string(what).c_str());                                                                   \
            std::abort();                                                                                              \
        }                                                                                                              \
    } while (false)
