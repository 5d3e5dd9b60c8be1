#include "dovetail/providers/aws/cloudprovider/user_data.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::providers::aws {

namespace awsv1 = apis::aws::v1;
namespace core = apis::core;
using nlohmann::json;

namespace {

constexpr std::string_view kNodeConfigContentType = "application/node.eks.aws";
constexpr std::string_view kShellContentType = "text/x-shellscript; charset=\"us-ascii\"";

std::string EffectName(core::TaintEffect effect) {
  return std::string(core::EnumNames(effect)[static_cast<size_t>(effect)]);
}

std::string Lower(std::string_view s) { return absl::AsciiStrToLower(AsAbsl(s)); }

// Splits into lines, keeping the content without "\n" and the carriage returns before it (CRLF
// documents read as LF ones; more than one CR is line-ending noise too, so a document Dovetail
// writes reads back the same).
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == text.size()) break;
    start = nl + 1;
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The boundary parameter of a Content-Type header value, unquoted; empty when absent.
std::string BoundaryOf(std::string_view content_type) {
  const std::string lower = Lower(content_type);
  const size_t pos = lower.find("boundary=");
  if (pos == std::string::npos) return "";
  std::string_view rest = content_type.substr(pos + 9);
  if (!rest.empty() && rest.front() == '"') {
    rest.remove_prefix(1);
    const size_t end = rest.find('"');
    return std::string(rest.substr(0, end));
  }
  const size_t end = rest.find_first_of("; \t");
  return std::string(Trim(rest.substr(0, end)));
}

// Headers (name lower-cased) of a header block ending at the first empty line; `body_start`
// receives the index of the first body line.
std::map<std::string, std::string> ParseHeaders(const std::vector<std::string_view>& lines,
                                                size_t begin, size_t end, size_t* body_start) {
  std::map<std::string, std::string> headers;
  std::string last;
  size_t i = begin;
  for (; i < end; ++i) {
    std::string_view line = lines[i];
    if (line.empty()) {
      ++i;
      break;
    }
    if ((line.front() == ' ' || line.front() == '\t') && !last.empty()) {
      // A folded header's next line; one of blanks adds nothing (the value stays trimmed).
      if (const std::string_view more = Trim(line); !more.empty()) {
        CatTo(&headers[last], headers[last].empty() ? "" : " ", more);
      }
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) break;  // not a header: the body starts here
    last = Lower(Trim(line.substr(0, colon)));
    headers[last] = std::string(Trim(line.substr(colon + 1)));
  }
  *body_start = i;
  return headers;
}

bool LooksLikeNodeConfig(std::string_view text) {
  const std::string_view t = Trim(text);
  if (t.starts_with("{")) {
    json doc = json::parse(t, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object()) {
      auto it = doc.find("apiVersion");
      return it != doc.end() && it->is_string() &&
             it->get<std::string>().starts_with("node.eks.aws/");
    }
    return false;
  }
  for (std::string_view line : Lines(t)) {
    line = Trim(line);
    if (line.starts_with("apiVersion:")) {
      std::string_view v = Trim(line.substr(11));
      if (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
      return v.starts_with("node.eks.aws/");
    }
  }
  return false;
}

// ---- YAML ----

std::string YamlScalar(const json& v) {
  if (v.is_string()) return v.dump();  // JSON escaping is valid YAML double-quoted style
  return v.dump();
}

void YamlTo(std::string& out, const json& v, int indent) {
  const std::string pad(indent, ' ');
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string key = json(it.key()).dump();
      const json& child = it.value();
      if ((child.is_object() && !child.empty()) || (child.is_array() && !child.empty())) {
        CatTo(&out, pad, key, ":\n");
        YamlTo(out, child, child.is_array() ? indent : indent + 2);
      } else if (child.is_object()) {
        CatTo(&out, pad, key, ": {}\n");
      } else if (child.is_array()) {
        CatTo(&out, pad, key, ": []\n");
      } else {
        CatTo(&out, pad, key, ": ", YamlScalar(child), "\n");
      }
    }
  } else if (v.is_array()) {
    for (const json& item : v) {
      if (item.is_object() && !item.empty()) {
        std::string nested;
        YamlTo(nested, item, indent + 2);
        // The first key goes on the dash line.
        CatTo(&out, pad, "- ", nested.substr(indent + 2));
      } else {
        CatTo(&out, pad, "- ", YamlScalar(item), "\n");
      }
    }
  } else {
    CatTo(&out, pad, YamlScalar(v), "\n");
  }
}

// ---- kubelet settings ----

template <typename Map>
std::string JoinMap(const Map& m, std::string_view kv_sep) {
  std::vector<std::string> parts;
  parts.reserve(m.size());
  for (const auto& [k, v] : m) parts.push_back(Cat(k, kv_sep, v));
  return absl::StrJoin(parts, ",");
}

std::vector<std::string> ClusterDns(const BootstrapInputs& in) {
  if (in.kubelet.has_value() && !in.kubelet->cluster_dns.empty()) return in.kubelet->cluster_dns;
  if (!in.cluster_dns_ip.empty()) return {in.cluster_dns_ip};
  return {};
}

json MapJson(const core::StringMap& m) {
  json out = json::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

// ---- TOML ----

// Appends `code` (a Unicode scalar value) to `out` as UTF-8.
void AppendUtf8(char32_t code, std::string& out) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// Nesting is limited to kMaxTomlDepth (common/input_limits.h): values recurse here, and the
// writer and the merge recurse over the tree the parser builds.
class TomlParser {
 public:
  explicit TomlParser(std::string_view text) : s_(text) {}

  absl::StatusOr<json> Parse() {
    json root = json::object();
    json* table = &root;
    while (true) {
      SkipWsCommentsNewlines();
      if (pos_ >= s_.size()) break;
      if (s_[pos_] == '[') {
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '[') {
          return Error("arrays of tables are not supported");
        }
        ++pos_;
        ASSIGN_OR_RETURN(std::vector<std::string> path, ParseKey());
        RETURN_IF_ERROR(CheckDepth(path.size()));
        table_depth_ = path.size();
        SkipWs();
        if (pos_ >= s_.size() || s_[pos_] != ']') return Error("expected ]");
        ++pos_;
        RETURN_IF_ERROR(EndOfLine());
        table = &root;
        for (const std::string& k : path) {
          json& next = (*table)[k];
          if (next.is_null()) next = json::object();
          if (!next.is_object()) return Error(Cat("key ", k, " is not a table"));
          table = &next;
        }
        continue;
      }
      RETURN_IF_ERROR(ParseKeyValue(*table, table_depth_));
      RETURN_IF_ERROR(EndOfLine());
    }
    return root;
  }

 private:
  absl::Status CheckDepth(size_t depth) const {
    if (depth <= static_cast<size_t>(kMaxTomlDepth)) return absl::OkStatus();
    return Error(Cat("nesting deeper than ", kMaxTomlDepth, " levels"));
  }

  absl::Status Error(std::string_view what) const {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
    return absl::InvalidArgumentError(Cat("TOML line ", line, ": ", what));
  }
  void SkipWs() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  void SkipWsCommentsNewlines() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  absl::Status EndOfLine() {
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == '#') {
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '\r') ++pos_;
    if (pos_ < s_.size() && s_[pos_] != '\n') return Error("expected end of line");
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ParseString() {
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      char c = s_[pos_++];
      if (c == '\n') return Error("newline in string");
      if (quote == '"' && c == '\\') {
        if (pos_ >= s_.size()) break;
        const char e = s_[pos_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'u':
          case 'U': {
            absl::StatusOr<char32_t> code = ParseUnicodeEscape(e == 'u' ? 4 : 8);
            if (!code.ok()) return code.status();
            AppendUtf8(*code, out);
            break;
          }
          default:
            return Error(Cat("unsupported escape \\", std::string(1, e)));
        }
        continue;
      }
      out += c;
    }
    if (pos_ >= s_.size()) return Error("unterminated string");
    ++pos_;
    return out;
  }
  // The hex digits of a \uXXXX or \UXXXXXXXX escape, which TOML requires to name a Unicode
  // scalar value (no surrogate, nothing past U+10FFFF).
  absl::StatusOr<char32_t> ParseUnicodeEscape(size_t digits) {
    if (s_.size() - pos_ < digits) return Error("short unicode escape");
    char32_t code = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char c = s_[pos_++];
      int v = 0;
      if (c >= '0' && c <= '9') {
        v = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v = c - 'A' + 10;
      } else {
        return Error("unicode escape with a non-hex digit");
      }
      code = code * 16 + static_cast<char32_t>(v);
    }
    if ((code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) {
      return Error("unicode escape that is no Unicode scalar value");
    }
    return code;
  }
  absl::StatusOr<std::vector<std::string>> ParseKey() {
    std::vector<std::string> path;
    while (true) {
      SkipWs();
      if (pos_ >= s_.size()) return Error("expected a key");
      if (s_[pos_] == '"' || s_[pos_] == '\'') {
        ASSIGN_OR_RETURN(std::string k, ParseString());
        path.push_back(std::move(k));
      } else {
        const size_t start = pos_;
        while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                    s_[pos_] == '-' || s_[pos_] == '_')) {
          ++pos_;
        }
        if (pos_ == start) return Error("expected a key");
        path.emplace_back(s_.substr(start, pos_ - start));
      }
      SkipWs();
      if (pos_ < s_.size() && s_[pos_] == '.') {
        ++pos_;
        continue;
      }
      return path;
    }
  }
  // `depth`: the nesting of `table` below the document root.
  absl::Status ParseKeyValue(json& table, size_t depth) {
    ASSIGN_OR_RETURN(std::vector<std::string> path, ParseKey());
    RETURN_IF_ERROR(CheckDepth(depth + path.size()));
    SkipWs();
    if (pos_ >= s_.size() || s_[pos_] != '=') return Error("expected =");
    ++pos_;
    SkipWs();
    ASSIGN_OR_RETURN(json value, ParseValue(depth + path.size()));
    json* t = &table;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      json& next = (*t)[path[i]];
      if (next.is_null()) next = json::object();
      if (!next.is_object()) return Error(Cat("key ", path[i], " is not a table"));
      t = &next;
    }
    (*t)[path.back()] = std::move(value);
    return absl::OkStatus();
  }
  // `depth`: the nesting of the value below the document root.
  absl::StatusOr<json> ParseValue(size_t depth) {
    if (pos_ >= s_.size()) return Error("expected a value");
    const char c = s_[pos_];
    if (c == '[' || c == '{') {
      RETURN_IF_ERROR(CheckDepth(depth + 1));
    }
    if (c == '"' || c == '\'') {
      ASSIGN_OR_RETURN(std::string str, ParseString());
      return json(std::move(str));
    }
    if (c == '[') {
      ++pos_;
      json arr = json::array();
      while (true) {
        SkipWsCommentsNewlines();
        if (pos_ < s_.size() && s_[pos_] == ']') {
          ++pos_;
          return arr;
        }
        ASSIGN_OR_RETURN(json item, ParseValue(depth + 1));
        arr.push_back(std::move(item));
        SkipWsCommentsNewlines();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        SkipWsCommentsNewlines();
        if (pos_ < s_.size() && s_[pos_] == ']') {
          ++pos_;
          return arr;
        }
        return Error("expected , or ] in array");
      }
    }
    if (c == '{') {
      ++pos_;
      json obj = json::object();
      SkipWs();
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return obj;
      }
      while (true) {
        RETURN_IF_ERROR(ParseKeyValue(obj, depth + 1));
        SkipWs();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == '}') {
          ++pos_;
          return obj;
        }
        return Error("expected , or } in inline table");
      }
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != ']' && s_[pos_] != '}' &&
           s_[pos_] != '\n' && s_[pos_] != '#' && s_[pos_] != '\r') {
      ++pos_;
    }
    const std::string token(Trim(s_.substr(start, pos_ - start)));
    if (token == "true") return json(true);
    if (token == "false") return json(false);
    std::string digits;
    for (char d : token) {
      if (d != '_') digits += d;
    }
    if (!digits.empty()) {
      // A number must keep its value through JSON and back: an integer beyond int64 (which
      // strtoll would clamp) or a float that is not finite (JSON writes null) is refused.
      char* end = nullptr;
      errno = 0;
      const int64_t i = std::strtoll(digits.c_str(), &end, 10);
      if (end != nullptr && *end == '\0') {
        if (errno == ERANGE) return Error(Cat("integer out of range \"", token, "\""));
        return json(static_cast<int64_t>(i));
      }
      errno = 0;
      const double d = std::strtod(digits.c_str(), &end);
      if (end != nullptr && *end == '\0') {
        if (errno == ERANGE || !std::isfinite(d)) {
          return Error(Cat("number out of range \"", token, "\""));
        }
        return json(d);
      }
    }
    return Error(Cat("unsupported value \"", token, "\""));
  }

  std::string_view s_;
  size_t pos_ = 0;
  size_t table_depth_ = 0;  // the nesting of the current [table] header
};

// A TOML basic string: quotes and backslashes escaped, control characters (which TOML forbids
// raw) as \t, \n, \r, \b, \f or \uXXXX; other bytes as they are, so text that is not UTF-8
// passes through as the user wrote it instead of failing (a JSON encoder throws on it).
std::string TomlString(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
          out += absl::StrFormat("\\u%04X", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string TomlKey(const std::string& k) {
  bool bare = !k.empty();
  for (char c : k) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') bare = false;
  }
  return bare ? k : TomlString(k);
}

std::string TomlValue(const json& v) {
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const json& i : v) items.push_back(TomlValue(i));
    return Cat("[", absl::StrJoin(items, ", "), "]");
  }
  if (v.is_object()) {
    std::vector<std::string> items;
    for (auto it = v.begin(); it != v.end(); ++it) {
      items.push_back(Cat(TomlKey(it.key()), " = ", TomlValue(it.value())));
    }
    return Cat("{", absl::StrJoin(items, ", "), "}");
  }
  if (v.is_string()) return TomlString(v.get_ref<const std::string&>());
  return v.dump();  // numbers and booleans print the same in JSON and TOML
}

void WriteTomlTable(std::string& out, const json& table, const std::string& path) {
  bool header_written = path.empty();
  auto header = [&] {
    if (!header_written) {
      if (!out.empty()) out += "\n";
      CatTo(&out, "[", path, "]\n");
      header_written = true;
    }
  };
  bool has_scalars = false;
  for (auto it = table.begin(); it != table.end(); ++it) {
    if (it.value().is_object()) continue;
    header();
    has_scalars = true;
    CatTo(&out, TomlKey(it.key()), " = ", TomlValue(it.value()), "\n");
  }
  bool has_subtables = false;
  for (auto it = table.begin(); it != table.end(); ++it) {
    if (!it.value().is_object()) continue;
    has_subtables = true;
    const std::string child = path.empty() ? TomlKey(it.key()) : Cat(path, ".", TomlKey(it.key()));
    WriteTomlTable(out, it.value(), child);
  }
  if (!has_scalars && !has_subtables) header();  // keep empty tables
}

void MergeInto(json& base, const json& over) {
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it.value().is_object() && base.contains(it.key()) && base[it.key()].is_object()) {
      MergeInto(base[it.key()], it.value());
    } else {
      base[it.key()] = it.value();
    }
  }
}

}  // namespace

bool IsMime(std::string_view text) {
  for (std::string_view line : Lines(text)) {
    line = Trim(line);
    if (line.empty()) continue;
    const std::string lower = Lower(line);
    return lower.starts_with("mime-version:") ||
           (lower.starts_with("content-type:") && lower.find("multipart/") != std::string::npos);
  }
  return false;
}

absl::StatusOr<std::vector<MimePart>> ParseMimeMultipart(std::string_view text) {
  const std::vector<std::string_view> lines = Lines(text);
  size_t body = 0;
  const auto headers = ParseHeaders(lines, 0, lines.size(), &body);
  auto ct = headers.find("content-type");
  const std::string boundary = ct == headers.end() ? "" : BoundaryOf(ct->second);
  if (boundary.empty()) {
    return absl::InvalidArgumentError("MIME user data without a multipart boundary");
  }
  const std::string delimiter = Cat("--", boundary);
  const std::string close = Cat(delimiter, "--");
  std::vector<MimePart> parts;
  std::optional<size_t> part_start;
  bool closed = false;
  for (size_t i = body; i <= lines.size(); ++i) {
    const bool at_end = i == lines.size();
    const std::string_view line = at_end ? std::string_view() : Trim(lines[i]);
    const bool is_delim = !at_end && (line == delimiter || line == close);
    if (!is_delim && !at_end) continue;
    if (part_start.has_value()) {
      size_t content = 0;
      const auto part_headers = ParseHeaders(lines, *part_start, i, &content);
      std::vector<std::string_view> body_lines(lines.begin() + content, lines.begin() + i);
      MimePart part;
      auto pct = part_headers.find("content-type");
      part.content_type = pct == part_headers.end() ? "text/plain" : pct->second;
      for (std::string_view l : body_lines) CatTo(&part.body, l, "\n");
      parts.push_back(std::move(part));
    }
    if (at_end) break;
    if (line == close) {
      closed = true;
      break;
    }
    part_start = i + 1;
  }
  if (!closed) {
    return absl::InvalidArgumentError(Cat("MIME user data: no closing boundary \"", close, "\""));
  }
  return parts;
}

std::string WriteMimeMultipart(const std::vector<MimePart>& parts) {
  std::string boundary = "//";
  for (int n = 0;; ++n) {
    bool clash = false;
    for (const MimePart& p : parts) {
      if (p.body.find(Cat("--", boundary)) != std::string::npos) clash = true;
    }
    if (!clash) break;
    boundary = Cat("dovetail-boundary-", n);
  }
  std::string out =
      Cat("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"", boundary, "\"\n\n");
  for (const MimePart& p : parts) {
    CatTo(&out, "--", boundary, "\nContent-Type: ", p.content_type, "\n\n", p.body);
    if (!p.body.empty() && p.body.back() != '\n') out += "\n";
  }
  CatTo(&out, "--", boundary, "--\n");
  return out;
}

absl::StatusOr<std::vector<MimePart>> UserPartsForMime(std::string_view user_data) {
  if (Trim(user_data).empty()) return std::vector<MimePart>{};
  if (IsMime(user_data)) return ParseMimeMultipart(user_data);
  std::string body(user_data);
  if (body.back() != '\n') body += "\n";
  if (LooksLikeNodeConfig(user_data)) {
    return std::vector<MimePart>{{std::string(kNodeConfigContentType), std::move(body)}};
  }
  return std::vector<MimePart>{{std::string(kShellContentType), std::move(body)}};
}

std::string ToYaml(const json& value) {
  std::string out;
  YamlTo(out, value, 0);
  return out;
}

std::string Al2023NodeConfig(const BootstrapInputs& in) {
  json cfg = json::object();
  if (in.max_pods.has_value()) cfg["maxPods"] = *in.max_pods;
  const std::vector<std::string> dns = ClusterDns(in);
  if (!dns.empty()) cfg["clusterDNS"] = dns;
  if (in.kubelet.has_value()) {
    const awsv1::KubeletConfiguration& k = *in.kubelet;
    if (k.pods_per_core.has_value()) cfg["podsPerCore"] = *k.pods_per_core;
    if (!k.system_reserved.empty()) cfg["systemReserved"] = MapJson(k.system_reserved);
    if (!k.kube_reserved.empty()) cfg["kubeReserved"] = MapJson(k.kube_reserved);
    if (!k.eviction_hard.empty()) cfg["evictionHard"] = MapJson(k.eviction_hard);
    if (!k.eviction_soft.empty()) cfg["evictionSoft"] = MapJson(k.eviction_soft);
    if (!k.eviction_soft_grace_period.empty()) {
      cfg["evictionSoftGracePeriod"] = MapJson(k.eviction_soft_grace_period);
    }
    if (k.eviction_max_pod_grace_period.has_value()) {
      cfg["evictionMaxPodGracePeriod"] = *k.eviction_max_pod_grace_period;
    }
    if (k.image_gc_high_threshold_percent.has_value()) {
      cfg["imageGCHighThresholdPercent"] = *k.image_gc_high_threshold_percent;
    }
    if (k.image_gc_low_threshold_percent.has_value()) {
      cfg["imageGCLowThresholdPercent"] = *k.image_gc_low_threshold_percent;
    }
    if (k.cpu_cfs_quota.has_value()) cfg["cpuCFSQuota"] = *k.cpu_cfs_quota;
    if (k.unknown_fields.is_object()) {
      for (auto it = k.unknown_fields.begin(); it != k.unknown_fields.end(); ++it) {
        cfg[it.key()] = it.value();
      }
    }
  }
  if (!in.taints.empty()) {
    json taints = json::array();
    for (const core::Taint& t : in.taints) {
      json tj = {{"key", t.key}, {"effect", EffectName(t.effect)}};
      if (!t.value.empty()) tj["value"] = t.value;
      taints.push_back(std::move(tj));
    }
    cfg["registerWithTaints"] = std::move(taints);
  }
  json spec = json::object();
  spec["cluster"] = {{"name", in.cluster_name},
                     {"apiServerEndpoint", in.cluster_endpoint},
                     {"certificateAuthority", in.ca_bundle},
                     {"cidr", in.cluster_cidr}};
  json kubelet = json::object();
  kubelet["config"] = std::move(cfg);
  if (!in.labels.empty()) {
    kubelet["flags"] = json::array({Cat("--node-labels=", JoinMap(in.labels, "="))});
  }
  spec["kubelet"] = std::move(kubelet);
  if (in.raid0) spec["instance"] = {{"localStorage", {{"strategy", "RAID0"}}}};
  json doc = json::object();
  doc["apiVersion"] = "node.eks.aws/v1alpha1";
  doc["kind"] = "NodeConfig";
  doc["spec"] = std::move(spec);
  return Cat("---\n", ToYaml(doc));
}

std::string Al2BootstrapScript(const BootstrapInputs& in) {
  std::vector<std::string> kubelet_args;
  if (!in.labels.empty()) kubelet_args.push_back(Cat("--node-labels=", JoinMap(in.labels, "=")));
  if (!in.taints.empty()) {
    std::vector<std::string> taints;
    for (const core::Taint& t : in.taints) {
      taints.push_back(Cat(t.key, "=", t.value, ":", EffectName(t.effect)));
    }
    kubelet_args.push_back(Cat("--register-with-taints=", absl::StrJoin(taints, ",")));
  }
  if (in.max_pods.has_value()) kubelet_args.push_back(Cat("--max-pods=", *in.max_pods));
  if (in.kubelet.has_value()) {
    const awsv1::KubeletConfiguration& k = *in.kubelet;
    if (k.pods_per_core.has_value())
      kubelet_args.push_back(Cat("--pods-per-core=", *k.pods_per_core));
    if (!k.system_reserved.empty()) {
      kubelet_args.push_back(Cat("--system-reserved=", JoinMap(k.system_reserved, "=")));
    }
    if (!k.kube_reserved.empty()) {
      kubelet_args.push_back(Cat("--kube-reserved=", JoinMap(k.kube_reserved, "=")));
    }
    if (!k.eviction_hard.empty()) {
      kubelet_args.push_back(Cat("--eviction-hard=", JoinMap(k.eviction_hard, "<")));
    }
    if (!k.eviction_soft.empty()) {
      kubelet_args.push_back(Cat("--eviction-soft=", JoinMap(k.eviction_soft, "<")));
    }
    if (!k.eviction_soft_grace_period.empty()) {
      kubelet_args.push_back(
          Cat("--eviction-soft-grace-period=", JoinMap(k.eviction_soft_grace_period, "=")));
    }
    if (k.eviction_max_pod_grace_period.has_value()) {
      kubelet_args.push_back(
          Cat("--eviction-max-pod-grace-period=", *k.eviction_max_pod_grace_period));
    }
    if (k.image_gc_high_threshold_percent.has_value()) {
      kubelet_args.push_back(Cat("--image-gc-high-threshold=", *k.image_gc_high_threshold_percent));
    }
    if (k.image_gc_low_threshold_percent.has_value()) {
      kubelet_args.push_back(Cat("--image-gc-low-threshold=", *k.image_gc_low_threshold_percent));
    }
    if (k.cpu_cfs_quota.has_value()) {
      kubelet_args.push_back(Cat("--cpu-cfs-quota=", *k.cpu_cfs_quota ? "true" : "false"));
    }
  }
  std::string cmd = Cat("/etc/eks/bootstrap.sh ", ShellQuote(in.cluster_name),
                        " --apiserver-endpoint ", ShellQuote(in.cluster_endpoint));
  if (!in.ca_bundle.empty()) CatTo(&cmd, " --b64-cluster-ca ", ShellQuote(in.ca_bundle));
  const std::vector<std::string> dns = ClusterDns(in);
  if (!dns.empty()) CatTo(&cmd, " --dns-cluster-ip ", ShellQuote(dns.front()));
  if (in.max_pods.has_value()) cmd += " --use-max-pods false";
  if (in.raid0) cmd += " --local-disks raid0";
  if (!kubelet_args.empty()) {
    CatTo(&cmd, " --kubelet-extra-args ", ShellQuote(absl::StrJoin(kubelet_args, " ")));
  }
  return Cat("#!/bin/bash -xe\n",
             "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n",
             cmd, "\n");
}

absl::StatusOr<json> ParseToml(std::string_view text) { return TomlParser(text).Parse(); }

std::string WriteToml(const json& document) {
  std::string out;
  WriteTomlTable(out, document, "");
  return out;
}

json BottlerocketSettings(const BootstrapInputs& in) {
  json k = json::object();
  k["cluster-name"] = in.cluster_name;
  k["api-server"] = in.cluster_endpoint;
  if (!in.ca_bundle.empty()) k["cluster-certificate"] = in.ca_bundle;
  const std::vector<std::string> dns = ClusterDns(in);
  if (!dns.empty()) k["cluster-dns-ip"] = dns.size() == 1 ? json(dns.front()) : json(dns);
  if (in.max_pods.has_value()) k["max-pods"] = *in.max_pods;
  if (!in.labels.empty()) {
    json labels = json::object();
    for (const auto& [key, v] : in.labels) labels[key] = v;
    k["node-labels"] = std::move(labels);
  }
  if (!in.taints.empty()) {
    json taints = json::object();
    for (const core::Taint& t : in.taints) {
      json& list = taints[t.key];
      if (list.is_null()) list = json::array();
      list.push_back(Cat(t.value, ":", EffectName(t.effect)));
    }
    k["node-taints"] = std::move(taints);
  }
  if (in.kubelet.has_value()) {
    const awsv1::KubeletConfiguration& kc = *in.kubelet;
    if (!kc.system_reserved.empty()) k["system-reserved"] = MapJson(kc.system_reserved);
    if (!kc.kube_reserved.empty()) k["kube-reserved"] = MapJson(kc.kube_reserved);
    if (!kc.eviction_hard.empty()) k["eviction-hard"] = MapJson(kc.eviction_hard);
    if (!kc.eviction_soft.empty()) k["eviction-soft"] = MapJson(kc.eviction_soft);
    if (!kc.eviction_soft_grace_period.empty()) {
      k["eviction-soft-grace-period"] = MapJson(kc.eviction_soft_grace_period);
    }
    if (kc.eviction_max_pod_grace_period.has_value()) {
      k["eviction-max-pod-grace-period"] = *kc.eviction_max_pod_grace_period;
    }
    if (kc.image_gc_high_threshold_percent.has_value()) {
      k["image-gc-high-threshold-percent"] = *kc.image_gc_high_threshold_percent;
    }
    if (kc.image_gc_low_threshold_percent.has_value()) {
      k["image-gc-low-threshold-percent"] = *kc.image_gc_low_threshold_percent;
    }
    if (kc.cpu_cfs_quota.has_value()) k["cpu-cfs-quota-enforced"] = *kc.cpu_cfs_quota;
  }
  json doc = json::object();
  doc["settings"]["kubernetes"] = std::move(k);
  if (in.raid0) {
    doc["settings"]["bootstrap-commands"]["000-mount-instance-storage"] = {
        {"commands",
         json::array({json::array({"apiclient", "ephemeral-storage", "setup"}),
                      json::array({"apiclient", "ephemeral-storage", "bind", "--dirs",
                                   "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"})})},
        {"mode", "always"},
        {"essential", true}};
  }
  return doc;
}

absl::StatusOr<std::string> GenerateUserData(awsv1::AMIFamily family, const BootstrapInputs& in) {
  const std::string user = in.user_data.value_or("");
  RETURN_IF_ERROR(CheckSize(user.size(), kMaxUserDataBytes, "spec.userData"));
  switch (family) {
    case awsv1::AMIFamily::kCustom:
      return user;
    case awsv1::AMIFamily::kAL2023: {
      ASSIGN_OR_RETURN(std::vector<MimePart> parts, UserPartsForMime(user));
      parts.push_back({std::string(kNodeConfigContentType), Al2023NodeConfig(in)});
      return WriteMimeMultipart(parts);
    }
    case awsv1::AMIFamily::kAL2: {
      ASSIGN_OR_RETURN(std::vector<MimePart> parts, UserPartsForMime(user));
      parts.push_back({std::string(kShellContentType), Al2BootstrapScript(in)});
      return WriteMimeMultipart(parts);
    }
    case awsv1::AMIFamily::kBottlerocket: {
      json doc = json::object();
      if (!Trim(user).empty()) {
        ASSIGN_OR_RETURN(doc, ParseToml(user));
      }
      MergeInto(doc, BottlerocketSettings(in));
      return WriteToml(doc);
    }
    default:
      return absl::UnimplementedError("user data for Windows AMI families is not generated");
  }
}

}  // namespace dovetail::providers::aws
