#include "server/routes.hpp"

#include <regex>

#include "lstmlm/report/record.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::server {

namespace {

void json(httplib::Response& res, const std::string& s) { res.set_content(s, kJson); }

// /v1/generate with "stream": true: server-sent events, one per token, then the final record.
void generate(const std::shared_ptr<Service>& service, const httplib::Request& req, httplib::Response& res) {
  auto r = std::make_shared<Service::GenerateRequest>(service->parse_generate(req.body));
  if (!r->stream) {
    json(res, service->generate(*r));
    return;
  }
  auto svc = service;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [svc, r](size_t, httplib::DataSink& sink) {
    try {
      svc->generate_stream(*r, [&](const std::string& event) {
        return sink.is_writable() && sink.write(event.data(), event.size());
      });
    } catch (const std::exception& e) {
      const std::string event = "event: error\ndata: " + error_body(400, e.what()) + "\n\n";
      if (sink.is_writable()) sink.write(event.data(), event.size());
    }
    sink.done();
    return true;
  });
}

const std::vector<std::regex>& patterns() {
  static const std::vector<std::regex> p = [] {
    std::vector<std::regex> v;
    for (const auto& r : routes()) v.emplace_back(r.pattern);
    return v;
  }();
  return p;
}

}  // namespace

std::string error_body(int status, const std::string& message) {
  using report::Value;
  std::string s;
  report::append_json(
      s,
      report::Fields{{"error", Value::of_record({{"code", Value::integer(status)},
                                                 {"message", Value::str(printable(message, 500))}})}},
      false);
  return s;
}

const std::vector<Route>& routes() {
  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  using Svc = const std::shared_ptr<Service>&;
  static const std::vector<Route> table = {
      {"GET", "/v1/models", "/v1/models", [](Svc s, Req, Res res) { json(res, s->models()); }},
      {"POST", "/v1/score", "/v1/score", [](Svc s, Req req, Res res) { json(res, s->score(req.body)); }},
      {"POST", "/v1/predict", "/v1/predict",
       [](Svc s, Req req, Res res) { json(res, s->predict(req.body)); }},
      {"POST", "/v1/rescore", "/v1/rescore",
       [](Svc s, Req req, Res res) { json(res, s->rescore(req.body)); }},
      {"POST", "/v1/tokenize", "/v1/tokenize",
       [](Svc s, Req req, Res res) { json(res, s->tokenize(req.body)); }},
      {"POST", "/v1/detokenize", "/v1/detokenize",
       [](Svc s, Req req, Res res) { json(res, s->detokenize(req.body)); }},
      {"POST", "/v1/generate", "/v1/generate", generate},
      {"POST", "/v1/sessions", "/v1/sessions",
       [](Svc s, Req req, Res res) { json(res, s->create_session(req.body)); }},
      {"GET", R"(/v1/sessions/([0-9a-f]+))", "/v1/sessions/{id}",
       [](Svc s, Req req, Res res) { json(res, s->session_info(req.matches[1])); }},
      {"DELETE", R"(/v1/sessions/([0-9a-f]+))", "/v1/sessions/{id}",
       [](Svc s, Req req, Res res) {
         s->delete_session(req.matches[1]);
         json(res, "{\"deleted\": true}");
       }},
      {"POST", R"(/v1/sessions/([0-9a-f]+)/advance)", "/v1/sessions/{id}/advance",
       [](Svc s, Req req, Res res) { json(res, s->advance(req.matches[1], req.body)); }},
      {"GET", R"(/v1/sessions/([0-9a-f]+)/state)", "/v1/sessions/{id}/state",
       [](Svc s, Req req, Res res) { json(res, s->export_session(req.matches[1])); }},
  };
  return table;
}

std::string route_label(const std::string& path) {
  for (const char* own : {"/health", "/metrics", "/"})
    if (path == own) return own;
  const auto& table = routes();
  for (size_t i = 0; i < table.size(); ++i)
    if (std::regex_match(path, patterns()[i])) return table[i].label;
  return "other";
}

}  // namespace lstmlm::server
