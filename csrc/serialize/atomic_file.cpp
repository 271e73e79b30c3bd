// Atomic file replacement (see atomic_file.h).
#include "atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <random>

#include "kindle/error.h"

namespace kindle::files {

namespace {

[[noreturn]] void os_error(const char* who, const std::string& what, const std::string& file) {
  int err = errno;
  throw OSError(err, std::string(who) + ": " + what + ": " + std::strerror(err), file);
}

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The file a write to `path` replaces: through symlinks, their final target (as open() would
// write), so the temporary file lives in the target's folder, the rename is atomic and the link
// stays a link. A dangling link names the file to create.
std::string resolve_target(const std::string& path, const char* who) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    if (hops == 40) {
      errno = ELOOP;
      os_error(who, "resolving the symbolic links", path);
    }
    std::string link(PATH_MAX, '\0');
    ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
    if (n < 0) os_error(who, "reading the symbolic link", p);
    link.resize(size_t(n));
    p = link.rfind('/', 0) == 0 ? link : folder_of(p) + "/" + link;
  }
}

std::string host_tag() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  uint32_t h = 2166136261u;  // FNV-1a: a stable short tag, not a secret
  for (const char* c = host; *c; ++c) h = (h ^ uint8_t(*c)) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", h);
  return buf;
}

bool pid_alive(long pid) {
  if (pid <= 0) return true;
  return ::kill(pid_t(pid), 0) == 0 || errno != ESRCH;  // EPERM: it exists, under another user
}

// ".<base>.<host>.<pid>.<16 hex>.tmp" of this host whose writer is gone.
void remove_stale_temps(const std::string& folder, const std::string& base) {
  std::string prefix = "." + base + "." + host_tag() + ".";
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = name.substr(prefix.size());  // "<pid>.<16 hex>.tmp"
    size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || dot > 10 || rest.size() != dot + 1 + 16 + 4 ||
        rest.compare(dot + 17, 4, ".tmp") != 0)
      continue;
    bool ok = true;
    for (size_t k = 0; k < dot; ++k) ok = ok && rest[k] >= '0' && rest[k] <= '9';
    for (size_t k = dot + 1; k < dot + 17; ++k) ok = ok && std::strchr("0123456789abcdef", rest[k]) && rest[k];
    if (!ok) continue;
    long pid = std::stol(rest.substr(0, dot));
    if (pid == long(::getpid()) || pid_alive(pid)) continue;
    stale.push_back(folder + "/" + name);
  }
  ::closedir(dir);
  for (auto& f : stale) ::unlink(f.c_str());
}

// The mode an ordinary open() would give: an existing file's, else 0666 & ~umask.
mode_t new_file_mode(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return st.st_mode & 07777;
  std::ifstream status("/proc/self/status");  // reads the umask without setting it (Linux)
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return 0666 & ~mode_t(std::stoul(line.substr(6), nullptr, 8));
  mode_t mask = ::umask(022);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

std::string temp_name(const std::string& base, int64_t pid) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char rnd[17];
  std::snprintf(rnd, sizeof(rnd), "%016llx", static_cast<unsigned long long>(rng()));
  return "." + base + "." + host_tag() + "." + std::to_string(pid) + "." + rnd + ".tmp";
}

void atomic_write(const std::string& path, const std::function<void(int fd)>& write, const char* who) {
  std::string target = resolve_target(path, who);
  std::string folder = folder_of(target), base = base_of(target);
  struct stat st;
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(std::string(who) + ": parent directory " + folder + " does not exist");
  if (::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    os_error(who, "cannot replace a directory", target);
  }
  mode_t mode = new_file_mode(target);
  remove_stale_temps(folder, base);
  std::string tmp;
  int fd = -1;
  while (fd < 0) {  // 64 random bits: a clash is practically impossible, but never overwrite
    tmp = folder + "/" + temp_name(base, ::getpid());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) os_error(who, "cannot create a temporary file", tmp);
  }
  try {
    write(fd);
    if (::fchmod(fd, mode) != 0) os_error(who, "chmod", tmp);
    if (::fsync(fd) != 0) os_error(who, "fsync", tmp);
    int rc = ::close(fd);
    fd = -1;
    if (rc != 0) os_error(who, "closing", tmp);
    if (::rename(tmp.c_str(), target.c_str()) != 0) os_error(who, "renaming the written file onto", target);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  int dfd = ::open(folder.c_str(), O_RDONLY | O_CLOEXEC);  // makes the rename itself durable
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace kindle::files
