// A model whose config.json has input_length: score, predict and generate use --pad-to input_length by
// default with one stderr note, --stateful gives the numbers of the same model without the field, and
// info shows it. (The real Keras model is checked against a numpy Keras loop in
// tests/py/fidelity/test_window_keras.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model_files.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using lstmlm::test::run_cli;

std::string original() { return (lstmlm::test::source_dir() / "models" / "fairytales-word").string(); }

// fairytales-word with "input_length": 6 added to its config.json.
class WindowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"config.json", "vocab.json", "weights.safetensors"})
      fs::copy_file(fs::path(original()) / f, dir_ / f, fs::copy_options::overwrite_existing);
    std::ifstream in(dir_ / "config.json");
    nlohmann::json c = nlohmann::json::parse(in);
    c["input_length"] = 6;
    std::ofstream(dir_ / "config.json") << c.dump(2);
  }
  std::string m() const { return "-m '" + dir_.path().string() + "'"; }
  lstmlm::test::TempDir dir_{"window_cli"};
};

int count_notes(const std::string& err) {
  std::istringstream s(err);
  int n = 0;
  for (std::string l; std::getline(s, l);) n += l.rfind("lstmlm: note: ", 0) == 0 ? 1 : 0;
  return n;
}

TEST_F(WindowCli, InputLengthIsTheDefaultWindowWithOneNote) {
  const std::string text = "once upon a time there was a king who had three daughters\nthe king\n";
  struct Cmd {
    std::string args, stdin_text;
  };
  for (const Cmd& c :
       {Cmd{"score --output-format jsonl", text}, Cmd{"score --context document -v sentence", text},
        Cmd{"predict --output-format jsonl --top 3", text},
        Cmd{"generate -p 'the king' --temperature 0 -n 12 --seed 1 --output-format jsonl", ""}}) {
    SCOPED_TRACE(c.args);
    auto def = run_cli(c.args + " " + m(), c.stdin_text);
    ASSERT_EQ(def.status, 0) << def.err;
    EXPECT_EQ(count_notes(def.err), 1) << def.err;
    EXPECT_NE(def.err.find("input_length 6"), std::string::npos) << def.err;
    EXPECT_NE(def.err.find("--pad-to 6"), std::string::npos) << def.err;
    EXPECT_NE(def.err.find("--stateful"), std::string::npos) << def.err;
    auto pad = run_cli(c.args + " " + m() + " --pad-to 6", c.stdin_text);
    EXPECT_EQ(pad.out, def.out);
    EXPECT_EQ(count_notes(pad.err), 0) << pad.err;
    // --stateful: the numbers of the model without input_length (which prints no note).
    auto st = run_cli(c.args + " " + m() + " --stateful", c.stdin_text);
    auto orig = run_cli(c.args + " -m '" + original() + "'", c.stdin_text);
    EXPECT_EQ(st.out, orig.out);
    EXPECT_EQ(count_notes(orig.err), 0) << orig.err;
    EXPECT_NE(st.out, def.out) << "the window changed nothing: the test cannot tell them apart";
  }
}

TEST_F(WindowCli, InfoShowsTheInputLength) {
  auto t = run_cli("info " + m());
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("Input length: 6"), std::string::npos) << t.out;
  auto j = run_cli("info --json " + m());
  EXPECT_EQ(nlohmann::json::parse(j.out)["input_length"], 6);
  EXPECT_FALSE(
      nlohmann::json::parse(run_cli("info --json -m '" + original() + "'").out).contains("input_length"));
}

TEST_F(WindowCli, ABadInputLengthIsAModelErrorNamingFileAndField) {
  std::ifstream in(dir_ / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  in.close();
  c["input_length"] = 0;
  std::ofstream(dir_ / "config.json") << c.dump(2);
  auto r = run_cli("predict " + m() + " the");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("input_length"), std::string::npos) << r.err;
}

}  // namespace
