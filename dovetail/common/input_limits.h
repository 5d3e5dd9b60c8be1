// The limits on text that users, tenants and clouds hand Dovetail, in one place so that they are
// chosen together and documented together (docs/operator.md, "Input limits"). Each parser named
// below checks its limit before it parses and answers InvalidArgument naming the limit, so such
// input cannot exhaust memory or the stack. The limits sit far above any real input.
// ReadFileAtMost reads a file without first loading more than a limit. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dovetail {

// A kubeconfig file, and each certificate, key or token file it or the service account names
// (kube/config.h). Real ones are kilobytes; embedded certificates for a few hundred clusters stay
// under a megabyte.
inline constexpr size_t kMaxKubeconfigBytes = size_t{16} << 20;  // 16 MiB
// One manifest file or standard input read by the CLI (`validate`, `simulate`, `convert`, `hash`;
// apis/core/manifest.h). A simulate fixture of 20,000 pods is about 20 MiB.
inline constexpr size_t kMaxManifestBytes = size_t{256} << 20;  // 256 MiB
// The pods of the workloads `simulate` expands (replicas, parallelism: scenario/from_manifests.h),
// summed over its input: a few bytes of YAML may ask for two billion replicas. The largest
// benchmark fixture has 20,000 pods.
inline constexpr size_t kMaxScenarioPods = 1'000'000;
// One catalog file (instance types, prices, offerings: cloudprovider/aws_catalog.h) read by
// `simulate --catalog DIR`, `--spot-prices`, DOVETAIL_KWOK_CATALOG and DOVETAIL_AWS_CATALOG. The
// built-in AWS catalog (data/aws) is under 200 KiB per file.
inline constexpr size_t kMaxCatalogFileBytes = size_t{256} << 20;  // 256 MiB
// An EC2NodeClass's spec.userData (providers/aws/cloudprovider/user_data.h). EC2 accepts at most
// 16 KB of user data before base64 encoding; Dovetail's own parts come on top.
inline constexpr size_t kMaxUserDataBytes = size_t{16} << 10;  // 16 KiB
// Nesting of tables, arrays and inline tables in Bottlerocket TOML user data (dotted keys count
// one level per part). Bottlerocket's settings tree is about 5 levels deep.
inline constexpr int kMaxTomlDepth = 32;
// An AWS shared config or credentials file (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE) and
// the token files of web identity and the container credential source (providers/aws/). Real
// ones are kilobytes.
inline constexpr size_t kMaxAwsSharedFileBytes = size_t{16} << 20;  // 16 MiB
// A NodePool disruption budget's cron schedule (apis/validation/cron.h). Five fields of lists:
// real schedules are under 100 characters.
inline constexpr size_t kMaxCronScheduleBytes = 1024;

// The whole content of the file at `path` when it holds at most `max_bytes`. `what` names the
// file in errors ("kubeconfig", "manifest"). Errors: InvalidArgument when it is larger (read no
// further than max_bytes + 1) or is a directory; the errno's code (NotFound, PermissionDenied, ...)
// when it cannot be opened; Unavailable for a read error.
absl::StatusOr<std::string> ReadFileAtMost(const std::string& path, size_t max_bytes,
                                           std::string_view what);

// InvalidArgument ("<what> is N bytes, more than the limit of M bytes") when `size` > `max_bytes`.
absl::Status CheckSize(size_t size, size_t max_bytes, std::string_view what);

}  // namespace dovetail
