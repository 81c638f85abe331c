#include "server/service.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "lstmlm/error.hpp"
#include "lstmlm/report/generate.hpp"
#include "lstmlm/report/info.hpp"
#include "lstmlm/report/predict.hpp"
#include "lstmlm/report/rescore.hpp"
#include "lstmlm/report/score.hpp"
#include "lstmlm/tasks/beam.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/nbest.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/tasks/rescore.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/text.hpp"
#include "server/base64.hpp"
#include "server/http_error.hpp"
#include "server/request.hpp"
#include "server/search_fields.hpp"

namespace lstmlm::server {

namespace {

using report::Record;
using report::Value;

std::string json_of(const report::Fields& f) {
  std::string s;
  report::append_json(s, f, false);
  return s;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s;
}

// The value of an enumerated field (the library's words for its key), or its fallback when absent.
template <class E>
E pick(Body& b, const tasks::Choices<E>& c) {
  const auto v = b.str(c.key());
  return v ? c.parse(*v) : c.fallback();
}

// pad_to / window / stateful, as the CLI's --pad-to / --window / --stateful; none: the library's default.
tasks::WindowOptions window_of(Body& b, const Model& model) {
  const auto pad = b.integer("pad_to", 1, kMaxInputLength);
  const auto window = b.integer("window", 1, kMaxInputLength);
  const auto stateful = b.boolean("stateful");
  if (int(bool(pad)) + int(bool(window)) + int(stateful.value_or(false)) > 1)
    throw HttpError(400, "fields 'pad_to', 'window' and 'stateful' exclude each other");
  std::optional<tasks::WindowOptions> given;
  if (pad) given = tasks::WindowOptions{tasks::WindowMode::Pad, static_cast<int>(*pad)};
  if (window) given = tasks::WindowOptions{tasks::WindowMode::Window, static_cast<int>(*window)};
  if (stateful.value_or(false)) given = tasks::WindowOptions{};
  return tasks::default_window(model, given);
}

tasks::OovPolicy oov_of(Body& b) { return pick(b, tasks::oov_choices()); }

std::vector<float> floats_of(const nlohmann::json& j, size_t n, const std::string& field) {
  if (!j.is_array() || j.size() != n)
    throw HttpError(400, "field '" + field + "': expected an array of " + std::to_string(n) + " numbers");
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (!j[i].is_number())
      throw HttpError(400, "field '" + field + "': element " + std::to_string(i) + " is no number");
    v[i] = j[i].get<float>();
    if (!std::isfinite(v[i]))
      throw HttpError(400, "field '" + field + "': element " + std::to_string(i) + " is not finite");
  }
  return v;
}

// Every engine of a server, the backward model's too: one precision and layout (what keep_only_packed kept).
EngineOptions engine_options(const Options& o) {
  return EngineOptions{.threads = o.threads, .precision = o.precision, .fold = o.fold};
}

}  // namespace

constexpr int kEngineBudget = 8;  // threads of the request engines at most (EnginePool's budget)

Service::Service(const Options& options, std::shared_ptr<const Model> model)
    : opt_(options),
      model_(model),
      // Engines for the requests run outside the scheduler (score, generate, a character model's
      // completions): they compute, never wait on a socket, so more of them than cores only share the cores.
      pool_(model, engine_options(options), std::clamp(options.http_threads, 1, kEngineBudget)),
      batcher_(model, engine_options(options), options.max_batch, options.batch_wait_us,
               size_t(std::max(1, options.max_queue)), metrics_),
      sessions_(size_t(std::max(1, options.max_sessions)),
                std::chrono::seconds(std::max(1, options.session_ttl_s)), metrics_) {
  const auto& tok = model_->tokenizer();
  start_ = tasks::start_token(tok);
  if (!options.boost_file.empty())
    boost_ = std::make_shared<tasks::Boost>(tasks::Boost::load(*model_, options.boost_file));
  if (tok.traits().completion == Completion::WordIndex) completer_ = tasks::Completer::of(*model_);
  if (!options.mix.empty()) {
    mix_ = tasks::load_mix(options.mix, tasks::NgramMix::words_of(*model_), false,
                           tasks::mix_mode_choices().parse(options.mix_mode));
    mix_row_ = std::make_shared<tasks::MixRow>(mix_, *model_);
  }
  pad_states_ = std::make_shared<tasks::PadStates>(*model_, tasks::kPadStatesWholeStride);
  if (!options.backward_model.empty()) {
    auto backward = Model::load(options.backward_model);
    keep_only_packed(backward, options.precision, options.fold);
    backward_ = std::make_unique<EnginePool>(std::move(backward), engine_options(options),
                                             std::clamp(options.http_threads, 1, kEngineBudget));
  }
}

std::shared_ptr<const tasks::MixPlan> Service::mix_of(Body& b) const {
  const auto on = b.boolean("mix");
  if (on.value_or(false) && !mix_)
    throw HttpError(400,
                    "field 'mix': this server mixes no n-gram model (start it with --mix MODEL.arpa:WEIGHT)");
  return on.value_or(true) ? mix_ : nullptr;
}

std::shared_ptr<const tasks::MixRow> Service::row_mix_of(Body& b) const {
  return mix_of(b) ? mix_row_ : nullptr;
}

namespace {

// The cache fields of a request (tasks::CacheOptions, as --cache-window, --cache-lambda, --cache-theta).
tasks::CacheOptions cache_of(Body& b) {
  tasks::CacheOptions c;
  c.window = static_cast<int>(b.integer("cache_window", 0, int64_t{1} << 20).value_or(0));
  c.lambda = b.number("cache_lambda", 0, 1).value_or(c.lambda);
  c.theta = b.number("cache_theta", 0, 1000).value_or(c.theta);
  return c;
}

}  // namespace

std::shared_ptr<const tasks::Boost> Service::boost_of(Body& b) const {
  const bool on = b.boolean("boost").value_or(true);
  return on ? boost_ : nullptr;
}

std::string Service::models() const {
  // The directory's last component: a client learns the model's name, not a path of this machine.
  const auto dir = std::filesystem::path(model_->directory()).lexically_normal();  // "models/m/" ends in ""
  const std::string name = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
  return report::model_info_json(*model_, opt_.precision, name.empty() ? "model" : name);
}

std::vector<int32_t> Service::ids_of(const std::string& text, bool oov_error,
                                     std::vector<Token>* tokens) const {
  std::vector<Token> toks;
  try {
    toks = model_->tokenizer().tokenize(text);  // bounded by --max-body
  } catch (const InputError& e) {
    throw HttpError(400, "field 'text': " + e.message());
  }
  if (toks.size() > opt_.max_tokens)
    throw HttpError(413,
                    "field 'text': more than " + std::to_string(opt_.max_tokens) + " tokens (--max-tokens)");
  std::vector<int32_t> ids;
  for (const auto& t : toks) {
    if (t.id < 0 && oov_error)
      throw HttpError(400, "field 'text': '" + printable(t.text, 64) +
                               "' is not in the vocabulary and the model has no unk_token (oov 'error')");
    if (t.id >= 0) ids.push_back(t.id);
  }
  if (tokens) *tokens = std::move(toks);
  return ids;
}

std::string Service::score(const std::string& body) {
  Body b(body);
  const auto text = b.str("text");
  tasks::ScoreOptions t;
  t.budget = std::make_shared<tasks::TokenBudget>(opt_.max_tokens);
  t.context = pick(b, tasks::context_choices());
  t.append_eos = b.boolean("eos").value_or(true);
  t.add_start = b.boolean("bos").value_or(true);
  t.oov = oov_of(b);
  t.skip_empty = b.boolean("skip_empty").value_or(false);
  t.ids_input = b.boolean("ids").value_or(false);
  t.normalize = pick(b, tasks::normalize_choices());
  t.entropy = b.boolean("entropy").value_or(false);
  t.rank = b.boolean("rank").value_or(false);
  t.aggregate = pick(b, tasks::aggregate_choices());
  const bool words = t.aggregate == tasks::Aggregate::Words;
  const Units units = pick(b, tasks::units_choices());
  t.window = window_of(b, *model_);
  t.softmax = pick(b, tasks::softmax_choices());
  t.reverse = b.boolean("reverse").value_or(false);
  t.cache = cache_of(b);
  const auto mix = mix_of(b);
  b.done();
  if (!text) throw HttpError(400, "field 'text': required (the text to score, one sentence per line)");
  if (mix && t.softmax == tasks::Softmax::Skip)
    throw HttpError(400, "field 'softmax': skip is not with 'mix' (a mixture adds probabilities)");
  if (mix && t.reverse)
    throw HttpError(400,
                    "field 'reverse': not with 'mix' (the n-gram models read the sentence left to right)");
  report::ScoreView view;
  view.verbosity = report::Verbosity::Word;
  view.format = report::Format::Jsonl;
  view.units = units;
  view.entropy = t.entropy;
  view.rank = t.rank;
  view.words = words;
  view.logits = t.softmax == tasks::Softmax::Skip;
  std::vector<std::string> lines;
  std::vector<tasks::LineEnd> ends;
  tasks::split_lines(*text, lines, ends);
  std::vector<tasks::LineScore> scored;
  {
    auto engine = pool_.acquire();
    std::optional<tasks::Scorer> scorer;
    scorer.emplace(*engine, t);
    scored = scorer->score(lines, "-", 1, ends);
    if (mix) tasks::NgramMix(mix, t, model_.get()).mix(scored, &*engine);
  }
  tasks::ScoreSummary sum;
  std::vector<std::string> recs;
  recs.reserve(scored.size());
  for (size_t i = 0; i < scored.size(); ++i) {
    sum.add(scored[i]);
    recs.push_back(json_of(report::line_record(view, "-", scored[i], i + 1).fields));
  }
  metrics_.tokens_scored(sum.tokens);
  return "{\"lines\": [" + join(recs) +
         "], \"summary\": " + json_of(report::summary_record(view, sum).fields) + "}";
}

namespace {
constexpr size_t kMaxCharCompletions = 16;
}  // namespace

std::string Service::predict(const std::string& body) {
  Body b(body);
  auto context = b.str("context");
  auto contexts = b.strings("contexts", 4096);
  tasks::PredictOptions opt;
  opt.top = static_cast<int>(b.integer("top", 0, model_->vocab_size()).value_or(10));
  opt.add_start = b.boolean("bos").value_or(true);
  opt.oov = oov_of(b);
  opt.ids_input = b.boolean("ids").value_or(false);
  opt.window = window_of(b, *model_);
  opt.prefix = b.str("prefix").value_or("");
  opt.completer = completer_;
  opt.boost = boost_of(b);
  opt.mix = row_mix_of(b);
  opt.softmax = pick(b, tasks::softmax_choices());
  opt.cache = cache_of(b);
  b.done();
  if (opt.window.mode == tasks::WindowMode::Pad) opt.pad_states = pad_states_;
  if (bool(context) == bool(contexts))
    throw HttpError(400,
                    "fields 'context' and 'contexts': give exactly one (a string, or an array of strings)");
  const bool one = bool(context);
  std::vector<std::string> list = one ? std::vector<std::string>{*context} : *contexts;
  // A character model's completions are a beam search per context.
  const Completion how = model_->tokenizer().traits().completion;
  if (how != Completion::CharBeam) tasks::check_completion(*model_, Completion::WordIndex, opt.prefix);
  if (!opt.prefix.empty() && how == Completion::CharBeam && list.size() > kMaxCharCompletions)
    throw HttpError(400, "field 'prefix': a character model completes at most " +
                             std::to_string(kMaxCharCompletions) +
                             " contexts per request (a beam search each)");
  size_t bytes = 0;
  for (const auto& c : list) bytes += c.size();
  if (bytes > opt_.max_tokens * 64) throw HttpError(413, "contexts: too long for one request");
  std::vector<tasks::Prediction> preds;
  // The batcher's rows are log-probs; a request for logits runs on an engine of its own.
  if ((!opt.prefix.empty() && how == Completion::CharBeam) || opt.softmax == tasks::Softmax::Skip) {
    opt.validate();
    // A beam search of up to 25 engine steps per context: run on an engine of the pool, one context per
    // lease, never on the scheduler, so the batches of every other request go on meanwhile, and a request
    // waiting for an engine gets one between two of these contexts.
    for (size_t i = 0; i < list.size(); ++i) {
      auto engine = pool_.acquire();
      auto one = tasks::predict(*engine, {list[i]}, opt, "context", i + 1);
      preds.push_back(std::move(one.front()));
    }
  } else {
    preds = batcher_.predict(list, opt);
  }
  const bool padded = opt.window.mode == tasks::WindowMode::Pad;
  std::vector<std::string> recs;
  for (size_t i = 0; i < preds.size(); ++i)
    recs.push_back(json_of(report::prediction_record(list[i], preds[i], padded).fields));
  return one ? recs[0] : "{\"predictions\": [" + join(recs) + "]}";
}

std::string Service::rescore(const std::string& body) {
  Body b(body);
  const nlohmann::json* hyps = b.raw("hyps");
  const nlohmann::json* weights = b.raw("weights");
  tasks::RescoreOptions task;
  task.score.append_eos = b.boolean("eos").value_or(true);
  task.score.oov = oov_of(b);
  task.score.budget = std::make_shared<tasks::TokenBudget>(opt_.max_tokens);
  task.score.ids_input = b.boolean("ids").value_or(false);
  task.score.reverse = b.boolean("reverse").value_or(false);
  task.conversation = pick(b, tasks::rescore_context_choices());
  task.lm_weight = b.number("lm_weight", -1e12, 1e12).value_or(1.0);
  task.word_penalty = b.number("word_penalty", -1e12, 1e12).value_or(0.0);
  const auto lambda = b.number("interpolate", 0, 1);
  const auto ngram = b.str("ngram");
  const tasks::LogUnits ngram_units = pick(b, tasks::ngram_units_choices());
  const bool best_only = b.boolean("best").value_or(false);
  task.mix = mix_of(b);
  const bool backward = b.boolean("backward").value_or(bool(backward_));
  const auto backward_weight = b.number("backward_weight", -1e12, 1e12);
  b.done();
  if (backward && !backward_)
    throw HttpError(
        400, "field 'backward': this server has no backward model (start it with --backward-model DIR)");
  if (backward_weight && !backward)
    throw HttpError(
        400, std::string("field 'backward_weight': ") +
                 (backward_ ? "given with \"backward\": false"
                            : "this server has no backward model (start it with --backward-model DIR)"));
  if (backward_weight) task.backward_weight = *backward_weight;
  if (!hyps || !hyps->is_array() || hyps->empty())
    throw HttpError(400,
                    "field 'hyps': required, an array of {\"utt\", \"hyp\", \"id\"?, \"recording\"?, "
                    "\"scores\"?} (rescore's jsonl records)");
  if (hyps->size() > opt_.max_tokens) throw HttpError(413, "field 'hyps': more hypotheses than --max-tokens");
  if (bool(lambda) != bool(ngram)) throw HttpError(400, "fields 'interpolate' and 'ngram' go together");
  // The records as `lstmlm rescore --input-format jsonl` reads them from "-": one line each, numbered.
  std::optional<std::vector<std::string>> names;
  std::vector<tasks::Hypothesis> list(hyps->size());
  std::string current;
  std::set<std::string> done;
  int64_t n = 0;
  for (size_t i = 0; i < hyps->size(); ++i) {
    const std::string where = "hyps[" + std::to_string(i) + "]: ";
    tasks::Hypothesis& h = list[i];
    if (!(*hyps)[i].is_object())
      throw HttpError(400, where + "expected an object {\"utt\": ..., \"hyp\": ...}");
    tasks::parse_jsonl_hypothesis((*hyps)[i].dump(), names, where, h);
    h.line = i + 1;
    if (h.utt != current) {
      if (done.count(h.utt))
        throw HttpError(400,
                        where + "utterance '" + printable(h.utt, 60) +
                            "' appears again after other utterances: the hypotheses of an utterance must be "
                            "contiguous");
      if (!current.empty()) done.insert(current);
      current = h.utt;
      n = 0;
    }
    h.n = ++n;
    if (h.id.empty()) h.id = h.utt + "-" + std::to_string(h.n);
    h.recording = "-\n" + h.recording;
  }
  report::RescoreLayout lay;
  lay.names = names.value_or(std::vector<std::string>{});
  auto index_of = [&](const std::string& name, const std::string& field) {
    for (size_t k = 0; k < lay.names.size(); ++k)
      if (lay.names[k] == name) return k;
    throw HttpError(400,
                    "field '" + field + "': no score named '" + printable(name, 60) + "' in the hypotheses");
  };
  task.weights.assign(lay.names.size(), 0.0);
  if (weights) {
    if (!weights->is_object()) throw HttpError(400, "field 'weights': expected an object {\"name\": number}");
    for (const auto& [name, w] : weights->items()) {
      if (!w.is_number() || !std::isfinite(w.get<double>()) || std::fabs(w.get<double>()) > 1e12)
        throw HttpError(400, "field 'weights." + printable(name, 60) + "': expected a finite number");
      task.weights[index_of(name, "weights")] = w.get<double>();
    }
  }
  if (ngram) task.interpolate = tasks::Interpolation{*lambda, index_of(*ngram, "ngram"), ngram_units};
  lay.interpolated = task.interpolate.has_value();
  std::vector<tasks::HypothesisScore> scores;
  tasks::PrefixStats stats;
  lay.backward = backward;
  {
    // Always the forward engine first, then the backward one: no two requests wait on each other.
    auto engine = pool_.acquire();
    std::optional<EnginePool::Lease> right_to_left;
    if (backward) right_to_left.emplace(backward_->acquire());
    tasks::Rescorer rescorer(*engine, task, right_to_left ? &**right_to_left : nullptr);
    scores = rescorer.rescore(list, "-");
    stats = rescorer.stats();
  }
  std::vector<std::string> recs;
  int64_t utterances = 0, tokens = 0, oovs = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    utterances += i == 0 || list[i].utt != list[i - 1].utt;
    tokens += scores[i].lm.tokens;
    oovs += scores[i].lm.oovs;
    if (best_only && !scores[i].best) continue;
    recs.push_back(json_of(report::hyp_record(report::Format::Jsonl, lay, "-", list[i], scores[i]).fields));
  }
  metrics_.tokens_scored(tokens);
  return "{\"hyps\": [" + join(recs) + "], \"summary\": " +
         json_of(
             report::rescore_summary_record(utterances, int64_t(list.size()), tokens, oovs, stats).fields) +
         "}";
}

std::string Service::tokenize(const std::string& body) const {
  Body b(body);
  const auto text = b.str("text");
  b.done();
  if (!text) throw HttpError(400, "field 'text': required");
  std::vector<Token> toks;
  ids_of(*text, false, &toks);
  std::vector<std::string> out;
  for (const auto& t : toks)
    out.push_back(json_of(report::Fields{
        {"token", Value::str(t.text)}, {"id", Value::integer(t.id)}, {"oov", Value::boolean(t.oov)}}));
  return "{\"tokens\": [" + join(out) + "]}";
}

std::string Service::detokenize(const std::string& body) const {
  Body b(body);
  const auto ids = b.ids("ids", opt_.max_tokens, model_->vocab_size());
  b.done();
  if (!ids) throw HttpError(400, "field 'ids': required");
  return json_of(report::Fields{{"text", Value::str(model_->tokenizer().detokenize(*ids))}});
}

Service::GenerateRequest Service::parse_generate(const std::string& body) const {
  Body b(body);
  GenerateRequest r;
  tasks::GenerateOptions& g = r.options;
  g.prompt = b.str("prompt").value_or("");
  g.max_tokens = static_cast<int>(b.integer("max_tokens", 1, int64_t(opt_.max_tokens)).value_or(100));
  g.sampler.temperature =
      static_cast<float>(b.number("temperature", 0, tasks::kMaxTemperature).value_or(1.0));
  g.sampler.top_k = static_cast<int>(b.integer("top_k", 0, model_->vocab_size()).value_or(0));
  g.sampler.top_p = static_cast<float>(b.number("top_p", 0, 1).value_or(1.0));
  g.sampler.min_p = static_cast<float>(b.number("min_p", 0, 1).value_or(0.0));
  g.sampler.repeat_penalty =
      static_cast<float>(b.number("repeat_penalty", 0, tasks::kMaxRepeatPenalty).value_or(1.0));
  g.sampler.repeat_last_n =
      static_cast<int>(b.integer("repeat_last_n", -1, tasks::kMaxGenerateTokens).value_or(64));
  g.seed = static_cast<uint64_t>(b.integer("seed", 0, INT64_MAX).value_or(0));
  g.num_samples = static_cast<int>(b.integer("num_samples", 1, 64).value_or(1));
  if (auto s = b.boolean("stop_at_eos")) g.stop_at_eos = *s;
  g.oov = oov_of(b);
  g.budget = std::make_shared<tasks::TokenBudget>(opt_.max_tokens);
  g.window = window_of(b, *model_);
  r.stream = b.boolean("stream").value_or(false);
  g.boost = boost_of(b);
  g.mix = row_mix_of(b);
  g.cache = cache_of(b);
  read_search_fields(b, *model_, g, size_t{1} << 20);
  b.done();
  if (int64_t(g.max_tokens) * std::max(g.num_samples, g.beam.beam_size) > int64_t(opt_.max_tokens))
    throw HttpError(413, "max_tokens x num_samples: more than " + std::to_string(opt_.max_tokens) +
                             " tokens (--max-tokens)");
  g.validate();
  return r;
}

std::string Service::generate(const GenerateRequest& r) {
  if (r.options.beam.on()) return "{\"hypotheses\": [" + join(beam_records(r)) + "]}";
  tasks::GenerateResult res;
  {
    auto engine = pool_.acquire();
    res = tasks::generate(*engine, r.options);
  }
  std::vector<std::string> recs;
  for (const auto& s : res.samples) {
    recs.push_back(json_of(report::sample_record(*model_, r.options, s).fields));
    metrics_.tokens_generated(int64_t(s.tokens.size()));
  }
  return "{\"samples\": [" + join(recs) + "]}";
}

namespace {
struct ClientGone {};
}  // namespace

std::vector<std::string> Service::beam_records(const GenerateRequest& r) {
  tasks::BeamResult res;
  {
    auto engine = pool_.acquire();
    res = tasks::beam_search(*engine, r.options);
  }
  std::vector<std::string> recs;
  for (const auto& h : res.hypotheses) {
    recs.push_back(json_of(report::hypothesis_record(*model_, r.options, h).fields));
    metrics_.tokens_generated(int64_t(h.tokens.size()));
  }
  return recs;
}

void Service::generate_stream(const GenerateRequest& r,
                              const std::function<bool(const std::string&)>& write) {
  if (r.options.beam.on()) {
    // A beam's hypotheses are known only at its end: one event each, best first.
    for (const auto& rec : beam_records(r))
      if (!write("event: hypothesis\ndata: " + rec + "\n\n")) return;
    write("event: done\ndata: {}\n\n");
    return;
  }
  tasks::GenerateResult res;
  // Each token's `piece`: the text it adds to the printed sample (the prompt, then the pieces), joined as the
  // tokenizer joins (no space inside a char model's words, SentencePiece's word starts), "" for eos.
  std::vector<tasks::TextJoin> joins(static_cast<size_t>(std::max(r.options.num_samples, 1)),
                                     tasks::TextJoin(model_->tokenizer(), r.options.prompt));
  try {
    auto engine = pool_.acquire();
    res = tasks::generate(*engine, r.options, [&](int sample, const tasks::GeneratedToken& t) {
      report::Fields f{{"type", Value::str("token")}, {"sample", Value::integer(sample)}};
      for (auto& field : report::token_value(*model_, t).fields) f.push_back(std::move(field));
      f.push_back({"piece", Value::str(joins.at(static_cast<size_t>(sample)).piece(t.id))});
      metrics_.tokens_generated(1);
      if (!write("data: " + json_of(f) + "\n\n")) throw ClientGone{};
    });
  } catch (const ClientGone&) {
    return;
  }
  for (const auto& s : res.samples)
    if (!write("event: sample\ndata: " + json_of(report::sample_record(*model_, r.options, s).fields) +
               "\n\n"))
      return;
  write("event: done\ndata: {}\n\n");
}

std::shared_ptr<Session> Service::session(const std::string& id) {
  auto s = sessions_.find(id);
  if (!s) throw HttpError(404, "no session '" + printable(id, 64) + "' (never made, deleted, or evicted)");
  return s;
}

std::string Service::create_session(const std::string& body) {
  Body b(body);
  const bool bos = b.boolean("bos").value_or(true);
  const nlohmann::json* state = b.raw("state");
  const tasks::CacheOptions cache = cache_of(b);
  b.done();
  cache.validate();
  auto s = std::make_unique<Session>();
  if (cache.on()) s->cache.emplace(cache, size_t(model_->config().last_output_size()));
  s->state = State::zeros(*model_);
  if (state) {
    if (!state->is_object())
      throw HttpError(400, "field 'state': expected the object GET /v1/sessions/{id}/state gives");
    auto get = [&](const char* k) -> const nlohmann::json& {
      if (!state->contains(k)) throw HttpError(400, std::string("field 'state': no '") + k + "'");
      return (*state)[k];
    };
    const auto& version = get("version");
    if (version == 2) {
      // The serialized stream, as every front end writes it (docs/c-api.md).
      const auto& b64 = get("bytes");
      if (!b64.is_string()) throw HttpError(400, "field 'state.bytes': expected a base64 string");
      const auto bytes = base64_decode(b64.get_ref<const std::string&>());
      if (!bytes) throw HttpError(400, "field 'state.bytes': not base64 (RFC 4648, padded)");
      try {
        static_cast<tasks::Stream&>(*s) = tasks::stream_from_bytes(*model_, *bytes);
      } catch (const InputError& e) {
        throw HttpError(400, "field 'state.bytes': " + e.message());
      }
    } else if (version == 1) {
      // An export of an earlier server (h, c and next as JSON numbers), still read.
      const auto& h = get("h");
      const auto& c = get("c");
      const size_t layers = s->state.h.size();
      if (!h.is_array() || !c.is_array() || h.size() != layers || c.size() != layers)
        throw HttpError(400, "field 'state': 'h' and 'c' must hold " + std::to_string(layers) + " layers");
      for (size_t l = 0; l < layers; ++l) {
        s->state.h[l] = floats_of(h[l], s->state.h[l].size(), "state.h[" + std::to_string(l) + "]");
        s->state.c[l] = floats_of(c[l], s->state.c[l].size(), "state.c[" + std::to_string(l) + "]");
      }
      const auto& next = get("next");
      if (!next.is_null()) s->next = floats_of(next, size_t(model_->vocab_size()), "state.next");
      const auto& fed = get("tokens");
      if (!fed.is_number_integer() || fed.get<int64_t>() < 0)
        throw HttpError(400, "field 'state.tokens': expected a count");
      s->fed = fed.get<int64_t>();
    } else {
      throw HttpError(400, "field 'state': version " + shown(version) + ", this server reads 1 and 2");
    }
  }
  auto shared = sessions_.add(std::move(s));
  if (!state && bos && start_ >= 0) {
    const std::lock_guard lock(shared->mu);
    std::vector<float> lp;
    batcher_.advance(*shared, {start_}, lp);
  }
  return json_of(report::Fields{{"id", Value::str(shared->id)}, {"tokens", Value::integer(shared->fed)}});
}

std::string Service::advance(const std::string& id, const std::string& body) {
  Body b(body);
  const auto text = b.str("text");
  const auto given_ids = b.ids("ids", opt_.max_tokens, model_->vocab_size());
  const int top = static_cast<int>(b.integer("top", 0, model_->vocab_size()).value_or(10));
  const bool oov_error = oov_of(b) == tasks::OovPolicy::Error;
  const std::string prefix = b.str("prefix").value_or("");
  const auto boost = boost_of(b);
  b.done();
  if (text && given_ids) throw HttpError(400, "fields 'text' and 'ids': give at most one");
  tasks::check_completion(*model_, Completion::WordIndex, prefix);
  // Each fed token keeps a row of V log-probs until the call ends: bounded to 64 MiB per request.
  const size_t cap = std::max<size_t>(1, (size_t{64} << 20) / (4 * size_t(model_->vocab_size())));
  std::vector<Token> toks;
  std::vector<int32_t> ids;
  if (text) {
    ids = ids_of(*text, oov_error, &toks);
  } else if (given_ids) {
    ids = *given_ids;
    for (int32_t i : ids) toks.push_back(Token{i, model_->vocab().token(i), false});
  }
  if (ids.size() > cap)
    throw HttpError(413, "a session advances by at most " + std::to_string(cap) +
                             " tokens per request with this vocabulary; use /v1/score for long texts");
  auto s = session(id);
  const std::lock_guard lock(s->mu);
  std::vector<float> lp;
  if (s->cache) {
    // One token at a time: each prediction's query (and key) is the top layer's output before its token.
    for (int32_t t : ids) {
      const std::vector<float> h = s->state.h.back();
      const bool predicted = !s->next.empty();
      std::vector<float> one;
      batcher_.advance(*s, {t}, one);
      if (predicted) s->cache->score(h.data(), one.data(), &t, 1, one.data());
      lp.push_back(one[0]);
    }
  } else if (!ids.empty()) {
    batcher_.advance(*s, ids, lp);
  }
  report::ScoreView view;
  std::vector<Value> words;
  size_t k = 0;
  for (size_t i = 0; i < toks.size(); ++i) {
    tasks::WordScore w;
    w.token = toks[i].text;
    w.id = toks[i].id;
    w.oov = toks[i].oov;
    if (w.id >= 0) {
      const float v = lp[k++];
      w.scored = !std::isnan(v);
      w.logprob = w.scored ? v : 0.0f;
    }
    words.push_back(report::word_record(view, w, i + 1));
  }
  metrics_.tokens_scored(int64_t(ids.size()));
  if (boost_) {  // the tokens a boosted phrase may need, the last ones fed
    s->recent.insert(s->recent.end(), ids.begin(), ids.end());
    const size_t keep = boost_->longest();
    if (s->recent.size() > keep) s->recent.erase(s->recent.begin(), s->recent.end() - std::ptrdiff_t(keep));
  }
  std::vector<Value> cands;
  if (!s->next.empty()) {
    std::vector<float> row;
    const float* next = s->next.data();
    if (boost || s->cache) {
      row = s->next;
      if (s->cache) s->cache->mix_row(s->state.h.back().data(), row.data(), row.size());
      if (boost) boost->apply(s->recent, row.data(), model_->vocab_size());
      next = row.data();
    }
    for (const auto& c : completer_ && !prefix.empty() ? completer_->complete(next, prefix, top)
                                                       : tasks::top_candidates(*model_, next, top))
      cands.push_back(report::candidate_value(c));
  }
  return json_of(report::Fields{{"words", Value::of_list(std::move(words))},
                                {"top", Value::of_list(std::move(cands))},
                                {"tokens", Value::integer(s->fed)}});
}

std::string Service::session_info(const std::string& id) {
  auto s = session(id);
  const std::lock_guard lock(s->mu);
  return json_of(report::Fields{{"id", Value::str(s->id)}, {"tokens", Value::integer(s->fed)}});
}

void Service::delete_session(const std::string& id) {
  if (!sessions_.remove(id)) throw HttpError(404, "no session '" + printable(id, 64) + "'");
}

std::string Service::export_session(const std::string& id) {
  auto s = session(id);
  const std::lock_guard lock(s->mu);
  const std::string bytes = tasks::stream_bytes(*s, model_->fingerprint());
  return json_of(report::Fields{{"version", Value::integer(2)},
                                {"tokens", Value::integer(s->fed)},
                                {"bytes", Value::str(base64_encode(bytes))}});
}

void Service::sweep() { sessions_.sweep(); }

std::string Service::metrics_text() {
  return metrics_.text(int64_t(batcher_.depth()), int64_t(sessions_.size()));
}

}  // namespace lstmlm::server
