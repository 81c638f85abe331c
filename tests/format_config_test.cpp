// config.json parsing: the Python writer's layout is accepted, every bad field is named.
#include <gtest/gtest.h>

#include "lstmlm/config.hpp"
#include "lstmlm/error.hpp"

using nlohmann::json;

namespace {

// The layout tools/lstmlm_format writes.
json good() {
  return json::parse(R"({
    "format": "lstmlm", "format_version": 1, "vocab_size": 554, "embedding_dim": 100,
    "layers": [
      {"hidden_size": 100, "proj_size": 0, "activation": "tanh", "recurrent_activation": "sigmoid", "cell_clip": null},
      {"hidden_size": 64, "proj_size": 32, "activation": "tanh", "recurrent_activation": "hard_sigmoid_keras3", "cell_clip": 3.0}
    ],
    "output": {"tied": false},
    "tokenizer": {"type": "word", "lowercase": true, "filters": "!?", "unk_token": "<unk>", "eos_token": null,
                  "bos_token": null, "pad_id": 0},
    "source": {"framework": "keras", "version": "3.1"}
  })");
}

std::string error_of(const json& j) {
  try {
    lstmlm::parse_config(j, "model/config.json");
  } catch (const lstmlm::ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Config, ParsesTheWriterLayout) {
  auto c = lstmlm::parse_config(good(), "config.json");
  EXPECT_EQ(c.vocab_size, 554);
  EXPECT_EQ(c.embedding_dim, 100);
  ASSERT_EQ(c.layers.size(), 2u);
  EXPECT_EQ(c.layers[1].proj_size, 32);
  EXPECT_EQ(c.layers[1].output_size(), 32);
  EXPECT_EQ(c.layers[1].recurrent_activation, lstmlm::RecurrentActivation::HardSigmoidKeras3);
  EXPECT_EQ(c.layers[1].cell_clip, 3.0f);
  EXPECT_FALSE(c.layers[0].cell_clip.has_value());
  EXPECT_EQ(c.layer_input_size(1), 100);
  EXPECT_TRUE(c.tokenizer.lowercase);
  EXPECT_EQ(c.tokenizer.unk_token, "<unk>");
  EXPECT_FALSE(c.tokenizer.eos_token.has_value());
  EXPECT_EQ(c.tokenizer.pad_id, 0);
  EXPECT_EQ(c.source["framework"], "keras");
}

TEST(Config, ToJsonRoundTrips) {
  auto c = lstmlm::parse_config(good(), "config.json");
  json j = lstmlm::config_to_json(c);
  EXPECT_EQ(j, good());
  auto c2 = lstmlm::parse_config(j, "config.json");
  EXPECT_EQ(lstmlm::config_to_json(c2), j);
}

TEST(Config, ErrorsNameFileAndField) {
  json j = good();
  j["layers"][1]["hidden_size"] = -3;
  EXPECT_EQ(error_of(j),
            "model/config.json: field 'layers[1].hidden_size': expected a positive integer, found -3");
  j = good();
  j.erase("tokenizer");
  EXPECT_EQ(error_of(j), "model/config.json: field 'tokenizer': required field is missing");
  j = good();
  j["layers"][0]["recurrent_activation"] = "relu";
  EXPECT_NE(error_of(j).find("field 'layers[0].recurrent_activation': expected \"sigmoid\""),
            std::string::npos);
  j = good();
  j["layers"][0]["activation"] = "relu";
  EXPECT_NE(error_of(j).find("field 'layers[0].activation'"), std::string::npos);
  j = good();
  j["tokenizer"]["type"] = "bpe";
  EXPECT_NE(error_of(j).find("field 'tokenizer.type'"), std::string::npos);
  j = good();
  j["vocab_size"] = 100.5;
  EXPECT_NE(error_of(j).find("field 'vocab_size': expected a positive integer, found 100.5"),
            std::string::npos);
  j = good();
  j["layers"][1]["proj_size"] = 64;  // must be below hidden_size (PyTorch's rule)
  EXPECT_NE(error_of(j).find("field 'layers[1].proj_size'"), std::string::npos);
  j = good();
  j["tokenizer"]["pad_id"] = 554;
  EXPECT_NE(error_of(j).find("field 'tokenizer.pad_id'"), std::string::npos);
  j = good();
  j["layers"][0]["recurent_activation"] = "sigmoid";  // misspelt: refused, not silently ignored
  EXPECT_NE(error_of(j).find("unknown field 'layers[0].recurent_activation'"), std::string::npos);
}

TEST(Config, SizesAreBounded) {
  json j = good();
  j["vocab_size"] = (1 << 28) + 1;
  EXPECT_NE(error_of(j).find("field 'vocab_size': expected a positive integer of at most 268435456"),
            std::string::npos);
  j = good();
  j["layers"][0]["hidden_size"] = 65537;
  EXPECT_NE(error_of(j).find("of at most 65536"), std::string::npos);
  j = good();
  j["embedding_dim"] = 18446744073709551615ull;  // uint64 max must not wrap to -1
  EXPECT_NE(error_of(j).find("field 'embedding_dim'"), std::string::npos);
}

TEST(Config, NewerVersionIsRefusedNamingTheVersionRead) {
  json j = good();
  j["format_version"] = 6;
  j["layers"] = "whatever v6 holds";  // the version is judged before anything else
  EXPECT_EQ(error_of(j),
            "model/config.json: format_version 6 is newer than this build reads (5); upgrade lstmlm");
  j["format_version"] = 0;
  EXPECT_NE(error_of(j).find("field 'format_version'"), std::string::npos);
}

TEST(Config, TiedNeedsMatchingWidths) {
  json j = good();
  j["output"]["tied"] = true;  // embedding 100, last layer output 32
  EXPECT_NE(error_of(j).find("field 'output.tied'"), std::string::npos);
}

TEST(Config, TrainableConventionIsChecked) {
  json j = good();
  j["source"]["trainable"] = {{"embedding", false}, {"lstm_l1", true}};
  EXPECT_NO_THROW(lstmlm::parse_config(j, "c"));
  j["source"]["trainable"] = {{"lstm_l2", false}};
  EXPECT_NE(error_of(j).find("field 'source.trainable.lstm_l2': unknown layer name"), std::string::npos);
  j["source"]["trainable"] = {{"embedding", "no"}};
  EXPECT_NE(error_of(j).find("field 'source.trainable.embedding': expected true or false"),
            std::string::npos);
}

// tokenizer.split (Keras' separator) is optional: absent it stays absent, so every older model reads and
// writes back unchanged; present it round-trips; "" and a char model are refused naming the field.
TEST(Config, TokenizerSplitIsOptionalAndRoundTrips) {
  auto c = lstmlm::parse_config(good(), "config.json");
  EXPECT_FALSE(c.tokenizer.split.has_value());
  EXPECT_FALSE(lstmlm::config_to_json(c)["tokenizer"].contains("split"));
  json j = good();
  j["tokenizer"]["split"] = " ";
  c = lstmlm::parse_config(j, "config.json");
  EXPECT_EQ(c.tokenizer.split, " ");
  EXPECT_EQ(lstmlm::config_to_json(c), j);
  j["tokenizer"]["split"] = nullptr;  // null = the whitespace rule, as absent
  EXPECT_FALSE(lstmlm::parse_config(j, "config.json").tokenizer.split.has_value());
  j["tokenizer"]["split"] = "";
  EXPECT_EQ(error_of(j),
            "model/config.json: field 'tokenizer.split': expected a non-empty string or null, found \"\"");
  j["tokenizer"]["split"] = 5;
  EXPECT_NE(error_of(j).find("field 'tokenizer.split'"), std::string::npos);
  j["tokenizer"]["split"] = " ";
  j["tokenizer"]["type"] = "char";
  EXPECT_NE(error_of(j).find("field 'tokenizer.split': applies to word models only"), std::string::npos);
}

TEST(Config, InputLengthIsOptionalPositiveAndBounded) {
  // Absent (the writer's layout above) and null: any length.
  EXPECT_FALSE(lstmlm::parse_config(good(), "config.json").input_length.has_value());
  json j = good();
  j["input_length"] = nullptr;
  EXPECT_FALSE(lstmlm::parse_config(j, "config.json").input_length.has_value());
  j["input_length"] = 8404;
  auto c = lstmlm::parse_config(j, "config.json");
  EXPECT_EQ(c.input_length, 8404);
  EXPECT_EQ(lstmlm::config_to_json(c)["input_length"], 8404);
  EXPECT_FALSE(lstmlm::config_to_json(lstmlm::parse_config(good(), "c")).contains("input_length"));
  for (json bad : {json(0), json(-5), json(1000001), json(3.5), json("8404"), json(true)}) {
    j["input_length"] = bad;
    std::string e = error_of(j);
    EXPECT_NE(e.find("model/config.json"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("input_length"), std::string::npos) << bad << ": " << e;
  }
}

TEST(Config, V3CellsParseAndRoundTrip) {
  json j = good();
  j["format_version"] = 3;
  j["layers"] = json::parse(R"([
    {"cell": "gru", "hidden_size": 40, "reset_after": false, "recurrent_activation": "hard_sigmoid"},
    {"cell": "rnn", "hidden_size": 30, "activation": "relu"},
    {"hidden_size": 64, "proj_size": 32, "recurrent_activation": "sigmoid", "peepholes": true,
     "cell_clip": 3.0, "proj_clip": 2.5}
  ])");
  const auto c = lstmlm::parse_config(j, "config.json");
  ASSERT_EQ(c.layers.size(), 3u);
  EXPECT_EQ(c.layers[0].cell, lstmlm::CellType::Gru);
  EXPECT_FALSE(c.layers[0].reset_after);
  EXPECT_EQ(c.layers[0].gate_count(), 3);
  EXPECT_EQ(c.layers[0].memory_size(), 0);
  EXPECT_EQ(c.layers[1].cell, lstmlm::CellType::Rnn);
  EXPECT_EQ(c.layers[1].activation, lstmlm::Activation::Relu);
  EXPECT_EQ(c.layers[1].gate_count(), 1);
  EXPECT_EQ(c.layer_input_size(1), 40);
  EXPECT_TRUE(c.layers[2].peepholes);
  EXPECT_EQ(c.layers[2].proj_clip, 2.5f);
  EXPECT_EQ(c.layers[2].memory_size(), 64);
  EXPECT_EQ(c.required_format_version(), 3);
  // What config_to_json writes reads back the same.
  const auto again = lstmlm::parse_config(lstmlm::config_to_json(c), "again.json");
  EXPECT_EQ(lstmlm::config_to_json(again), lstmlm::config_to_json(c));
  EXPECT_EQ(lstmlm::config_to_json(c)["format_version"], 3);
  // A GRU defaults to reset_after (PyTorch's and Keras 2.3+'s convention) and sigmoid gates.
  j["layers"] = json::parse(R"([{"cell": "gru", "hidden_size": 5}])");
  j["output"]["tied"] = false;
  const auto d = lstmlm::parse_config(j, "config.json");
  EXPECT_TRUE(d.layers[0].reset_after);
  EXPECT_EQ(d.layers[0].recurrent_activation, lstmlm::RecurrentActivation::Sigmoid);
}

TEST(Config, ASimpleRnnBuiltInCodeHasTheParsersActivationRule) {
  lstmlm::ModelConfig c;
  c.vocab_size = 4;
  c.embedding_dim = 3;
  lstmlm::LayerConfig l;
  l.cell = lstmlm::CellType::Rnn;
  l.hidden_size = 5;
  l.activation = lstmlm::Activation::Linear;
  c.layers.push_back(l);
  try {
    lstmlm::check_config(c, "config.json");
    ADD_FAILURE() << "a linear simple RNN was accepted";
  } catch (const lstmlm::ModelError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: field 'layers[0].activation': a simple RNN's activation is \"tanh\", \"relu\" or "
              "\"sigmoid\", found \"linear\"");
  }
  c.layers[0].activation = lstmlm::Activation::Relu;
  EXPECT_NO_THROW(lstmlm::check_config(c, "config.json"));
}

TEST(Config, V3FieldsAreRefusedWhereTheyDoNotApply) {
  json j = good();
  j["format_version"] = 3;
  j["layers"] = json::parse(R"([{"cell": "rnn", "hidden_size": 5, "activation": "sigmoid"}])");
  EXPECT_EQ(
      error_of(j),
      "model/config.json: field 'layers[0].activation': a simple RNN's \"sigmoid\" needs format_version 5");
  j["layers"] = json::parse(R"([{"cell": "rnn", "hidden_size": 5, "reset_after": true}])");
  EXPECT_NE(error_of(j).find("field 'layers[0].reset_after'"), std::string::npos) << error_of(j);
  j["layers"] = json::parse(R"([{"hidden_size": 5, "recurrent_activation": "sigmoid", "proj_clip": 1.0}])");
  EXPECT_EQ(error_of(j),
            "model/config.json: field 'layers[0].proj_clip': needs a projection (proj_size > 0)");
  // A clip a float cannot hold: infinity, or 0, which would clip every value to 0.
  for (const char* clip : {"1e300", "1e-50"}) {
    j["layers"] = json::parse(
        std::string(R"([{"hidden_size": 5, "recurrent_activation": "sigmoid", "cell_clip": )") + clip + "}]");
    EXPECT_EQ(error_of(j),
              "model/config.json: field 'layers[0].cell_clip': expected a positive number a float "
              "holds (1e-45 to 3.4e38) or null, found " +
                  json::parse(clip).dump())
        << clip;
  }
  j["layers"] = json::parse(R"([{"cell": 3, "hidden_size": 5}])");
  EXPECT_NE(error_of(j).find("field 'layers[0].cell'"), std::string::npos);
  j["format_version"] = 2;
  j["layers"] = json::parse(
      R"([{"hidden_size": 64, "proj_size": 8, "recurrent_activation": "sigmoid", "proj_clip": 1.0}])");
  EXPECT_EQ(error_of(j),
            "model/config.json: field 'layers[0].proj_clip': needs format_version 3 (format_version 2 "
            "has no proj_clip)");
}
