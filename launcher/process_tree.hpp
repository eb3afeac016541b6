// Cleanup of what a job leaves behind on this machine. tuttirun (and the rank agent on remote
// hosts) become child subreapers, so processes that the ranks start and orphan are handed to them
// and can still be found, killed and reaped here.
#pragma once

#include <sys/types.h>

#include <vector>

#include "core/deadline.hpp"

namespace tutti::launcher {

// PR_SET_CHILD_SUBREAPER for this process; warns (naming `who`) when the kernel refuses.
void become_subreaper(const char* who);

// Pids of this process's children, from /proc/self/task/*/children.
std::vector<pid_t> own_children();

// SIGKILLs process group `group` (when > 0) and every child of this process, again and again as
// orphans are handed over, and reaps them, until none is left. Returns false when something
// survived the deadline. Only for after the ranks themselves have been reaped.
bool kill_all_children(pid_t group, Deadline deadline);

}  // namespace tutti::launcher
