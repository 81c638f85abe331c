#include "lstmlm/tasks/resume.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lstmlm/error.hpp"

namespace lstmlm::tasks {

namespace {

// A manifest or a marker is a few hundred bytes: anything far larger is not one.
constexpr size_t kMaxRecordBytes = 1 << 20;

std::string join(const std::string& dir, const std::string& name) { return dir + "/" + name; }

void check_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 64;
  for (char c : id) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
  if (!ok)
    throw UsageError("resume: a block id of letters, digits, '-' and '_', got '" + id.substr(0, 64) + "'");
}

// The whole file, or nullopt when it does not exist; at most `limit` bytes.
std::optional<std::string> read_whole(const std::string& path, size_t limit) {
  int fd;
  do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw InputError(path + ": cannot open: " + std::strerror(errno));
  }
  std::string s;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path + ": read error: " + std::strerror(err));
    }
    if (n == 0) break;
    if (s.size() + static_cast<size_t>(n) > limit) {
      ::close(fd);
      throw InputError(path + ": larger than " + std::to_string(limit) +
                       " bytes: not a file of a resume directory");
    }
    s.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return s;
}

nlohmann::json read_json(const std::string& path, const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.is_object()) return j;
  } catch (const nlohmann::json::exception&) {
  }
  throw InputError(path + ": not a JSON object: remove the resume directory, or use another one");
}

// Writes `data` to `path` so that `path` is either absent, its old content, or all of `data`.
void write_atomic(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  auto fail = [&](const std::string& what) {
    throw OutputError(tmp + ": " + what + ": " + std::strerror(errno));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) fail("cannot create");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      fail("write error");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) fail("write error");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename");
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);  // the renames survive a crash of the machine too; a failure here loses nothing now
    ::close(fd);
  }
}

// The first top-level field whose value differs ("" when none).
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  for (const auto& [k, v] : a.items())
    if (!b.contains(k) || b.at(k) != v) return k;
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) return k;
  return "";
}

}  // namespace

ResumeDir::ResumeDir(std::string dir, const nlohmann::json& manifest) : dir_(std::move(dir)) {
  if (dir_.empty()) throw UsageError::option("resume", ": an empty directory name");
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST)
    throw UsageError::option("resume", ": " + dir_ + ": cannot create: " + std::strerror(errno));
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError::option("resume", ": " + dir_ + ": not a directory");
  const std::string path = join(dir_, "manifest.json");
  if (auto text = read_whole(path, kMaxRecordBytes)) {
    const auto old = read_json(path, *text);
    const std::string field = first_difference(old, manifest);
    if (!field.empty())
      throw UsageError::option("resume", ": " + dir_ + " holds a run with another '" + field +
                                             "': resume with the same inputs and options, or use a new "
                                             "directory");
    return;
  }
  write_atomic(path, manifest.dump(2) + "\n");
  sync_dir(dir_);
}

std::optional<ResumeBlock> ResumeDir::finished(const std::string& id) const {
  check_id(id);
  const std::string marker = join(dir_, id + ".done");
  auto record = read_whole(marker, kMaxRecordBytes);
  if (!record) return std::nullopt;
  const std::string out = join(dir_, id + ".out");
  auto output = read_whole(out, static_cast<size_t>(-1));
  if (!output)
    throw InputError(out + ": missing beside its marker " + marker + ": remove the marker to redo it");
  return ResumeBlock{std::move(*output), read_json(marker, *record)};
}

void ResumeDir::commit(const std::string& id, std::string_view output, const nlohmann::json& record) const {
  check_id(id);
  write_atomic(join(dir_, id + ".out"), output);
  write_atomic(join(dir_, id + ".done"), record.dump() + "\n");
  sync_dir(dir_);
}

}  // namespace lstmlm::tasks
