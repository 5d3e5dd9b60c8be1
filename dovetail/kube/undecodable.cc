#include "dovetail/kube/undecodable.h"

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "dovetail/common/log.h"
#include "simdjson.h"

namespace dovetail::kube {
namespace {

// Reads the string fields of `metadata` that ObjectIdentity holds; stops at the first field that
// cannot be read.
void ReadIdentityFields(simdjson::ondemand::object metadata, ObjectIdentity& id) {
  for (auto field_result : metadata) {
    simdjson::ondemand::field field;
    if (std::move(field_result).get(field)) return;
    std::string_view key;
    if (field.unescaped_key().get(key)) return;
    std::string* out = key == "name"              ? &id.name
                       : key == "namespace"       ? &id.namespace_
                       : key == "resourceVersion" ? &id.resource_version
                                                  : nullptr;
    if (out == nullptr) continue;
    std::string_view text;
    if (field.value().get_string().get(text)) continue;  // not a string: left empty
    out->assign(text);
  }
}

}  // namespace

std::string ObjectIdentity::Key() const {
  if (name.empty()) return "";
  if (namespace_.empty()) return name;
  return namespace_ + "/" + name;
}

ObjectIdentity ReadObjectIdentity(std::string_view object_json) {
  ObjectIdentity id;
  // A second parse of one object's text: only for objects that failed to decode.
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(object_json);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc)) return id;
  simdjson::ondemand::object root;
  if (doc.get_object().get(root)) return id;
  for (auto field_result : root) {
    simdjson::ondemand::field field;
    if (std::move(field_result).get(field)) return id;
    std::string_view key;
    if (field.unescaped_key().get(key)) return id;
    if (key != "metadata") continue;
    simdjson::ondemand::object metadata;
    if (field.value().get_object().get(metadata)) return id;
    ReadIdentityFields(metadata, id);
    return id;
  }
  return id;
}

UndecodableReports::UndecodableReports(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

bool UndecodableReports::FirstReport(std::string_view kind, const ObjectIdentity& id) {
  // ' ' and '@' appear in no kind, namespace or name (DNS subdomains and labels).
  std::string entry = std::string(kind) + " " + id.Key() + "@" + id.resource_version;
  absl::MutexLock lock(&mu_);
  if (seen_.contains(entry)) return false;
  if (order_.size() == capacity_) {
    seen_.erase(order_.front());
    order_.pop_front();
  }
  seen_.insert(entry);
  order_.push_back(std::move(entry));
  return true;
}

size_t UndecodableReports::size() const {
  absl::MutexLock lock(&mu_);
  return order_.size();
}

void LogUndecodable(std::string_view kind, const ObjectIdentity& id, const absl::Status& error) {
  log::Error("informer", "skipped an object that cannot be decoded",
             {{"kind", std::string(kind)},
              {"namespace", id.namespace_},
              {"name", id.name.empty() ? "<unreadable>" : id.name},
              {"resourceVersion", id.resource_version},
              {"error", std::string(error.message())}});
}

}  // namespace dovetail::kube
