// Entry point of the `dovetail` binary: parses the command line and runs one subcommand.

#include <iostream>

#include "CLI/CLI.hpp"
#include "dovetail/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Dovetail: a Kubernetes node autoscaler that serves Karpenter's API"};
  app.require_subcommand(1);
  dovetail::cli::ExitCode exit_code;
  dovetail::cli::RegisterVersionCommand(app, exit_code);
  dovetail::cli::RegisterValidateCommand(app, exit_code);
  dovetail::cli::RegisterSimulateCommand(app, exit_code);
  dovetail::cli::RegisterControllerCommand(app, exit_code);
  dovetail::cli::RegisterCatalogCommand(app, exit_code);
  dovetail::cli::RegisterConvertCommand(app, exit_code);
  dovetail::cli::RegisterExplainCommand(app, exit_code);
  dovetail::cli::RegisterCostCommand(app, exit_code);
  dovetail::cli::RegisterHashCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code.value;
}
