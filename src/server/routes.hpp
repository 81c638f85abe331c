// The endpoints of `lstmlm serve` that answer from the model, as one table: run() registers each (timed,
// guarded, 503 while the model loads) and /metrics labels a request by its route's template, never by the
// path a client sent. /health, /metrics and the page are the server's own (server.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "server/service.hpp"

// Last: httplib.h brings <resolv.h>, whose `_res` macro would rewrite a parameter name in Eigen's headers.
#include "server/http_server.hpp"

namespace lstmlm::server {

// What every JSON answer is sent as. With the charset parameter, cpp-httplib leaves the body uncompressed (it
// gzips the bare "application/json" for a client that accepts it): a deflate stream set up per response cost
// more CPU than the rest of a small prediction's request on loopback. A proxy in front compresses.
inline constexpr const char* kJson = "application/json; charset=utf-8";

// The one-line JSON error body of the contract: {"error": {"code": STATUS, "message": "..."}}.
std::string error_body(int status, const std::string& message);

struct Route {
  const char* method;   // GET, POST or DELETE
  const char* pattern;  // httplib's regular expression; a session id is its first group
  const char* label;    // the template /metrics names
  // Answers a matched request; throws HttpError, UsageError or InputError, which the caller answers.
  void (*answer)(const std::shared_ptr<Service>& service, const httplib::Request& req,
                 httplib::Response& res);
};
const std::vector<Route>& routes();

// The /metrics label of a request: a route's template, "/health", "/metrics" or "/", else "other".
std::string route_label(const std::string& path);

}  // namespace lstmlm::server
