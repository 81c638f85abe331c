// ModelError as data (file, field, message), the files Model::load and Model::create name, the
// generated tensor-name header, other frameworks' files given as a model directory, and files that are
// not regular (a FIFO as config.json must not block the loader).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>

#include "format/tensor_names.hpp"
#include "lstmlm/config.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "model_files.hpp"

using lstmlm::Model;
using lstmlm::ModelError;
using lstmlm::test::ModelFiles;
using lstmlm::test::TempDir;

namespace {

// The ModelError of `f` (fails the test when nothing or something else is thrown).
template <class F>
ModelError error_of(F&& f) {
  try {
    f();
  } catch (const ModelError& e) {
    return e;
  }
  ADD_FAILURE() << "no ModelError";
  return ModelError("(no error)");
}

ModelError load_error(const std::filesystem::path& p) {
  return error_of([&] { Model::load(p.string()); });
}

void put(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// A zip archive (stored, empty members) holding `names`: local headers, central directory, end record.
std::string zip_of(const std::vector<std::string>& names) {
  auto u16 = [](uint32_t v) { return std::string{static_cast<char>(v & 0xff), static_cast<char>(v >> 8)}; };
  auto u32 = [&](uint32_t v) { return u16(v & 0xffff) + u16(v >> 16); };
  std::string local, central;
  for (const auto& n : names) {
    uint32_t at = static_cast<uint32_t>(local.size());
    auto n16 = u16(static_cast<uint32_t>(n.size()));
    local += "PK\x03\x04" + u16(20) + u16(0) + u16(0) + u32(0) + u32(0) + u32(0) + u32(0) + n16 + u16(0) + n;
    central += "PK\x01\x02" + u16(20) + u16(20) + u16(0) + u16(0) + u32(0) + u32(0) + u32(0) + u32(0) + n16 +
               u16(0) + u16(0) + u16(0) + u16(0) + u32(0) + u32(at) + n;
  }
  auto count = u16(static_cast<uint32_t>(names.size()));
  return local + central + "PK\x05\x06" + u16(0) + u16(0) + count + count +
         u32(static_cast<uint32_t>(central.size())) + u32(static_cast<uint32_t>(local.size())) + u16(0);
}

std::string convert_hint(const std::filesystem::path& p, const std::string& what) {
  return p.string() + ": this is " + what +
         ", not an lstmlm model directory: convert it with `lstmlm-convert " + p.string() + " OUTDIR`";
}

ModelFiles small_model() { return lstmlm::test::files_of(*Model::random(6, 4, 3, 1, 5)); }

}  // namespace

TEST(ModelErrorData, ComposesTheOneLineTextFromFileFieldAndMessage) {
  auto f =
      ModelError::in_field("m/config.json", "layers[0].hidden_size", "expected a positive integer, found -3");
  EXPECT_STREQ(f.what(),
               "m/config.json: field 'layers[0].hidden_size': expected a positive integer, found -3");
  EXPECT_EQ(f.file(), "m/config.json");
  EXPECT_EQ(f.field(), "layers[0].hidden_size");
  EXPECT_EQ(f.message(), "expected a positive integer, found -3");

  auto t = ModelError::about("m/weights.safetensors", "decoder.bias", "missing tensor 'decoder.bias'");
  EXPECT_STREQ(t.what(), "m/weights.safetensors: missing tensor 'decoder.bias'");
  EXPECT_EQ(t.field(), "decoder.bias");

  ModelError w("m/vocab.json", "expected a JSON array of token strings, found {}");
  EXPECT_STREQ(w.what(), "m/vocab.json: expected a JSON array of token strings, found {}");
  EXPECT_EQ(w.field(), "");
  ModelError bare("sampler: the model gave no finite log-probability");
  EXPECT_EQ(bare.file(), "");
  EXPECT_STREQ(bare.what(), "sampler: the model gave no finite log-probability");
}

TEST(ModelErrorData, ConfigErrorsCarryFileAndField) {
  auto j = lstmlm::config_to_json(Model::random(6, 4, 3, 1, 5)->config());
  j["layers"][0]["hidden_size"] = -3;
  auto e = error_of([&] { lstmlm::parse_config(j, "model/config.json"); });
  EXPECT_EQ(e.file(), "model/config.json");
  EXPECT_EQ(e.field(), "layers[0].hidden_size");
  EXPECT_EQ(e.message(), "expected a positive integer, found -3");
}

TEST(ModelErrorData, LoadNamesThePathOfTheFileAndTheTensor) {
  TempDir dir("err_load");
  ModelFiles f = small_model();
  for (auto& t : f.tensors)
    if (t.name == "lstm.weight_hh_l0") {
      t.shape = {12, 4};
      t.values.resize(48);
    }
  f.rebuild_weights();
  f.write(dir.path());
  auto e = load_error(dir.path());
  EXPECT_EQ(e.file(), (dir / "weights.safetensors").string());
  EXPECT_EQ(e.field(), "lstm.weight_hh_l0");
  EXPECT_EQ(e.message(), "tensor 'lstm.weight_hh_l0' has shape [12, 4], expected [12, 3]");
}

TEST(ModelErrorData, VocabEntryErrorsNameTheEntry) {
  TempDir dir("err_vocab");
  ModelFiles f = small_model();
  f.vocab = R"(["a","b",3,"d","e","f"])";
  f.write(dir.path());
  auto e = load_error(dir.path());
  EXPECT_EQ(e.file(), (dir / "vocab.json").string());
  EXPECT_EQ(e.field(), "[2]");
  EXPECT_EQ(e.message(), "entry 2: expected a string, found 3");
}

TEST(ModelErrorData, TokenizerErrorsNameTheConfigFileOfTheDirectory) {
  TempDir dir("err_tok");
  ModelFiles f = small_model();
  f.config["tokenizer"]["eos_token"] = "</s>";
  f.write(dir.path());
  auto e = load_error(dir.path());
  EXPECT_EQ(e.file(), (dir / "config.json").string());
  EXPECT_EQ(e.field(), "tokenizer.eos_token");
  EXPECT_EQ(e.message(), "tokenizer.eos_token '</s>' is not in vocab.json");
}

TEST(ModelErrorData, ModelPathsInADirectory) {
  auto p = lstmlm::ModelPaths::in("models/x");
  EXPECT_EQ(p.dir, "models/x");
  EXPECT_EQ(p.config, "models/x/config.json");
  EXPECT_EQ(p.vocab, "models/x/vocab.json");
  EXPECT_EQ(p.weights, "models/x/weights.safetensors");
  lstmlm::ModelPaths bare;
  EXPECT_EQ(bare.config, "config.json");
  EXPECT_EQ(bare.weights, "weights.safetensors");
}

// Model::create runs the same checks as Model::load; with no directory it names the bare files.
TEST(ModelErrorData, CreateNamesTheBareFiles) {
  auto m = Model::random(6, 4, 3, 1, 5);
  auto shape = error_of([&] {
    lstmlm::Weights w = m->weights();
    w.layers[0].w_hh.resize(12, 4);
    Model::create(m->config(), m->vocab(), w);
  });
  EXPECT_STREQ(shape.what(),
               "weights.safetensors: tensor 'lstm.weight_hh_l0' has shape [12, 4], expected [12, 3]");
  EXPECT_EQ(shape.field(), "lstm.weight_hh_l0");

  auto vocab = error_of([&] { Model::create(m->config(), lstmlm::Vocab({"a", "b"}), m->weights()); });
  EXPECT_STREQ(vocab.what(), "vocab.json: 2 tokens, but config.json vocab_size is 6");

  auto tied = error_of([&] {
    lstmlm::ModelConfig c = m->config();
    c.tied = true;  // E = 4, H = 3
    Model::create(c, m->vocab(), m->weights());
  });
  EXPECT_STREQ(
      tied.what(),
      "config.json: field 'output.tied': a tied output needs embedding_dim (4) equal to the last layer's "
      "output size (3)");
  EXPECT_EQ(tied.field(), "output.tied");

  auto layers = error_of([&] {
    lstmlm::ModelConfig c = m->config();
    c.layers.clear();
    Model::create(c, m->vocab(), m->weights());
  });
  EXPECT_STREQ(layers.what(), "config.json: field 'layers': expected at least one layer, found none");

  auto tok = error_of([&] {
    lstmlm::ModelConfig c = m->config();
    c.tokenizer.unk_token = "<unk>";
    Model::create(c, m->vocab(), m->weights());
  });
  EXPECT_STREQ(tok.what(), "config.json: tokenizer.unk_token '<unk>' is not in vocab.json");
}

// A config built in code gets config.json's bounds on proj_size, which the kernels size their rows by.
TEST(ModelErrorData, CreateRefusesAProjectionNotBelowTheHiddenSize) {
  auto m = Model::random(6, 4, 3, 1, 5);
  for (int p : {3, 13, -1}) {
    auto e = error_of([&] {
      lstmlm::ModelConfig c = m->config();
      c.layers[0].proj_size = p;
      Model::create(c, m->vocab(), m->weights());
    });
    EXPECT_EQ(std::string(e.what()),
              "config.json: field 'layers[0].proj_size': expected 0 (no projection) or an integer below "
              "hidden_size (3), found " +
                  std::to_string(p));
    EXPECT_EQ(e.field(), "layers[0].proj_size");
  }
}

TEST(TensorNames, GeneratedHeaderSpellsTheFormatNamesAndGateOrder) {
  namespace names = lstmlm::format::tensor_names;
  EXPECT_EQ(names::embedding(), "embedding.weight");
  EXPECT_EQ(names::weight_ih(0), "lstm.weight_ih_l0");
  EXPECT_EQ(names::weight_hh(12), "lstm.weight_hh_l12");
  EXPECT_EQ(names::bias_ih(1), "lstm.bias_ih_l1");
  EXPECT_EQ(names::bias_hh(1), "lstm.bias_hh_l1");
  EXPECT_EQ(names::weight_hr(3), "lstm.weight_hr_l3");
  EXPECT_EQ(names::decoder_weight(), "decoder.weight");
  EXPECT_EQ(names::decoder_bias(), "decoder.bias");
  static_assert(lstmlm::format::kGateCount == 4);
  static_assert(lstmlm::format::kGateI == 0 && lstmlm::format::kGateF == 1 && lstmlm::format::kGateG == 2 &&
                lstmlm::format::kGateO == 3);
  EXPECT_STREQ(lstmlm::format::kGateOrder, "ifgo");
}

TEST(ForeignModel, KerasHdf5) {
  TempDir dir("foreign_h5");
  put(dir / "model.h5", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\0'));
  EXPECT_STREQ(load_error(dir / "model.h5").what(),
               convert_hint(dir / "model.h5", "a Keras HDF5 file").c_str());
}

TEST(ForeignModel, KerasZip) {
  TempDir dir("foreign_keras");
  put(dir / "model.keras", zip_of({"metadata.json", "config.json", "model.weights.h5"}));
  EXPECT_STREQ(load_error(dir / "model.keras").what(),
               convert_hint(dir / "model.keras", "a Keras .keras file").c_str());
}

TEST(ForeignModel, PyTorchZipAndPickle) {
  TempDir dir("foreign_pt");
  put(dir / "model.pt", zip_of({"archive/data.pkl", "archive/data/0", "archive/version"}));
  EXPECT_STREQ(load_error(dir / "model.pt").what(),
               convert_hint(dir / "model.pt", "a PyTorch checkpoint (.pt/.pth)").c_str());
  put(dir / "legacy.pth", std::string("\x80\x02\x8a\x0a", 4) + std::string(20, 'x'));
  EXPECT_STREQ(load_error(dir / "legacy.pth").what(),
               convert_hint(dir / "legacy.pth", "a PyTorch pickle file (.pt/.pth)").c_str());
}

TEST(ForeignModel, Tf1Checkpoint) {
  TempDir dir("foreign_tf1");
  for (const char* f : {"model.ckpt.index", "model.ckpt.meta", "model.ckpt.data-00000-of-00001"}) {
    put(dir / f, "tf1 bytes");
    EXPECT_STREQ(load_error(dir / f).what(), convert_hint(dir / f, "a TensorFlow 1 checkpoint file").c_str());
  }
  // Near misses of the shard name are not called checkpoints.
  for (const char* f :
       {"notes.data-1-of-", "notes.data--of-2", "notes.data-1-of-2.txt", "notes.data-x-of-2"}) {
    put(dir / f, "text");
    EXPECT_EQ(std::string(load_error(dir / f).what()).find("TensorFlow 1"), std::string::npos) << f;
  }
  // The prefix, which is no file itself.
  EXPECT_STREQ(load_error(dir / "model.ckpt").what(),
               convert_hint(dir / "model.ckpt", "a TensorFlow 1 checkpoint prefix").c_str());
  put(dir / "checkpoint", "model_checkpoint_path: \"model.ckpt\"\n");
  EXPECT_STREQ(load_error(dir.path()).what(),
               convert_hint(dir.path(), "a TensorFlow 1 checkpoint directory").c_str());
}

TEST(ForeignModel, NotSupportedYet) {
  TempDir dir("foreign_unsupported");
  std::filesystem::create_directories(dir / "saved");
  put(dir / "saved" / "saved_model.pb", "pb");
  EXPECT_STREQ(load_error(dir / "saved").what(),
               convert_hint(dir / "saved", "a TensorFlow SavedModel directory").c_str());
  put(dir / "model.onnx", "\x08\x07\x12\x04onnx");
  EXPECT_STREQ(load_error(dir / "model.onnx").what(),
               convert_hint(dir / "model.onnx", "an ONNX file").c_str());
  put(dir / "web.json", R"({"format": "layers-model", "modelTopology": {}, "weightsManifest": []})");
  EXPECT_STREQ(load_error(dir / "web.json").what(),
               convert_hint(dir / "web.json", "a TensorFlow.js model (model.json)").c_str());
  std::filesystem::create_directories(dir / "tfjs");
  put(dir / "tfjs" / "model.json", "{}");
  EXPECT_STREQ(load_error(dir / "tfjs").what(),
               convert_hint(dir / "tfjs", "a TensorFlow.js model directory").c_str());
}

TEST(ForeignModel, OtherFilesAreNotAModelDirectory) {
  TempDir dir("foreign_other");
  put(dir / "notes.txt", "hello");
  put(dir / "other.zip", zip_of({"readme.txt"}));
  for (const char* f : {"notes.txt", "other.zip"})
    EXPECT_STREQ(load_error(dir / f).what(),
                 ((dir / f).string() +
                  ": not a model directory (expected config.json, vocab.json and weights.safetensors in it)")
                     .c_str());
}

TEST(ForeignModel, ADirectoryWithConfigJsonIsReadAsAModel) {
  // An lstmlm directory that also holds a TF1 `checkpoint` file is still read as lstmlm (and here loads).
  TempDir dir("foreign_lstmlm");
  small_model().write(dir.path());
  put(dir / "checkpoint", "x");
  EXPECT_NO_THROW(Model::load(dir.path().string()));
}

// A FIFO in place of each model file: refused at once ("not a regular file"), never opened for reading
// (which would block until a writer appears).
TEST(NonRegularFiles, AFifoIsRefusedWithoutBlocking) {
  for (const char* name : {"config.json", "vocab.json", "weights.safetensors"}) {
    TempDir dir(std::string("fifo_") + name);
    ModelFiles f = small_model();
    f.write(dir.path());
    std::filesystem::remove(dir / name);
    ASSERT_EQ(::mkfifo((dir / name).c_str(), 0600), 0);
    auto fut = std::async(std::launch::async, [&] { return load_error(dir.path()); });
    if (fut.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      // Release the blocked reader so the test ends, then fail.
      int fd = ::open((dir / name).c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
      ADD_FAILURE() << name << ": Model::load blocked on a FIFO";
    }
    auto e = fut.get();
    EXPECT_EQ(e.file(), (dir / name).string());
    EXPECT_STREQ(e.what(), ((dir / name).string() + ": not a regular file").c_str());
  }
}

// A directory without config.json that holds a framework's model file is named with that file.
TEST(ForeignModel, DirectoryHoldingAFrameworkFile) {
  TempDir dir("foreign_in_dir");
  put(dir / "README.txt", "a downloaded project");
  put(dir / "model.h5", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(64, '\0'));
  const std::string msg = load_error(dir.path()).what();
  EXPECT_NE(msg.find("no config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find((dir / "model.h5").string() + ", a Keras HDF5 file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lstmlm-convert"), std::string::npos) << msg;
  // With a config.json the directory is read as a model (and fails on what it lacks, not on the .h5).
  put(dir / "config.json", "{}");
  const std::string as_model = load_error(dir.path()).what();
  EXPECT_EQ(as_model.find("Keras"), std::string::npos) << as_model;
}
