// Placeholder until the info subcommand lands (see its issue); exits with a usage error.
#include "commands.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::cli {

Subcommand setup_info(CLI::App& parent) {
  Subcommand s;
  s.app = parent.add_subcommand("info", "(not yet available)");
  s.run = [] () -> int { throw UsageError("info: not implemented in this build"); };
  return s;
}

}  // namespace lstmlm::cli
