// lstmlm: the only place that prints errors and chooses exit codes (docs/errors.md).
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <vector>

#include "commands.hpp"
#include "lstmlm/error.hpp"
#include "options.hpp"
#include "output.hpp"

namespace {
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;

void print_error(const char* what) { std::fprintf(stderr, "lstmlm: error: %s\n", what); }
}  // namespace

int main(int argc, char** argv) {
  // A closed pipe must surface as EPIPE on write (handled as a quiet end), not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"lstmlm: run LSTM language models exported from TensorFlow 1, Keras or PyTorch"};
  app.set_version_flag("--version", std::string("lstmlm ") + LSTMLM_VERSION + " (" + LSTMLM_BUILD_KIND + ")");
  app.require_subcommand(1);
  std::vector<lstmlm::cli::Subcommand> subs;
  subs.push_back(lstmlm::cli::setup_info(app));
  subs.push_back(lstmlm::cli::setup_score(app));
  subs.push_back(lstmlm::cli::setup_predict(app));
  subs.push_back(lstmlm::cli::setup_generate(app));
  subs.push_back(lstmlm::cli::setup_bench(app));
  try {
    lstmlm::cli::check_command_line(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(lstmlm::cli::usage_message(app, e).c_str());
    return kExitUsage;
  } catch (const lstmlm::UsageError& e) {
    print_error(e.what());
    return kExitUsage;
  }
  try {
    for (auto& s : subs)
      if (s.app->parsed()) {
        // Every option is checked before anything is written to stdout.
        if (s.check) s.check();
        int rc = s.run();
        // Through Output: the last buffered bytes can meet a closed pipe (exit 0) or a full disk (exit 1).
        lstmlm::cli::Output().flush();
        return rc;
      }
    return kExitUsage;
  } catch (const lstmlm::cli::ClosedPipe&) {
    return 0;
  } catch (const lstmlm::UsageError& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const lstmlm::ModelError& e) {
    print_error(e.what());
    return kExitBadInput;
  } catch (const lstmlm::InputError& e) {
    print_error(e.what());
    return kExitBadInput;
  } catch (const lstmlm::OutputError& e) {
    print_error(e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lstmlm: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
