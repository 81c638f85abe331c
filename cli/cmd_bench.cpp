// Placeholder until the bench subcommand lands (see its issue); exits with a usage error.
#include "commands.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::cli {

Subcommand setup_bench(CLI::App& parent) {
  Subcommand s;
  s.app = parent.add_subcommand("bench", "(not yet available)");
  s.run = [] () -> int { throw UsageError("bench: not implemented in this build"); };
  return s;
}

}  // namespace lstmlm::cli
