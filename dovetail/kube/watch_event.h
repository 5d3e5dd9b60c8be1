// Parsing of the API server's list and watch wire formats with simdjson On-Demand, shared by the
// informers: a List body (metadata.resourceVersion/continue and the items, each handed to a
// callback positioned at the item's object), and newline-delimited watch events
// ({"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}).
// A WatchLineSplitter reassembles event lines from the arbitrary chunks a stream delivers, into
// a buffer with the padding simdjson needs, so no line is copied again.
// Thread-compatible: one parser per informer thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "simdjson.h"

namespace dovetail::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// Called with one list item or watch event object and the document it is read from. After a
// read of the object fails, the document may be dead (simdjson abandons a structure it cannot
// walk: document::is_alive() is false), and then nothing more of it may be read.
using ObjectCallback =
    absl::FunctionRef<absl::Status(simdjson::ondemand::object, simdjson::ondemand::document&)>;

struct ListMeta {
  std::string resource_version;
  std::string continue_token;
};

// Parses a List body. `on_item` is called for every element of `items`.
absl::Status ParseList(simdjson::ondemand::parser& parser, std::string& body, ListMeta& meta,
                       ObjectCallback on_item);

// Parses one watch event line (which must be followed by SIMDJSON_PADDING readable bytes, as
// the splitter guarantees). For ADDED/MODIFIED/DELETED `on_object` gets the object. For BOOKMARK
// `bookmark_rv` receives metadata.resourceVersion; for ERROR `error` receives the Status (its
// HTTP code and reason through errors.h, e.g. IsGone()).
absl::Status ParseWatchEvent(simdjson::ondemand::parser& parser, const char* line, size_t length,
                             size_t capacity, WatchEventType& type, std::string& bookmark_rv,
                             absl::Status& error, ObjectCallback on_object);

class WatchLineSplitter {
 public:
  // Appends a chunk and calls `on_line(data, length, readable_capacity)` for each complete line.
  // Stops early and returns the first error `on_line` returns.
  absl::Status Feed(std::string_view chunk,
                    absl::FunctionRef<absl::Status(const char*, size_t, size_t)> on_line);
  void Reset() { buffer_.clear(); }
  size_t pending() const { return buffer_.size(); }

 private:
  std::string buffer_;
};

}  // namespace dovetail::kube
