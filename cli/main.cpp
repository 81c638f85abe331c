// lstmlm: the only place that prints errors and chooses exit codes (docs/errors.md).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "lstmlm/error.hpp"
#include "options.hpp"
#include "output.hpp"

namespace {
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;
constexpr int kExitSignalBase = 128;

// One line on stderr, control bytes and invalid UTF-8 escaped (lstmlm::printable).
void print_error(std::string_view what) { lstmlm::cli::print_diagnostic("lstmlm: error: ", what); }

// A ModelError's full text from its parts: what() is a C string, cut at a NUL that a file name or a
// vocabulary entry may hold. The parts give back the text what() was composed from.
std::string model_error_text(const lstmlm::ModelError& e) {
  const std::string head = e.file().empty() ? std::string() : e.file() + ": ";
  for (const std::string& s : {head + "field '" + e.field() + "': " + e.message(), head + e.message()})
    if (std::strcmp(s.c_str(), e.what()) == 0) return s;
  return e.what();
}

// --help and --version write through std::cout: a write error there is exit 1 like any other output's.
// errno is kept from the write that failed: a later flush may find nothing left to write.
int help_or_version(CLI::App& app, const CLI::Error& e) {
  errno = 0;
  int rc = app.exit(e);
  std::cout.flush();
  const int failed = errno;
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return rc;
  const int err = errno ? errno : failed ? failed : EIO;
  if (err == EPIPE) return rc;  // the reader went away: a quiet end, as for every other output
  print_error(std::string("stdout: write failed: ") + std::strerror(err));
  return kExitBadInput;
}
}  // namespace

int main(int argc, char** argv) {
  // A closed pipe must surface as EPIPE on write (handled as a quiet end), not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  // SIGINT, SIGTERM, SIGHUP: the output stops after a whole record, exit 128 + N (docs/errors.md, Signals).
  lstmlm::cli::install_signal_handlers();
  CLI::App app{
      "lstmlm: run LSTM, GRU and RNN language models from TensorFlow 1 and 2, Keras 1 to 3, TF.js, ml5, "
      "PyTorch or ONNX (converted by python3 -m lstmlm.convert)"};
  app.set_version_flag("--version", std::string("lstmlm ") + LSTMLM_VERSION + " (" + LSTMLM_BUILD_KIND + ")");
  app.require_subcommand(1);
  std::vector<lstmlm::cli::Subcommand> subs;
  subs.push_back(lstmlm::cli::setup_info(app));
  subs.push_back(lstmlm::cli::setup_score(app));
  subs.push_back(lstmlm::cli::setup_predict(app));
  subs.push_back(lstmlm::cli::setup_rescore(app));
  subs.push_back(lstmlm::cli::setup_generate(app));
  subs.push_back(lstmlm::cli::setup_bench(app));
  subs.push_back(lstmlm::cli::setup_fidelity(app));
  subs.push_back(lstmlm::cli::setup_states(app));
  subs.push_back(lstmlm::cli::setup_mix_tune(app));
  subs.push_back(lstmlm::cli::setup_serve(app));
  try {
    lstmlm::cli::check_command_line(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return help_or_version(app, e);
  } catch (const CLI::CallForAllHelp& e) {
    return help_or_version(app, e);
  } catch (const CLI::CallForVersion& e) {
    return help_or_version(app, e);
  } catch (const CLI::ParseError& e) {
    print_error(lstmlm::cli::usage_message(app, e));
    return kExitUsage;
  } catch (const lstmlm::UsageError& e) {
    print_error(e.message());
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
  } catch (const lstmlm::cli::Interrupted& e) {
    // Every record written is complete; nothing after it was started.
    lstmlm::cli::print_diagnostic("lstmlm: interrupted by ", lstmlm::cli::signal_name(e.signal));
    return kExitSignalBase + e.signal;
  } catch (const lstmlm::UsageError& e) {
    print_error(e.message());
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const lstmlm::ModelError& e) {
    print_error(model_error_text(e));
    return kExitBadInput;
  } catch (const lstmlm::InputError& e) {
    print_error(e.message());
    return kExitBadInput;
  } catch (const lstmlm::OutputError& e) {
    print_error(e.message());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
    return kExitBadInput;
  } catch (const std::exception& e) {
    lstmlm::cli::print_diagnostic("lstmlm: internal error: ", e.what());
    return kExitInternal;
  }
}
