#include "dovetail/kube/resource.h"

#include <string>

#include "dovetail/common/absl_compat.h"

namespace dovetail::kube {

std::string Resource::api_version() const {
  return group.empty() ? std::string(version) : Cat(group, "/", version);
}

std::string ResourcePath(const Resource& resource, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path = resource.group.empty() ? Cat("/api/", resource.version)
                                            : Cat("/apis/", resource.group, "/", resource.version);
  if (resource.namespaced && !ns.empty()) CatTo(&path, "/namespaces/", ns);
  CatTo(&path, "/", resource.plural);
  if (!name.empty()) CatTo(&path, "/", name);
  if (!subresource.empty()) CatTo(&path, "/", subresource);
  return path;
}

}  // namespace dovetail::kube
