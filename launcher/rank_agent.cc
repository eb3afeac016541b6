#include "launcher/rank_agent.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/base64.hpp"
#include "core/deadline.hpp"
#include "core/error.hpp"
#include "launcher/child_process.hpp"
#include "launcher/command_lookup.hpp"
#include "launcher/job_env.hpp"
#include "launcher/process_tree.hpp"
#include "launcher/signal_watcher.hpp"
#include "launcher/torch_env.hpp"

namespace tutti::launcher {
namespace {

constexpr int kBrokenRequest = 125;
constexpr int kRequestVersion = 2;
constexpr size_t kMaxRequestBytes = 16 << 20;
// How long a rank's agent waits for rank 0's to publish torch's MASTER_ADDR/MASTER_PORT: rank 0's
// host may start later (a slow ssh or kubectl exec), and if it fails tuttirun ends the job and its
// store, which ends this wait sooner.
constexpr int64_t kTorchMasterTimeoutMs = 300'000;

void say(const std::string& line) {
  std::string text = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
}

// Reads stdin up to the first newline. Whatever follows is ignored: from then on stdin only
// matters for when it closes.
std::string read_request_line(Deadline deadline) {
  std::string line;
  char c = 0;
  while (line.size() < kMaxRequestBytes) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    int r = ::poll(&p, 1, deadline.remaining_ms(1000));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      if (deadline.expired())
        throw make_error(ErrorCode::kTimeout,
                         "no rank request arrived on stdin within the deadline; the agent is "
                         "started by tuttirun's ssh/kubexec backends and is not for direct use");
      continue;
    }
    ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw make_error(ErrorCode::kConfig,
                       "stdin closed before a complete rank request arrived (did the exec stream "
                       "forward stdin? kubexec passes -i to kubectl exec)");
    if (c == '\n') return line;
    line.push_back(c);
  }
  throw make_error(ErrorCode::kConfig, "the rank request on stdin is larger than {} bytes",
                   kMaxRequestBytes);
}

class RankRunner {
 public:
  explicit RankRunner(AgentRequest request) : req_(std::move(request)) {}

  int run() {
    become_subreaper("tuttirun agent");
    Environment env = Environment::from_process();
    for (const auto& [name, value] : req_.env) env.set(name, value);
    if (req_.torch_master) {
      try {
        arrange_torch_master(env, req_.rank, env.get("TUTTI_STORE").value_or(""),
                             env.get("TUTTI_JOB_TOKEN").value_or(""), kTorchMasterTimeoutMs);
      } catch (const Error& e) {
        say(fmt::format("tuttirun agent: rank {} on {}: {}", req_.rank, req_.host, e.what()));
        return 1;
      }
    }
    if (!req_.cwd.empty() && ::chdir(req_.cwd.c_str()) != 0) {
      // mpirun does the same: a launcher directory the host lacks is not fatal.
      if (::chdir(env.get("HOME").value_or("/").c_str()) != 0) {
      }
    }
    CommandLookup found =
        find_executable(req_.argv.at(0), env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
    if (!found.found()) {
      say(fmt::format("{} (rank {} on {})", found.problem, req_.rank, req_.host));
      return 127;
    }
    SpawnRequest spawn{found.path, req_.argv, env.to_strings(), 0};
    spawn.inherit_output = true;
    std::optional<ChildProcess> child;
    try {
      child.emplace(ChildProcess::spawn(spawn));
    } catch (const Error& e) {
      say(fmt::format("{} (rank {} on {})", e.what(), req_.rank, req_.host));
      return 127;
    }
    group_ = child->pid();
    int code = supervise(*child);
    kill_all_children(group_, Deadline::after_seconds(10));
    return code;
  }

 private:
  int supervise(ChildProcess& child) {
    bool stdin_open = true;
    Deadline kill_at = Deadline::never();
    for (;;) {
      if (auto status = child.try_reap()) {
        if (status->kind == ExitStatus::Kind::kSignaled && !stopping_)
          say(fmt::format("tuttirun agent: rank {} on {} {}", req_.rank, req_.host,
                          status->describe()));
        return status->shell_code();
      }
      pollfd fds[2] = {{stdin_open ? STDIN_FILENO : -1, POLLIN, 0}, {signals_.fd(), POLLIN, 0}};
      int r = ::poll(fds, 2, kill_at.remaining_ms(200));
      if (r < 0 && errno != EINTR) break;
      if (stdin_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && stdin_closed()) {
        stdin_open = false;
        stop(&kill_at);
      }
      for (int sig : signals_.take())
        if (sig != SIGCHLD) stop(&kill_at);
      if (stopping_ && kill_at.expired()) {
        ::kill(-group_, SIGKILL);
        kill_at = Deadline::after_seconds(1);
      }
    }
    ::kill(-group_, SIGKILL);
    return 1;
  }

  // True at EOF; data after the request line is read and dropped.
  static bool stdin_closed() {
    char buf[256];
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0) return errno != EINTR && errno != EAGAIN;
    return n == 0;
  }

  void stop(Deadline* kill_at) {
    if (stopping_) return;
    stopping_ = true;
    ::kill(-group_, SIGTERM);
    // A stopped rank (tuttirun ends a rank whose heartbeat stopped this way) takes its SIGTERM
    // once it runs again, not a grace period later with SIGKILL.
    ::kill(-group_, SIGCONT);
    *kill_at = Deadline::after_seconds(req_.grace_seconds);
  }

  AgentRequest req_;
  SignalWatcher signals_;
  pid_t group_ = 0;
  bool stopping_ = false;
};

}  // namespace

std::string encode_agent_request(const AgentRequest& request) {
  // Version 2: everything that is the rank's own bytes (argv, environment, cwd) is base64, so a
  // byte that is not UTF-8 arrives as itself, not as U+FFFD.
  nlohmann::json argv = nlohmann::json::array();
  for (const auto& a : request.argv) argv.push_back(base64_encode(a));
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [name, value] : request.env)
    env.push_back({base64_encode(name), base64_encode(value)});
  nlohmann::json j = {{"tutti_rank_request", kRequestVersion},
                      {"rank", request.rank},
                      {"host", base64_encode(request.host)},
                      {"argv", argv},
                      {"env", env},
                      {"cwd", base64_encode(request.cwd)},
                      {"grace", request.grace_seconds},
                      {"torch_master", request.torch_master}};
  return j.dump() + "\n";
}

AgentRequest decode_agent_request(std::string_view line) {
  auto bytes = [](const nlohmann::json& field, std::string_view what) {
    std::optional<std::string> decoded = base64_decode(field.get<std::string>());
    if (!decoded) throw make_error(ErrorCode::kConfig, "the rank request's {} is not base64", what);
    return *std::move(decoded);
  };
  try {
    nlohmann::json j = nlohmann::json::parse(line);
    if (!j.is_object() || !j.contains("tutti_rank_request"))
      throw make_error(ErrorCode::kConfig, "not a tuttirun rank request");
    if (j["tutti_rank_request"] != kRequestVersion)
      throw make_error(
          ErrorCode::kConfig,
          "rank request version {} but this agent reads version {}: the tuttirun on this host is "
          "another version than the launcher's (see --remote-tuttirun)",
          j["tutti_rank_request"].dump(), kRequestVersion);
    AgentRequest req;
    // Checked before conversion: a float or huge number cast to int is undefined (found by
    // fuzzing).
    const nlohmann::json& rank = j.at("rank");
    if (!rank.is_number_integer() || rank.get<int64_t>() < 0 ||
        rank.get<int64_t>() >= (int64_t{1} << 20))
      throw make_error(ErrorCode::kConfig, "the rank request's rank {} is not a rank", rank.dump());
    req.rank = static_cast<int>(rank.get<int64_t>());
    req.host = bytes(j.at("host"), "host");
    for (const auto& a : j.at("argv")) req.argv.push_back(bytes(a, "argv"));
    for (const auto& e : j.at("env")) {
      if (!e.is_array() || e.size() != 2)
        throw make_error(ErrorCode::kConfig, "the rank request's env is malformed");
      req.env.emplace_back(bytes(e.at(0), "env name"), bytes(e.at(1), "env value"));
    }
    req.cwd = bytes(j.at("cwd"), "cwd");
    if (!j.at("grace").is_number())
      throw make_error(ErrorCode::kConfig, "the rank request's grace is not a number");
    req.grace_seconds = j.at("grace").get<double>();
    // Absent from a request of an older tuttirun of the same version: nothing to arrange.
    if (j.contains("torch_master")) {
      if (!j["torch_master"].is_boolean())
        throw make_error(ErrorCode::kConfig, "the rank request's torch_master is not a boolean");
      req.torch_master = j["torch_master"].get<bool>();
    }
    if (req.argv.empty() || req.argv[0].empty())
      throw make_error(ErrorCode::kConfig, "the rank request has no command");
    for (const auto& a : req.argv)
      if (a.find('\0') != std::string::npos)
        throw make_error(ErrorCode::kConfig,
                         "a rank argument holds a NUL byte, which no argv can carry");
    for (const auto& [name, value] : req.env)
      if (name.empty() || name.find('=') != std::string::npos ||
          name.find('\0') != std::string::npos || value.find('\0') != std::string::npos)
        throw make_error(ErrorCode::kConfig,
                         "the rank request's environment has a malformed variable");
    if (!(req.grace_seconds >= 0 && req.grace_seconds <= 1e6))
      throw make_error(ErrorCode::kConfig, "the rank request's grace period is out of range");
    return req;
  } catch (const nlohmann::json::exception& e) {
    throw make_error(ErrorCode::kConfig, "malformed rank request: {}", e.what());
  }
}

int run_rank_agent(double request_timeout_seconds) {
  ::signal(SIGPIPE, SIG_IGN);
  AgentRequest request;
  try {
    request =
        decode_agent_request(read_request_line(Deadline::after_seconds(request_timeout_seconds)));
  } catch (const Error& e) {
    say(fmt::format("tuttirun --rank-agent: {}", e.what()));
    return kBrokenRequest;
  }
  return RankRunner(std::move(request)).run();
}

}  // namespace tutti::launcher
