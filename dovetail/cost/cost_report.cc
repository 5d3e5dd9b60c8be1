#include "dovetail/cost/cost_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dovetail/common/saturating.h"

namespace dovetail::cost {
namespace {

std::optional<double> Ratio(int64_t part, int64_t whole) {
  if (whole <= 0) return std::nullopt;
  return static_cast<double>(part) / static_cast<double>(whole);
}

// Unmanaged nodes ("") sort after every NodePool.
bool PoolLess(const std::string& a, const std::string& b) {
  if (a.empty() != b.empty()) return b.empty();
  return a < b;
}

void Add(Totals& t, const MachineCost& m) {
  ++t.nodes;
  if (m.machine.status == MachineStatus::kLaunching) {
    ++t.launching_nodes;
  } else if (m.price_per_hour.has_value()) {
    ++t.priced_nodes;
    t.cost_per_hour += *m.price_per_hour;
  } else {
    ++t.unpriced_nodes;
  }
  t.cpu_requested_milli = SaturatingAdd(t.cpu_requested_milli, m.machine.cpu_requested_milli);
  t.cpu_allocatable_milli = SaturatingAdd(t.cpu_allocatable_milli, m.machine.cpu_allocatable_milli);
  t.memory_requested_bytes =
      SaturatingAdd(t.memory_requested_bytes, m.machine.memory_requested_bytes);
  t.memory_allocatable_bytes =
      SaturatingAdd(t.memory_allocatable_bytes, m.machine.memory_allocatable_bytes);
  t.pods += m.machine.pods;
}

nlohmann::json Nullable(const std::optional<double>& v) {
  return v.has_value() ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json Usage(int64_t cpu_req, int64_t cpu_alloc, int64_t mem_req, int64_t mem_alloc) {
  return {{"cpu",
           {{"requestedMillicores", cpu_req},
            {"allocatableMillicores", cpu_alloc},
            {"utilisation", Nullable(Ratio(cpu_req, cpu_alloc))}}},
          {"memory",
           {{"requestedBytes", mem_req},
            {"allocatableBytes", mem_alloc},
            {"utilisation", Nullable(Ratio(mem_req, mem_alloc))}}}};
}

nlohmann::json TotalsJson(const Totals& t) {
  nlohmann::json j = {{"nodes", t.nodes},
                      {"pricedNodes", t.priced_nodes},
                      {"unpricedNodes", t.unpriced_nodes},
                      {"launchingNodes", t.launching_nodes},
                      {"costPerHour", t.cost_per_hour},
                      {"costPerMonth", t.cost_per_month},
                      {"pods", t.pods}};
  j.update(Usage(t.cpu_requested_milli, t.cpu_allocatable_milli, t.memory_requested_bytes,
                 t.memory_allocatable_bytes));
  return j;
}

std::string Percent(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.0f%%", *v * 100) : "-";
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace

std::string_view MachineStatusName(MachineStatus status) {
  switch (status) {
    case MachineStatus::kRegistered:
      return "registered";
    case MachineStatus::kLaunched:
      return "launched";
    case MachineStatus::kLaunching:
      return "launching";
  }
  return "registered";
}

std::optional<double> OfferingPrice(const cloudprovider::Catalog& catalog,
                                    std::string_view instance_type, std::string_view zone,
                                    std::string_view capacity_type) {
  if (instance_type.empty() || zone.empty() || capacity_type.empty()) return std::nullopt;
  const cloudprovider::InstanceType* type = catalog.Find(instance_type);
  if (type == nullptr) return std::nullopt;
  for (const cloudprovider::Offering& o : type->offerings()) {
    if (o.zone != zone || o.capacity_type != capacity_type) continue;
    if (!o.available && o.price <= 0) return std::nullopt;
    return o.price;
  }
  return std::nullopt;
}

PriceLookup CatalogPriceLookup(const cloudprovider::Catalog& catalog) {
  return [&catalog](std::string_view type, std::string_view zone, std::string_view ct) {
    return OfferingPrice(catalog, type, zone, ct);
  };
}

Report Compute(std::vector<Machine> machines, const PriceLookup& prices, absl::Time now,
               const ComputeOptions& options) {
  Report report;
  report.generated_at = now;
  if (!options.only_node_pool.empty()) {
    std::erase_if(machines,
                  [&](const Machine& m) { return m.node_pool != options.only_node_pool; });
  }
  std::sort(machines.begin(), machines.end(), [](const Machine& a, const Machine& b) {
    if (a.node_pool != b.node_pool) return PoolLess(a.node_pool, b.node_pool);
    return a.name < b.name;
  });
  std::map<std::string, Totals, decltype(&PoolLess)> pools(&PoolLess);
  for (const std::string& name : options.node_pools) {
    if (options.only_node_pool.empty() || name == options.only_node_pool) {
      pools[name].node_pool = name;
    }
  }
  if (!options.only_node_pool.empty())
    pools[options.only_node_pool].node_pool = options.only_node_pool;
  for (Machine& m : machines) {
    MachineCost mc;
    if (m.status != MachineStatus::kLaunching) {
      mc.price_per_hour = prices(m.instance_type, m.zone, m.capacity_type);
    }
    mc.age = m.created == absl::InfinitePast() ? absl::ZeroDuration()
                                               : std::max(absl::ZeroDuration(), now - m.created);
    mc.cpu_utilisation = Ratio(m.cpu_requested_milli, m.cpu_allocatable_milli);
    mc.memory_utilisation = Ratio(m.memory_requested_bytes, m.memory_allocatable_bytes);
    mc.machine = std::move(m);
    Totals& pool = pools[mc.machine.node_pool];
    pool.node_pool = mc.machine.node_pool;
    Add(pool, mc);
    Add(report.total, mc);
    report.machines.push_back(std::move(mc));
  }
  for (auto& [name, totals] : pools) {
    totals.cost_per_month = totals.cost_per_hour * kHoursPerMonth;
    report.node_pools.push_back(totals);
  }
  report.total.cost_per_month = report.total.cost_per_hour * kHoursPerMonth;

  std::vector<std::string> unpriced, launched;
  for (const MachineCost& m : report.machines) {
    if (m.machine.status != MachineStatus::kLaunching && !m.price_per_hour.has_value()) {
      unpriced.push_back(m.machine.name);
    }
    if (m.machine.status == MachineStatus::kLaunched) launched.push_back(m.machine.name);
  }
  if (!unpriced.empty()) {
    report.notes.push_back(
        absl::StrCat(unpriced.size(),
                     " node(s) with no known price (not in the catalog, or missing the "
                     "instance-type, zone or capacity-type label), left out of the totals: ",
                     absl::StrJoin(unpriced, ", ")));
  }
  if (!launched.empty()) {
    report.notes.push_back(absl::StrCat(launched.size(),
                                        " NodeClaim(s) launched but not registered yet, counted "
                                        "in the totals: ",
                                        absl::StrJoin(launched, ", ")));
  }
  if (report.total.launching_nodes > 0) {
    report.notes.push_back(
        absl::StrCat(report.total.launching_nodes, " NodeClaim(s) not launched yet, not counted"));
  }
  return report;
}

nlohmann::json ToJson(const Report& report, std::string_view cloud_provider) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const MachineCost& m : report.machines) {
    nlohmann::json j = {
        {"name", m.machine.name},
        {"nodeClaim", m.machine.node_claim},
        {"nodePool", m.machine.node_pool},
        {"instanceType", m.machine.instance_type},
        {"capacityType", m.machine.capacity_type},
        {"zone", m.machine.zone},
        {"status", std::string(MachineStatusName(m.machine.status))},
        {"deleting", m.machine.deleting},
        {"createdAt", m.machine.created == absl::InfinitePast()
                          ? nlohmann::json(nullptr)
                          : nlohmann::json(absl::FormatTime(absl::RFC3339_sec, m.machine.created,
                                                            absl::UTCTimeZone()))},
        {"ageSeconds", absl::ToInt64Seconds(m.age)},
        {"pricePerHour", Nullable(m.price_per_hour)},
        {"pricePerMonth", Nullable(m.price_per_hour.has_value()
                                       ? std::optional<double>(*m.price_per_hour * kHoursPerMonth)
                                       : std::nullopt)},
        {"pods", m.machine.pods}};
    j.update(Usage(m.machine.cpu_requested_milli, m.machine.cpu_allocatable_milli,
                   m.machine.memory_requested_bytes, m.machine.memory_allocatable_bytes));
    nodes.push_back(std::move(j));
  }
  nlohmann::json pools = nlohmann::json::array();
  for (const Totals& t : report.node_pools) {
    nlohmann::json j = {{"name", t.node_pool}};
    j.update(TotalsJson(t));
    pools.push_back(std::move(j));
  }
  return {{"apiVersion", "dovetail.sh/v1alpha1"},
          {"kind", "CostReport"},
          {"generatedAt",
           absl::FormatTime(absl::RFC3339_sec, report.generated_at, absl::UTCTimeZone())},
          {"cloudProvider", std::string(cloud_provider)},
          {"currency", "USD"},
          {"hoursPerMonth", kHoursPerMonth},
          {"nodes", std::move(nodes)},
          {"nodePools", std::move(pools)},
          {"total", TotalsJson(report.total)},
          {"notes", report.notes}};
}

std::string ToTable(const Report& report) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "NODEPOOL", "INSTANCE-TYPE", "CAPACITY",
                                                 "ZONE", "AGE", "$/HOUR", "CPU", "MEMORY", "PODS"}};
  bool any_launched = false;
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  for (const MachineCost& m : report.machines) {
    std::string name = m.machine.name;
    if (m.machine.status == MachineStatus::kLaunched) {
      name += "*";
      any_launched = true;
    } else if (m.machine.status == MachineStatus::kLaunching) {
      name += " (launching)";
    }
    std::string price = m.machine.status == MachineStatus::kLaunching ? "-"
                        : m.price_per_hour.has_value() ? absl::StrFormat("%.4f", *m.price_per_hour)
                                                       : "?";
    rows.push_back({name, or_dash(m.machine.node_pool), or_dash(m.machine.instance_type),
                    or_dash(m.machine.capacity_type), or_dash(m.machine.zone), FormatAge(m.age),
                    price, Percent(m.cpu_utilisation), Percent(m.memory_utilisation),
                    absl::StrCat(m.machine.pods)});
  }
  std::string out = Table(rows);
  std::vector<std::vector<std::string>> totals = {
      {"NODEPOOL", "NODES", "$/HOUR", "$/MONTH", "CPU", "MEMORY", "PODS"}};
  auto total_row = [](std::string name, const Totals& t) {
    std::string nodes = absl::StrCat(t.nodes);
    if (t.unpriced_nodes > 0) absl::StrAppend(&nodes, " (", t.unpriced_nodes, " ?)");
    return std::vector<std::string>{
        std::move(name),
        nodes,
        absl::StrFormat("%.4f", t.cost_per_hour),
        absl::StrFormat("%.2f", t.cost_per_month),
        Percent(Ratio(t.cpu_requested_milli, t.cpu_allocatable_milli)),
        Percent(Ratio(t.memory_requested_bytes, t.memory_allocatable_bytes)),
        absl::StrCat(t.pods)};
  };
  for (const Totals& t : report.node_pools) totals.push_back(total_row(or_dash(t.node_pool), t));
  totals.push_back(total_row("TOTAL", report.total));
  absl::StrAppend(&out, "\n", Table(totals));
  if (any_launched) absl::StrAppend(&out, "\n* launched, Node not registered yet\n");
  for (const std::string& note : report.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

std::string FormatAge(absl::Duration age) {
  const int64_t s = absl::ToInt64Seconds(age);
  if (s < 120) return absl::StrCat(s, "s");
  if (s < 2 * 3600) return absl::StrCat(s / 60, "m");
  if (s < 2 * 86400) return absl::StrCat(s / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

}  // namespace dovetail::cost
