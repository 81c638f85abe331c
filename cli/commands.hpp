// Each subcommand lives in its own cli/cmd_*.cpp and registers itself on the app.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace lstmlm::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  // Called after parsing, before run and before any output: the option checks CLI11's validators cannot
  // make (combinations, lists, seeds). Throws UsageError. May be empty.
  std::function<void()> check;
  std::function<int()> run;  // called after parsing when this subcommand was chosen; returns the exit code
};

Subcommand setup_info(CLI::App& parent);
Subcommand setup_score(CLI::App& parent);
Subcommand setup_predict(CLI::App& parent);
Subcommand setup_generate(CLI::App& parent);
Subcommand setup_bench(CLI::App& parent);
Subcommand setup_rescore(CLI::App& parent);
Subcommand setup_fidelity(CLI::App& parent);
Subcommand setup_states(CLI::App& parent);
Subcommand setup_mix_tune(CLI::App& parent);
Subcommand setup_serve(CLI::App& parent);

}  // namespace lstmlm::cli
