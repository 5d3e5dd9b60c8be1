#include "dovetail/apis/core/pod_requests.h"

#include <string_view>
#include <vector>

namespace dovetail::apis::core {
namespace {

void AddTo(ResourceList& total, const ResourceList& add) {
  for (const auto& [name, quantity] : add) total[name] += quantity;
}

void MaxInto(ResourceList& total, const ResourceList& other) {
  for (const auto& [name, quantity] : other) {
    auto it = total.find(name);
    if (it == total.end()) {
      total.emplace(name, quantity);
    } else if (quantity > it->second) {
      it->second = quantity;
    }
  }
}

bool IsPodLevelResource(std::string_view name) { return name == "cpu" || name == "memory"; }

const ContainerStatus* FindStatus(const std::vector<ContainerStatus>* statuses,
                                  std::string_view name) {
  if (statuses == nullptr) return nullptr;
  for (const ContainerStatus& status : *statuses) {
    if (status.name == name) return &status;
  }
  return nullptr;
}

ResourceList ContainerRequests(const Container& container, const ContainerStatus* status) {
  ResourceList requests = container.resources.requests;
  if (status != nullptr) MaxInto(requests, status->allocated_resources);
  return requests;
}

ResourceList Compute(const PodSpec& spec, const PodStatus* status,
                     const PodRequestsOptions& options) {
  const bool use_status = status != nullptr && options.use_status_resources;
  const std::vector<ContainerStatus>* container_statuses =
      use_status ? &status->container_statuses : nullptr;
  const std::vector<ContainerStatus>* init_statuses =
      use_status ? &status->init_container_statuses : nullptr;

  ResourceList requests;
  for (const Container& container : spec.containers) {
    AddTo(requests, ContainerRequests(container, FindStatus(container_statuses, container.name)));
  }

  ResourceList sidecars_so_far;
  ResourceList init_peak;
  for (const Container& container : spec.init_containers) {
    if (IsRestartableInitContainer(container)) {
      const ResourceList own =
          ContainerRequests(container, FindStatus(init_statuses, container.name));
      AddTo(requests, own);
      AddTo(sidecars_so_far, own);
      MaxInto(init_peak, sidecars_so_far);
    } else {
      ResourceList during = ContainerRequests(container, nullptr);
      AddTo(during, sidecars_so_far);
      MaxInto(init_peak, during);
    }
  }
  MaxInto(requests, init_peak);

  if (options.use_pod_level_resources && spec.resources.has_value()) {
    for (const auto& [name, quantity] : spec.resources->requests) {
      if (IsPodLevelResource(name)) requests[name] = quantity;
    }
  }
  if (options.include_overhead) AddTo(requests, spec.overhead);
  if (options.include_pod_count) requests["pods"] += Quantity::FromUnits(1);
  return requests;
}

}  // namespace

ResourceList PodRequests(const Pod& pod, const PodRequestsOptions& options) {
  return Compute(pod.spec, &pod.status, options);
}

ResourceList PodRequests(const PodSpec& spec, const PodRequestsOptions& options) {
  return Compute(spec, nullptr, options);
}

void DefaultRequestsFromLimits(PodSpec& spec) {
  auto apply = [](std::vector<Container>& containers) {
    for (Container& container : containers) {
      for (const auto& [name, limit] : container.resources.limits) {
        container.resources.requests.try_emplace(name, limit);
      }
    }
  };
  apply(spec.init_containers);
  apply(spec.containers);
}

}  // namespace dovetail::apis::core
