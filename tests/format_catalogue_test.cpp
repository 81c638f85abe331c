// The broken-model catalogue: each case breaks one thing in a valid model directory and runs
// `lstmlm info -m DIR`. Every case must exit 1 with exactly one line on stderr that starts with the
// path of the file at fault and names the problem. Runs under ASan+UBSan in the sanitizer build.
#include <gtest/gtest.h>

#include <functional>

#include "lstmlm/model.hpp"
#include "model_files.hpp"
#include "test_util.hpp"

using lstmlm::test::ModelFiles;
using lstmlm::test::Tensor;
using nlohmann::json;

namespace {

struct BrokenFile {
  std::string name;
  std::string file;    // config.json | vocab.json | weights.safetensors | "" (the directory itself)
  std::string expect;  // substring of the message
  std::function<void(ModelFiles&)> breakit;
};

// The valid base: V=6 (with <pad>, <unk>, <eos>), E=4, one LSTM of H=3, untied.
ModelFiles base() {
  auto m = lstmlm::Model::random(6, 4, 3, 1, 11);
  ModelFiles f = lstmlm::test::files_of(*m);
  f.vocab = R"(["<pad>","<unk>","<eos>","a","b","c"])";
  f.config["tokenizer"]["unk_token"] = "<unk>";
  f.config["tokenizer"]["eos_token"] = "<eos>";
  f.config["tokenizer"]["pad_id"] = 0;
  return f;
}

Tensor& tensor(ModelFiles& f, const std::string& name) {
  for (auto& t : f.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("test: no tensor " + name);
}

// Header of the base weights with one tensor's entry replaced; data unchanged.
void edit_header(ModelFiles& f, const std::function<void(json&)>& edit) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(f.weights[static_cast<size_t>(i)]);
  json h = json::parse(f.weights.substr(8, n));
  edit(h);
  f.weights = lstmlm::test::safetensors_bytes(h.dump(), f.weights.substr(8 + n));
}

void set_header_len(ModelFiles& f, uint64_t n) {
  for (int i = 0; i < 8; ++i) f.weights[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
}

std::vector<BrokenFile> catalogue() {
  const std::string W = "weights.safetensors", C = "config.json", V = "vocab.json";
  return {
      // --- weights.safetensors: the container
      {"truncated_file", W, "run past the end of the data section",
       [](ModelFiles& f) { f.weights.resize(f.weights.size() - 10); }},
      {"shorter_than_length_prefix", W, "too short for the 8-byte header length",
       [](ModelFiles& f) { f.weights = "abc"; }},
      {"header_length_past_end", W, "runs past the end of the file",
       [](ModelFiles& f) { set_header_len(f, f.weights.size()); }},
      {"header_length_huge", W, "exceeds the limit",
       [](ModelFiles& f) { set_header_len(f, uint64_t{1} << 62); }},
      {"header_bad_json", W, "header: not valid JSON",
       [](ModelFiles& f) { f.weights = lstmlm::test::safetensors_bytes("{\"a\": [1, 2", ""); }},
      {"header_not_object", W, "header: expected a JSON object",
       [](ModelFiles& f) { f.weights = lstmlm::test::safetensors_bytes("[1, 2]", ""); }},
      {"unknown_dtype", W, "tensor 'decoder.bias': dtype 'I64' is not supported",
       [](ModelFiles& f) { edit_header(f, [](json& h) { h["decoder.bias"]["dtype"] = "I64"; }); }},
      // F64 is read (format v5): a tensor relabelled F64 holds half the bytes its shape needs.
      {"f64_dtype", W, "x F64 needs",
       [](ModelFiles& f) { edit_header(f, [](json& h) { h["embedding.weight"]["dtype"] = "F64"; }); }},
      {"overlapping_offsets", W, "overlaps tensor",
       [](ModelFiles& f) {
         edit_header(f, [](json& h) {
           // decoder.bias (6 floats) moved onto the first 24 bytes of embedding.weight.
           h["decoder.bias"]["data_offsets"] = {0, 24};
         });
       }},
      {"out_of_file_offsets", W, "run past the end of the data section",
       [](ModelFiles& f) {
         edit_header(f, [](json& h) {
           uint64_t e = h["decoder.bias"]["data_offsets"][1].get<uint64_t>();
           h["decoder.bias"]["data_offsets"] = {e, e + 24};
         });
       }},
      {"offsets_reversed", W, "end before they begin",
       [](ModelFiles& f) { edit_header(f, [](json& h) {
                             h["decoder.bias"]["data_offsets"] = {24, 0};
                           }); }},
      {"shape_product_mismatch", W, "tensor 'decoder.bias': shape [7] x F32 needs 28 bytes",
       [](ModelFiles& f) { edit_header(f, [](json& h) { h["decoder.bias"]["shape"] = {7}; }); }},
      {"shape_product_overflow", W, "is too large",
       [](ModelFiles& f) {
         edit_header(f, [](json& h) { h["decoder.bias"]["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40}; });
       }},
      {"negative_dimension", W, "expected a non-negative integer, found -6",
       [](ModelFiles& f) { edit_header(f, [](json& h) { h["decoder.bias"]["shape"] = {-6}; }); }},
      {"duplicate_tensor", W, "key 'decoder.bias' appears twice",
       [](ModelFiles& f) {
         // json objects cannot hold a key twice: splice the duplicate into the header text.
         uint64_t n = 0;
         for (int i = 7; i >= 0; --i)
           n = (n << 8) | static_cast<unsigned char>(f.weights[static_cast<size_t>(i)]);
         json h = json::parse(f.weights.substr(8, n));
         std::string text = h.dump();
         text.insert(1, "\"decoder.bias\":" + h["decoder.bias"].dump() + ",");
         f.weights = lstmlm::test::safetensors_bytes(text, f.weights.substr(8 + n));
       }},
      {"hole_in_data", W, "belong to no tensor", [](ModelFiles& f) { f.weights += std::string(8, '\0'); }},
      // --- weights.safetensors: tensors against config.json
      {"wrong_tensor_shape", W, "tensor 'lstm.weight_hh_l0' has shape [12, 4], expected [12, 3]",
       [](ModelFiles& f) {
         auto& t = tensor(f, "lstm.weight_hh_l0");
         t.shape = {12, 4};
         t.values.resize(48);
         f.rebuild_weights();
       }},
      {"wrong_tensor_rank", W, "tensor 'embedding.weight' has shape [24], expected 2 dimensions",
       [](ModelFiles& f) {
         tensor(f, "embedding.weight").shape = {24};
         f.rebuild_weights();
       }},
      {"missing_tensor", W, "missing tensor 'decoder.bias'",
       [](ModelFiles& f) {
         f.tensors.pop_back();  // decoder.bias is last
         f.rebuild_weights();
       }},
      {"no_lstm_bias", W, "missing tensor 'lstm.bias_ih_l0' or 'lstm.bias_hh_l0'",
       [](ModelFiles& f) {
         std::erase_if(f.tensors, [](const Tensor& t) { return t.name == "lstm.bias_ih_l0"; });
         f.rebuild_weights();
       }},
      {"unknown_tensor", W, "unknown tensor 'lstm.weight_ih_l1'",
       [](ModelFiles& f) {
         f.tensors.push_back({"lstm.weight_ih_l1", {12, 3}, std::vector<float>(36, 0.f)});
         f.rebuild_weights();
       }},
      {"decoder_weight_when_tied", W, "'decoder.weight' must be absent",
       [](ModelFiles& f) {
         f.config["embedding_dim"] = 3;  // tied needs E == H
         f.config["output"]["tied"] = true;
       }},
      {"missing_weights_file", W, "cannot open", [](ModelFiles& f) { f.write_weights = false; }},
      // --- config.json
      {"missing_config", C, "cannot open", [](ModelFiles& f) { f.write_config = false; }},
      {"config_bad_json", C, "not valid JSON",
       [](ModelFiles& f) { f.config_text = "{\"format\": \"lstmlm\",}"; }},
      {"config_not_object", C, "expected a JSON object", [](ModelFiles& f) { f.config_text = "[]"; }},
      {"config_duplicate_key", C, "key 'vocab_size' appears twice",
       [](ModelFiles& f) {
         std::string t = f.config.dump();
         f.config_text = "{\"vocab_size\": 6, " + t.substr(1);
       }},
      {"missing_required_field", C, "field 'embedding_dim': required field is missing",
       [](ModelFiles& f) { f.config.erase("embedding_dim"); }},
      {"wrong_format_name", C, "field 'format': expected \"lstmlm\"",
       [](ModelFiles& f) { f.config["format"] = "keras"; }},
      {"newer_format_version", C, "format_version 6 is newer than this build reads (5); upgrade lstmlm",
       [](ModelFiles& f) { f.config["format_version"] = 6; }},
      {"v3_cell_in_v2", C, "field 'layers[0].cell': \"gru\" needs format_version 3",
       [](ModelFiles& f) {
         f.config["format_version"] = 2;
         f.config["layers"][0]["cell"] = "gru";
       }},
      {"unknown_cell", C, "field 'layers[0].cell': expected \"lstm\", \"gru\" or \"rnn\", found \"lru\"",
       [](ModelFiles& f) {
         f.config["format_version"] = 3;
         f.config["layers"][0]["cell"] = "lru";
       }},
      {"gru_with_lstm_key", C, "field 'layers[0].proj_size': a gru layer has no proj_size (an LSTM's field)",
       [](ModelFiles& f) {
         f.config["format_version"] = 3;
         f.config["layers"][0]["cell"] = "gru";
       }},
      {"peepholes_in_v1", C, "field 'layers[0].peepholes': needs format_version 3",
       [](ModelFiles& f) { f.config["layers"][0]["peepholes"] = true; }},
      {"peephole_tensors_missing", W, "missing tensor 'lstm.weight_ci_l0' (config.json layers[0] peepholes)",
       [](ModelFiles& f) {
         f.config["format_version"] = 3;
         f.config["layers"][0]["peepholes"] = true;
       }},
      {"v2_activation_in_v1", C, "field 'layers[0].activation': \"relu\" needs format_version 2",
       [](ModelFiles& f) { f.config["layers"][0]["activation"] = "relu"; }},
      {"v2_head_in_v1", C, "field 'output.head': needs format_version 2",
       [](ModelFiles& f) { f.config["output"]["head"] = json::array(); }},
      {"unknown_cell_activation", C, "field 'layers[0].activation': expected \"tanh\", \"relu\"",
       [](ModelFiles& f) {
         f.config["format_version"] = 2;
         f.config["layers"][0]["activation"] = "elu";
       }},
      {"head_without_tensors", W, "missing tensor 'head.0.weight'",
       [](ModelFiles& f) {
         f.config["format_version"] = 2;
         f.config["output"]["head"] = json::array({{{"units", 4}, {"activation", "relu"}}});
       }},
      {"unknown_recurrent_activation", C, "field 'layers[0].recurrent_activation'",
       [](ModelFiles& f) { f.config["layers"][0]["recurrent_activation"] = "relu"; }},
      {"negative_hidden_size", C, "field 'layers[0].hidden_size': expected a positive integer, found -3",
       [](ModelFiles& f) { f.config["layers"][0]["hidden_size"] = -3; }},
      {"vocab_size_too_large", C, "field 'vocab_size': expected a positive integer of at most 268435456",
       [](ModelFiles& f) { f.config["vocab_size"] = 1 << 29; }},
      {"unknown_config_field", C, "unknown field 'layer'", [](ModelFiles& f) { f.config["layer"] = 1; }},
      {"pad_id_out_of_range", C, "field 'tokenizer.pad_id'",
       [](ModelFiles& f) { f.config["tokenizer"]["pad_id"] = 6; }},
      {"eos_token_not_in_vocab", C, "tokenizer.eos_token",
       [](ModelFiles& f) { f.config["tokenizer"]["eos_token"] = "</s>"; }},
      // --- vocab.json
      {"missing_vocab", V, "cannot open", [](ModelFiles& f) { f.write_vocab = false; }},
      {"vocab_not_array", V, "expected a JSON array of token strings",
       [](ModelFiles& f) { f.vocab = R"({"a": 0})"; }},
      {"vocab_entry_not_string", V, "entry 3: expected a string, found 7",
       [](ModelFiles& f) { f.vocab = R"(["<pad>","<unk>","<eos>",7,"b","c"])"; }},
      {"wrong_vocab_size", V, "5 tokens, but config.json vocab_size is 6",
       [](ModelFiles& f) { f.vocab = R"(["<pad>","<unk>","<eos>","a","b"])"; }},
      {"vocab_not_utf8", V, "UTF-8",
       [](ModelFiles& f) { f.vocab = "[\"<pad>\",\"<unk>\",\"<eos>\",\"a\xff\",\"b\",\"c\"]"; }},
      {"vocab_lone_surrogate", V, "surrogate",
       [](ModelFiles& f) { f.vocab = R"(["<pad>","<unk>","<eos>","\ud800","b","c"])"; }},
  };
}

class Catalogue : public ::testing::TestWithParam<BrokenFile> {};

TEST(CatalogueBase, TheUnbrokenBaseLoads) {
  lstmlm::test::TempDir dir("cat_base");
  base().write(dir.path());
  auto r = lstmlm::test::run_cli("info -m '" + dir.path().string() + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(CatalogueBase, MissingDirectoryIsNamed) {
  auto r = lstmlm::test::run_cli("info -m /nonexistent/lstmlm-model");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "lstmlm: error: /nonexistent/lstmlm-model: not a model directory (expected config.json, "
            "vocab.json and weights.safetensors in it)\n");
}

TEST(CatalogueBase, WeightsThatAreADirectoryAreRefused) {
  lstmlm::test::TempDir dir("cat_wdir");
  ModelFiles f = base();
  f.write_weights = false;
  f.write(dir.path());
  std::filesystem::create_directory(dir / "weights.safetensors");
  auto r = lstmlm::test::run_cli("info -m '" + dir.path().string() + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "lstmlm: error: " + (dir / "weights.safetensors").string() + ": not a regular file\n");
}

TEST_P(Catalogue, ExitsOneWithOneLineNamingFileAndProblem) {
  const BrokenFile& c = GetParam();
  lstmlm::test::TempDir dir("cat_" + c.name);
  ModelFiles f = base();
  c.breakit(f);
  f.write(dir.path());
  auto r = lstmlm::test::run_cli("info -m '" + dir.path().string() + "'");
  EXPECT_EQ(r.status, 1) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not exactly one line: " << r.err;
  std::string prefix = "lstmlm: error: " + (dir.path() / c.file).string() + ": ";
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(Broken, Catalogue, ::testing::ValuesIn(catalogue()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
