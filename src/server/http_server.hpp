// cpp-httplib's server with the bounds it lacks against slow and oversized clients. httplib bounds each
// read of a socket, not a request, so a client trickling a byte a second holds a worker for as long as it
// likes, and as many such clients as workers starve everyone. Here each connection is read through a
// stream that bounds
//   - the time to read one whole request (headers and body): ConnectionLimits::request;
//   - its rate: after `grace`, a request must have arrived at `min_bytes_per_s` on average;
//   - the share of workers held by slow readers (a request still being read after `slow_after`): at most
//     workers - reserved_workers, so `reserved_workers` always serve requests that arrive whole;
//   - the header bytes (431) and the body bytes as sent, chunk framing included (413), before httplib
//     buffers them;
// and an idle keep-alive connection gives its worker up as soon as a new connection waits for one.
// A request dropped for time is answered 408, for size 413 or 431, each with a one-line JSON error, then
// the connection is closed. Include this header last: httplib.h brings <resolv.h> (see server.cpp).
#pragma once
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace lstmlm::server {

struct ConnectionLimits {
  int workers = 8;                             // connections served at once
  std::chrono::milliseconds idle{5000};        // waiting for a keep-alive connection's next request
  std::chrono::milliseconds read{30000};       // one read of the socket
  std::chrono::milliseconds write{30000};      // one write of the socket
  std::chrono::milliseconds request{30000};    // reading a whole request, headers and body
  std::chrono::milliseconds grace{2000};       // before the minimum rate applies
  double min_bytes_per_s = 1024;               // a request's average rate after the grace
  std::chrono::milliseconds slow_after{250};   // a request still being read after this is slow
  std::chrono::milliseconds turn{20};          // a busy connection's hold on a worker while others wait
  int reserved_workers = 2;                    // workers slow readers never hold
  size_t max_header_bytes = 64 * 1024;         // the request line and headers
  size_t max_body_wire_bytes = 2 * (1 << 20);  // the body as sent (chunk framing included)
};

// Counters of the connections the bounds dropped, for /metrics.
struct ConnectionDrops {
  std::atomic<uint64_t> slow{0};       // too slow, or past the whole-request time (408)
  std::atomic<uint64_t> crowded{0};    // slow while the slow readers' share was full (408)
  std::atomic<uint64_t> too_large{0};  // headers (431) or body (413) past their bound
};

class HttpServer : public httplib::Server {
 public:
  // The JSON body of an error answered by the bounds (status, message), as the handlers' errors.
  using ErrorBody = std::function<std::string(int, const std::string&)>;
  HttpServer(const ConnectionLimits& limits, ErrorBody error_body);
  const ConnectionDrops& drops() const { return drops_; }
  // Called by a handler that answers without reading the request's body: the connection is closed after
  // the response (the unread body cannot be taken for the next request).
  static void close_after_response(httplib::Response& res);

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool wait_for_request(socket_t sock) const;

  ConnectionLimits limits_;
  ErrorBody error_body_;
  ConnectionDrops drops_;
  std::atomic<int> slow_readers_{0};
  std::atomic<int> waiting_connections_{0};  // accepted, no worker yet
  friend class GuardedStream;
};

}  // namespace lstmlm::server
