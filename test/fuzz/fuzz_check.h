// FUZZ_CHECK: a property every fuzz target asserts about its parser's results. A violation prints
// the condition and the values given, then aborts, which libFuzzer records as a crash (with the
// input saved) and the replay tests (replay_main.cc) report as a failed test.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, detail)                                                         \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      const std::string fuzz_check_detail(detail); /* written whole: it may hold NUL bytes */ \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #condition); \
      std::fwrite(fuzz_check_detail.data(), 1, fuzz_check_detail.size(), stderr);             \
      std::fputc('\n', stderr);                                                               \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)
