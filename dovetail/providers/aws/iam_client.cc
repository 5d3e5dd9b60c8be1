#include "dovetail/providers/aws/iam_client.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/hash/drift_hash.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::providers::aws {
namespace {

void AddTags(QueryParams& params, const IamTags& tags) {
  int i = 0;
  for (const auto& [k, v] : tags) {
    ++i;
    params.emplace_back(absl::StrCat("Tags.member.", i, ".Key"), k);
    params.emplace_back(absl::StrCat("Tags.member.", i, ".Value"), v);
  }
}

// <Action>Response/<Action>Result.
pugi::xml_node Result(const pugi::xml_document& doc, std::string_view action) {
  return doc.document_element().child(Cat(action, "Result").c_str());
}

}  // namespace

IamInstanceProfile ParseInstanceProfile(const pugi::xml_node& node) {
  IamInstanceProfile p;
  p.name = Text(node, "InstanceProfileName");
  p.id = Text(node, "InstanceProfileId");
  p.arn = Text(node, "Arn");
  p.path = Text(node, "Path");
  p.create_date = Text(node, "CreateDate");
  for (pugi::xml_node r : node.child("Roles").children("member")) {
    p.roles.push_back({.role_name = Text(r, "RoleName"),
                       .role_id = Text(r, "RoleId"),
                       .arn = Text(r, "Arn"),
                       .path = Text(r, "Path")});
  }
  for (pugi::xml_node t : node.child("Tags").children("member")) {
    p.tags[Text(t, "Key")] = Text(t, "Value");
  }
  return p;
}

absl::StatusOr<std::unique_ptr<pugi::xml_document>> IamClient::Query(std::string_view action,
                                                                     const QueryParams& params) {
  return CallQuery(client_, action, kIamApiVersion, params);
}

absl::StatusOr<IamInstanceProfile> IamClient::CreateInstanceProfile(std::string_view name,
                                                                    std::string_view path,
                                                                    const IamTags& tags) {
  QueryParams params{{"InstanceProfileName", std::string(name)},
                     {"Path", path.empty() ? "/" : std::string(path)}};
  AddTags(params, tags);
  ASSIGN_OR_RETURN(auto doc, Query("CreateInstanceProfile", params));
  pugi::xml_node node = Result(*doc, "CreateInstanceProfile").child("InstanceProfile");
  if (!node) return absl::InternalError("iam:CreateInstanceProfile: no InstanceProfile");
  IamInstanceProfile p = ParseInstanceProfile(node);
  if (p.tags.empty()) p.tags = tags;  // the response echoes tags only in some implementations
  return p;
}

absl::StatusOr<IamInstanceProfile> IamClient::GetInstanceProfile(std::string_view name) {
  ASSIGN_OR_RETURN(auto doc,
                   Query("GetInstanceProfile", {{"InstanceProfileName", std::string(name)}}));
  pugi::xml_node node = Result(*doc, "GetInstanceProfile").child("InstanceProfile");
  if (!node) return absl::InternalError("iam:GetInstanceProfile: no InstanceProfile");
  return ParseInstanceProfile(node);
}

absl::Status IamClient::AddRoleToInstanceProfile(std::string_view profile_name,
                                                 std::string_view role_name) {
  return Query("AddRoleToInstanceProfile",
               {{"InstanceProfileName", std::string(profile_name)},
                {"RoleName", std::string(RoleNameWithoutPath(role_name))}})
      .status();
}

absl::Status IamClient::RemoveRoleFromInstanceProfile(std::string_view profile_name,
                                                      std::string_view role_name) {
  return Query("RemoveRoleFromInstanceProfile",
               {{"InstanceProfileName", std::string(profile_name)},
                {"RoleName", std::string(RoleNameWithoutPath(role_name))}})
      .status();
}

absl::Status IamClient::DeleteInstanceProfile(std::string_view name) {
  return Query("DeleteInstanceProfile", {{"InstanceProfileName", std::string(name)}}).status();
}

absl::Status IamClient::TagInstanceProfile(std::string_view name, const IamTags& tags) {
  QueryParams params{{"InstanceProfileName", std::string(name)}};
  AddTags(params, tags);
  return Query("TagInstanceProfile", params).status();
}

absl::Status IamClient::Paginate(std::string_view action, const QueryParams& params,
                                 std::vector<IamInstanceProfile>& out) {
  std::string marker;
  for (int pages = 0;; ++pages) {
    if (pages > 10'000) return absl::InternalError(Cat("iam:", action, ": too many pages"));
    QueryParams p = params;
    if (!marker.empty()) p.emplace_back("Marker", marker);
    ASSIGN_OR_RETURN(auto doc, Query(action, p));
    pugi::xml_node result = Result(*doc, action);
    for (pugi::xml_node m : result.child("InstanceProfiles").children("member")) {
      out.push_back(ParseInstanceProfile(m));
    }
    std::string next = Text(result, "Marker");
    if (!Bool(result, "IsTruncated") || next.empty() || next == marker) return absl::OkStatus();
    marker = std::move(next);
  }
}

absl::StatusOr<std::vector<IamInstanceProfile>> IamClient::ListInstanceProfilesForRole(
    std::string_view role_name) {
  std::vector<IamInstanceProfile> out;
  RETURN_IF_ERROR(Paginate("ListInstanceProfilesForRole",
                           {{"RoleName", std::string(RoleNameWithoutPath(role_name))}}, out));
  return out;
}

absl::StatusOr<std::vector<IamInstanceProfile>> IamClient::ListInstanceProfiles(
    std::string_view path_prefix) {
  std::vector<IamInstanceProfile> out;
  QueryParams params;
  if (!path_prefix.empty()) params.emplace_back("PathPrefix", std::string(path_prefix));
  RETURN_IF_ERROR(Paginate("ListInstanceProfiles", params, out));
  // The prefix is checked again: the callers delete what they get, and a server that ignores
  // PathPrefix (moto does) must not hand them another class's or cluster's profiles.
  std::erase_if(out, [path_prefix](const IamInstanceProfile& p) {
    return !absl::StartsWith(p.path, absl::string_view(path_prefix.data(), path_prefix.size()));
  });
  return out;
}

std::string InstanceProfileName(std::string_view cluster_name, std::string_view region,
                                std::string_view nodeclass_name, std::string_view suffix) {
  return Cat(cluster_name, "_", apis::hash::Fnv1(Cat(region, nodeclass_name, suffix)));
}

std::string InstanceProfilePath(std::string_view region, std::string_view cluster_name,
                                std::string_view nodeclass_uid) {
  return Cat("/karpenter/", region, "/", cluster_name, "/", nodeclass_uid, "/");
}

IamTags InstanceProfileTags(std::string_view cluster_name, std::string_view region,
                            std::string_view nodeclass_name, const IamTags& spec_tags) {
  IamTags tags = spec_tags;
  tags[Cat("kubernetes.io/cluster/", cluster_name)] = "owned";
  tags["eks:eks-cluster-name"] = std::string(cluster_name);
  tags["karpenter.k8s.aws/ec2nodeclass"] = std::string(nodeclass_name);
  tags["topology.kubernetes.io/region"] = std::string(region);
  return tags;
}

std::string_view RoleNameWithoutPath(std::string_view role) {
  const size_t slash = role.rfind('/');
  return slash == std::string_view::npos ? role : role.substr(slash + 1);
}

}  // namespace dovetail::providers::aws
