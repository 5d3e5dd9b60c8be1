#include "dovetail/kube/config.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/test_temp_dir.h"
#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

std::string TempDir() { return dovetail::testing::ProcessTempDir("kube_config_test"); }

TEST(ParseKubeconfigTest, UsesCurrentContextWithEmbeddedCertificates) {
  const std::string yaml = absl::StrCat(R"(
apiVersion: v1
kind: Config
current-context: b
clusters:
- name: ca
  cluster: {server: "https://a:1"}
- name: cb
  cluster:
    server: "https://127.0.0.1:6443/"
    certificate-authority-data: )",
                                        absl::Base64Escape("CA PEM"), R"(
contexts:
- name: a
  context: {cluster: ca, user: ua}
- name: b
  context: {cluster: cb, user: ub}
users:
- name: ua
  user: {token: aaa}
- name: ub
  user:
    client-certificate-data: )",
                                        absl::Base64Escape("CERT"), R"(
    client-key-data: )",
                                        absl::Base64Escape("KEY"), "\n");
  absl::StatusOr<RestConfig> config = ParseKubeconfig(yaml, "/nowhere");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, "CA PEM");
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_TRUE(config->bearer_token.empty());

  absl::StatusOr<RestConfig> other = ParseKubeconfig(yaml, "/nowhere", "a");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->server, "https://a:1");
  EXPECT_EQ(other->bearer_token, "aaa");
}

TEST(ParseKubeconfigTest, ReadsRelativeFilesExecAndInsecureSkipVerify) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/dovetail_ca_test.crt") << "FILE CA";
  const std::string yaml = R"(
current-context: x
clusters:
- name: c
  cluster: {server: "https://h:1", certificate-authority: dovetail_ca_test.crt,
            insecure-skip-tls-verify: true}
contexts:
- name: x
  context: {cluster: c, user: u}
users:
- name: u
  user:
    tokenFile: token
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: /bin/echo
      args: ["hello"]
      env: [{name: A, value: B}]
)";
  absl::StatusOr<RestConfig> config = ParseKubeconfig(yaml, dir);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ca_pem, "FILE CA");
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->token_file, dir + "/token");
  ASSERT_TRUE(config->exec.has_value());
  EXPECT_EQ(config->exec->command, "/bin/echo");
  EXPECT_EQ(config->exec->args, std::vector<std::string>{"hello"});
  EXPECT_EQ(config->exec->api_version, "client.authentication.k8s.io/v1beta1");
  ASSERT_EQ(config->exec->env.size(), 1u);
  EXPECT_EQ(config->exec->env[0].second, "B");
}

TEST(ParseKubeconfigTest, RejectsMissingContextAndMissingFile) {
  EXPECT_EQ(ParseKubeconfig("current-context: nope\ncontexts: []\n", "/").status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string yaml = R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h", certificate-authority: /does/not/exist}}]
contexts: [{name: x, context: {cluster: c}}]
)";
  EXPECT_EQ(ParseKubeconfig(yaml, "/").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ParseKubeconfig("{{{", "/").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseKubeconfigTest, RefusesKubeconfigsOverTheSizeLimit) {
  const std::string padding(kMaxKubeconfigBytes, '#');  // a comment: valid YAML of any length
  const absl::Status status = ParseKubeconfig(padding + "\n", "/").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status.message().substr(0, 200);
  EXPECT_NE(status.message().find("kubeconfig is 16777217 bytes"), std::string::npos)
      << status.message().substr(0, 200);

  const std::string path = TempDir() + "/huge-kubeconfig";
  std::ofstream(path) << "";
  std::filesystem::resize_file(path, uintmax_t{1} << 40);  // sparse: nothing is read
  EXPECT_EQ(LoadKubeconfigFile(path).status().code(), absl::StatusCode::kInvalidArgument);
  std::filesystem::remove(path);
}

TEST(ParseKubeconfigTest, AFileItNamesIsReadOnlyUpToTheLimit) {
  const std::string yaml = R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h", certificate-authority: /dev/zero}}]
contexts: [{name: x, context: {cluster: c}}]
)";
  const absl::Status status = ParseKubeconfig(yaml, "/").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("/dev/zero"), std::string::npos) << status;
}

TEST(ParseKubeconfigTest, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(ParseKubeconfig(deep, "/").status().code(), absl::StatusCode::kInvalidArgument);
  const std::string deep_map = "a: " + std::string(100000, '{') + std::string(100000, '}');
  EXPECT_EQ(ParseKubeconfig(deep_map, "/").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(InClusterConfigTest, FailsOutsideAPod) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(InClusterConfig().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(InClusterConfigTest, ReadsServiceAccountFiles) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/dovetail_sa_token") << "tok\n";
  std::ofstream(dir + "/dovetail_sa_ca") << "CA";
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  absl::StatusOr<RestConfig> config = InClusterConfig(
      {.token_file = dir + "/dovetail_sa_token", .ca_file = dir + "/dovetail_sa_ca"});
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->token_file, dir + "/dovetail_sa_token");
}

}  // namespace
}  // namespace dovetail::kube
