#include "launcher/shm_cleanup.hpp"

#include <filesystem>
#include <system_error>

#include "core/log.hpp"

namespace tutti::launcher {

size_t remove_job_segments(const std::string& job_id, const std::string& dir) {
  if (job_id.empty()) return 0;
  const std::string prefix = "tutti-" + job_id + "-";
  size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return 0;  // no /dev/shm here: nothing can have been left there
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !entry.is_regular_file(ec)) continue;
    if (std::filesystem::remove(entry.path(), ec)) {
      ++removed;
    } else if (ec) {
      log::warn("tuttirun: could not remove leftover shared memory {}: {}; remove it by hand",
                entry.path().string(), ec.message());
    }
  }
  return removed;
}

}  // namespace tutti::launcher
