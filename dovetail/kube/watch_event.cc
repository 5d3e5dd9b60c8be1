#include "dovetail/kube/watch_event.h"

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/wire.h"

namespace dovetail::kube {
namespace {

using simdjson::ondemand::object;
using simdjson::ondemand::value;

absl::Status ReadListMeta(value v, ListMeta& meta) {
  object obj;
  SJ_GET(v.get_object(), obj, "list metadata");
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    SJ_GET(field_result, field, "list metadata");
    std::string_view key;
    SJ_GET(field.unescaped_key(), key, "list metadata");
    if (key == "resourceVersion" || key == "continue") {
      std::string_view s;
      SJ_GET(field.value().get_string(), s, "list metadata");
      (key == "continue" ? meta.continue_token : meta.resource_version).assign(s);
    }
  }
  return absl::OkStatus();
}

// metadata.resourceVersion of a bookmark's object.
absl::Status ReadBookmark(object obj, std::string& rv) {
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    SJ_GET(field_result, field, "bookmark");
    std::string_view key;
    SJ_GET(field.unescaped_key(), key, "bookmark");
    if (key != "metadata") continue;
    ListMeta meta;
    RETURN_IF_ERROR(ReadListMeta(field.value(), meta));
    rv = meta.resource_version;
  }
  return absl::OkStatus();
}

absl::Status ReadErrorStatus(object obj) {
  std::string_view raw;
  SJ_GET(obj.raw_json(), raw, "watch error");
  int64_t code = 500;
  // A second, tiny parse of the Status object (errors are rare).
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(raw);
  simdjson::ondemand::document doc;
  if (!parser.iterate(padded).get(doc)) {
    int64_t c = 0;
    if (!doc["code"].get_int64().get(c)) code = c;
  }
  return StatusFromHttp(static_cast<int>(code), raw);
}

}  // namespace

absl::Status ParseList(simdjson::ondemand::parser& parser, std::string& body, ListMeta& meta,
                       ObjectCallback on_item) {
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  simdjson::ondemand::document doc;
  SJ_GET(parser.iterate(body.data(), body.size(), body.capacity()), doc, "list");
  object root;
  SJ_GET(doc.get_object(), root, "list");
  for (auto field_result : root) {
    simdjson::ondemand::field field;
    SJ_GET(field_result, field, "list");
    std::string_view key;
    SJ_GET(field.unescaped_key(), key, "list");
    if (key == "metadata") {
      RETURN_IF_ERROR(ReadListMeta(field.value(), meta));
    } else if (key == "items") {
      value items = field.value();
      simdjson::ondemand::json_type type;
      SJ_GET(items.type(), type, "list items");
      if (type == simdjson::ondemand::json_type::null) continue;
      simdjson::ondemand::array arr;
      SJ_GET(items.get_array(), arr, "list items");
      for (auto item_result : arr) {
        object item;
        SJ_GET(item_result.get_object(), item, "list item");
        RETURN_IF_ERROR(on_item(item, doc));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ParseWatchEvent(simdjson::ondemand::parser& parser, const char* line, size_t length,
                             size_t capacity, WatchEventType& type, std::string& bookmark_rv,
                             absl::Status& error, ObjectCallback on_object) {
  simdjson::ondemand::document doc;
  SJ_GET(parser.iterate(line, length, capacity), doc, "watch event");
  object root;
  SJ_GET(doc.get_object(), root, "watch event");
  bool have_type = false;
  for (auto field_result : root) {
    simdjson::ondemand::field field;
    SJ_GET(field_result, field, "watch event");
    std::string_view key;
    SJ_GET(field.unescaped_key(), key, "watch event");
    if (key == "type") {
      std::string_view t;
      SJ_GET(field.value().get_string(), t, "watch event type");
      have_type = true;
      if (t == "ADDED") {
        type = WatchEventType::kAdded;
      } else if (t == "MODIFIED") {
        type = WatchEventType::kModified;
      } else if (t == "DELETED") {
        type = WatchEventType::kDeleted;
      } else if (t == "BOOKMARK") {
        type = WatchEventType::kBookmark;
      } else if (t == "ERROR") {
        type = WatchEventType::kError;
      } else {
        return absl::InvalidArgumentError(Cat("watch event: unknown type ", t));
      }
    } else if (key == "object") {
      // The API server always writes "type" first.
      if (!have_type) return absl::InvalidArgumentError("watch event: object before type");
      object obj;
      SJ_GET(field.value().get_object(), obj, "watch event object");
      switch (type) {
        case WatchEventType::kBookmark:
          RETURN_IF_ERROR(ReadBookmark(obj, bookmark_rv));
          break;
        case WatchEventType::kError:
          error = ReadErrorStatus(obj);
          break;
        default:
          RETURN_IF_ERROR(on_object(obj, doc));
      }
    }
  }
  if (!have_type) return absl::InvalidArgumentError("watch event without type");
  return absl::OkStatus();
}

absl::Status WatchLineSplitter::Feed(
    std::string_view chunk, absl::FunctionRef<absl::Status(const char*, size_t, size_t)> on_line) {
  buffer_.reserve(buffer_.size() + chunk.size() + simdjson::SIMDJSON_PADDING);
  buffer_.append(chunk.data(), chunk.size());
  size_t start = 0;
  absl::Status status;
  while (status.ok()) {
    const size_t newline = buffer_.find('\n', start);
    if (newline == std::string::npos) break;
    if (newline > start) {
      status = on_line(buffer_.data() + start, newline - start, buffer_.capacity() - start);
    }
    start = newline + 1;
  }
  buffer_.erase(0, start);
  return status;
}

}  // namespace dovetail::kube
