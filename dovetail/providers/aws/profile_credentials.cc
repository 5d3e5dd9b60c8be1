#include "dovetail/providers/aws/profile_credentials.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/container_credentials.h"
#include "dovetail/providers/aws/instance_profile_credentials.h"
#include "dovetail/providers/aws/process_credentials.h"
#include "dovetail/providers/aws/sts.h"
#include "dovetail/providers/aws/web_identity_credentials.h"

namespace dovetail::providers::aws {
namespace {

using Profile = std::map<std::string, std::string>;

// A shared file's text; nullopt when it cannot be read (a missing file has no profiles);
// InvalidArgument when it is over kMaxAwsSharedFileBytes.
absl::StatusOr<std::optional<std::string>> ReadSharedFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::nullopt;
  absl::StatusOr<std::string> text =
      ReadFileAtMost(path, kMaxAwsSharedFileBytes, "AWS shared config file");
  if (text.ok()) return std::optional<std::string>(*std::move(text));
  if (text.status().code() == absl::StatusCode::kInvalidArgument) return text.status();
  return std::nullopt;
}

// Both shared files, read once per Get().
struct SharedFiles {
  std::string credentials_path;
  std::string config_path;
  std::optional<std::string> credentials;
  std::optional<std::string> config;
  absl::Status error;  // a file over the size limit

  explicit SharedFiles(const EnvLookup& env) {
    const std::string home = env("HOME").value_or("");
    credentials_path = env("AWS_SHARED_CREDENTIALS_FILE").value_or(home + "/.aws/credentials");
    config_path = env("AWS_CONFIG_FILE").value_or(home + "/.aws/config");
    for (auto [path, text] :
         {std::pair{&credentials_path, &credentials}, {&config_path, &config}}) {
      absl::StatusOr<std::optional<std::string>> read = ReadSharedFile(*path);
      if (read.ok()) {
        *text = *std::move(read);
      } else if (error.ok()) {
        error = read.status();
      }
    }
  }

  // Profile `name` from both files, the credentials file winning key by key; NotFound when
  // neither has it.
  absl::StatusOr<Profile> Find(const std::string& name) const {
    Profile merged;
    bool found = false;
    if (config) {
      // The config file names the default profile "[default]" or "[profile default]".
      for (const std::string& section : name == "default"
                                            ? std::vector<std::string>{"profile default", "default"}
                                            : std::vector<std::string>{"profile " + name}) {
        if (auto s = ReadIniSection(*config, section); s.ok()) {
          for (auto& [k, v] : *s) merged[k] = v;
          found = true;
        }
      }
    }
    if (credentials) {
      if (auto s = ReadIniSection(*credentials, name); s.ok()) {
        for (auto& [k, v] : *s) merged[k] = v;
        found = true;
      }
    }
    if (!found) {
      return absl::NotFoundError(
          Cat("profile '", name, "': not in ", credentials_path, " or ", config_path));
    }
    return merged;
  }
};

std::string ValueOf(const Profile& profile, const char* key) {
  auto it = profile.find(key);
  return it == profile.end() ? std::string() : it->second;
}

// aws_access_key_id + aws_secret_access_key (+ aws_session_token); NotFound without a key id.
absl::StatusOr<AwsCredentials> StaticKeys(const Profile& profile, const std::string& name) {
  const std::string id = ValueOf(profile, "aws_access_key_id");
  if (id.empty()) return absl::NotFoundError(Cat("profile '", name, "': no aws_access_key_id"));
  const std::string secret = ValueOf(profile, "aws_secret_access_key");
  if (secret.empty()) {
    return absl::InvalidArgumentError(
        Cat("profile '", name, "': aws_access_key_id without aws_secret_access_key"));
  }
  return AwsCredentials{.access_key_id = id,
                        .secret_access_key = secret,
                        .session_token = ValueOf(profile, "aws_session_token"),
                        .source = "profile:" + name};
}

// Resolves one profile, following source_profile links.
class Resolver {
 public:
  Resolver(const SharedFiles& files, const EnvLookup& env, AwsClient* sts)
      : files_(files), env_(env), sts_(sts) {}

  absl::StatusOr<AwsCredentials> Resolve(const std::string& name) {
    if (std::find(chain_.begin(), chain_.end(), name) != chain_.end()) {
      chain_.push_back(name);
      return absl::InvalidArgumentError(
          Cat("source_profile cycle: ", absl::StrJoin(chain_, " -> ")));
    }
    chain_.push_back(name);
    ASSIGN_OR_RETURN(Profile profile, files_.Find(name));
    if (!ValueOf(profile, "role_arn").empty()) return AssumeRoleOf(profile, name);
    absl::StatusOr<AwsCredentials> keys = StaticKeys(profile, name);
    if (!absl::IsNotFound(keys.status())) return keys;
    if (std::string command = ValueOf(profile, "credential_process"); !command.empty()) {
      return ProcessCredentialsProvider(command, "profile:" + name).Get();
    }
    return absl::NotFoundError(Cat("profile '", name,
                                   "': no role_arn, aws_access_key_id or credential_process (in ",
                                   files_.credentials_path, " and ", files_.config_path, ")"));
  }

 private:
  absl::StatusOr<AwsCredentials> AssumeRoleOf(const Profile& profile, const std::string& name) {
    const std::string what = Cat("profile '", name, "'");
    if (!ValueOf(profile, "mfa_serial").empty()) {
      return absl::InvalidArgumentError(
          Cat(what,
              ": mfa_serial needs a code typed by a person; a controller cannot assume "
              "this role"));
    }
    AssumeRoleParams params{.role_arn = ValueOf(profile, "role_arn"),
                            .session_name = ValueOf(profile, "role_session_name"),
                            .external_id = ValueOf(profile, "external_id")};
    if (params.session_name.empty()) {
      params.session_name = Cat("dovetail-", absl::ToUnixSeconds(absl::Now()));
    }
    if (std::string d = ValueOf(profile, "duration_seconds"); !d.empty()) {
      int seconds = 0;
      if (!absl::SimpleAtoi(d, &seconds) || seconds < 900 || seconds > 43200) {
        return absl::InvalidArgumentError(
            Cat(what, ": duration_seconds '", d, "' is not between 900 and 43200"));
      }
      params.duration = absl::Seconds(seconds);
    }
    if (sts_ == nullptr) {
      return absl::FailedPreconditionError(Cat(what, ": role_arn needs an STS client"));
    }
    if (std::string file = ValueOf(profile, "web_identity_token_file"); !file.empty()) {
      ASSIGN_OR_RETURN(std::string token, ReadWebIdentityToken(what, file));
      return AssumeRoleWithWebIdentity(*sts_, params, token);
    }
    const std::string source_profile = ValueOf(profile, "source_profile");
    const std::string credential_source = ValueOf(profile, "credential_source");
    if (!source_profile.empty() && !credential_source.empty()) {
      return absl::InvalidArgumentError(
          Cat(what, ": set source_profile or credential_source, not both"));
    }
    absl::StatusOr<AwsCredentials> source;
    if (source_profile == name) {
      source = StaticKeys(profile, name);
    } else if (!source_profile.empty()) {
      source = Resolve(source_profile);
    } else if (!credential_source.empty()) {
      source = FromCredentialSource(credential_source);
    } else {
      return absl::InvalidArgumentError(Cat(
          what, ": role_arn needs source_profile, credential_source or web_identity_token_file"));
    }
    if (!source.ok()) {
      // The profile asked for this source, so its absence is a configuration error.
      const absl::StatusCode code = absl::IsNotFound(source.status())
                                        ? absl::StatusCode::kInvalidArgument
                                        : source.status().code();
      return absl::Status(code, Cat(what, ": source credentials: ", source.status().message()));
    }
    return AssumeRole(*sts_, *source, params);
  }

  absl::StatusOr<AwsCredentials> FromCredentialSource(const std::string& source) {
    if (source == "Environment") return EnvironmentCredentialsProvider(env_).Get();
    if (source == "Ec2InstanceMetadata") return InstanceProfileCredentialsProvider(env_).Get();
    if (source == "EcsContainer") return ContainerCredentialsProvider(env_).Get();
    return absl::InvalidArgumentError(
        Cat("credential_source '", source,
            "' is not one of Environment, Ec2InstanceMetadata, EcsContainer"));
  }

  const SharedFiles& files_;
  const EnvLookup& env_;
  AwsClient* const sts_;
  std::vector<std::string> chain_;
};

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ReadIniSection(std::string_view text,
                                                                  std::string_view section) {
  std::map<std::string, std::string> out;
  bool in_section = false;
  bool found = false;
  for (absl::string_view raw : absl::StrSplit(AsAbsl(text), '\n')) {
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      std::string name(absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)));
      // "[profile  dev]" and "[profile dev]" name the same section.
      std::vector<std::string> words = absl::StrSplit(name, ' ', absl::SkipEmpty());
      in_section = absl::StrJoin(words, " ") == AsAbsl(section);
      found |= in_section;
      continue;
    }
    if (!in_section) continue;
    auto eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, eq)));
    out[key] = std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
  }
  if (!found) return absl::NotFoundError(Cat("no section [", section, "]"));
  return out;
}

absl::StatusOr<AwsCredentials> ProfileCredentialsProvider::Get() {
  const std::string name =
      env_("AWS_PROFILE").value_or(env_("AWS_DEFAULT_PROFILE").value_or("default"));
  SharedFiles files(env_);
  if (!files.error.ok()) return files.error;
  return Resolver(files, env_, sts_).Resolve(name);
}

}  // namespace dovetail::providers::aws
