// Hostile conditions through the CLI, second part: signals while writing, control characters in tokens,
// file names and messages, directories and FIFOs as inputs, strict integers, the per-line byte limit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hostile_util.hpp"
#include "line_reader.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "model_files.hpp"

using lstmlm::test::run_cli_to;
using lstmlm::test::Stdout;
using lstmlm::test::TempDir;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string word_model_dir() { return (lstmlm::test::source_dir() / "models" / "fairytales-word").string(); }
using lstmlm::test::model_arg;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Every line of `out` ends with '\n' and parses as JSON; returns the number of lines.
size_t complete_jsonl_lines(const std::string& out) {
  EXPECT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n') << "the output ends inside a record";
  size_t n = 0;
  for (size_t a = 0; a < out.size();) {
    size_t b = out.find('\n', a);
    if (b == std::string::npos) break;
    EXPECT_TRUE(nlohmann::json::accept(out.substr(a, b - a))) << "line " << n + 1;
    ++n;
    a = b + 1;
  }
  return n;
}

// One child running the CLI directly (no shell, so the pid is lstmlm's): stdin from `in_fd`, stdout and
// stderr to files. Always reaped: wait() kills it after its time limit.
class Child {
 public:
  Child(const std::vector<std::string>& args, int in_fd, const fs::path& out, const fs::path& err) {
    std::vector<std::string> all{lstmlm::test::cli()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_ = ::fork();
    if (pid_ == 0) {
      // The CLI's own handling is under test: not an ignored SIGHUP inherited from nohup.
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::dup2(in_fd, 0);
      ::dup2(out_fd, 1);
      ::dup2(err_fd, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out_fd);
    ::close(err_fd);
  }
  ~Child() { wait(std::chrono::seconds(0)); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool running() {
    if (done_) return false;
    if (::waitpid(pid_, &raw_, WNOHANG) == pid_) done_ = true;
    return !done_;
  }
  void signal(int sig) {
    if (running()) ::kill(pid_, sig);
  }
  // The raw wait status; after `limit` the child is killed (SIGKILL), which a test then sees as signaled.
  int wait(std::chrono::milliseconds limit) {
    auto end = Clock::now() + limit;
    while (running() && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &raw_, 0);
      done_ = true;
    }
    return raw_;
  }

 private:
  pid_t pid_ = -1;
  int raw_ = 0;
  bool done_ = false;
};

// Polls until `p` has at least `bytes` bytes or the child ended; false on timeout.
bool wait_for_output(Child& c, const fs::path& p, uintmax_t bytes = 1) {
  // Under qemu-user (a cross build's tests) a block of lines takes minutes at the scalar level (and the
  // wait for the end after the signal below is as long).
  auto end = Clock::now() + std::chrono::seconds(lstmlm::test::kEmulatorMb > 0 ? 600 : 60);
  while (Clock::now() < end) {
    std::error_code ec;
    if (fs::file_size(p, ec) >= bytes && !ec) return true;
    if (!c.running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

const char* name_of(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP"; }

}  // namespace

// ---- 1. Signals ----

// score writing jsonl to a file, signaled after its first block: it exits 128 + N (not killed), the file
// ends with a complete record and every line parses; the run stopped early.
TEST(Hostile2Cli, SignalWhileScoringEndsAfterACompleteRecord) {
  TempDir dir("signal_score");
  std::string in;
  for (int i = 0; i < 60000; ++i) in += "once upon a time there was a king and a very old dragon\n";
  std::ofstream(dir / "in.txt", std::ios::binary) << in;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    int in_fd = ::open("/dev/null", O_RDONLY);
    Child c({"score", "-m", word_model_dir(), "-v", "word", "--output-format", "jsonl", "--threads", "2",
             (dir / "in.txt").string()},
            in_fd, dir / "out", dir / "err");
    ::close(in_fd);
    ASSERT_TRUE(wait_for_output(c, dir / "out")) << slurp(dir / "err");
    c.signal(sig);
    int raw = c.wait(std::chrono::seconds(lstmlm::test::kEmulatorMb > 0 ? 600 : 60));
    ASSERT_TRUE(WIFEXITED(raw)) << name_of(sig) << ": ended by signal "
                                << (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
    EXPECT_EQ(WEXITSTATUS(raw), 128 + sig) << slurp(dir / "err");
    EXPECT_EQ(slurp(dir / "err"), std::string("lstmlm: interrupted by ") + name_of(sig) + "\n");
    std::string out = slurp(dir / "out");
    size_t n = complete_jsonl_lines(out);
    EXPECT_LT(n, 60000u) << name_of(sig) << ": the run was not stopped";
    EXPECT_EQ(out.find("\"summary\""), std::string::npos);
  }
}

// A read blocked on a pipe whose writer stays open: the signal interrupts it (no SA_RESTART), and the
// records of every line that arrived, already written (a pipe's lines are answered as soon as no more is
// ready: a full block of 4,096, then the 904 left), stay whole.
TEST(Hostile2Cli, SignalInterruptsABlockingRead) {
  TempDir dir("signal_read");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Child c({"score", "-m", word_model_dir(), "-v", "sentence", "--output-format", "jsonl"}, fds[0],
          dir / "out", dir / "err");
  ::close(fds[0]);
  std::string in;
  for (int i = 0; i < 5000; ++i) in += "the king\n";  // 45 kB: fits the pipe; a block and a part of one
  ASSERT_EQ(::write(fds[1], in.data(), in.size()), static_cast<ssize_t>(in.size()));
  ASSERT_TRUE(wait_for_output(c, dir / "out")) << slurp(dir / "err");
  // Every line that arrived is answered while the pipe stays open (nothing more is ready): wait for all of
  // them (a sanitizer build on a loaded machine takes seconds), then the reader is blocked in read().
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (complete_jsonl_lines(slurp(dir / "out")) < 5000u && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(complete_jsonl_lines(slurp(dir / "out")), 5000u)
      << "not every line was answered before the signal";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it block in read()
  c.signal(SIGINT);
  int raw = c.wait(std::chrono::seconds(20));
  ::close(fds[1]);
  ASSERT_TRUE(WIFEXITED(raw)) << "ended by signal " << (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
  EXPECT_EQ(WEXITSTATUS(raw), 130);
  EXPECT_EQ(slurp(dir / "err"), "lstmlm: interrupted by SIGINT\n");
  EXPECT_EQ(complete_jsonl_lines(slurp(dir / "out")), 5000u);
}

// generate's streamed text: the line is ended after the last token written.
TEST(Hostile2Cli, SignalWhileGeneratingEndsTheLine) {
  TempDir dir("signal_generate");
  int in_fd = ::open("/dev/null", O_RDONLY);
  Child c({"generate", "-m", word_model_dir(), "-p", "once upon a time", "-n", "1000000", "--seed", "1",
           "--no-stop-at-eos"},
          in_fd, dir / "out", dir / "err");
  ::close(in_fd);
  ASSERT_TRUE(wait_for_output(c, dir / "out", 200)) << slurp(dir / "err");
  c.signal(SIGTERM);
  int raw = c.wait(std::chrono::seconds(20));
  ASSERT_TRUE(WIFEXITED(raw)) << "ended by signal " << (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
  EXPECT_EQ(WEXITSTATUS(raw), 143);
  std::string out = slurp(dir / "out");
  EXPECT_EQ(out.rfind("once upon a time ", 0), 0u);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  EXPECT_EQ(out.back(), '\n');
}

// ---- 2. Control characters in text and tsv output ----

namespace {

// A char model whose vocabulary holds a line feed, a tab, a carriage return, a backslash and ESC.
const std::vector<std::string> kControlVocab{"a", "\n", "\t", "\r", "\\", "\x1b"};

void write_control_model(const fs::path& dir) {
  using namespace lstmlm;
  ModelConfig c;
  c.vocab_size = static_cast<int>(kControlVocab.size());
  c.embedding_dim = 0;
  c.layers.push_back(LayerConfig{1, 0, RecurrentActivation::Sigmoid, {}});
  c.tokenizer.type = TokenizerType::Char;
  Weights w;
  LayerWeights l;
  l.w_ih = MatrixRM::Zero(4, c.vocab_size);
  l.w_hh = MatrixRM::Zero(4, 1);
  l.bias = Eigen::VectorXf::Zero(4);
  w.layers.push_back(l);
  w.decoder = MatrixRM::Zero(c.vocab_size, 1);
  w.decoder_bias = Eigen::VectorXf::Zero(c.vocab_size);
  auto m = Model::create(c, Vocab(kControlVocab), w);
  test::files_of(*m).write(dir);
}

std::vector<std::string> terminated_lines(const std::string& s) {
  std::vector<std::string> v;
  size_t a = 0;
  for (size_t b; (b = s.find('\n', a)) != std::string::npos; a = b + 1) v.push_back(s.substr(a, b - a));
  return v;
}

}  // namespace

TEST(Hostile2Cli, TextAndTsvEscapeControlCharactersInTokensAndFileNames) {
  TempDir dir("escape");
  write_control_model(dir / "m");
  const std::string m = "-m '" + (dir / "m").string() + "'";
  // Line 1: a TAB CR \ ESC a (the CR is inside the line, not its end).
  const std::string file = (dir / "in\tput.txt").string();
  std::ofstream(file, std::ios::binary) << "a\t\r\\\x1b"
                                           "a\n";

  auto text = run_cli_to("score " + m + " -v word '" + file + "'", Stdout::File);
  ASSERT_EQ(text.status, 0) << text.err;
  auto lines = terminated_lines(text.out);
  ASSERT_EQ(lines.size(), 6u) << text.out;  // one line record, then the 5 summary lines
  EXPECT_EQ(lines[0].find('\r'), std::string::npos);
  EXPECT_EQ(lines[0].find('\x1b'), std::string::npos);
  EXPECT_EQ(lines[0].rfind("a=0 context\t\\t=2 ", 0), 0u) << lines[0];
  for (const char* want : {"\t\\r=3 ", "\t\\\\=4 ", "\t\\x1b=5 "})
    EXPECT_NE(lines[0].find(want), std::string::npos) << want << " in " << lines[0];

  auto tsv = run_cli_to("score " + m + " -v word --output-format tsv '" + file + "'", Stdout::File);
  ASSERT_EQ(tsv.status, 0) << tsv.err;
  auto rows = terminated_lines(tsv.out);
  ASSERT_EQ(rows.size(), 7u) << tsv.out;  // header + 6 tokens
  for (const auto& r : rows) EXPECT_EQ(std::count(r.begin(), r.end(), '\t'), 7) << r;
  EXPECT_EQ(rows[1].rfind((dir / "in\\tput.txt").string() + "\t1\t1\ta\t0\t", 0), 0u) << rows[1];
  EXPECT_NE(rows[2].find("\t2\t\\t\t2\t"), std::string::npos) << rows[2];

  // predict --top 0 lists every token, the line feed among them: one line per candidate.
  auto pred = run_cli_to("predict " + m + " --top 0 a", Stdout::File);
  ASSERT_EQ(pred.status, 0) << pred.err;
  auto plines = terminated_lines(pred.out);
  ASSERT_EQ(plines.size(), 1 + kControlVocab.size()) << pred.out;
  for (size_t i = 1; i < plines.size(); ++i)
    EXPECT_EQ(std::count(plines[i].begin(), plines[i].end(), '\t'), 4);
  EXPECT_NE(pred.out.find("\t\\n\tid=1\t"), std::string::npos) << pred.out;

  // jsonl gives the raw strings.
  auto js = run_cli_to("score " + m + " -v word --output-format jsonl '" + file + "'", Stdout::File);
  ASSERT_EQ(js.status, 0) << js.err;
  auto rec = nlohmann::json::parse(terminated_lines(js.out)[0]);
  EXPECT_EQ(rec["file"], file);
  EXPECT_EQ(rec["words"][1]["token"], "\t");
  EXPECT_EQ(rec["words"][2]["token"], "\r");
  EXPECT_EQ(rec["words"][4]["token"], "\x1b");
}

// ---- 3. Small ones ----

TEST(Hostile2Cli, DirectoryOrMissingFileAsInputIsBadInput) {
  TempDir dir("dir_input");
  const std::string d = dir.path().string(), missing = (dir / "missing.txt").string();
  struct Case {
    std::string args, want;
  } cases[] = {
      {"generate " + model_arg() + " -n 2 --seed 1 --prompt-file '" + d + "'",
       d + ": cannot open the prompt file: is a directory"},
      {"generate " + model_arg() + " -n 2 --seed 1 --prompt-file '" + missing + "'",
       missing + ": cannot open the prompt file: No such file or directory"},
      {"bench " + model_arg() + " -w score -r 1 --warmup 0 --min-time 0 --input '" + d + "'",
       d + ": cannot open the --input file: is a directory"},
      {"bench " + model_arg() + " -w score -r 1 --warmup 0 --min-time 0 --input '" + missing + "'",
       missing + ": cannot open the --input file: No such file or directory"},
      {"score " + model_arg() + " '" + d + "'", d + ": cannot open: is a directory"},
      // An endless device is read only up to the limit of one input line (256 MiB).
      {"generate " + model_arg() + " -n 2 --seed 1 --prompt-file /dev/zero",
       "/dev/zero: the prompt file is longer than 268435456 bytes (the limit of one input line)"},
  };
  for (const auto& c : cases) {
    auto r = run_cli_to(c.args, Stdout::File);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err, "lstmlm: error: " + c.want + "\n") << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

// ESC in a file name and NUL/ESC in a prompt word: escaped as \xNN, the NUL does not cut the message.
TEST(Hostile2Cli, MessagesEscapeControlBytesAndKeepWhatFollowsANul) {
  TempDir dir("messages");
  auto r = run_cli_to("score " + model_arg() + " $(printf 'x\\033[31my')", Stdout::File);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "lstmlm: error: x\\x1b[31my: cannot open: No such file or directory\n");

  std::ofstream(dir / "prompt", std::ios::binary) << std::string("the king nu\0l\x1b", 14) << "\n";
  auto g = run_cli_to(
      "generate " + model_arg() + " -n 1 --seed 1 --prompt-file '" + (dir / "prompt").string() + "'",
      Stdout::File);
  EXPECT_EQ(g.status, 0) << g.err;
  EXPECT_NE(g.err.find("lstmlm: warning: prompt: 'nu\\x00l\\x1b' is not in the vocabulary, read as unk\n"),
            std::string::npos)
      << g.err;
  EXPECT_EQ(g.err.find('\x1b'), std::string::npos);
}

// The errors main prints keep their whole text: what() is a C string and ends at the first NUL.
TEST(Hostile2Cli, ErrorMessagesKeepTheTextAfterANul) {
  const std::string text("-:1: 'nu\0l' is not in the vocabulary", 37);
  EXPECT_EQ(lstmlm::InputError(text).message(), text);
  EXPECT_EQ(lstmlm::UsageError(text).message(), text);
  EXPECT_EQ(lstmlm::OutputError(text).message(), text);
  EXPECT_STREQ(lstmlm::InputError(text).what(), "-:1: 'nu");
}

TEST(Hostile2Cli, HelpAndVersionIntoAFullDiskAreAWriteError) {
  for (const char* args : {"--help", "--version", "score --help"}) {
    auto full = run_cli_to(args, Stdout::DevFull);
    EXPECT_EQ(full.status, 1) << args;
    EXPECT_EQ(full.err, "lstmlm: error: stdout: write failed: No space left on device\n") << args;
    auto pipe = run_cli_to(args, Stdout::ClosedPipe);
    EXPECT_EQ(pipe.status, 0) << args << pipe.err;
    EXPECT_EQ(pipe.err, "") << args;
  }
}

TEST(Hostile2Cli, IntegerOptionsRefuseBlanksAndPlus) {
  const std::string gen = "generate " + model_arg() + " -p 'the king' ";
  const std::string bench = "bench --shape 50,8,16,1 -w score -r 1 --warmup 0 --min-time 0 ";
  for (const std::string& args :
       {gen + "--seed ' 7'", gen + "--seed '7 '", gen + "--seed +7", gen + "--seed -1",
        gen + "--seed 1 -n ' 3'", gen + "--seed 1 -n +3", gen + "--seed 1 -n '3 '", bench + "--seed ' 7'",
        bench + "--seed +7", bench + "--seed -1", bench + "-b +1", bench + "-t ' 1'", bench + "-r +1",
        "predict " + model_arg() + " --top +1 king", "score " + model_arg() + " --batch-size ' 8'"}) {
    auto r = run_cli_to(args, Stdout::File);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  }
  auto ok = run_cli_to(gen + "--seed 7 -n 3", Stdout::File);
  EXPECT_EQ(ok.status, 0) << ok.err;
}

// A FIFO is opened once, when it is read: the writer's 3 lines are all scored. (The old check opened and
// closed it first, losing the data and blocking forever in the second open: `timeout` bounds the test.)
TEST(Hostile2Cli, ScoreReadsAFifoOnce) {
  TempDir dir("fifo");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  pid_t writer = ::fork();
  if (writer == 0) {
    int fd = ::open(fifo.c_str(), O_WRONLY);  // waits for the reader
    const char lines[] = "the king\nonce upon a time\nthe dragon\n";
    ssize_t n = fd >= 0 ? ::write(fd, lines, sizeof lines - 1) : -1;
    ::_exit(n == static_cast<ssize_t>(sizeof lines - 1) ? 0 : 1);
  }
  auto r = run_cli_to("score " + model_arg() + " -v sentence --output-format jsonl '" + fifo.string() + "'",
                      Stdout::File, "", "", "timeout 20 ");
  ::kill(writer, SIGKILL);  // harmless when it has ended
  ::waitpid(writer, nullptr, 0);
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = terminated_lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(nlohmann::json::parse(lines[3])["sentences"], 3);
}

// The limit per line, with a small limit (the same code path as the 256 MiB default).
TEST(Hostile2Cli, LineReaderStopsAtTheLineLimit) {
  TempDir dir("line_limit");
  std::ofstream(dir / "f", std::ios::binary) << "12345678\n1234567\r\n12345678\r\n123456789\nnever\n";
  lstmlm::cli::LineReader in({(dir / "f").string()}, 8);
  ASSERT_TRUE(in.next_file());
  std::string l;
  ASSERT_TRUE(in.next(l));
  EXPECT_EQ(l, "12345678");
  ASSERT_TRUE(in.next(l));
  EXPECT_EQ(l, "1234567");
  ASSERT_TRUE(in.next(l));
  EXPECT_EQ(l, "12345678");  // the CR of CRLF does not count
  try {
    in.next(l);
    FAIL() << "a 9-byte line passed a limit of 8";
  } catch (const lstmlm::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "f").string() + ":4: line is longer than 8 bytes (the limit per line): split it");
  }
  // The last line may end at the end of the file, with or without a CR.
  std::ofstream(dir / "g", std::ios::binary) << "12345678\r";
  lstmlm::cli::LineReader g({(dir / "g").string()}, 8);
  ASSERT_TRUE(g.next_file());
  ASSERT_TRUE(g.next(l));
  EXPECT_EQ(l, "12345678");
  EXPECT_FALSE(g.next(l));
}

// The real limit through the CLI: a 257 MiB line (a sparse file of NUL bytes, an ordinary character) is
// refused after 256 MiB are read, under a memory cap.
TEST(Hostile2Cli, ScoreLineOverTheLimitIsAnError) {
  TempDir dir("line_limit_cli");
  const fs::path f = dir / "long.txt";
  { std::ofstream(f, std::ios::binary) << ""; }
  fs::resize_file(f, (uintmax_t{257} << 20));
  auto r = run_cli_to("score " + model_arg() + " -v sentence --output-format jsonl '" + f.string() + "'",
                      Stdout::File, "", lstmlm::test::memory_cap(1024));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err, "lstmlm: error: " + f.string() +
                       ":1: line is longer than 268435456 bytes (the limit per line): split it\n");
  EXPECT_EQ(r.out, "");
}
