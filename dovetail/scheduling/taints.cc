#include "dovetail/scheduling/taints.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/label_syntax.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/scheduling/names.h"

namespace dovetail::scheduling {
namespace {

constexpr std::string_view kAnyKey = "*";
constexpr std::string_view kSecondsSeparator = " for ";

TaintEffect ToTaintEffect(apis::v1::EphemeralTaintEffect e) {
  return e == apis::v1::EphemeralTaintEffect::kNoExecute ? TaintEffect::kNoExecute
                                                         : TaintEffect::kNoSchedule;
}

absl::Status Malformed(std::string_view what, std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      Cat(what, " \"", absl::CHexEscape(AsAbsl(text)), "\" is malformed: ", why));
}

}  // namespace

bool ToleratesTaint(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect && *toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  switch (toleration.op) {
    case TolerationOperator::kExists:
      return true;
    case TolerationOperator::kEqual:
      return toleration.value == taint.value;
  }
  return false;
}

bool ToleratesTaint(absl::Span<const Toleration> tolerations, const Taint& taint) {
  for (const Toleration& t : tolerations) {
    if (ToleratesTaint(t, taint)) return true;
  }
  return false;
}

absl::Status Tolerates(absl::Span<const Toleration> tolerations, absl::Span<const Taint> taints,
                       PreferNoSchedule prefer_no_schedule) {
  for (const Taint& taint : taints) {
    if (prefer_no_schedule == PreferNoSchedule::kIgnore &&
        taint.effect == TaintEffect::kPreferNoSchedule) {
      continue;
    }
    if (!ToleratesTaint(tolerations, taint)) {
      return absl::FailedPreconditionError(Cat("did not tolerate taint ", TaintToString(taint)));
    }
  }
  return absl::OkStatus();
}

bool MatchTaint(const Taint& a, const Taint& b) { return a.key == b.key && a.effect == b.effect; }

std::vector<Taint> MergeTaints(absl::Span<const Taint> base, absl::Span<const Taint> extra) {
  std::vector<Taint> out(base.begin(), base.end());
  for (const Taint& taint : extra) {
    bool present = false;
    for (const Taint& existing : out) present = present || MatchTaint(existing, taint);
    if (!present) out.push_back(taint);
  }
  return out;
}

bool IsKnownEphemeralTaint(const Taint& taint) {
  if (taint.key.starts_with(apis::v1::kEphemeralTaintKeyPrefix)) return true;
  for (const apis::v1::EphemeralTaint& known : apis::v1::kKnownEphemeralTaints) {
    if (taint.key == known.key && taint.effect == ToTaintEffect(known.effect)) return true;
  }
  return false;
}

std::string_view TaintEffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "Unknown";
}

absl::StatusOr<TaintEffect> ParseTaintEffect(std::string_view text) {
  for (TaintEffect e :
       {TaintEffect::kNoSchedule, TaintEffect::kPreferNoSchedule, TaintEffect::kNoExecute}) {
    if (text == TaintEffectName(e)) return e;
  }
  return absl::InvalidArgumentError(Cat("unknown taint effect \"", absl::CHexEscape(AsAbsl(text)),
                                        "\"; expected NoSchedule, PreferNoSchedule or NoExecute"));
}

std::string TaintToString(const Taint& taint) {
  if (taint.value.empty()) return Cat(taint.key, ":", TaintEffectName(taint.effect));
  return Cat(taint.key, "=", taint.value, ":", TaintEffectName(taint.effect));
}

absl::StatusOr<Taint> ParseTaint(std::string_view text) {
  constexpr std::string_view kWhat = "taint";
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return Malformed(kWhat, text, "missing \":<effect>\"");
  if (text.find(':', colon + 1) != std::string_view::npos) {
    return Malformed(kWhat, text, "more than one ':'");
  }
  Taint taint;
  absl::StatusOr<TaintEffect> effect = ParseTaintEffect(text.substr(colon + 1));
  if (!effect.ok()) return Malformed(kWhat, text, AsStd(effect.status().message()));
  taint.effect = *effect;

  std::string_view key_value = text.substr(0, colon);
  const size_t equals = key_value.find('=');
  std::string_view key = key_value.substr(0, equals);
  if (equals != std::string_view::npos) {
    std::string_view value = key_value.substr(equals + 1);
    if (value.find('=') != std::string_view::npos) {
      return Malformed(kWhat, text, "more than one '='");
    }
    if (absl::Status s = apis::core::ValidateLabelValue(value); !s.ok()) {
      return Malformed(kWhat, text, AsStd(s.message()));
    }
    taint.value = std::string(value);
  }
  if (absl::Status s = apis::core::ValidateQualifiedName(key); !s.ok()) {
    return Malformed(kWhat, text, AsStd(s.message()));
  }
  taint.key = std::string(key);
  return taint;
}

std::string TolerationToString(const Toleration& toleration) {
  std::string out;
  if (toleration.op == TolerationOperator::kEqual) {
    out = Cat(toleration.key, "=", toleration.value);
  } else {
    out = toleration.key.empty() ? std::string(kAnyKey) : toleration.key;
  }
  if (toleration.effect) CatTo(&out, ":", TaintEffectName(*toleration.effect));
  if (toleration.toleration_seconds) {
    CatTo(&out, kSecondsSeparator, *toleration.toleration_seconds, "s");
  }
  return out;
}

absl::StatusOr<Toleration> ParseToleration(std::string_view text) {
  constexpr std::string_view kWhat = "toleration";
  Toleration toleration;
  std::string_view rest = text;

  const size_t for_pos = rest.rfind(kSecondsSeparator);
  if (for_pos != std::string_view::npos) {
    std::string_view seconds = rest.substr(for_pos + kSecondsSeparator.size());
    int64_t n = 0;
    if (seconds.size() < 2 || seconds.back() != 's' ||
        !absl::SimpleAtoi(AsAbsl(seconds.substr(0, seconds.size() - 1)), &n) ||
        !(seconds[0] == '-' || (seconds[0] >= '0' && seconds[0] <= '9'))) {
      return Malformed(kWhat, text, "expected \" for <seconds>s\"");
    }
    toleration.toleration_seconds = n;
    rest = rest.substr(0, for_pos);
  }

  const size_t colon = rest.find(':');
  if (colon != std::string_view::npos) {
    absl::StatusOr<TaintEffect> effect = ParseTaintEffect(rest.substr(colon + 1));
    if (!effect.ok()) return Malformed(kWhat, text, AsStd(effect.status().message()));
    toleration.effect = *effect;
    rest = rest.substr(0, colon);
  }

  const size_t equals = rest.find('=');
  if (equals == std::string_view::npos) {
    toleration.op = TolerationOperator::kExists;
    if (rest.empty()) return Malformed(kWhat, text, "empty key; use \"*\" to match every key");
    if (rest != kAnyKey) {
      if (absl::Status s = apis::core::ValidateQualifiedName(rest); !s.ok()) {
        return Malformed(kWhat, text, AsStd(s.message()));
      }
      toleration.key = std::string(rest);
    }
    return toleration;
  }

  toleration.op = TolerationOperator::kEqual;
  std::string_view key = rest.substr(0, equals);
  std::string_view value = rest.substr(equals + 1);
  if (value.find('=') != std::string_view::npos) {
    return Malformed(kWhat, text, "more than one '='");
  }
  if (!key.empty()) {
    if (absl::Status s = apis::core::ValidateQualifiedName(key); !s.ok()) {
      return Malformed(kWhat, text, AsStd(s.message()));
    }
  }
  if (absl::Status s = apis::core::ValidateLabelValue(value); !s.ok()) {
    return Malformed(kWhat, text, AsStd(s.message()));
  }
  toleration.key = std::string(key);
  toleration.value = std::string(value);
  return toleration;
}

}  // namespace dovetail::scheduling
