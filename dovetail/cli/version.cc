// `dovetail version`: build identity, for bug reports and `karpenter_build_info`-style metrics.

#include "dovetail/common/version.h"

#include <iostream>
#include <memory>

#include "dovetail/cli/commands.h"

namespace dovetail::cli {

void RegisterVersionCommand(CLI::App& app, ExitCode& exit_code) {
  auto* cmd = app.add_subcommand("version", "Print the version of this build");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  cmd->callback([json, &exit_code] {
    const BuildInfo& info = GetBuildInfo();
    if (*json) {
      std::cout << "{\"version\":\"" << info.version << "\",\"commit\":\"" << info.commit
                << "\",\"buildType\":\"" << info.build_type << "\",\"compiler\":\"" << info.compiler
                << "\"}\n";
    } else {
      std::cout << "dovetail " << info.version << " (commit " << info.commit << ", "
                << info.build_type << ", " << info.compiler << ")\n";
    }
    exit_code.value = 0;
  });
}

}  // namespace dovetail::cli
