// The environment each rank starts with: tuttirun's own environment, the -x exports, and the
// TUTTI_* variables that tell the rank who it is and where the rendezvous store is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/plan.hpp"

namespace tutti::launcher {

// An ordered NAME -> VALUE list. Order is kept so the child's environment looks like the parent's.
class Environment {
 public:
  static Environment from_process();  // this process's environ
  static Environment from_strings(const std::vector<std::string>& entries);  // "NAME=VALUE" each

  void set(const std::string& name, const std::string& value);
  void erase(const std::string& name);
  std::optional<std::string> get(const std::string& name) const;
  std::vector<std::string> to_strings() const;  // "NAME=VALUE" each, for execve
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// What every rank of one job shares.
struct JobIdentity {
  std::string job_id;
  std::string job_token;
  std::string store_address;  // host:port of the TcpStoreServer
  int restart_count = 0;
  std::optional<std::string> timeout;  // TUTTI_TIMEOUT for the ranks, when --timeout was given
};

// One -x argument resolved against tuttirun's environment.
struct EnvExport {
  std::string name;
  std::string value;
};

// Why tuttirun owns `name` (it sets it for every rank: TUTTI_RANK, RANK, TUTTI_STORE, ...), or
// nullopt for a name an -x may carry.
std::optional<std::string_view> launcher_owned(std::string_view name);

// Resolves -x VAR (take VAR from `from`) and -x VAR=VALUE. A VAR that is not set in `from` is
// skipped and reported in *unset so the caller can warn about it. A launcher-owned name is
// Error(kConfig) saying what sets it instead.
std::vector<EnvExport> resolve_exports(const std::vector<std::string>& args,
                                       const Environment& from, std::vector<std::string>* unset);

// base + exports + the TUTTI_* identity of one rank. TUTTI_* set by tuttirun always win over
// inherited values, so a rank never sees a stale identity from an enclosing job.
Environment rank_environment(const Environment& base, const std::vector<EnvExport>& exports,
                             const RankSlot& slot, int world_size, const JobIdentity& job);

// `chars` random lowercase hex characters from /dev/urandom.
std::string random_hex(size_t chars);

// The job identity tuttirun hands out: `inherited_token` (tuttirun's own TUTTI_JOB_TOKEN) when set,
// else 32 random hex chars; `job_id` when given, else tuttirun-<random>.
JobIdentity make_job_identity(const std::optional<std::string>& inherited_token,
                              const std::string& job_id, const std::string& store_address,
                              const std::optional<std::string>& timeout);

}  // namespace tutti::launcher
