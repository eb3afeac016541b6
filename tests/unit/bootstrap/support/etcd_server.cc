#include "unit/bootstrap/support/etcd_server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace tutti::bootstrap::testing {
namespace {

std::string etcd_binary() {
  for (const char* candidate : {"/usr/bin/etcd", "/usr/local/bin/etcd"})
    if (::access(candidate, X_OK) == 0) return candidate;
  return "";
}

}  // namespace

std::string EtcdServer::skip_reason() {
  return "no etcd binary (/usr/bin/etcd): apt install etcd-server (scripts/install-deps.sh does)";
}

EtcdServer* EtcdServer::shared() {
  if (etcd_binary().empty()) return nullptr;
  static std::unique_ptr<EtcdServer> server = std::make_unique<EtcdServer>();
  return server.get();
}

EtcdServer::EtcdServer() {
  const std::string binary = etcd_binary();
  client_port_ = free_port();
  uint16_t peer_port = free_port();
  while (peer_port == client_port_) peer_port = free_port();
  const std::string client = fmt::format("http://127.0.0.1:{}", client_port_);
  const std::string peer = fmt::format("http://127.0.0.1:{}", peer_port);
  const std::string log = dir_.path() + "/etcd.log";
  std::vector<std::string> args = {
      binary, "--name=tutti-test", "--data-dir=" + dir_.path() + "/data",
      "--listen-client-urls=" + client, "--advertise-client-urls=" + client,
      "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
      "--initial-cluster=tutti-test=" + peer,
      // The store suite stores 3 MiB values (base64: 4 MiB).
      "--max-request-bytes=16777216", "--log-level=warn"};
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  EtcdClient probe({endpoint()});
  try {
    probe.post("/v3/kv/range", {{"key", "eA=="}}, Deadline::after(std::chrono::seconds(30)));
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("etcd at {} did not start: {} (its log: {})", client, e.what(), log));
  }
}

EtcdServer::~EtcdServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string EtcdServer::fresh_url(const std::string& what) {
  return fmt::format("etcd://127.0.0.1:{}/test-{}-{}-{}", client_port_, ::getpid(), what,
                     next_prefix_++);
}

}  // namespace tutti::bootstrap::testing
