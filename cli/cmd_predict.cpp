// Placeholder until the predict subcommand lands (see its issue); exits with a usage error.
#include "commands.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::cli {

Subcommand setup_predict(CLI::App& parent) {
  Subcommand s;
  s.app = parent.add_subcommand("predict", "(not yet available)");
  s.run = [] () -> int { throw UsageError("predict: not implemented in this build"); };
  return s;
}

}  // namespace lstmlm::cli
