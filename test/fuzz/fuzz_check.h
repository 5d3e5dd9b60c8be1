// FUZZ_CHECK: a property every fuzz target asserts about its parser's results. A violation prints
// the condition and the values given, then aborts, which libFuzzer records as a crash (with the
// input saved) and the replay tests (replay_main.cc) report as a failed test.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, detail)                                                            \
  do {                                                                                           \
    if (!(condition)) {                                                                          \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %s\n", __FILE__, __LINE__, #condition, \
                   std::string(detail).c_str());                                                 \
      std::abort();                                                                              \
    }                                                                                            \
  } while (false)
