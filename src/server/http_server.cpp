#include "server/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace lstmlm::server {

using Clock = std::chrono::steady_clock;

namespace {

thread_local bool t_close_after_response = false;
// When this worker took its connection: a busy one gives the worker up after its turn if others wait.
thread_local Clock::time_point t_held_since{};

// httplib's ThreadPool, plus the count of connections accepted and waiting for a worker: an idle
// keep-alive connection gives its worker up when one waits.
class WorkerPool final : public httplib::TaskQueue {
 public:
  WorkerPool(int n, std::atomic<int>& waiting) : waiting_(waiting) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(fn));
      ++waiting_;
    }
    cv_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        --waiting_;
      }
      try {
        fn();
      } catch (...) {  // a connection's failure never ends a worker
      }
    }
  }
  std::atomic<int>& waiting_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

// 1 when `fd` has `events` before `until`, 0 when `until` passed, -1 on an error.
int wait_fd(int fd, short events, Clock::time_point until) {
  for (;;) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(ms, 0, INT_MAX)));
    if (r < 0 && errno == EINTR) continue;
    return r > 0 ? 1 : r;
  }
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  const int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                     : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ip.clear();
  port = 0;
  if (r != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

const char* reason_of(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Error";
  }
}

}  // namespace

// One connection's socket as httplib reads and writes it, with a buffer that lives as long as the
// connection (bytes of a pipelined next request are kept) and the bounds of ConnectionLimits per request.
class GuardedStream final : public httplib::Stream {
 public:
  GuardedStream(HttpServer& server, socket_t sock, const HttpServer::ErrorBody& error_body)
      : server_(server), limits_(server.limits_), sock_(sock), error_body_(error_body) {}
  ~GuardedStream() override { release_slow(); }
  GuardedStream(const GuardedStream&) = delete;
  GuardedStream& operator=(const GuardedStream&) = delete;

  void begin_request() {
    start_ = Clock::now();
    wire_ = header_bytes_ = body_bytes_ = 0;
    in_body_ = false;
    crlf_ = 0;
    expect_head_ = true;
  }
  // Sends a response head still held (a response without a body).
  void end_request() {
    release_slow();
    if (!head_.empty() && send_held(nullptr, 0) < 0) dead_ = true;
  }
  bool buffered() const { return off_ < len_; }
  bool dead() const { return dead_; }

  bool is_readable() const override {
    return !dead_ && (buffered() || wait_fd(sock_, POLLIN, Clock::now() + limits_.read) > 0);
  }
  bool is_writable() const override {
    if (dead_ || wait_fd(sock_, POLLOUT, Clock::now() + limits_.write) <= 0) return false;
    // A peer that closed its end: poll says readable and a peek reads 0 bytes.
    if (wait_fd(sock_, POLLIN, Clock::now()) > 0) {
      char c;
      if (::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return false;
    }
    return true;
  }
  ssize_t read(char* ptr, size_t size) override {
    if (dead_) return -1;
    if (!buffered()) {
      const ssize_t n = fill();
      if (n <= 0) return n;
    }
    const size_t n = std::min(size, len_ - off_);
    if (!account(buf_ + off_, n)) return -1;
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }
  // httplib writes a response's status line and headers, then its body: the head is held and goes out with
  // the body's first bytes in one send, one TCP segment (two sends cost a predict answer about a tenth of
  // its server CPU on loopback). A head of an informational (1xx) or chunked (streamed) response goes out at
  // once: the client waits for it.
  ssize_t write(const char* ptr, size_t size) override {
    release_slow();  // the request is read: the worker now computes or answers
    if (expect_head_) {
      const std::string_view w(ptr, size);
      const bool informational = w.starts_with("HTTP/1.1 1");
      expect_head_ = informational;
      if (!informational && w.starts_with("HTTP/") && w.ends_with("\r\n\r\n") &&
          w.find("chunked") == std::string_view::npos) {
        head_.assign(ptr, size);
        return static_cast<ssize_t>(size);
      }
    }
    if (!head_.empty()) return send_held(ptr, size);
    if (!is_writable()) return -1;
    return ::send(sock_, ptr, size, MSG_NOSIGNAL);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  // Sends what is left of the held head, then up to `size` bytes of `ptr`: returns the bytes of `ptr` sent
  // (0 while the head is still going out: httplib calls again), or -1.
  ssize_t send_held(const char* ptr, size_t size) {
    while (!head_.empty()) {
      if (!is_writable()) return -1;
      iovec parts[2] = {{head_.data(), head_.size()}, {const_cast<char*>(ptr), size}};
      msghdr m{};
      m.msg_iov = parts;
      m.msg_iovlen = size > 0 ? 2 : 1;
      const ssize_t n = ::sendmsg(sock_, &m, MSG_NOSIGNAL);
      if (n < 0) return -1;
      const size_t sent = static_cast<size_t>(n);
      if (sent < head_.size()) {
        head_.erase(0, sent);
        continue;
      }
      const size_t body = sent - head_.size();
      head_.clear();
      return static_cast<ssize_t>(body);
    }
    return 0;
  }

  // Receives into the empty buffer, waiting no longer than the bounds allow. Returns what recv returned,
  // or -1 after a bound dropped the request.
  ssize_t fill() {
    off_ = len_ = 0;
    const auto read_until = Clock::now() + limits_.read;
    for (;;) {
      const auto whole = start_ + limits_.request;
      const auto rated =
          start_ + limits_.grace +
          std::chrono::milliseconds(static_cast<int64_t>(1000.0 * double(wire_) / limits_.min_bytes_per_s));
      const auto slow_at = slow_ ? Clock::time_point::max() : start_ + limits_.slow_after;
      const auto until = std::min({read_until, whole, rated, slow_at});
      const int ready = wait_fd(sock_, POLLIN, until);
      if (ready < 0) return -1;
      if (ready > 0) {
        const ssize_t n = ::recv(sock_, buf_, sizeof(buf_), 0);
        if (n > 0) {
          len_ = static_cast<size_t>(n);
          wire_ += len_;
        }
        return n;
      }
      const auto now = Clock::now();
      if (now >= whole || now >= rated) {
        server_.drops_.slow++;
        return drop(408, "request not received in time (the whole request within " +
                             std::to_string(limits_.request.count() / 1000) + " s, at least " +
                             std::to_string(static_cast<int64_t>(limits_.min_bytes_per_s)) + " bytes/s)");
      }
      if (now >= read_until) return -1;  // a silent peer: closed as httplib closes it
      if (now >= slow_at && !mark_slow()) {
        server_.drops_.crowded++;
        return drop(408, "request too slow while the server is busy with other slow clients");
      }
    }
  }

  // Counts the bytes httplib takes: header bytes up to the blank line, then body bytes as sent.
  bool account(const char* p, size_t n) {
    size_t i = 0;
    for (; i < n && !in_body_; ++i) {
      ++header_bytes_;
      const char c = p[i];
      crlf_ = (c == (crlf_ % 2 == 0 ? '\r' : '\n')) ? crlf_ + 1 : (c == '\r' ? 1 : 0);
      if (crlf_ == 4) in_body_ = true;
    }
    body_bytes_ += n - i;
    if (header_bytes_ > limits_.max_header_bytes) {
      server_.drops_.too_large++;
      drop(431, "request headers larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
      return false;
    }
    if (body_bytes_ > limits_.max_body_wire_bytes) {
      server_.drops_.too_large++;
      drop(413, "request body larger than --max-body bytes");
      return false;
    }
    return true;
  }

  // Answers `status` if the socket takes it at once, and ends the connection.
  int drop(int status, const std::string& message) {
    const std::string body = error_body_(status, message);
    const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_of(status) +
                             "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    const std::string all = head + body;
    (void)!::send(sock_, all.data(), all.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    dead_ = true;
    release_slow();
    return -1;
  }

  bool mark_slow() {
    const int allowed = std::max(1, limits_.workers - limits_.reserved_workers);
    if (server_.slow_readers_.fetch_add(1) + 1 > allowed) {
      server_.slow_readers_--;
      return false;
    }
    slow_ = true;
    return true;
  }
  void release_slow() {
    if (slow_) server_.slow_readers_--;
    slow_ = false;
  }

  HttpServer& server_;
  const ConnectionLimits& limits_;
  socket_t sock_;
  const HttpServer::ErrorBody& error_body_;
  char buf_[4096];
  size_t off_ = 0, len_ = 0;
  Clock::time_point start_ = Clock::now();
  size_t wire_ = 0, header_bytes_ = 0, body_bytes_ = 0;
  bool in_body_ = false, slow_ = false, dead_ = false;
  bool expect_head_ = false;  // the next write may be a response head
  std::string head_;          // a response head held for the body's first write
  int crlf_ = 0;              // how much of "\r\n\r\n" the last header bytes matched
};

HttpServer::HttpServer(const ConnectionLimits& limits, ErrorBody error_body)
    : limits_(limits), error_body_(std::move(error_body)) {
  limits_.workers = std::max(1, limits_.workers);
  new_task_queue = [this] { return new WorkerPool(limits_.workers, waiting_connections_); };
  set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(limits_.read).count(), 0);
  set_write_timeout(std::chrono::duration_cast<std::chrono::seconds>(limits_.write).count(), 0);
  // A busy keep-alive client is never idle, so it would hold its worker while accepted connections wait for
  // one (6 closed-loop clients on 2 workers: 4 got one answer in 3 s, at the end). While any connection
  // waits, a connection that has held its worker for its turn is closed after this response ("Connection:
  // close"): the client reconnects and queues behind the others. The turn keeps reconnections rare for fast
  // requests.
  set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    if (waiting_connections_ > 0 && Clock::now() - t_held_since >= limits_.turn) close_after_response(res);
  });
}

void HttpServer::close_after_response(httplib::Response& res) {
  res.set_header("Connection", "close");
  t_close_after_response = true;
}

bool HttpServer::wait_for_request(socket_t sock) const {
  const auto since = Clock::now();
  for (;;) {
    if (svr_sock_ == INVALID_SOCKET) return false;
    const auto now = Clock::now();
    if (now - since >= limits_.idle) return false;
    // An idle connection yields its worker to a connection waiting for one.
    if (waiting_connections_ > 0 && now - since >= limits_.slow_after) return false;
    const int r = wait_fd(sock, POLLIN, std::min(now + std::chrono::milliseconds(50), since + limits_.idle));
    if (r < 0) return false;
    if (r > 0) return true;
  }
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  bool ret = false;
  {
    GuardedStream strm(*this, sock, error_body_);
    t_held_since = Clock::now();
    for (size_t count = keep_alive_max_count_; count > 0; --count) {
      if (!strm.buffered() && !wait_for_request(sock)) break;
      if (svr_sock_ == INVALID_SOCKET) break;
      strm.begin_request();
      bool connection_closed = false;
      t_close_after_response = false;
      ret = process_request(strm, count == 1, connection_closed, nullptr);
      strm.end_request();
      if (!ret || connection_closed || strm.dead() || t_close_after_response) break;
    }
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace lstmlm::server
