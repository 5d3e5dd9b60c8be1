// The API server's list pages and watch streams as the informers read them: a List body, and a
// watch stream cut into chunks at arbitrary places, split into event lines (WatchLineSplitter)
// and parsed (ParseWatchEvent) with each object through DecodeOrIdentify and the Pod codec.
// Input layout: the first byte picks the chunk size (1-64 bytes) for the stream; the rest is used
// both as a List body and as the stream. Properties: the splitter hands out exactly the complete
// lines of the stream, in order, and keeps only the unterminated tail.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dovetail/common/absl_compat.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/string_pool.h"
#include "dovetail/kube/watch_event.h"
#include "simdjson.h"
#include "test/fuzz/fuzz_check.h"

namespace {

namespace kube = dovetail::kube;

absl::Status DecodePodObject(const kube::PodCodec& codec, simdjson::ondemand::object object,
                             simdjson::ondemand::document& doc) {
  kube::PodInfo pod;
  absl::Status decode_error;
  std::optional<kube::ObjectIdentity> skipped;
  return kube::DecodeOrIdentify(codec, object, doc, pod, decode_error, skipped);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk_size = 1 + data[0] % 64;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  kube::StringPool pool;
  const kube::DecodeContext ctx{.pool = &pool};
  const kube::PodCodec codec{&ctx};
  simdjson::ondemand::parser parser;

  std::string body(stream);
  kube::ListMeta meta;
  (void)kube::ParseList(parser, body, meta,
                        [&](simdjson::ondemand::object item, simdjson::ondemand::document& doc) {
                          return DecodePodObject(codec, item, doc);
                        });

  kube::WatchLineSplitter splitter;
  std::string lines_seen;
  for (size_t at = 0; at < stream.size(); at += chunk_size) {
    const std::string_view chunk = stream.substr(at, chunk_size);
    const absl::Status fed =
        splitter.Feed(chunk, [&](const char* line, size_t length, size_t capacity) -> absl::Status {
          FUZZ_CHECK(capacity >= length + simdjson::SIMDJSON_PADDING, "line without padding");
          lines_seen.append(line, length);
          lines_seen.push_back('\n');
          kube::WatchEventType type;
          std::string bookmark_rv;
          absl::Status error;
          (void)kube::ParseWatchEvent(
              parser, line, length, capacity, type, bookmark_rv, error,
              [&](simdjson::ondemand::object object, simdjson::ondemand::document& doc) {
                return DecodePodObject(codec, object, doc);
              });
          return absl::OkStatus();
        });
    FUZZ_CHECK(fed.ok(), fed.ToString());
  }
  // Every complete line came out once, in order; the unterminated rest is pending.
  const size_t last_newline = stream.rfind('\n');
  const size_t complete = last_newline == std::string_view::npos ? 0 : last_newline + 1;
  FUZZ_CHECK(splitter.pending() == stream.size() - complete,
             dovetail::Cat(splitter.pending(), " pending of ", stream.size() - complete));
  std::string expected;
  for (std::string_view rest = stream.substr(0, complete); !rest.empty();) {
    const size_t newline = rest.find('\n');
    if (newline > 0) dovetail::CatTo(&expected, rest.substr(0, newline), "\n");
    rest.remove_prefix(newline + 1);
  }
  FUZZ_CHECK(lines_seen == expected, "the lines handed out differ from the stream's lines");
  return 0;
}
