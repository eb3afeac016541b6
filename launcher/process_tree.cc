#include "launcher/process_tree.hpp"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "core/log.hpp"

namespace tutti::launcher {

void become_subreaper(const char* who) {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    log::warn(
        "{}: PR_SET_CHILD_SUBREAPER failed ({}); processes that ranks start and orphan may "
        "outlive the job",
        who, std::strerror(errno));
}

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

bool kill_all_children(pid_t group, Deadline deadline) {
  for (;;) {
    if (group > 0) ::kill(-group, SIGKILL);
    for (pid_t pid : own_children()) ::kill(pid, SIGKILL);
    pid_t r = 0;
    while ((r = ::waitpid(-1, nullptr, WNOHANG)) > 0) {
    }
    if (r < 0 && errno == ECHILD) return true;
    if (deadline.expired()) return false;
    ::poll(nullptr, 0, deadline.remaining_ms(10));
  }
}

}  // namespace tutti::launcher
