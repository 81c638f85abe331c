// HTTP for the Service: routes, the Bearer key, status codes and one-line JSON errors, /health while the
// model loads, /metrics, the page, and the stop on a signal (finish what is in flight, then return).
#include "server/server.hpp"

#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <new>
#include <thread>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"
#include "server/http_error.hpp"
#include "server/page.hpp"
#include "server/service.hpp"

// Last: httplib.h brings <resolv.h>, whose `_res` macro would rewrite a parameter name in Eigen's headers.
#include "server/routes.hpp"

namespace lstmlm::server {

namespace {

using Clock = std::chrono::steady_clock;

// Set by a timed handler (which records its own latency), read and cleared by the logger of the same
// worker thread, which counts the requests no handler saw (401, 404, 413, /health, /metrics).
thread_local bool t_counted = false;

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

// The host of a Host header or an Origin ("http://localhost:8080", "[::1]:80", "127.0.0.1"), lowercased.
std::string host_of(std::string v) {
  if (const auto scheme = v.find("://"); scheme != std::string::npos) v.erase(0, scheme + 3);
  if (!v.empty() && v[0] == '[') {
    const auto close = v.find(']');
    v = close == std::string::npos ? v.substr(1) : v.substr(1, close - 1);
  } else if (const auto colon = v.rfind(':'); colon != std::string::npos) {
    v.erase(colon);
  }
  if (const auto slash = v.find('/'); slash != std::string::npos) v.erase(slash);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v;
}

// A server on a loopback address answers this machine's clients only. A web page the user opens elsewhere can
// still reach it: through DNS rebinding (its own name resolving to 127.0.0.1: the Host header names it) or by
// posting a form (an Origin of its own, and a content type a page may send without asking): both refused.
std::string loopback_refusal(const httplib::Request& req) {
  if (req.has_header("Host") && !loopback(host_of(req.get_header_value("Host"))))
    return "Host " + printable(req.get_header_value("Host"), 80) +
           " is not this machine's: a loopback server answers requests for localhost or 127.0.0.1 only";
  if (req.has_header("Origin")) {
    const std::string origin = req.get_header_value("Origin");
    if (origin != "null" ? !loopback(host_of(origin)) : true)
      return "Origin " + printable(origin, 80) +
             " is not this machine's: a loopback server answers its own pages only";
  }
  return {};
}

// The content types a web page may post without asking the server first (CORS "simple" requests).
bool form_type(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t == "text/plain" || t == "application/x-www-form-urlencoded" || t == "multipart/form-data";
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
  } catch (const LimitError& e) {
    answer_error(res, 413, e.message());
  } catch (const InputError& e) {
    answer_error(res, 400, e.message());
  } catch (const std::bad_alloc&) {
    answer_error(res, 503, "out of memory for this request");
  } catch (const std::exception& e) {
    answer_error(res, 500, std::string("internal error: ") + e.what());
  }
}

// What the handlers share with the lifecycle: the options, whether the model is ready, and the service once
// it is.
struct Served {
  const Options& options;
  HttpServer& http;
  std::atomic<bool> ready{false};
  std::shared_ptr<Service> service;
};

// What every request passes before a handler: the body's encoding and declared length, the key, the model's
// readiness; what an unanswered one gets; and the /metrics count of the requests no handler timed.
void install_policy(HttpServer& http, Served& s) {
  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (loopback(s.options.host)) {
      if (const std::string why = loopback_refusal(req); !why.empty()) {
        answer_error(res, 403, why);
        HttpServer::close_after_response(res);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (req.method == "POST" && form_type(req.get_header_value("Content-Type"))) {
      answer_error(res, 415,
                   "Content-Type " + printable(req.get_header_value("Content-Type"), 60) +
                       " is not accepted: send the body as application/json");
      HttpServer::close_after_response(res);
      return httplib::Server::HandlerResponse::Handled;
    }
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
      if (!digits || len.size() > 18 || std::stoull(len) > s.options.max_body_bytes) {
        if (digits)
          answer_error(res, 413, "request body larger than --max-body bytes");
        else
          answer_error(res, 400, "Content-Length " + printable(len, 40) + " is not a number of bytes");
        HttpServer::close_after_response(res);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (s.options.api_key.empty() || req.path == "/health" || req.path == "/" || req.method == "OPTIONS")
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string want = "Bearer " + s.options.api_key;
    if (req.get_header_value("Authorization") != want) {
      res.set_header("WWW-Authenticate", "Bearer");
      answer_error(res, 401, "missing or wrong API key (Authorization: Bearer KEY)");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!s.ready && req.path != "/metrics") {
      answer_error(res, 503, "the model is loading");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    const bool counted = t_counted;
    t_counted = false;
    if (s.service && !counted) s.service->metrics().count(route_label(req.path), res.status);
  });

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
}

// The server's own endpoints (/health, the page, /metrics) and the route table's, each timed and guarded.
void install_endpoints(HttpServer& http, Served& s) {
  auto timed = [&s](const char* endpoint, auto&& body) {
    return [&s, endpoint, body](const httplib::Request& req, httplib::Response& res) {
      const auto t0 = Clock::now();
      if (!s.ready) {
        answer_error(res, 503, "the model is loading");
      } else if (req.body.size() > s.options.max_body_bytes) {  // a chunked body, counted as decoded
        answer_error(res, 413, "request body larger than --max-body bytes");
      } else {
        guarded(res, [&] { body(req, res); });
      }
      t_counted = true;
      if (res.status == -1) res.status = 200;  // httplib's default, set after the handler
      if (s.service)
        s.service->metrics().request(endpoint, res.status,
                                     std::chrono::duration<double>(Clock::now() - t0).count());
    };
  };

  http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    if (!s.ready) res.status = 503;
    res.set_content(s.ready ? "{\"status\": \"ok\"}" : "{\"status\": \"loading\"}", kJson);
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(page_html(), "text/html; charset=utf-8");
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    if (!s.service) {
      answer_error(res, 503, "the model is loading");
      return;
    }
    const auto& d = s.http.drops();
    res.set_content(s.service->metrics_text() +
                        "# HELP lstmlm_http_dropped_total Connections dropped by the server's bounds on "
                        "reading a request.\n# TYPE lstmlm_http_dropped_total counter\n"
                        "lstmlm_http_dropped_total{reason=\"slow\"} " +
                        std::to_string(d.slow.load()) + "\nlstmlm_http_dropped_total{reason=\"crowded\"} " +
                        std::to_string(d.crowded.load()) +
                        "\nlstmlm_http_dropped_total{reason=\"too_large\"} " +
                        std::to_string(d.too_large.load()) + "\n",
                    "text/plain; version=0.0.4");
  });
  for (const Route& r : routes()) {
    auto handler =
        timed(r.label, [&s, answer = r.answer](const httplib::Request& req, httplib::Response& res) {
          answer(s.service, req, res);
        });
    const std::string method = r.method;
    if (method == "GET")
      http.Get(r.pattern, handler);
    else if (method == "POST")
      http.Post(r.pattern, handler);
    else
      http.Delete(r.pattern, handler);
  }
}

// Binds the address (port 0: any free port) with a backlog for many clients; returns the port.
int bind_port(HttpServer& http, const Options& options) {
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
  return port;
}

}  // namespace

int run(const Options& options, const Log& log, const std::function<int()>& pending_signal) {
  HttpServer http(connection_limits(options), error_body);
  Served s{options, http, {}, {}};
  const Clock::time_point started = Clock::now();
  http.set_payload_max_length(options.max_body_bytes);
  http.set_keep_alive_max_count(1000000);  // a client keeps its connection (httplib closes after 5)
  http.set_tcp_nodelay(true);  // a response in two writes would otherwise wait on the delayed ACK (40 ms)
  install_policy(http, s);
  install_endpoints(http, s);
  const int port = bind_port(http, options);
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
      if (tick % 20 == 0 && s.ready) s.service->sweep();  // once a second: idle sessions go on time
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  int status = 0;
  try {
    auto model = Model::load(options.model_dir);
    for (const auto& w : model->warnings()) log("warning: " + w);
    // One precision and layout per server: its weights held once.
    keep_only_packed(model, options.precision, options.fold);
    s.service = std::make_shared<Service>(options, std::move(model));
    s.ready = true;
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
  s.service.reset();  // the scheduler finishes its queue
  log("stopped");
  return status;
}

}  // namespace lstmlm::server
