// The stores the ranks meet through. TCPStore: one server thread (in the master's process) owns
// the table; clients send a request and read the reply, one at a time per client. Waiting for
// keys polls the server (rendezvous is rare; this keeps the server free of deferred replies).
// The server also notes which rank each connection belongs to, so that when a process exits its
// closed connection tells the survivors who is gone. FileStore: the same table as a log of
// records in one file, under flock.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "kindle/distributed.h"

namespace kindle::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using Message = std::vector<std::string>;

[[noreturn]] void sys_error(const std::string& what) {
  throw DistError(what + ": " + std::strerror(errno));
}

bool write_all(int fd, const void* data, size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

// A message: its part count, then each part's length and bytes.
bool send_message(int fd, const Message& m) {
  std::string buf;
  uint32_t n = uint32_t(m.size());
  buf.append(reinterpret_cast<const char*>(&n), 4);
  for (const auto& part : m) {
    uint64_t len = part.size();
    buf.append(reinterpret_cast<const char*>(&len), 8);
    buf += part;
  }
  return write_all(fd, buf.data(), buf.size());
}

bool recv_message(int fd, Message& m) {
  uint32_t n = 0;
  if (!read_all(fd, &n, 4) || n > (1u << 20)) return false;
  m.assign(n, {});
  for (auto& part : m) {
    uint64_t len = 0;
    if (!read_all(fd, &len, 8) || len > (uint64_t(1) << 34)) return false;
    part.resize(len);
    if (len && !read_all(fd, part.data(), len)) return false;
  }
  return true;
}

std::string int_string(int64_t v) { return std::to_string(v); }

// The table and its operations, shared by the TCP server and the file store.
struct Table {
  std::map<std::string, std::string> kv;

  Message apply(const Message& req) {
    const std::string& cmd = req.at(0);
    if (cmd == "set") {
      kv[req.at(1)] = req.at(2);
      return {};
    }
    if (cmd == "get") {
      auto it = kv.find(req.at(1));
      if (it == kv.end()) return {"0"};
      return {"1", it->second};
    }
    if (cmd == "add") {
      int64_t v = 0;
      auto it = kv.find(req.at(1));
      if (it != kv.end()) v = std::stoll(it->second);
      v += std::stoll(req.at(2));
      kv[req.at(1)] = int_string(v);
      return {int_string(v)};
    }
    if (cmd == "cas") {
      auto it = kv.find(req.at(1));
      if (it == kv.end()) {
        if (req.at(2).empty()) kv[req.at(1)] = req.at(3);
        else return {req.at(2)};  // torch: an absent key returns `expected`
        return {req.at(3)};
      }
      if (it->second == req.at(2)) it->second = req.at(3);
      return {it->second};
    }
    if (cmd == "check") {
      for (size_t i = 1; i < req.size(); ++i)
        if (!kv.count(req[i])) return {"0"};
      return {"1"};
    }
    if (cmd == "del") return {kv.erase(req.at(1)) ? "1" : "0"};
    if (cmd == "num") return {int_string(int64_t(kv.size()))};
    throw DistError("store: unknown request '" + cmd + "'");
  }
};

std::string describe_keys(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", " : "") + keys[i];
  return "[" + s + "]";
}

// Polls `check` until it holds or the timeout passes (short sleeps first: rendezvous is quick).
template <typename F>
bool poll_until(F check, Duration timeout) {
  auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(100);
  while (!check()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
struct TCPStore::Impl {
  std::string host;
  int port = 0;
  Duration timeout;
  // server side (master only)
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::thread server;
  Table table;
  std::mutex departed_mu;
  std::set<int> departed;
  // client side
  int fd = -1;
  std::mutex client_mu;

  ~Impl() {
    if (fd >= 0) ::close(fd);
    if (server.joinable()) {
      char c = 0;
      [[maybe_unused]] ssize_t w = ::write(wake[1], &c, 1);
      server.join();
      ::close(wake[0]);
      ::close(wake[1]);
    }
    if (listen_fd >= 0) ::close(listen_fd);
  }

  void serve() {
    std::vector<pollfd> fds;
    std::map<int, int> rank_of;  // connection -> registered rank
    fds.push_back({listen_fd, POLLIN, 0});
    fds.push_back({wake[0], POLLIN, 0});
    for (;;) {
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents) return;  // shutdown
      if (fds[0].revents & POLLIN) {
        int c = ::accept(listen_fd, nullptr, nullptr);
        if (c >= 0) {
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          fds.push_back({c, POLLIN, 0});
        }
      }
      for (size_t i = 2; i < fds.size();) {
        bool closed = false;
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          Message req, rep;
          if (!recv_message(fds[i].fd, req) || req.empty()) {
            closed = true;
          } else {
            try {
              if (req[0] == "register") {
                rank_of[fds[i].fd] = std::stoi(req.at(1));
              } else if (req[0] == "departed") {
                std::lock_guard<std::mutex> g(departed_mu);
                for (int r : departed) rep.push_back(int_string(r));
              } else {
                rep = table.apply(req);
              }
            } catch (const std::exception& e) {
              rep = {"!error", e.what()};
            }
            closed = !send_message(fds[i].fd, rep);
          }
        }
        if (closed) {
          auto it = rank_of.find(fds[i].fd);
          if (it != rank_of.end()) {
            std::lock_guard<std::mutex> g(departed_mu);
            departed.insert(it->second);
            rank_of.erase(it);
          }
          ::close(fds[i].fd);
          fds.erase(fds.begin() + long(i));
        } else {
          fds[i].revents = 0;
          ++i;
        }
      }
    }
  }

  void start_server(int want_port) {
    listen_fd = ::socket(AF_INET6, SOCK_STREAM, 0);
    bool v6 = listen_fd >= 0;
    if (!v6) listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd < 0) sys_error("TCPStore: socket");
    int one = 1, zero = 0;
    ::setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
      ::setsockopt(listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(uint16_t(want_port));
      rc = ::bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = INADDR_ANY;
      a.sin_port = htons(uint16_t(want_port));
      rc = ::bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0) {
      int e = errno;
      ::close(listen_fd);
      errno = e;
      sys_error("TCPStore: the server could not bind port " + std::to_string(want_port) +
                " (is another job using it? pick another MASTER_PORT)");
    }
    if (::listen(listen_fd, 1024) != 0) sys_error("TCPStore: listen");
    sockaddr_storage got{};
    socklen_t len = sizeof got;
    ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&got), &len);
    port = ntohs(got.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&got)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&got)->sin_port);
    if (::pipe(wake) != 0) sys_error("TCPStore: pipe");
    server = std::thread([this] { serve(); });
  }

  void connect_client() {
    auto deadline = Clock::now() + timeout;
    std::string last = "no attempt";
    for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(500))) {
      addrinfo hints{}, *res = nullptr;
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      int g = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
      if (g != 0) {
        last = ::gai_strerror(g);
      } else {
        for (addrinfo* a = res; a; a = a->ai_next) {
          int s = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
          if (s < 0) continue;
          if (::connect(s, a->ai_addr, a->ai_addrlen) == 0) {
            int one = 1;
            ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ::fcntl(s, F_SETFD, FD_CLOEXEC);
            fd = s;
            break;
          }
          last = std::strerror(errno);
          ::close(s);
        }
        ::freeaddrinfo(res);
      }
      if (fd >= 0) return;
      if (Clock::now() + pause > deadline)
        throw DistTimeoutError("TCPStore: could not connect to the store at " + host + ":" + std::to_string(port) +
                               " within " + std::to_string(timeout.count()) + " ms (" + last +
                               "); is the master (rank 0, MASTER_ADDR:MASTER_PORT) running?");
      std::this_thread::sleep_for(pause);
    }
  }

  Message request(const Message& req) {
    std::lock_guard<std::mutex> g(client_mu);
    Message rep;
    if (fd < 0 || !send_message(fd, req) || !recv_message(fd, rep))
      throw DistError("TCPStore: lost the connection to the store at " + host + ":" + std::to_string(port) +
                      " (the process hosting it, normally rank 0 or the launcher, has exited)");
    if (rep.size() == 2 && rep[0] == "!error") throw DistError(rep[1]);
    return rep;
  }
};

TCPStore::TCPStore(std::string host, int port, std::optional<int> world_size, bool is_master, Duration timeout,
                   bool wait_for_workers)
    : impl_(std::make_unique<Impl>()) {
  KINDLE_CHECK_VALUE(port >= 0 && port < 65536, "TCPStore: port must be in [0, 65535], got ", port);
  timeout_ = timeout;
  impl_->host = host;
  impl_->port = port;
  impl_->timeout = timeout;
  if (is_master) impl_->start_server(port);
  impl_->connect_client();
  if (world_size && *world_size > 0) {
    add("__kindle_store_clients", 1);
    if (is_master && wait_for_workers) {
      int n = *world_size;
      if (!poll_until([&] { return add("__kindle_store_clients", 0) >= n; }, timeout))
        throw DistTimeoutError("TCPStore: only " + std::to_string(add("__kindle_store_clients", 0)) + " of " +
                               std::to_string(n) + " processes connected to " + host + ":" +
                               std::to_string(impl_->port) + " within " + std::to_string(timeout.count()) + " ms");
    }
  }
}

TCPStore::~TCPStore() = default;

int TCPStore::port() const { return impl_->port; }
const std::string& TCPStore::host() const { return impl_->host; }

void TCPStore::set(const std::string& key, const std::string& value) { impl_->request({"set", key, value}); }

std::string TCPStore::get(const std::string& key) {
  wait({key});
  Message rep = impl_->request({"get", key});
  KINDLE_CHECK(rep.size() == 2, "TCPStore: key '", key, "' was deleted while being read");
  return rep[1];
}

int64_t TCPStore::add(const std::string& key, int64_t amount) {
  return std::stoll(impl_->request({"add", key, int_string(amount)}).at(0));
}

std::string TCPStore::compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  return impl_->request({"cas", key, expected, desired}).at(0);
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  Message req{"check"};
  req.insert(req.end(), keys.begin(), keys.end());
  return impl_->request(req).at(0) == "1";
}

void TCPStore::wait(const std::vector<std::string>& keys, std::optional<Duration> timeout) {
  Duration t = timeout.value_or(timeout_);
  if (!poll_until([&] { return check(keys); }, t))
    throw DistTimeoutError("Timeout waiting for keys " + describe_keys(keys) + " in the store after " +
                           std::to_string(t.count()) + " ms");
}

bool TCPStore::delete_key(const std::string& key) { return impl_->request({"del", key}).at(0) == "1"; }
int64_t TCPStore::num_keys() { return std::stoll(impl_->request({"num"}).at(0)); }
void TCPStore::register_rank(int rank) { impl_->request({"register", int_string(rank)}); }

std::vector<int> TCPStore::departed_ranks() {
  std::vector<int> out;
  for (const auto& s : impl_->request({"departed"})) out.push_back(std::stoi(s));
  return out;
}

// ---------------------------------------------------------------------------------------------
struct FileStore::Impl {
  std::string path;
  int fd = -1;
  int world_size = -1;

  // Runs `op` on the table read from the file under an exclusive lock; writes it back if changed.
  Message locked(const Message& req) {
    if (::flock(fd, LOCK_EX) != 0) sys_error("FileStore: flock " + path);
    struct Unlock {
      int fd;
      ~Unlock() { ::flock(fd, LOCK_UN); }
    } unlock{fd};
    Table t;
    struct stat st{};
    ::fstat(fd, &st);
    std::string data(size_t(st.st_size), '\0');
    if (st.st_size && ::pread(fd, data.data(), data.size(), 0) != st.st_size) sys_error("FileStore: read " + path);
    size_t p = 0;
    auto take = [&](std::string& out) {
      uint64_t n;
      if (p + 8 > data.size()) return false;
      std::memcpy(&n, data.data() + p, 8);
      p += 8;
      if (p + n > data.size()) return false;
      out.assign(data, p, n);
      p += n;
      return true;
    };
    for (std::string k, v; take(k) && take(v);) t.kv[k] = v;
    auto before = t.kv;
    Message rep = t.apply(req);
    if (t.kv != before) {
      std::string out;
      for (auto& [k, v] : t.kv)
        for (const std::string* s : {static_cast<const std::string*>(&k), static_cast<const std::string*>(&v)}) {
          uint64_t n = s->size();
          out.append(reinterpret_cast<const char*>(&n), 8);
          out += *s;
        }
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, out.data(), out.size(), 0) != ssize_t(out.size()))
        sys_error("FileStore: write " + path);
    }
    return rep;
  }
};

FileStore::FileStore(std::string path, int world_size, Duration timeout) : impl_(std::make_unique<Impl>()) {
  timeout_ = timeout;
  impl_->path = path;
  impl_->world_size = world_size;
  impl_->fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (impl_->fd < 0) sys_error("FileStore: cannot open " + path);
  if (world_size > 0) add("__kindle_file_users", 1);
}

FileStore::~FileStore() {
  // The last of the world_size users removes the file (nothing is left behind).
  try {
    if (impl_->world_size > 0 && add("__kindle_file_users", -1) == 0) ::unlink(impl_->path.c_str());
  } catch (...) {
  }
  ::close(impl_->fd);
}

void FileStore::set(const std::string& key, const std::string& value) { impl_->locked({"set", key, value}); }
std::string FileStore::get(const std::string& key) {
  wait({key});
  Message rep = impl_->locked({"get", key});
  KINDLE_CHECK(rep.size() == 2, "FileStore: key '", key, "' was deleted while being read");
  return rep[1];
}
int64_t FileStore::add(const std::string& key, int64_t amount) {
  return std::stoll(impl_->locked({"add", key, int_string(amount)}).at(0));
}
std::string FileStore::compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  return impl_->locked({"cas", key, expected, desired}).at(0);
}
bool FileStore::check(const std::vector<std::string>& keys) {
  Message req{"check"};
  req.insert(req.end(), keys.begin(), keys.end());
  return impl_->locked(req).at(0) == "1";
}
void FileStore::wait(const std::vector<std::string>& keys, std::optional<Duration> timeout) {
  Duration t = timeout.value_or(timeout_);
  if (!poll_until([&] { return check(keys); }, t))
    throw DistTimeoutError("Timeout waiting for keys " + describe_keys(keys) + " in the file store " +
                           impl_->path + " after " + std::to_string(t.count()) + " ms");
}
bool FileStore::delete_key(const std::string& key) { return impl_->locked({"del", key}).at(0) == "1"; }
int64_t FileStore::num_keys() { return std::stoll(impl_->locked({"num"}).at(0)); }

// ---------------------------------------------------------------------------------------------
PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> base)
    : prefix_(std::move(prefix)), base_(std::move(base)) {
  KINDLE_CHECK_VALUE(base_ != nullptr, "PrefixStore: the underlying store is None");
  timeout_ = base_->timeout();
}
void PrefixStore::set(const std::string& key, const std::string& value) { base_->set(k(key), value); }
std::string PrefixStore::get(const std::string& key) { return base_->get(k(key)); }
int64_t PrefixStore::add(const std::string& key, int64_t amount) { return base_->add(k(key), amount); }
std::string PrefixStore::compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  return base_->compare_set(k(key), expected, desired);
}
bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> ks;
  for (const auto& key : keys) ks.push_back(k(key));
  return base_->check(ks);
}
void PrefixStore::wait(const std::vector<std::string>& keys, std::optional<Duration> timeout) {
  std::vector<std::string> ks;
  for (const auto& key : keys) ks.push_back(k(key));
  base_->wait(ks, timeout ? timeout : std::optional<Duration>(timeout_));
}
bool PrefixStore::delete_key(const std::string& key) { return base_->delete_key(k(key)); }
int64_t PrefixStore::num_keys() { return base_->num_keys(); }

}  // namespace kindle::distributed
