#include "dovetail/controllers/launch/decision_id.h"

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::controllers::launch {
namespace {

// MurmurHash3's finalizer: a bijection on 32-bit values with good avalanche.
uint32_t Mix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// Drawn once per process (immutable afterwards).
uint32_t ProcessBase() {
  static const uint32_t base = [] {
    absl::BitGen gen;
    return absl::Uniform<uint32_t>(gen);
  }();
  return base;
}

}  // namespace

std::string FormatDecisionId(uint32_t base, DecisionStream stream, uint32_t n) {
  const uint32_t slot = (n << 1) | static_cast<uint32_t>(stream);
  return absl::StrFormat("%08x", Mix(base + slot));
}

DecisionIds::DecisionIds(DecisionStream stream) : stream_(stream) {}

std::string DecisionIds::Next() {
  return FormatDecisionId(ProcessBase(), stream_, next_.fetch_add(1));
}

bool IsDecisionId(std::string_view id) {
  if (id.size() != 8) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string WithDecisionId(std::string_view note, std::string_view id) {
  return Cat(note, " (decision=", id, ")");
}

std::string DecisionIdOf(std::string_view note) {
  constexpr std::string_view kPrefix = " (decision=";
  const size_t size = kPrefix.size() + 8 + 1;
  if (note.size() < size || note.back() != ')') return "";
  std::string_view tail = note.substr(note.size() - size);
  if (tail.substr(0, kPrefix.size()) != kPrefix) return "";
  std::string_view id = tail.substr(kPrefix.size(), 8);
  return IsDecisionId(id) ? std::string(id) : "";
}

}  // namespace dovetail::controllers::launch
