#include "bootstrap/pmi/pmi_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "net/socket.hpp"

namespace tutti::bootstrap {
namespace {

// A line longer than this is not PMI: the launcher's answers are a few hundred bytes.
constexpr size_t kMaxLine = 64 << 10;
// The destructor's cmd=finalize may not hold up the process's exit for long.
constexpr auto kFinalizeBudget = std::chrono::seconds(2);

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

std::unique_ptr<PmiClient> PmiClient::over_fd(int fd, int rank) {
  struct stat st {};
  const std::string where = fmt::format("the launcher's PMI socket (PMI_FD={})", fd);
  if (::fstat(fd, &st) != 0)
    throw make_error(ErrorCode::kConfig,
                     "rank {}: PMI_FD={} is not an open file descriptor ({}); PMI_FD must come "
                     "from a PMI launcher (MPICH's mpiexec, Slurm): do not set it by hand",
                     rank, fd, std::strerror(errno));
  if (!S_ISSOCK(st.st_mode))
    throw make_error(ErrorCode::kConfig,
                     "rank {}: PMI_FD={} is not a socket, so it cannot be a PMI launcher's "
                     "connection; PMI_FD must come from a PMI launcher (MPICH's mpiexec, Slurm): "
                     "do not set it by hand",
                     rank, fd);
  return std::make_unique<PmiClient>(fd, net::Fd(), rank, where);
}

std::unique_ptr<PmiClient> PmiClient::over_port(const std::string& host_port, int pmi_id, int rank,
                                                Deadline deadline) {
  net::Fd fd = net::connect_tcp(net::parse_endpoint(host_port, "PMI_PORT"), deadline);
  const int raw = fd.get();
  auto client = std::make_unique<PmiClient>(
      raw, std::move(fd), rank, fmt::format("the launcher's PMI port (PMI_PORT={})", host_port));
  // A process that connects itself introduces itself; the launcher answers, then sets size, rank
  // and debug.
  client->request(fmt::format("cmd=initack pmiid={}", pmi_id), "initack", deadline);
  for (int i = 0; i < 3; ++i) {
    auto fields = parse_line(client->read_line("cmd=set after cmd=initack", deadline));
    if (fields["cmd"] != "set")
      throw make_error(ErrorCode::kPeerFailure, "rank {}: {} answered cmd=initack with cmd={}",
                       rank, client->where_, fields["cmd"]);
    auto number = [&](const char* name) {
      return static_cast<int>(
          parse::integer(fields[name], fmt::format("PMI's {}", name), 0, int64_t{1} << 20));
    };
    if (fields.contains("rank")) client->launcher_rank_ = number("rank");
    if (fields.contains("size")) client->launcher_size_ = number("size");
  }
  return client;
}

PmiClient::PmiClient(int fd, net::Fd owned, int rank, std::string where)
    : fd_(fd), owned_(std::move(owned)), rank_(rank), where_(std::move(where)) {}

PmiClient::~PmiClient() {
  if (!initialized_) return;
  try {
    request("cmd=finalize", "finalize_ack", Deadline::after(kFinalizeBudget));
  } catch (const Error& e) {
    log::debug("PMI finalize: {}", e.what());
  }
}

std::map<std::string, std::string> PmiClient::parse_line(std::string_view line) {
  std::map<std::string, std::string> fields;
  line = trim(line);
  while (!line.empty()) {
    size_t space = line.find(' ');
    std::string_view word = line.substr(0, space);
    size_t eq = word.find('=');
    if (eq != std::string_view::npos)
      fields[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
    if (space == std::string_view::npos) break;
    line = trim(line.substr(space + 1));
  }
  return fields;
}

void PmiClient::send_line(const std::string& line, Deadline deadline) {
  const std::string text = line + "\n";
  net::write_all(fd_, std::as_bytes(std::span(text.data(), text.size())), deadline, where_);
}

std::string PmiClient::read_line(std::string_view waiting_for, Deadline deadline) {
  for (;;) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (pending_.size() > kMaxLine)
      throw make_error(ErrorCode::kPeerFailure,
                       "rank {}: {} sent {} bytes without a line end while rank waited for {}: "
                       "that is not a PMI launcher",
                       rank_, where_, pending_.size(), waiting_for);
    pollfd p{fd_, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining());
    if (deadline.expired())
      throw make_error(ErrorCode::kTimeout,
                       "rank {}: {} did not answer within the deadline (TUTTI_TIMEOUT) while rank "
                       "waited for {}; is the launcher (mpiexec, srun) still running, and did "
                       "every rank start? A rank that ended before it met the others leaves them "
                       "waiting here: srun -K (--kill-on-bad-exit) ends the step as soon as one "
                       "task fails",
                       rank_, where_, waiting_for);
    int ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count())));
    if (ready < 0 && errno != EINTR) throw_system_error(fmt::format("poll on {}", where_), errno);
    if (ready <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw_system_error(fmt::format("rank {}: reading {}", rank_, where_), errno);
    if (n == 0)
      throw make_error(ErrorCode::kPeerFailure,
                       "rank {}: {} closed the connection while rank waited for {}; the launcher "
                       "may have ended the job",
                       rank_, where_, waiting_for);
    pending_.append(buf, static_cast<size_t>(n));
  }
}

std::map<std::string, std::string> PmiClient::request(const std::string& line,
                                                      std::string_view expected_cmd,
                                                      Deadline deadline) {
  send_line(line, deadline);
  const std::string command = line.substr(0, line.find(' '));
  auto fields = parse_line(read_line(fmt::format("the answer to {}", command), deadline));
  if (fields["cmd"] != expected_cmd)
    throw make_error(ErrorCode::kPeerFailure,
                     "rank {}: {} answered {} with cmd={} (expected cmd={}); is it a PMI-1 "
                     "launcher?",
                     rank_, where_, command, fields["cmd"], expected_cmd);
  if (auto rc = fields.find("rc"); rc != fields.end() && rc->second != "0")
    throw make_error(ErrorCode::kPeerFailure, "rank {}: {} refused {}: rc={} {}", rank_, where_,
                     command, rc->second, fields["msg"]);
  return fields;
}

void PmiClient::init(Deadline deadline) {
  request("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init", deadline);
  initialized_ = true;
  auto maxes = request("cmd=get_maxes", "maxes", deadline);
  auto limit = [&](const char* name, size_t fallback) {
    try {
      return static_cast<size_t>(parse::integer(maxes[name], name, 1, 1 << 20));
    } catch (const Error&) {
      return fallback;
    }
  };
  key_max_ = limit("keylen_max", key_max_);
  value_max_ = limit("vallen_max", value_max_);
  kvs_name_ = request("cmd=get_my_kvsname", "my_kvsname", deadline)["kvsname"];
  if (kvs_name_.empty())
    throw make_error(ErrorCode::kPeerFailure, "rank {}: {} gave no key-value space name", rank_,
                     where_);
}

void PmiClient::put(const std::string& key, const std::string& value, Deadline deadline) {
  if (key.size() >= key_max_ || value.size() >= value_max_ ||
      value.find_first_of(" \n=") != std::string::npos)
    throw make_error(ErrorCode::kInternal,
                     "rank {}: PMI key '{}' ({} bytes) or its value ({} bytes) exceeds the "
                     "launcher's limits ({} / {}) or holds a space, '=' or line end",
                     rank_, key, key.size(), value.size(), key_max_, value_max_);
  request(fmt::format("cmd=put kvsname={} key={} value={}", kvs_name_, key, value), "put_result",
          deadline);
}

void PmiClient::barrier(Deadline deadline) {
  request("cmd=barrier_in", "barrier_out", deadline);
}

std::string PmiClient::get(const std::string& key, Deadline deadline) {
  return request(fmt::format("cmd=get kvsname={} key={}", kvs_name_, key), "get_result",
                 deadline)["value"];
}

}  // namespace tutti::bootstrap
