// An error a request handler answers with: the HTTP status and a one-line message naming the field.
#pragma once
#include <stdexcept>
#include <string>

namespace lstmlm::server {

class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

}  // namespace lstmlm::server
