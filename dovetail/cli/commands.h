// The `dovetail` command line: one Register*Command function per subcommand, each in its own
// file. A subcommand's callback sets the process exit code through `ExitCode&`; it never throws
// and never aborts on bad input (errors are printed to stderr with the file/object they concern).
#pragma once

#include "CLI/CLI.hpp"

namespace dovetail::cli {

struct ExitCode {
  int value = 0;
};

void RegisterVersionCommand(CLI::App& app, ExitCode& exit_code);
void RegisterValidateCommand(CLI::App& app, ExitCode& exit_code);
void RegisterSimulateCommand(CLI::App& app, ExitCode& exit_code);
void RegisterControllerCommand(CLI::App& app, ExitCode& exit_code);
void RegisterCatalogCommand(CLI::App& app, ExitCode& exit_code);
void RegisterConvertCommand(CLI::App& app, ExitCode& exit_code);
void RegisterExplainCommand(CLI::App& app, ExitCode& exit_code);
void RegisterCostCommand(CLI::App& app, ExitCode& exit_code);
void RegisterHashCommand(CLI::App& app, ExitCode& exit_code);

}  // namespace dovetail::cli
