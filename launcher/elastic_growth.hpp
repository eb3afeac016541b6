// Growing an elastic job (tuttirun --host-discovery-script, --max-np; docs/ELASTIC.md): every
// --discovery-interval the script says which hosts exist; free slots on hosts not blacklisted get
// new ranks, up to --max-np. Each growth is a new membership. The new processes start first and
// say in the store that they arrived; once each arrived or died, the membership's member ids (the
// running members in their order, then the newcomers that arrived) go into the store and the
// epoch key rises: the running members see it at their next elastic commit and regroup, the
// newcomers read their place. A newcomer that dies before that is simply left out. Once every
// member met in the new membership, the launcher says it formed; a member that ends before that
// makes it abandon the membership instead (bootstrap/elastic_keys.hpp outcome), so that all of
// its members go back alike.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "launcher/host_discovery.hpp"
#include "launcher/plan.hpp"

namespace tutti::launcher {

struct ElasticConfig {
  std::string discovery_script;
  double interval_seconds = 1.0;
  int max_np = 0;           // 0: no bound but the slots
  int blacklist_after = 1;  // failures on a host before it gets no new ranks
};

struct Member {
  int id = 0;
  std::string host;
};

// Where a member of a membership sits: its rank there and its host coordinates.
std::vector<RankSlot> membership_slots(const std::vector<Member>& members);

class ElasticGrowth {
 public:
  // start(label, slot, size, env): start member `label` (its output tag) as `slot` of a world of
  // `size` with these extra variables; throws when it cannot.
  using Start = std::function<void(int label, const RankSlot& slot, int size,
                                   const std::vector<std::pair<std::string, std::string>>& env)>;
  ElasticGrowth(ElasticConfig config, std::string base_job_id, bootstrap::Store& store,
                std::vector<Member> initial, Start start, std::function<void(std::string)> say);

  // From the supervisor's loop while the job runs: starts the script when the interval passed,
  // looks at a running one (never waiting for it), and grows when it can. Never throws for the
  // script's failures (it says them once).
  void tick();
  // A run of the script is under way.
  bool discovering() const { return discovery_.has_value(); }
  // A member's process ended.
  void on_exit(int member, bool failed);

  int epoch() const { return epoch_; }
  size_t members() const { return members_.size(); }

 private:
  bool formed() const;
  bool may_grow() const;
  void grow(const Discovery& found);
  void start(const std::vector<Member>& joining);
  void settle_pending();
  void publish(const std::vector<Member>& joining);

  ElasticConfig config_;
  std::string base_job_id_;
  bootstrap::Store& store_;
  std::vector<Member> members_;  // alive, in rank order of the latest membership
  Start start_;
  std::function<void(std::string)> say_;
  int epoch_ = 0;
  int next_id_ = 0;
  std::chrono::steady_clock::time_point next_poll_;
  std::map<std::string, int> failures_;  // per host
  std::string last_error_;
  bool finishing_ = false;       // a member ended successfully
  std::vector<Member> pending_;  // started, not yet in a published membership
  std::chrono::steady_clock::time_point pending_since_;
  // The latest published membership until its outcome is decided: every member added itself to
  // formed(E) ("formed"), or one ended before that ("abandoned": its members go on in the
  // membership before it, its newcomers end and their slots are free again).
  struct Forming {
    int64_t epoch = 0;
    std::vector<int> ids;          // its members
    std::vector<Member> previous;  // the membership before it
    std::vector<int> newcomers;
  };
  std::optional<Forming> forming_;
  std::vector<int> abandoned_;  // newcomers of abandoned memberships: their ends are no failures
  void decide(const std::optional<Member>& ended);
  std::optional<DiscoveryRun> discovery_;
};

}  // namespace tutti::launcher
