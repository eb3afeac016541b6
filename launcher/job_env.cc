#include "launcher/job_env.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string_view>

#include "core/error.hpp"
#include "net/fd.hpp"

extern char** environ;

namespace tutti::launcher {

Environment Environment::from_process() {
  std::vector<std::string> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) entries.emplace_back(*e);
  return from_strings(entries);
}

Environment Environment::from_strings(const std::vector<std::string>& entries) {
  Environment env;
  for (const std::string& entry : entries) {
    size_t eq = entry.find('=');
    // Entries without '=' are not valid environment strings; execve would pass them on verbatim,
    // but no program can read them, so they are dropped.
    if (eq == std::string::npos || eq == 0) continue;
    env.set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

void Environment::set(const std::string& name, const std::string& value) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& e) { return e.first == name; });
  if (it != entries_.end())
    it->second = value;
  else
    entries_.emplace_back(name, value);
}

void Environment::erase(const std::string& name) {
  std::erase_if(entries_, [&](const auto& e) { return e.first == name; });
}

std::optional<std::string> Environment::get(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.first == name) return e.second;
  return std::nullopt;
}

std::vector<std::string> Environment::to_strings() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.first + "=" + e.second);
  return out;
}

std::optional<std::string_view> launcher_owned(std::string_view name) {
  // What tuttirun sets for every rank itself (rank_environment, set_torch_identity): an export of
  // one of these would be replaced without a word, so it is refused with what to do instead.
  static constexpr std::pair<std::string_view, std::string_view> kOwned[] = {
      {"TUTTI_RANK", "each rank's number comes from the hostfile's slots (-np, -H, --hostfile)"},
      {"TUTTI_SIZE", "the world size is -np"},
      {"TUTTI_LOCAL_RANK", "it follows from the slots of each host"},
      {"TUTTI_LOCAL_SIZE", "it follows from the slots of each host"},
      {"TUTTI_CROSS_RANK", "it follows from the hosts"},
      {"TUTTI_CROSS_SIZE", "it follows from the hosts"},
      {"TUTTI_STORE",
       "tuttirun serves the job's rendezvous store itself (use --store etcd://... to keep "
       "it in an etcd)"},
      {"TUTTI_JOB_TOKEN", "tuttirun draws the job's token"},
      {"TUTTI_JOB_ID", "use --job-id"},
      {"TUTTI_LAUNCHER", "it says that tuttirun started the rank"},
      {"TUTTI_RESTART_COUNT", "tuttirun counts restarts (--restarts)"},
      {"RANK", "torch's RANK is each rank's tuttirun rank"},
      {"WORLD_SIZE", "torch's WORLD_SIZE is -np"},
      {"LOCAL_RANK", "torch's LOCAL_RANK follows from the slots of each host"},
      {"LOCAL_WORLD_SIZE", "it follows from the slots of each host"},
      {"GROUP_RANK", "it follows from the hosts"},
      {"GROUP_WORLD_SIZE", "it follows from the hosts"},
  };
  for (const auto& [owned, why] : kOwned)
    if (name == owned) return why;
  return std::nullopt;
}

std::vector<EnvExport> resolve_exports(const std::vector<std::string>& args,
                                       const Environment& from, std::vector<std::string>* unset) {
  std::vector<EnvExport> out;
  for (const std::string& arg : args) {
    size_t eq = arg.find('=');
    if (eq == 0 || arg.empty())
      throw make_error(ErrorCode::kConfig,
                       "-x '{}' names no variable; write -x VAR or -x VAR=VALUE", arg);
    const std::string name = arg.substr(0, eq);
    if (const auto why = launcher_owned(name))
      throw make_error(ErrorCode::kConfig,
                       "-x {}: tuttirun sets {} for every rank itself and would replace yours ({})",
                       arg, name, *why);
    if (eq != std::string::npos) {
      out.push_back({arg.substr(0, eq), arg.substr(eq + 1)});
    } else if (auto value = from.get(arg)) {
      out.push_back({arg, *value});
    } else if (unset != nullptr) {
      unset->push_back(arg);
    }
  }
  return out;
}

Environment rank_environment(const Environment& base, const std::vector<EnvExport>& exports,
                             const RankSlot& slot, int world_size, const JobIdentity& job) {
  Environment env = base;
  for (const EnvExport& e : exports) env.set(e.name, e.value);
  env.set("TUTTI_RANK", std::to_string(slot.rank));
  env.set("TUTTI_SIZE", std::to_string(world_size));
  env.set("TUTTI_LOCAL_RANK", std::to_string(slot.local_rank));
  env.set("TUTTI_LOCAL_SIZE", std::to_string(slot.local_size));
  env.set("TUTTI_CROSS_RANK", std::to_string(slot.cross_rank));
  env.set("TUTTI_CROSS_SIZE", std::to_string(slot.cross_size));
  env.set("TUTTI_STORE", job.store_address);
  env.set("TUTTI_JOB_TOKEN", job.job_token);
  env.set("TUTTI_JOB_ID", job.job_id);
  env.set("TUTTI_LAUNCHER", "tuttirun");
  env.set("TUTTI_RESTART_COUNT", std::to_string(job.restart_count));
  if (job.timeout) env.set("TUTTI_TIMEOUT", *job.timeout);
  return env;
}

std::string random_hex(size_t chars) {
  net::Fd fd(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) throw_system_error("open /dev/urandom for the job token", errno);
  std::vector<unsigned char> bytes((chars + 1) / 2);
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_system_error("read /dev/urandom for the job token", n < 0 ? errno : EIO);
    got += static_cast<size_t>(n);
  }
  constexpr std::string_view kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(chars);
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  out.resize(chars);
  return out;
}

JobIdentity make_job_identity(const std::optional<std::string>& inherited_token,
                              const std::string& job_id, const std::string& store_address,
                              const std::optional<std::string>& timeout) {
  JobIdentity job;
  job.job_token = inherited_token && !inherited_token->empty() ? *inherited_token : random_hex(32);
  job.job_id = job_id.empty() ? "tuttirun-" + random_hex(12) : job_id;
  job.store_address = store_address;
  job.timeout = timeout;
  return job;
}

}  // namespace tutti::launcher
