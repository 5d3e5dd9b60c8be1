#include "dovetail/apis/core/manifest.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/common/input_limits.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::core {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

std::string TestData(const std::string& name) {
  return std::string(DOVETAIL_APIS_TESTDATA) + "/" + name;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(ManifestTest, ReadsMultiDocumentYamlWithTypesNamesAndPositions) {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData("workloads.yaml"));
  ASSERT_TRUE(manifests.ok()) << manifests.status();
  ASSERT_EQ(manifests->size(), 5);
  const Manifest& deployment = (*manifests)[0];
  EXPECT_EQ(deployment.api_version, "apps/v1");
  EXPECT_EQ(deployment.kind, "Deployment");
  EXPECT_EQ(deployment.name, "web");
  EXPECT_EQ(deployment.namespace_, "shop");
  EXPECT_EQ(deployment.position, (SourcePosition{TestData("workloads.yaml"), 3, 1}));
  EXPECT_EQ(deployment.Describe(), "Deployment/shop/web");
  EXPECT_EQ((*manifests)[1].kind, "DaemonSet");
  EXPECT_GT((*manifests)[1].position.line, deployment.position.line);
  EXPECT_EQ((*manifests)[4].kind, "Job");
}

TEST(ManifestTest, PositionOfFindsTheClosestKnownPath) {
  absl::StatusOr<std::vector<Manifest>> manifests = ParseManifests(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: a
      resources:
        requests:
          cpu: lots
)",
                                                                   "pod.yaml");
  ASSERT_TRUE(manifests.ok()) << manifests.status();
  const Manifest& pod = (*manifests)[0];
  EXPECT_EQ(pod.PositionOf("spec.containers[0].resources.requests.cpu").ToString(),
            "pod.yaml:10:11");
  EXPECT_EQ(pod.PositionOf("spec.containers[0].resources.limits.cpu").ToString(), "pod.yaml:8:7");
  EXPECT_EQ(pod.PositionOf("spec.containers[3]").ToString(), "pod.yaml:6:3");
  EXPECT_EQ(pod.PositionOf("nothing.here").ToString(), "pod.yaml:1:1");
  EXPECT_EQ(pod.PositionOf("metadata.labels[\"a.b/c\"]").ToString(), "pod.yaml:3:1");
}

TEST(ManifestTest, ListItemsBecomeManifestsWithTheirOwnPositions) {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData("list.yaml"));
  ASSERT_TRUE(manifests.ok()) << manifests.status();
  ASSERT_EQ(manifests->size(), 2);
  EXPECT_EQ((*manifests)[0].kind, "Namespace");
  EXPECT_EQ((*manifests)[0].name, "a");
  EXPECT_EQ((*manifests)[0].position.line, 4);
  EXPECT_EQ((*manifests)[1].kind, "NodePool");
  EXPECT_EQ((*manifests)[1].position.line, 8);
  EXPECT_EQ((*manifests)[1].PositionOf("spec.template.spec.nodeClassRef.kind").line, 18);
}

TEST(ManifestTest, TypedJsonListItemsInheritKindAndApiVersion) {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData("nodepool_list.json"));
  ASSERT_TRUE(manifests.ok()) << manifests.status();
  ASSERT_EQ(manifests->size(), 3);
  EXPECT_EQ((*manifests)[0].kind, "NodePool");
  EXPECT_EQ((*manifests)[0].api_version, "karpenter.sh/v1");
  EXPECT_EQ((*manifests)[0].json["kind"], "NodePool");
  EXPECT_EQ((*manifests)[1].name, "two");
  EXPECT_EQ((*manifests)[2].kind, "Namespace");
  EXPECT_EQ((*manifests)[2].position.line, 8);
}

TEST(ManifestTest, MalformedYamlNamesFileLineAndColumn) {
  const std::string path = TestData("malformed.yaml");
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(path);
  EXPECT_EQ(manifests.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(manifests.status()), StartsWith(path + ":11:"));
  EXPECT_THAT(Message(manifests.status()), HasSubstr("YAML syntax error"));
}

TEST(ManifestTest, MalformedJsonNamesFileLineAndColumn) {
  const std::string path = TestData("malformed.json");
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(path);
  EXPECT_EQ(manifests.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(manifests.status()), StartsWith(path + ":4:"));
  EXPECT_THAT(Message(manifests.status()), HasSubstr("JSON syntax error"));
}

TEST(ManifestTest, DocumentsThatAreNotObjectsAreRejected) {
  absl::StatusOr<std::vector<Manifest>> manifests =
      ParseManifests("kind: Pod\n---\njust a sentence\n", "notes.txt");
  EXPECT_EQ(manifests.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(manifests.status()),
            "notes.txt:3:1: expected a Kubernetes object (a mapping), got string");
  manifests = ParseManifests("kind: List\nitems:\n  - 1\n", "l.yaml");
  EXPECT_EQ(Message(manifests.status()),
            "l.yaml:3:5: expected a Kubernetes object (a mapping), got number");
}

TEST(ManifestTest, ObjectsWithoutKindAreReturnedForValidation) {
  absl::StatusOr<std::vector<Manifest>> manifests = ParseManifests("metadata:\n  name: x\n", "m");
  ASSERT_TRUE(manifests.ok());
  ASSERT_EQ(manifests->size(), 1);
  EXPECT_EQ((*manifests)[0].kind, "");
  EXPECT_EQ((*manifests)[0].name, "x");
  EXPECT_EQ((*manifests)[0].Describe(), "<no kind>/x");
}

TEST(ManifestTest, EmptyInputHasNoManifests) {
  for (const char* text : {"", "\n\n", "# only a comment\n", "---\n---\n", "   "}) {
    absl::StatusOr<std::vector<Manifest>> manifests = ParseManifests(text, "empty.yaml");
    ASSERT_TRUE(manifests.ok()) << text;
    EXPECT_TRUE(manifests->empty()) << text;
  }
}

TEST(ManifestTest, InputOverTheSizeLimitIsRefusedBeforeParsing) {
  // Address space only: the pages are never touched, since the size is checked first.
  const size_t size = kMaxManifestBytes + 1;
  void* pages = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  const absl::Status status =
      ParseManifests(std::string_view(static_cast<const char*>(pages), size), "big.yaml").status();
  munmap(pages, size);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("big.yaml is 268435457 bytes"));

  const std::string path = ::testing::TempDir() + "/huge-manifest." + std::to_string(getpid());
  std::ofstream(path) << "";
  std::filesystem::resize_file(path, uintmax_t{1} << 40);  // sparse: nothing is read
  EXPECT_EQ(ReadManifests(path).status().code(), absl::StatusCode::kInvalidArgument);
  std::filesystem::remove(path);
}

TEST(ManifestTest, UnreadableFilesGiveFileSystemErrors) {
  EXPECT_EQ(ReadManifests(TestData("does-not-exist.yaml")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadManifests(DOVETAIL_APIS_TESTDATA).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Random bytes and mutated manifests must give a status, never a crash, hang or exception.
TEST(ManifestTest, GarbageNeverCrashes) {
  std::mt19937 rng(20240601);
  auto check = [](const std::string& text) {
    absl::StatusOr<std::vector<Manifest>> manifests = ParseManifests(text, "fuzz");
    if (!manifests.ok()) {
      EXPECT_EQ(manifests.status().code(), absl::StatusCode::kInvalidArgument)
          << manifests.status();
      EXPECT_THAT(Message(manifests.status()), MatchesRegex("fuzz:[0-9]+:[0-9]+: .*")) << text;
    }
  };
  for (int i = 0; i < 300; ++i) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    check(text);
  }
  // Printable garbage with YAML/JSON punctuation reaches deeper into the parsers.
  const std::string alphabet = "{}[]:,-?&*!|>'\"%@`#\n\t abc019.~<=";
  for (int i = 0; i < 500; ++i) {
    std::string text(rng() % 120, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    check(text);
  }
  for (const char* file : {"workloads.yaml", "nodepool.json", "cluster_objects.yaml"}) {
    absl::StatusOr<std::vector<Manifest>> original = ReadManifests(TestData(file));
    ASSERT_TRUE(original.ok()) << original.status();
    std::string text;
    {
      std::ifstream in(TestData(file));
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    for (int i = 0; i < 150; ++i) {
      std::string mutated = text;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !mutated.empty(); ++e) {
        const size_t at = rng() % mutated.size();
        switch (rng() % 3) {
          case 0:
            mutated[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            mutated.erase(at, 1 + rng() % 8);
            break;
          default:
            mutated.resize(at);
            break;
        }
      }
      check(mutated);
    }
  }
}

}  // namespace
}  // namespace dovetail::apis::core
