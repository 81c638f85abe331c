#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "lstmlm/config.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/precision.hpp"
#include "lstmlm/report/info.hpp"
#include "lstmlm/summary.hpp"
#include "lstmlm/tasks/window.hpp"

namespace lstmlm::report {

std::string model_info_json(const Model& m, Precision precision, const std::string& name) {
  using nlohmann::json;
  const ModelSummary s = summarize(m);
  const auto& c = m.config();
  json layers = json::array();
  for (const auto& l : s.layers)
    layers.push_back({{"name", l.name},
                      {"type", l.type},
                      {"output_shape", {nullptr, nullptr, l.width}},
                      {"params", l.params},
                      {"trainable", l.trainable ? json(*l.trainable) : json(nullptr)},
                      {"note", l.note}});
  auto opt = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  json kernels = json::object();
  for (Precision p : kPrecisions) kernels[std::string(precision_name(p))] = kernels_for(p);
  json cfg = config_to_json(c);
  json j = {{"model", name.empty() ? m.directory() : name},
            {"format_version", c.format_version},
            {"vocab_size", c.vocab_size},
            {"embedding_dim", c.embedding_dim},
            {"tied", c.tied},
            {"layers", layers},
            {"total_params", s.total_params},
            {"trainable_params", opt(s.trainable_params)},
            {"non_trainable_params", opt(s.non_trainable_params)},
            {"memory_bytes", m.memory_bytes() + packed_bytes(m, precision)},
            {"kernels", kernels},
            {"tokenizer", cfg["tokenizer"]},
            {"source", c.source},
            {"warnings", m.warnings()}};
  if (c.input_length) j["input_length"] = *c.input_length;
  // What --pad-to feeds before a short context: an id, or null for the zero input vector of a one-hot model.
  const int32_t pad = tasks::window_pad_id(m);
  j["padding"] = pad == c.vocab_size ? json(nullptr) : json(pad);
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string ngram_info_json(const NgramModel& m) {
  nlohmann::ordered_json j;
  j["model"] = m.path();
  j["type"] = "arpa";
  j["order"] = m.order();
  j["counts"] = m.counts();
  j["vocab_size"] = m.vocab_size();
  j["unk_added"] = m.unk_added();
  j["memory_bytes"] = m.memory_bytes();
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lstmlm::report
