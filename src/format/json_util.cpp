#include "format/json_util.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "lstmlm/config.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::format {

int open_regular(const std::string& path) {
  // stat first: opening a FIFO for reading blocks until a writer appears.
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0)
    throw ModelError(path, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(sb.st_mode)) throw ModelError(path, "not a regular file");
  // O_NONBLOCK and fstat again: the path may have been replaced between the two calls.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ModelError(path, std::string("cannot open: ") + std::strerror(errno));
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    throw ModelError(path, "not a regular file");
  }
  return fd;
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  int fd = open_regular(path);
  struct stat sb;
  if (::fstat(fd, &sb) == 0 && static_cast<uint64_t>(sb.st_size) > max_bytes) {
    ::close(fd);
    throw ModelError(path, "file is " + std::to_string(sb.st_size) + " bytes, more than the limit of " +
                               std::to_string(max_bytes) + " bytes for this file");
  }
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n <= 0) continue;
    if (s.size() + static_cast<uint64_t>(n) > max_bytes) {
      ::close(fd);
      throw ModelError(path, "file grew past the limit of " + std::to_string(max_bytes) +
                                 " bytes for this file while it was read");
    }
    s.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (n < 0) throw ModelError(path, std::string("read error: ") + std::strerror(errno));
  return s;
}

namespace {
// nlohmann's messages start with "[json.exception.parse_error.101] "; the tag is noise for users.
std::string strip_tag(std::string m) {
  if (!m.empty() && m[0] == '[') {
    auto p = m.find("] ");
    if (p != std::string::npos) m.erase(0, p + 2);
  }
  // The lexer echoes the whole token it was reading ("last read: '<token>'"), which can be as long as the
  // file: keep its end, where the error is.
  const std::string last = "; last read: '";
  if (auto p = m.find(last); p != std::string::npos) {
    size_t begin = p + last.size(), end = m.rfind('\'');
    constexpr size_t kKeep = 40;
    if (end != std::string::npos && end > begin + kKeep) m.replace(begin, end - kKeep - begin, "...");
  }
  // Other messages quote the token too ("number overflow parsing '<4000 digits>'"): keep any message short.
  constexpr size_t kMaxMessage = 300;
  if (m.size() > kMaxMessage)
    m = m.substr(0, kMaxMessage - 60) + "... (" + std::to_string(m.size()) + " bytes)";
  // Keep the message to one printable line.
  for (char& ch : m) {
    auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u >= 0x7f) ch = '?';
  }
  return m;
}

// One pass over the bytes before nlohmann sees them: a NUL (JSON allows none, not even inside a string,
// and nlohmann's iterator input stops at one, so `{...}\0<payload>` would load) and the nesting depth.
void check_structure(std::string_view text, const std::string& file, const std::string& place,
                     const std::string& at) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\0')
      throw ModelError::about(file, place, at + "not valid JSON: a NUL byte at offset " + std::to_string(i));
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw ModelError::about(file, place,
                                at + "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                    " levels at offset " + std::to_string(i) +
                                    " (the model files need a few; is this file damaged?)");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}
}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& file, const std::string& place) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  auto cb = [&](int, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  const std::string at = place.empty() ? std::string() : place + ": ";
  check_structure(text, file, place, at);
  json j;
  try {
    j = json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    // parse_error and also out_of_range (a number literal that overflows a double, e.g. 1E400).
    throw ModelError::about(file, place, at + "not valid JSON: " + strip_tag(e.what()));
  }
  if (!duplicate.empty())
    throw ModelError::about(file, duplicate,
                            at + "key " + format::quoted(duplicate) + " appears twice in one object");
  return j;
}

std::string quoted(std::string_view s, size_t max) {
  bool cut = s.size() > max;
  if (cut) s = s.substr(0, max);
  std::string body =
      nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // dump() gives "..." with JSON escapes; swap the outer quotes for the single quotes used in messages.
  std::string r(1, '\'');
  r.append(body, 1, body.size() - 2);
  r += cut ? "...'" : "'";
  return r;
}

std::string dump_prefix(const nlohmann::json& j, size_t max_bytes) {
  using nlohmann::json;
  auto scalar = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
  struct Frame {
    const json* v;
    json::const_iterator it;
  };
  std::string out;
  std::vector<Frame> stack;
  auto open = [&](const json& v) {
    if (v.is_structured()) {
      out += v.is_object() ? '{' : '[';
      stack.push_back({&v, v.cbegin()});
    } else {
      out += scalar(v);
    }
  };
  open(j);
  while (!stack.empty() && out.size() <= max_bytes) {
    Frame& f = stack.back();
    if (f.it == f.v->cend()) {
      out += f.v->is_object() ? '}' : ']';
      stack.pop_back();
      continue;
    }
    if (f.it != f.v->cbegin()) out += ',';
    const json& child = *f.it;
    if (f.v->is_object()) out += scalar(json(f.it.key())) + ':';
    ++f.it;
    open(child);  // may grow the stack: `f` is not used after this
  }
  return out;
}

std::string brief(const nlohmann::json& j) {
  std::string s = dump_prefix(j, 61);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace lstmlm::format
