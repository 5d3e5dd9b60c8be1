#include "dovetail/cost/from_state.h"

#include <string>

#include "dovetail/apis/v1/labels.h"

namespace dovetail::cost {
namespace {

int64_t Milli(const ResourceList& list, std::string_view name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}

std::string Label(const apis::core::StringMap& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

}  // namespace

Machine MachineFromStateNode(const state::StateNode& node) {
  Machine m;
  m.name = node.Name();
  m.node_pool = node.NodePool();
  const apis::core::StringMap labels = node.Labels();
  m.instance_type = Label(labels, apis::v1::kLabelInstanceType);
  m.capacity_type = Label(labels, apis::v1::kCapacityTypeLabelKey);
  m.zone = Label(labels, apis::v1::kLabelTopologyZone);
  if (node.node_claim != nullptr) {
    m.node_claim = node.node_claim->metadata.name;
    if (node.node_claim->metadata.creation_timestamp.has_value()) {
      m.created = *node.node_claim->metadata.creation_timestamp;
    }
  } else if (node.node != nullptr) {
    m.created = node.node->meta.creation;
  }
  if (node.node != nullptr && (!node.Managed() || node.Registered())) {
    m.status = MachineStatus::kRegistered;
  } else if (node.Launched()) {
    m.status = MachineStatus::kLaunched;
  } else {
    m.status = MachineStatus::kLaunching;
  }
  m.deleting = node.Deleting();
  const ResourceList allocatable = node.Allocatable();
  m.cpu_allocatable_milli = Milli(allocatable, "cpu");
  m.memory_allocatable_bytes = Milli(allocatable, "memory") / 1000;
  return m;
}

std::vector<Machine> MachinesFromCluster(const state::Cluster& cluster) {
  std::vector<Machine> out;
  for (const state::StateNode& node : cluster.Nodes()) {
    Machine m = MachineFromStateNode(node);
    if (node.node != nullptr) {
      const ResourceList requests = cluster.PodRequests(m.name);
      m.cpu_requested_milli = Milli(requests, "cpu");
      m.memory_requested_bytes = Milli(requests, "memory") / 1000;
      m.pods = static_cast<int64_t>(cluster.PodsOn(m.name).size());
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace dovetail::cost
