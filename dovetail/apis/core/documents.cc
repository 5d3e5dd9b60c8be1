#include "dovetail/apis/core/documents.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "dovetail/apis/core/codec.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/exceptions.h"
#include "yaml-cpp/mark.h"
#include "yaml-cpp/parser.h"

namespace dovetail::apis::core {
namespace {

using Json = nlohmann::json;

constexpr int kMaxDepth = 256;
// Alias expansion may not produce more nodes than this plus the input size (alias-free input has
// fewer nodes than bytes), which bounds "billion laughs" documents.
constexpr size_t kExtraNodes = 100'000;
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

absl::Status ErrorAt(std::string_view source, int line, int column, std::string_view message) {
  if (line <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": ", std::string(message)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(source), ":", line, ":", column, ": ", std::string(message)));
}

// Offset of the first byte that is not part of a well-formed UTF-8 sequence, or npos.
size_t FindInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    const bool overlong =
        (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

// Integer syntax of Go's strconv.ParseInt(s, 0, 64) (sign, 0x/0o/0b/leading-0 prefixes).
// Returns false when `s` is not an integer literal; `*overflow` when it does not fit 64 bits.
bool ParseIntLiteral(std::string_view s, bool* negative, uint64_t* magnitude, bool* overflow) {
  *negative = false;
  *overflow = false;
  *magnitude = 0;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    *negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() >= 2 && s[0] == '0') {
    const char p = absl::ascii_tolower(static_cast<unsigned char>(s[1]));
    if (p == 'x') {
      base = 16;
      s.remove_prefix(2);
    } else if (p == 'o') {
      base = 8;
      s.remove_prefix(2);
    } else if (p == 'b') {
      base = 2;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  if (s.empty()) return false;
  for (char ch : s) {
    int digit = 0;
    if (ch >= '0' && ch <= '9') {
      digit = ch - '0';
    } else if (ch >= 'a' && ch <= 'f') {
      digit = ch - 'a' + 10;
    } else if (ch >= 'A' && ch <= 'F') {
      digit = ch - 'A' + 10;
    } else {
      return false;
    }
    if (digit >= base) return false;
    if (*magnitude > (std::numeric_limits<uint64_t>::max() - digit) / base) *overflow = true;
    *magnitude = *magnitude * base + digit;
  }
  return true;
}

// go-yaml v2's float syntax: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsYamlFloat(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

enum class Resolved { kString, kValue, kNotFinite };

// Resolves a plain (untagged, unquoted) scalar the way go-yaml v2 does.
Resolved ResolvePlainScalar(const std::string& text, Json* out) {
  if (text.empty()) {
    *out = nullptr;
    return Resolved::kValue;
  }
  static const auto* const kTrue = new absl::flat_hash_set<std::string_view>{
      "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"};
  static const auto* const kFalse = new absl::flat_hash_set<std::string_view>{
      "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"};
  static const auto* const kNull =
      new absl::flat_hash_set<std::string_view>{"~", "null", "Null", "NULL"};
  static const auto* const kNotFinite = new absl::flat_hash_set<std::string_view>{
      ".nan",  ".NaN",  ".NAN",  ".inf",  ".Inf",  ".INF",
      "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"};
  const char first = text[0];
  const bool digit_like =
      first == '+' || first == '-' || absl::ascii_isdigit(static_cast<unsigned char>(first));
  const bool map_like = std::string_view("yYnNtTfFoO~").find(first) != std::string_view::npos;
  if (!digit_like && !map_like && first != '.') return Resolved::kString;
  if (kTrue->contains(text)) {
    *out = true;
    return Resolved::kValue;
  }
  if (kFalse->contains(text)) {
    *out = false;
    return Resolved::kValue;
  }
  if (kNull->contains(text)) {
    *out = nullptr;
    return Resolved::kValue;
  }
  if (kNotFinite->contains(text)) return Resolved::kNotFinite;
  if (first == '.') {
    double d = 0;
    if (IsYamlFloat(text) && absl::SimpleAtod(text, &d) && std::isfinite(d)) {
      *out = d;
      return Resolved::kValue;
    }
    return Resolved::kString;
  }
  if (!digit_like) return Resolved::kString;
  const std::string plain = absl::StrReplaceAll(text, {{"_", ""}});
  bool negative = false;
  bool overflow = false;
  uint64_t magnitude = 0;
  if (ParseIntLiteral(plain, &negative, &magnitude, &overflow) && !overflow) {
    if (!negative && magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      *out = static_cast<int64_t>(magnitude);
      return Resolved::kValue;
    }
    if (!negative) {
      *out = magnitude;
      return Resolved::kValue;
    }
    if (magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1) {
      *out = magnitude == static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1
                 ? std::numeric_limits<int64_t>::min()
                 : -static_cast<int64_t>(magnitude);
      return Resolved::kValue;
    }
  }
  if (IsYamlFloat(plain)) {
    double d = 0;
    if (absl::SimpleAtod(plain, &d) && std::isfinite(d)) {
      *out = d;
      return Resolved::kValue;
    }
  }
  return Resolved::kString;
}

// Thrown from the event handler to stop yaml-cpp's parser, and caught in ParseYaml: the only way
// to abort it from a callback. yaml-cpp 0.7 loops forever on some inputs (a lone "," at the start
// of a document yields endless empty documents), so the number of events is bounded by the input
// size and exceeding it aborts the parse.
struct AbortParse {};

// Builds nlohmann::json documents from yaml-cpp's parser events, resolving scalars, anchors,
// aliases and merge keys, recording field positions and checking the limits.
class JsonBuilder final : public YAML::EventHandler {
 public:
  JsonBuilder(std::string_view source, size_t input_size)
      : source_(source), max_events_(4 * input_size + 64), max_nodes_(input_size + kExtraNodes) {}

  const absl::Status& status() const { return status_; }
  std::vector<ParsedDocument>& documents() { return documents_; }
  // Records an error at the start of the document being parsed.
  void FailAtDocument(std::string_view message) { Fail(document_mark_, message); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    Count();
    document_mark_ = mark;
    current_ = ParsedDocument();
    has_root_ = false;
    stack_.clear();
    anchors_.clear();
    path_.clear();
  }

  void OnDocumentEnd() override {
    Count();
    if (!status_.ok() || !has_root_ || current_.json.is_null()) return;
    documents_.push_back(std::move(current_));
  }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Count();
    if (!status_.ok()) return;
    if (StartNode(mark) == Role::kKey) {
      SetKey("null", mark, /*merge=*/false);
      return;
    }
    FinishNode(nullptr, 1, anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Count();
    if (!status_.ok()) return;
    const Role role = StartNode(mark);
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      Fail(mark, "alias refers to an anchor that is not complete (recursive alias?)");
      return;
    }
    if (role == Role::kKey) {
      if (!it->second.value.is_string()) {
        Fail(mark, "mapping keys must be scalars");
        return;
      }
      SetKey(it->second.value.get<std::string>(), mark, /*merge=*/false);
      return;
    }
    nodes_ += it->second.nodes;
    if (nodes_ > max_nodes_) {
      Fail(mark, "document expands to too many nodes (alias bomb?)");
      return;
    }
    FinishNode(it->second.value, it->second.nodes, /*anchor=*/0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Count();
    if (!status_.ok()) return;
    const Role role = StartNode(mark);
    if (role == Role::kKey) {
      SetKey(value, mark, /*merge=*/tag == "?" && value == "<<");
      return;
    }
    Json json;
    if (!ResolveScalar(mark, tag, value, json)) return;
    FinishNode(std::move(json), 1, anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Count();
    if (!status_.ok()) return;
    StartContainer(mark, anchor, /*is_map=*/false);
  }

  void OnSequenceEnd() override {
    Count();
    if (!status_.ok()) return;
    EndContainer();
  }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Count();
    if (!status_.ok()) return;
    StartContainer(mark, anchor, /*is_map=*/true);
  }

  void OnMapEnd() override {
    Count();
    if (!status_.ok()) return;
    Frame& frame = stack_.back();
    // Merge keys: explicit keys win, then earlier merged mappings over later ones.
    for (const Json& merge : frame.merges) {
      const bool is_list = merge.is_array();
      for (size_t i = 0; i < (is_list ? merge.size() : 1); ++i) {
        const Json& source = is_list ? merge[i] : merge;
        if (!source.is_object()) {
          Fail(frame.mark, "a merge key (<<) needs a mapping or a list of mappings");
          return;
        }
        for (auto it = source.begin(); it != source.end(); ++it) {
          if (!frame.value.contains(it.key())) frame.value[it.key()] = *it;
        }
      }
    }
    EndContainer();
  }

 private:
  enum class Role { kRoot, kKey, kValue };

  struct Frame {
    Json value;
    bool is_map = false;
    YAML::anchor_t anchor = 0;
    YAML::Mark mark;
    size_t path_length = 0;  // length of path_ naming this container
    size_t nodes = 1;
    // Mappings: the key whose value comes next (when !expecting_key).
    bool expecting_key = true;
    bool key_is_merge = false;
    std::string key;
    absl::flat_hash_set<std::string> keys;
    std::vector<Json> merges;
  };

  struct Anchored {
    Json value;
    size_t nodes = 0;
  };

  void Count() {
    if (++events_ > max_events_) throw AbortParse{};
  }

  void Fail(const YAML::Mark& mark, std::string_view message) {
    if (!status_.ok()) return;
    status_ = ErrorAt(source_, mark.is_null() ? 0 : mark.line + 1, mark.column + 1, message);
  }

  void Record(const YAML::Mark& mark) {
    if (mark.is_null()) return;
    current_.field_positions[path_] = LineColumn{mark.line + 1, mark.column + 1};
  }

  // Positions the path at the node that starts now and says what the node is.
  Role StartNode(const YAML::Mark& mark) {
    if (stack_.empty()) {
      current_.position = SourcePosition{std::string(source_), mark.is_null() ? 0 : mark.line + 1,
                                         mark.is_null() ? 0 : mark.column + 1};
      return Role::kRoot;
    }
    Frame& top = stack_.back();
    if (top.is_map && top.expecting_key) return Role::kKey;
    if (top.is_map) {
      if (!top.key_is_merge) AppendPathKey(path_, top.key);
    } else {
      AppendPathIndex(path_, top.value.size());
      Record(mark);
    }
    return Role::kValue;
  }

  void SetKey(std::string key, const YAML::Mark& mark, bool merge) {
    Frame& top = stack_.back();
    if (!merge && !top.keys.insert(key).second) {
      Fail(mark, absl::StrCat("duplicate key \"", key, "\""));
      return;
    }
    top.key_is_merge = merge;
    top.key = std::move(key);
    top.expecting_key = false;
    if (!merge) {
      const size_t length = path_.size();
      AppendPathKey(path_, top.key);
      Record(mark);
      path_.resize(length);
    }
  }

  void StartContainer(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    if (StartNode(mark) == Role::kKey) {
      Fail(mark, "mapping keys must be scalars");
      return;
    }
    if (stack_.size() >= static_cast<size_t>(kMaxDepth)) {
      Fail(mark, absl::StrCat("nesting deeper than ", kMaxDepth, " levels"));
      return;
    }
    if (++nodes_ > max_nodes_) {
      Fail(mark, "document expands to too many nodes (alias bomb?)");
      return;
    }
    Frame frame;
    frame.value = is_map ? Json::object() : Json::array();
    frame.is_map = is_map;
    frame.anchor = anchor;
    frame.mark = mark;
    frame.path_length = path_.size();
    stack_.push_back(std::move(frame));
  }

  void EndContainer() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    FinishNode(std::move(frame.value), frame.nodes, frame.anchor);
  }

  // Attaches a complete node to its parent (or makes it the document).
  void FinishNode(Json value, size_t nodes, YAML::anchor_t anchor) {
    if (anchor != 0) anchors_[anchor] = Anchored{value, nodes};
    if (stack_.empty()) {
      current_.json = std::move(value);
      has_root_ = true;
      return;
    }
    Frame& top = stack_.back();
    path_.resize(top.path_length);
    top.nodes += nodes;
    if (!top.is_map) {
      top.value.push_back(std::move(value));
      return;
    }
    if (top.key_is_merge) {
      top.merges.push_back(std::move(value));
    } else {
      top.value[top.key] = std::move(value);
    }
    top.expecting_key = true;
  }

  bool ResolveScalar(const YAML::Mark& mark, const std::string& tag, const std::string& text,
                     Json& out) {
    ++nodes_;
    constexpr std::string_view kCoreTag = "tag:yaml.org,2002:";
    if (tag == "?" || tag.empty()) {
      switch (ResolvePlainScalar(text, &out)) {
        case Resolved::kValue:
          return true;
        case Resolved::kString:
          out = text;
          return true;
        case Resolved::kNotFinite:
          Fail(mark, absl::StrCat("value ", text, " cannot be represented in JSON"));
          return false;
      }
    }
    if (tag.rfind(kCoreTag, 0) == 0) {
      const std::string kind = tag.substr(kCoreTag.size());
      if (kind == "int" || kind == "float" || kind == "bool" || kind == "null") {
        Json value;
        const Resolved r = ResolvePlainScalar(text, &value);
        const bool ok = r == Resolved::kValue && ((kind == "int" && value.is_number_integer()) ||
                                                  (kind == "float" && value.is_number()) ||
                                                  (kind == "bool" && value.is_boolean()) ||
                                                  (kind == "null" && value.is_null()));
        if (!ok) {
          Fail(mark, absl::StrCat("cannot read \"", text, "\" as !!", kind));
          return false;
        }
        out = kind == "float" ? Json(value.get<double>()) : std::move(value);
        return true;
      }
    }
    out = text;  // quoted, block, !!str and unknown tags
    return true;
  }

  std::string_view source_;
  const size_t max_events_;
  const size_t max_nodes_;
  size_t events_ = 0;
  YAML::Mark document_mark_ = YAML::Mark::null_mark();
  size_t nodes_ = 0;
  absl::Status status_;
  std::vector<ParsedDocument> documents_;
  ParsedDocument current_;
  bool has_root_ = false;
  std::vector<Frame> stack_;
  absl::flat_hash_map<YAML::anchor_t, Anchored> anchors_;
  std::string path_;
};

absl::StatusOr<std::vector<ParsedDocument>> ParseYaml(std::string_view text,
                                                      std::string_view source) {
  std::istringstream input{std::string(text)};
  JsonBuilder builder(source, text.size());
  try {
    YAML::Parser parser(input);
    while (parser.HandleNextDocument(builder) && builder.status().ok()) {
    }
  } catch (const AbortParse&) {
    builder.FailAtDocument("YAML syntax error: the parser made no progress (malformed input)");
  } catch (const YAML::Exception& e) {
    if (!builder.status().ok()) return builder.status();
    return ErrorAt(source, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.column + 1,
                   absl::StrCat("YAML syntax error: ", e.msg));
  } catch (const std::exception& e) {
    return ErrorAt(source, 0, 0, absl::StrCat("YAML error: ", e.what()));
  }
  if (!builder.status().ok()) return builder.status();
  return std::move(builder.documents());
}

// End (exclusive) of the JSON object/array starting at `start`, or text.size() when unterminated
// (the JSON parser then reports the error). Sets *too_deep when nesting exceeds kMaxDepth.
size_t ScanJsonValue(std::string_view text, size_t start, bool* too_deep) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) {
        *too_deep = true;
        return i;
      }
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return text.size();
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1,
// column 2: "; the position is replaced by our own (relative to the whole stream).
std::string_view StripJsonErrorPrefix(std::string_view what) {
  const size_t column = what.find("column ");
  if (column == std::string_view::npos) return what;
  const size_t colon = what.find(": ", column);
  if (colon == std::string_view::npos) return what;
  return what.substr(colon + 2);
}

absl::StatusOr<std::vector<ParsedDocument>> ParseJsonStream(std::string_view text,
                                                            std::string_view source) {
  std::vector<ParsedDocument> documents;
  size_t pos = 0;
  while (true) {
    while (pos < text.size() && IsJsonSpace(text[pos])) ++pos;
    if (pos >= text.size()) break;
    const LineColumn start = OffsetToLineColumn(text, pos);
    if (text[pos] != '{' && text[pos] != '[') {
      return ErrorAt(source, start.line, start.column,
                     "JSON syntax error: expected '{' or '[' at the start of a document");
    }
    bool too_deep = false;
    const size_t end = ScanJsonValue(text, pos, &too_deep);
    if (too_deep) {
      const LineColumn at = OffsetToLineColumn(text, end);
      return ErrorAt(source, at.line, at.column,
                     absl::StrCat("nesting deeper than ", kMaxDepth, " levels"));
    }
    ParsedDocument doc;
    doc.position = SourcePosition{std::string(source), start.line, start.column};
    try {
      doc.json = Json::parse(text.substr(pos, end - pos));
    } catch (const Json::parse_error& e) {
      const size_t offset = pos + (e.byte > 0 ? e.byte - 1 : 0);
      const LineColumn at = OffsetToLineColumn(text, std::min(offset, text.size()));
      return ErrorAt(
          source, at.line, at.column,
          absl::StrCat("JSON syntax error: ", std::string(StripJsonErrorPrefix(e.what()))));
    } catch (const std::exception& e) {
      return ErrorAt(source, start.line, start.column, absl::StrCat("JSON error: ", e.what()));
    }
    documents.push_back(std::move(doc));
    pos = end;
  }
  return documents;
}

}  // namespace

std::string SourcePosition::ToString() const {
  if (line <= 0) return file;
  return absl::StrCat(file, ":", line, ":", column);
}

LineColumn OffsetToLineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  LineColumn lc{1, 1};
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++lc.line;
      line_start = i + 1;
    }
  }
  lc.column = static_cast<int>(offset - line_start) + 1;
  return lc;
}

absl::StatusOr<std::vector<ParsedDocument>> ParseDocuments(std::string_view text,
                                                           std::string_view source_name) {
  if (text.substr(0, kUtf8Bom.size()) == kUtf8Bom) text.remove_prefix(kUtf8Bom.size());
  if (const size_t bad = FindInvalidUtf8(text); bad != std::string_view::npos) {
    const LineColumn at = OffsetToLineColumn(text, bad);
    return ErrorAt(source_name, at.line, at.column, "invalid UTF-8");
  }
  size_t first = 0;
  while (first < text.size() && IsJsonSpace(text[first])) ++first;
  // Like kubectl, a stream that starts with a bracket is JSON (and is not retried as YAML).
  if (first < text.size() && (text[first] == '{' || text[first] == '[')) {
    return ParseJsonStream(text, source_name);
  }
  return ParseYaml(text, source_name);
}

}  // namespace dovetail::apis::core
