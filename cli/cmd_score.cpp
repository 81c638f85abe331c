// Placeholder until the score subcommand lands (see its issue); exits with a usage error.
#include "commands.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::cli {

Subcommand setup_score(CLI::App& parent) {
  Subcommand s;
  s.app = parent.add_subcommand("score", "(not yet available)");
  s.run = [] () -> int { throw UsageError("score: not implemented in this build"); };
  return s;
}

}  // namespace lstmlm::cli
