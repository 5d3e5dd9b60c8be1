// Objects an informer cannot decode. One such object (a Pod whose fields the decoder refuses, a
// Node with a tampered status, any JSON that is not the kind's shape) must never stall the whole
// kind: Informer (informer.h) skips it and reports it through this file.
//  - ReadObjectIdentity reads an object's metadata.namespace/name/resourceVersion from its raw
//    JSON text alone, so the skipped object can be named in the log and, for a DELETED watch
//    event, still deleted from the cache by key.
//  - UndecodableReports remembers which (kind, namespace/name, resourceVersion) versions were
//    already reported, so each is logged once however often lists and watches carry it and
//    however many informers watch its kind (the operator shares one among all its informers:
//    several controllers have a NodePool informer of their own); its memory is bounded (the
//    oldest entries are forgotten first).
//  - LogUndecodable writes the one log line.
// Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace dovetail::kube {

// Counter labelled `kind`: objects an informer skipped because they did not decode, once per list
// item or watch event that carried one (docs/metrics.md).
inline constexpr char kInformerDecodeErrorsMetric[] = "dovetail_informer_decode_errors_total";

struct ObjectIdentity {
  std::string namespace_;
  std::string name;
  std::string resource_version;

  // "namespace/name", "name" for cluster-scoped objects (the informer's store keys), "" when the
  // name could not be read.
  std::string Key() const;
};

// metadata.namespace, metadata.name and metadata.resourceVersion of one object's JSON text. Never
// fails: a field that is missing, not a string or beyond malformed JSON is left empty.
ObjectIdentity ReadObjectIdentity(std::string_view object_json);

class UndecodableReports {
 public:
  static constexpr size_t kDefaultCapacity = 4096;

  // `capacity` (at least 1): how many versions are remembered.
  explicit UndecodableReports(size_t capacity = kDefaultCapacity);

  // True the first time (kind, `id`'s key, its resourceVersion) is seen, and again only after it
  // was forgotten to make room for newer ones. Identities of one kind without a name share one
  // entry.
  bool FirstReport(std::string_view kind, const ObjectIdentity& id);

  size_t size() const;

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);  // oldest first
  absl::flat_hash_set<std::string> seen_ ABSL_GUARDED_BY(mu_);
};

// Logs (level error, logger "informer") that an object of `kind` was skipped: its namespace,
// name, resourceVersion and the decode error.
void LogUndecodable(std::string_view kind, const ObjectIdentity& id, const absl::Status& error);

}  // namespace dovetail::kube
