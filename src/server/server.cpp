// HTTP for the Service: routes, the Bearer key, status codes and one-line JSON errors, /health while the
// model loads, /metrics, the page, and the stop on a signal (finish what is in flight, then return).
#include "server/server.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <thread>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/record.hpp"
#include "lstmlm/text.hpp"
#include "server/http_error.hpp"
#include "server/page.hpp"
#include "server/service.hpp"

// Last: httplib.h brings <resolv.h>, whose `_res` macro would rewrite a parameter name in Eigen's headers.
#include "server/http_server.hpp"

namespace lstmlm::server {

namespace {

using Clock = std::chrono::steady_clock;

// Set by a timed handler (which records its own latency), read and cleared by the logger of the same
// worker thread, which counts the requests no handler saw (401, 404, 413, /health, /metrics).
thread_local bool t_counted = false;

// With the charset parameter, cpp-httplib leaves the body uncompressed (it gzips the bare
// "application/json" for a client that accepts it): a deflate stream set up per response cost more CPU
// than the rest of a small prediction's request on loopback. A proxy in front compresses for a network.
constexpr const char* kJson = "application/json; charset=utf-8";

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

void answer_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  if (status == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(status, message), kJson);
}

ConnectionLimits connection_limits(const Options& o) {
  ConnectionLimits l;
  l.workers = std::max(1, o.http_threads);
  l.reserved_workers = std::max(1, l.workers / 4);
  l.read = l.write = l.request = std::chrono::seconds(o.timeout_s);
  // Chunk framing can make a body's bytes on the wire larger than the body: twice, plus 64 KiB of slack.
  l.max_body_wire_bytes = 2 * o.max_body_bytes + (64 << 10);
  return l;
}

bool loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Runs a handler and turns what it throws into the status and one-line error of the contract.
template <class F>
void guarded(httplib::Response& res, F&& f) {
  try {
    f();
  } catch (const HttpError& e) {
    answer_error(res, e.status(), e.what());
  } catch (const UsageError& e) {
    answer_error(res, 400, e.spelled([](const std::string& key) { return "field '" + key + "'"; }));
  } catch (const InputError& e) {
    answer_error(res, 400, e.message());
  } catch (const std::bad_alloc&) {
    answer_error(res, 503, "out of memory for this request");
  } catch (const std::exception& e) {
    answer_error(res, 500, std::string("internal error: ") + e.what());
  }
}

}  // namespace

int run(const Options& options, const Log& log, const std::function<int()>& pending_signal) {
  HttpServer http(connection_limits(options), error_body);
  std::atomic<bool> ready{false};
  std::shared_ptr<Service> service;
  const Clock::time_point started = Clock::now();

  http.set_payload_max_length(options.max_body_bytes);
  http.set_keep_alive_max_count(1000000);  // a client keeps its connection (httplib closes after 5)
  http.set_tcp_nodelay(true);  // a response in two writes would otherwise wait on the delayed ACK (40 ms)

  // The label of a request in /metrics: a route's template, never the path a client sent.
  auto endpoint_of = [](const httplib::Request& req) {
    const std::string& p = req.path;
    if (p.rfind("/v1/sessions/", 0) == 0) {
      const auto slash = p.find('/', 13);
      const std::string id = p.substr(13, slash == std::string::npos ? std::string::npos : slash - 13);
      const std::string rest = slash == std::string::npos ? std::string() : p.substr(slash);
      if (!id.empty() && id.find_first_not_of("0123456789abcdef") == std::string::npos &&
          (rest.empty() || rest == "/advance" || rest == "/state"))
        return "/v1/sessions/{id}" + rest;
      return std::string("other");
    }
    for (const char* known : {"/health", "/metrics", "/v1/models", "/v1/score", "/v1/predict", "/v1/generate",
                              "/v1/rescore", "/v1/tokenize", "/v1/detokenize", "/v1/sessions", "/"})
      if (p == known) return p;
    return std::string("other");
  };

  http.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    // Before the body is read: a compressed body would be inflated past --max-body unchecked.
    if (const std::string enc = req.get_header_value("Content-Encoding"); !enc.empty() && enc != "identity") {
      answer_error(res, 415,
                   "Content-Encoding " + printable(enc, 40) + " is not accepted: send the body as is");
      HttpServer::close_after_response(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib would read and discard a declared length past the bound before answering.
    if (req.has_header("Content-Length")) {
      const std::string len = req.get_header_value("Content-Length");
      const bool digits = !len.empty() && len.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || len.size() > 18 || std::stoull(len) > options.max_body_bytes) {
        if (digits)
          answer_error(res, 413, "request body larger than --max-body bytes");
        else
          answer_error(res, 400, "Content-Length " + printable(len, 40) + " is not a number of bytes");
        HttpServer::close_after_response(res);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (options.api_key.empty() || req.path == "/health" || req.path == "/" || req.method == "OPTIONS")
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string want = "Bearer " + options.api_key;
    if (req.get_header_value("Authorization") != want) {
      res.set_header("WWW-Authenticate", "Bearer");
      answer_error(res, 401, "missing or wrong API key (Authorization: Bearer KEY)");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!ready && req.path != "/metrics") {
      answer_error(res, 503, "the model is loading");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    const bool counted = t_counted;
    t_counted = false;
    if (service && !counted) service->metrics().count(endpoint_of(req), res.status);
  });

  auto timed = [&](const char* endpoint, auto&& body) {
    return [&, endpoint, body](const httplib::Request& req, httplib::Response& res) {
      const auto t0 = Clock::now();
      if (!ready) {
        answer_error(res, 503, "the model is loading");
      } else if (req.body.size() > options.max_body_bytes) {  // a chunked body, counted as decoded
        answer_error(res, 413, "request body larger than --max-body bytes");
      } else {
        guarded(res, [&] { body(req, res); });
      }
      t_counted = true;
      if (res.status == -1) res.status = 200;  // httplib's default, set after the handler
      if (service)
        service->metrics().request(endpoint, res.status,
                                   std::chrono::duration<double>(Clock::now() - t0).count());
    };
  };
  auto json = [](httplib::Response& res, const std::string& s) { res.set_content(s, kJson); };

  http.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    if (ready) {
      json(res, "{\"status\": \"ok\"}");
    } else {
      res.status = 503;
      json(res, "{\"status\": \"loading\"}");
    }
  });
  http.Get("/", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(page_html(), "text/html; charset=utf-8");
  });
  http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    if (!service) {
      answer_error(res, 503, "the model is loading");
      return;
    }
    const auto& d = http.drops();
    res.set_content(service->metrics_text() +
                        "# HELP lstmlm_http_dropped_total Connections dropped by the server's bounds on "
                        "reading a request.\n# TYPE lstmlm_http_dropped_total counter\n"
                        "lstmlm_http_dropped_total{reason=\"slow\"} " +
                        std::to_string(d.slow.load()) + "\nlstmlm_http_dropped_total{reason=\"crowded\"} " +
                        std::to_string(d.crowded.load()) +
                        "\nlstmlm_http_dropped_total{reason=\"too_large\"} " +
                        std::to_string(d.too_large.load()) + "\n",
                    "text/plain; version=0.0.4");
  });
  http.Get("/v1/models", timed("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
             json(res, service->models());
           }));
  http.Post("/v1/score", timed("/v1/score", [&](const httplib::Request& req, httplib::Response& res) {
              json(res, service->score(req.body));
            }));
  http.Post("/v1/predict", timed("/v1/predict", [&](const httplib::Request& req, httplib::Response& res) {
              json(res, service->predict(req.body));
            }));
  http.Post("/v1/rescore", timed("/v1/rescore", [&](const httplib::Request& req, httplib::Response& res) {
              json(res, service->rescore(req.body));
            }));
  http.Post("/v1/tokenize", timed("/v1/tokenize", [&](const httplib::Request& req, httplib::Response& res) {
              json(res, service->tokenize(req.body));
            }));
  http.Post("/v1/detokenize",
            timed("/v1/detokenize", [&](const httplib::Request& req, httplib::Response& res) {
              json(res, service->detokenize(req.body));
            }));
  http.Post("/v1/generate", timed("/v1/generate", [&](const httplib::Request& req, httplib::Response& res) {
              auto r = std::make_shared<Service::GenerateRequest>(service->parse_generate(req.body));
              if (!r->stream) {
                json(res, service->generate(*r));
                return;
              }
              auto svc = service;
              res.set_header("Cache-Control", "no-cache");
              res.set_chunked_content_provider(
                  "text/event-stream", [svc, r](size_t, httplib::DataSink& sink) {
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
            }));
  http.Post("/v1/sessions", timed("/v1/sessions", [&](const httplib::Request& req, httplib::Response& res) {
              json(res, service->create_session(req.body));
            }));
  http.Get(R"(/v1/sessions/([0-9a-f]+))",
           timed("/v1/sessions/{id}", [&](const httplib::Request& req, httplib::Response& res) {
             json(res, service->session_info(req.matches[1]));
           }));
  http.Delete(R"(/v1/sessions/([0-9a-f]+))",
              timed("/v1/sessions/{id}", [&](const httplib::Request& req, httplib::Response& res) {
                service->delete_session(req.matches[1]);
                json(res, "{\"deleted\": true}");
              }));
  http.Post(R"(/v1/sessions/([0-9a-f]+)/advance)",
            timed("/v1/sessions/{id}/advance", [&](const httplib::Request& req, httplib::Response& res) {
              json(res, service->advance(req.matches[1], req.body));
            }));
  http.Get(R"(/v1/sessions/([0-9a-f]+)/state)",
           timed("/v1/sessions/{id}/state", [&](const httplib::Request& req, httplib::Response& res) {
             json(res, service->export_session(req.matches[1]));
           }));
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string what = res.status == 404 ? "no endpoint " + req.method + " " + printable(req.path, 100)
                       : res.status == 413
                           ? "request body larger than --max-body bytes (a form-encoded body is "
                             "limited to 8 KiB: send Content-Type: application/json)"
                       : res.status == 400 ? "malformed HTTP request"
                                           : "HTTP status " + std::to_string(res.status);
    res.set_content(error_body(res.status, what), kJson);
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    answer_error(res, 500, "internal error");
  });

  // httplib listens with a backlog of 5: a burst of connections past it waits for SYN retransmits or is
  // reset. The listening socket is caught as it is made and given a backlog for many clients.
  socket_t listen_fd = INVALID_SOCKET;
  http.set_socket_options([&](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  int port = options.port;
  if (port == 0) {
    port = http.bind_to_any_port(options.host);
    if (port < 0) throw UsageError("serve: cannot listen on " + options.host + " (any port)");
  } else if (!http.bind_to_port(options.host, port)) {
    throw UsageError("serve: cannot listen on " + options.host + ":" + std::to_string(port) +
                     " (in use, or not an address of this machine)");
  }
  if (listen_fd != INVALID_SOCKET) ::listen(listen_fd, SOMAXCONN);
  if (!loopback(options.host) && options.api_key.empty())
    log("warning: listening on " + options.host +
        ", beyond this machine, without --api-key: anyone who reaches "
        "it can use the model");
  std::thread listener([&] { http.listen_after_bind(); });
  log("listening on http://" + options.host + ":" + std::to_string(port));

  // A signal stops the server: no new connection is accepted, requests in flight finish.
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    for (int tick = 0; !done; ++tick) {
      if (pending_signal()) {
        http.stop();
        return;
      }
      if (tick % 20 == 0 && ready) service->sweep();  // once a second: idle sessions go on time
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  int status = 0;
  try {
    auto model = Model::load(options.model_dir);
    for (const auto& w : model->warnings()) log("warning: " + w);
    keep_only_packed(model, options.precision);  // one precision per server: its weights held once
    service = std::make_shared<Service>(options, std::move(model));
    ready = true;
    log("model loaded in " +
        std::to_string(std::chrono::duration<double>(Clock::now() - started).count()).substr(0, 5) +
        " s; ready");
  } catch (...) {
    http.stop();
    done = true;
    listener.join();
    watcher.join();
    throw;
  }
  listener.join();  // returns once stop() has run and the workers have finished their requests
  done = true;
  watcher.join();
  service.reset();  // the scheduler finishes its queue
  log("stopped");
  return status;
}

}  // namespace lstmlm::server
