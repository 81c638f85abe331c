// Placeholder until the generate subcommand lands (see its issue); exits with a usage error.
#include "commands.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::cli {

Subcommand setup_generate(CLI::App& parent) {
  Subcommand s;
  s.app = parent.add_subcommand("generate", "(not yet available)");
  s.run = [] () -> int { throw UsageError("generate: not implemented in this build"); };
  return s;
}

}  // namespace lstmlm::cli
