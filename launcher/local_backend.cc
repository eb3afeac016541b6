// The local exec backend: every rank is a child of tuttirun, all in one process group (led by rank
// 0) so that signal_job reaches whatever the ranks themselves started.
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "core/log.hpp"
#include "launcher/command_lookup.hpp"
#include "launcher/exec_backend.hpp"

namespace tutti::launcher {
namespace {

// Pids of this process's children, from /proc/self/task/*/children.
std::vector<pid_t> own_children() {
  std::vector<pid_t> pids;
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return pids;
  while (dirent* e = ::readdir(tasks)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
    pid_t pid = 0;
    while (in >> pid) pids.push_back(pid);
  }
  ::closedir(tasks);
  return pids;
}

class LocalBackend : public ExecBackend {
 public:
  LocalBackend() {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
      log::warn(
          "tuttirun: PR_SET_CHILD_SUBREAPER failed ({}); processes that ranks start and orphan may "
          "outlive the job",
          std::strerror(errno));
  }
  ~LocalBackend() override {
    if (group_ > 0) ::kill(-group_, SIGKILL);
  }

  std::string name() const override { return "local"; }

  std::string check_command(const std::vector<std::string>& command,
                            const Environment& env) override {
    if (command.empty()) return "tuttirun: no command given";
    CommandLookup found =
        find_executable(command[0], env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
    if (!found.found()) return found.problem;
    path_ = found.path;
    return "";
  }

  ChildProcess start(const RankSlot& slot, const std::vector<std::string>& command,
                     const Environment& env) override {
    if (path_.empty() && !check_command(command, env).empty())
      throw make_error(ErrorCode::kConfig, "tuttirun: rank {}: cannot run '{}'", slot.rank,
                       command.at(0));
    ChildProcess child =
        ChildProcess::spawn(SpawnRequest{path_, command, env.to_strings(), group_});
    if (group_ == 0) group_ = child.pid();
    return child;
  }

  void signal_job(int sig) override {
    if (group_ > 0 && ::kill(-group_, sig) != 0 && errno != ESRCH)
      throw_system_error("tuttirun: kill the job's process group", errno);
  }

  bool finish_job(Deadline deadline) override {
    // Every rank is reaped, so every child left is a process the job started: kill them all, and
    // their children as they are handed to us in turn, until none is left.
    for (;;) {
      signal_job(SIGKILL);
      for (pid_t pid : own_children()) ::kill(pid, SIGKILL);
      pid_t r = 0;
      while ((r = ::waitpid(-1, nullptr, WNOHANG)) > 0) {
      }
      if (r < 0 && errno == ECHILD) return true;
      if (deadline.expired()) return false;
      ::poll(nullptr, 0, deadline.remaining_ms(10));
    }
  }

 private:
  std::string path_;
  pid_t group_ = 0;
};

}  // namespace

std::unique_ptr<ExecBackend> make_local_backend() {
  return std::make_unique<LocalBackend>();
}

}  // namespace tutti::launcher
