#include "dovetail/providers/aws/nodeclass/launch_templates.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws::nodeclass {

namespace awsv1 = apis::aws::v1;
namespace v1 = apis::v1;

namespace {

constexpr char kLaunchTemplatesLogger[] = "nodeclass";
constexpr std::string_view kNamePrefix = "karpenter.k8s.aws/";

bool Tagged(const std::map<std::string, std::string>& tags, std::string_view key,
            std::string_view value) {
  auto it = tags.find(std::string(key));
  return it != tags.end() && it->second == value;
}

}  // namespace

absl::StatusOr<std::vector<OwnedLaunchTemplate>> ListLaunchTemplates(Ec2Client& ec2,
                                                                     std::string_view cluster,
                                                                     std::string_view node_class) {
  std::vector<OwnedLaunchTemplate> out;
  std::string token;
  for (int page = 0; page < 1000; ++page) {
    QueryParams params;
    AddFilters(params,
               {{.name = Cat("tag:", v1::kTagEksClusterName), .values = {std::string(cluster)}},
                {.name = Cat("tag:", v1::kTagNodeClass), .values = {std::string(node_class)}}});
    params.emplace_back("MaxResults", "200");
    if (!token.empty()) params.emplace_back("NextToken", token);
    absl::StatusOr<std::unique_ptr<pugi::xml_document>> doc =
        ec2.Query("DescribeLaunchTemplates", params);
    if (!doc.ok()) return doc.status();
    const pugi::xml_node root = (*doc)->document_element();
    for (const pugi::xml_node item : root.child("launchTemplates").children("item")) {
      OwnedLaunchTemplate lt{.id = Text(item, "launchTemplateId"),
                             .name = Text(item, "launchTemplateName"),
                             .tags = ParseTagSet(item)};
      // The server filtered already; a server ignoring the filter must not widen the deletion.
      if (!lt.name.starts_with(kNamePrefix) || !Tagged(lt.tags, v1::kTagEksClusterName, cluster) ||
          !Tagged(lt.tags, v1::kTagNodeClass, node_class)) {
        continue;
      }
      out.push_back(std::move(lt));
    }
    token = Text(root, "nextToken");
    if (token.empty()) break;
  }
  std::sort(out.begin(), out.end(), [](const OwnedLaunchTemplate& a, const OwnedLaunchTemplate& b) {
    return a.name < b.name;
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const OwnedLaunchTemplate& a, const OwnedLaunchTemplate& b) {
                          return a.id == b.id;
                        }),
            out.end());
  return out;
}

absl::StatusOr<int> DeleteLaunchTemplates(Ec2Client& ec2,
                                          const std::vector<OwnedLaunchTemplate>& templates) {
  int deleted = 0;
  absl::Status first_error;
  for (const OwnedLaunchTemplate& lt : templates) {
    QueryParams params;
    if (!lt.id.empty()) {
      params.emplace_back("LaunchTemplateId", lt.id);
    } else {
      params.emplace_back("LaunchTemplateName", lt.name);
    }
    absl::StatusOr<std::unique_ptr<pugi::xml_document>> doc =
        ec2.Query("DeleteLaunchTemplate", params);
    if (doc.ok() || doc.status().code() == absl::StatusCode::kNotFound) {
      ++deleted;
      continue;
    }
    if (first_error.ok()) {
      first_error = absl::Status(
          doc.status().code(),
          Cat("deleting launch template ", lt.name, " (", lt.id, "): ", doc.status().message()));
    }
  }
  if (!first_error.ok()) return first_error;
  return deleted;
}

absl::StatusOr<LaunchTemplateFacts> DescribeLatestVersion(Ec2Client& ec2,
                                                          const OwnedLaunchTemplate& lt) {
  QueryParams params;
  if (!lt.id.empty()) {
    params.emplace_back("LaunchTemplateId", lt.id);
  } else {
    params.emplace_back("LaunchTemplateName", lt.name);
  }
  params.emplace_back("LaunchTemplateVersion.1", "$Latest");
  absl::StatusOr<std::unique_ptr<pugi::xml_document>> doc =
      ec2.Query("DescribeLaunchTemplateVersions", params);
  if (!doc.ok()) return doc.status();
  const pugi::xml_node root = (*doc)->document_element();
  // $Latest is one version; a server ignoring the version list answers with all of them: take the
  // highest number.
  pugi::xml_node latest;
  int64_t latest_number = -1;
  for (const pugi::xml_node item : root.child("launchTemplateVersionSet").children("item")) {
    const int64_t n = Int(item, "versionNumber");
    if (n > latest_number) {
      latest_number = n;
      latest = item;
    }
  }
  if (!latest) {
    return absl::NotFoundError(Cat("launch template ", lt.name, " has no version"));
  }
  const pugi::xml_node data = latest.child("launchTemplateData");
  LaunchTemplateFacts facts;
  facts.image_id = Text(data, "imageId");
  facts.instance_profile = Text(data.child("iamInstanceProfile"), "name");
  facts.security_group_ids = Items(data, "securityGroupIdSet");
  for (const pugi::xml_node ni : data.child("networkInterfaceSet").children("item")) {
    for (std::string& g : Items(ni, "groupSet")) facts.security_group_ids.push_back(std::move(g));
  }
  std::sort(facts.security_group_ids.begin(), facts.security_group_ids.end());
  return facts;
}

std::string ObsoleteReason(const LaunchTemplateFacts& facts,
                           const awsv1::EC2NodeClassStatus& status) {
  if (!status.amis.empty() && !facts.image_id.empty() &&
      std::none_of(status.amis.begin(), status.amis.end(),
                   [&](const awsv1::AMI& a) { return a.id == facts.image_id; })) {
    return Cat("image ", facts.image_id, " is no longer in status.amis");
  }
  if (!status.security_groups.empty()) {
    std::set<std::string> want;
    for (const awsv1::SecurityGroup& g : status.security_groups) want.insert(g.id);
    const std::set<std::string> have(facts.security_group_ids.begin(),
                                     facts.security_group_ids.end());
    if (want != have) {
      return Cat("security groups [", absl::StrJoin(have, ","),
                 "] differ from status.securityGroups");
    }
  }
  if (!status.instance_profile.empty() && facts.instance_profile != status.instance_profile) {
    return Cat("instance profile \"", facts.instance_profile, "\" is not status.instanceProfile");
  }
  return "";
}

absl::StatusOr<int> CollectObsoleteLaunchTemplates(Ec2Client& ec2, std::string_view cluster,
                                                   const awsv1::EC2NodeClass& node_class) {
  absl::StatusOr<std::vector<OwnedLaunchTemplate>> templates =
      ListLaunchTemplates(ec2, cluster, node_class.metadata.name);
  if (!templates.ok()) return templates.status();
  std::vector<OwnedLaunchTemplate> obsolete;
  for (const OwnedLaunchTemplate& lt : *templates) {
    absl::StatusOr<LaunchTemplateFacts> facts = DescribeLatestVersion(ec2, lt);
    if (!facts.ok()) {
      if (facts.status().code() != absl::StatusCode::kNotFound) return facts.status();
      continue;  // gone meanwhile, or never had a version
    }
    std::string reason = ObsoleteReason(*facts, node_class.status);
    if (reason.empty()) continue;
    log::Info(kLaunchTemplatesLogger, "deleting an obsolete launch template",
              {{"ec2nodeclass", node_class.metadata.name},
               {"launchTemplate", lt.name},
               {"id", lt.id},
               {"reason", reason}});
    obsolete.push_back(lt);
  }
  return DeleteLaunchTemplates(ec2, obsolete);
}

}  // namespace dovetail::providers::aws::nodeclass
