// One object as the API server sends it to an informer (a list item or a watch event's object),
// through every informer codec: the compact Pod and Node decoders (simdjson On-Demand) and the
// NodeClaim and NodePool codecs, by way of DecodeOrIdentify, the step informers run on every
// object. Properties: an object is either decoded or identified as skipped, never both; a decoded
// pod's affinity text parses or fails with a status.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/string_pool.h"
#include "simdjson.h"
#include "test/fuzz/fuzz_check.h"

namespace {

namespace kube = dovetail::kube;

template <typename Codec>
void Decode(const Codec& codec, std::string_view text) {
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc)) return;
  simdjson::ondemand::object object;
  if (doc.get_object().get(object)) return;
  typename Codec::Object out{};
  absl::Status decode_error;
  std::optional<kube::ObjectIdentity> skipped;
  const absl::Status status =
      kube::DecodeOrIdentify(codec, object, doc, out, decode_error, skipped);
  if (!status.ok()) return;
  FUZZ_CHECK(decode_error.ok() != skipped.has_value(), decode_error.ToString());
  if (skipped.has_value()) (void)skipped->Key();
  if constexpr (std::is_same_v<typename Codec::Object, kube::PodInfo>) {
    if (decode_error.ok()) {
      (void)out.RequestMilli("cpu");
      (void)out.meta.Key();
      (void)kube::ApproximateBytes(out);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kube::StringPool pool;
  const kube::DecodeContext ctx{.pool = &pool};
  Decode(kube::PodCodec{&ctx}, text);
  Decode(kube::NodeCodec{&ctx}, text);
  Decode(kube::ApiObjectCodec<dovetail::apis::v1::NodeClaim>{}, text);
  Decode(kube::ApiObjectCodec<dovetail::apis::v1::NodePool>{}, text);
  return 0;
}
