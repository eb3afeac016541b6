// The local exec backend: every rank is a child of tuttirun, all in one process group (led by rank
// 0) so that signal_job reaches whatever the ranks themselves started.
#include <signal.h>

#include <cerrno>

#include "core/error.hpp"
#include "core/log.hpp"
#include "launcher/command_lookup.hpp"
#include "launcher/exec_backend.hpp"
#include "launcher/process_tree.hpp"

namespace tutti::launcher {
namespace {

class LocalBackend : public ExecBackend {
 public:
  LocalBackend() { become_subreaper("tuttirun"); }
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
      throw make_error(ErrorCode::kConfig, "rank {}: cannot run '{}'", slot.rank, command.at(0));
    ChildProcess child =
        ChildProcess::spawn(SpawnRequest{path_, command, env.to_strings(), group_});
    if (group_ == 0) group_ = child.pid();
    return child;
  }

  void signal_job(int sig) override {
    if (group_ > 0 && ::kill(-group_, sig) != 0 && errno != ESRCH)
      throw_system_error("kill the job's process group", errno);
  }

  bool finish_job(Deadline deadline) override {
    // Every rank is reaped, so every child left is a process the job started.
    return kill_all_children(group_, deadline);
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
