#include "launcher/elastic_growth.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "bootstrap/elastic_keys.hpp"
#include "core/error.hpp"
#include "launcher/host_discovery.hpp"

namespace tutti::launcher {

namespace keys = bootstrap::elastic_keys;

namespace {

// The script gets this long (it runs beside the supervisor's loop), then it is killed.
constexpr double kDiscoveryTimeoutSeconds = 10.0;
// Newcomers that have not reached the store by then are left out of the membership (they fail at
// their own init deadline).
constexpr std::chrono::seconds kArrivalTimeout{60};

}  // namespace

std::vector<RankSlot> membership_slots(const std::vector<Member>& members) {
  std::vector<std::string> hosts;  // in order of first appearance: cross ranks
  for (const Member& m : members)
    if (std::find(hosts.begin(), hosts.end(), m.host) == hosts.end()) hosts.push_back(m.host);
  std::vector<RankSlot> slots;
  for (size_t i = 0; i < members.size(); ++i) {
    RankSlot s;
    s.rank = static_cast<int>(i);
    s.host = members[i].host;
    s.cross_rank = static_cast<int>(std::find(hosts.begin(), hosts.end(), s.host) - hosts.begin());
    s.cross_size = static_cast<int>(hosts.size());
    s.local_size = static_cast<int>(std::count_if(
        members.begin(), members.end(), [&](const Member& m) { return m.host == s.host; }));
    s.local_rank = static_cast<int>(
        std::count_if(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(i),
                      [&](const Member& m) { return m.host == s.host; }));
    slots.push_back(s);
  }
  return slots;
}

ElasticGrowth::ElasticGrowth(ElasticConfig config, std::string base_job_id, bootstrap::Store& store,
                             std::vector<Member> initial, Start start,
                             std::function<void(std::string)> say)
    : config_(std::move(config)),
      base_job_id_(std::move(base_job_id)),
      store_(store),
      members_(std::move(initial)),
      start_(std::move(start)),
      say_(std::move(say)),
      next_poll_(std::chrono::steady_clock::now()) {
  for (const Member& m : members_) next_id_ = std::max(next_id_, m.id + 1);
  std::vector<int> ids;
  for (const Member& m : members_) ids.push_back(m.id);
  store_.set(keys::members(0), keys::format_members(ids));
}

bool ElasticGrowth::formed() const {
  // A later membership formed once its outcome is decided. The first one: every member met the
  // others there (members that died since count as met: it only waits for the living).
  if (forming_) return false;
  return epoch_ > 0 || store_.add(keys::formed(epoch_), 0) >= static_cast<int64_t>(members_.size());
}

void ElasticGrowth::decide(const std::optional<Member>& ended) {
  const Forming& f = *forming_;
  const int64_t met = store_.add(keys::formed(f.epoch), 0);
  if (met >= static_cast<int64_t>(f.ids.size())) {
    // All met: a member that ends from now on is a death in the new membership, which its
    // survivors shrink away.
    store_.set(keys::outcome(f.epoch), "formed");
    forming_.reset();
    return;
  }
  if (!ended) return;
  const std::string why = fmt::format("member {} on {} ended before all {} members met there",
                                      ended->id, ended->host, f.ids.size());
  store_.set(keys::outcome(f.epoch), "abandoned: " + why);
  // Back to the membership before it, less whoever ended since; the newcomers' slots are free.
  std::vector<Member> back;
  for (const Member& m : f.previous)
    if (std::any_of(members_.begin(), members_.end(),
                    [&](const Member& x) { return x.id == m.id; }))
      back.push_back(m);
  abandoned_.insert(abandoned_.end(), f.newcomers.begin(), f.newcomers.end());
  say_(
      fmt::format("tuttirun: membership {} abandoned: {}; its {} running members go on as "
                  "before, its newcomers ({}) end",
                  f.epoch, why, back.size(), fmt::join(f.newcomers, ", ")));
  members_ = std::move(back);
  forming_.reset();
}

void ElasticGrowth::on_exit(int member, bool failed) {
  const auto is = [&](const Member& m) { return m.id == member; };
  // A newcomer of an abandoned membership ends because it was abandoned: no failure of its host.
  if (std::find(abandoned_.begin(), abandoned_.end(), member) != abandoned_.end()) return;
  std::string host;
  if (auto it = std::find_if(members_.begin(), members_.end(), is); it != members_.end()) {
    host = it->host;
    const Member ended = *it;
    members_.erase(it);
    if (forming_ &&
        std::find(forming_->ids.begin(), forming_->ids.end(), member) != forming_->ids.end())
      decide(ended);
  } else if (auto p = std::find_if(pending_.begin(), pending_.end(), is); p != pending_.end()) {
    host = p->host;
    pending_.erase(p);
    say_(
        fmt::format("tuttirun: member {} ended before it joined; the membership goes on without "
                    "it",
                    member));
  } else {
    return;
  }
  if (!failed) {
    finishing_ = true;  // the job is ending: a newcomer now would wait for members that left
    return;
  }
  if (++failures_[host] == config_.blacklist_after)
    say_(fmt::format("tuttirun: host {} blacklisted after {} failure{}: no new ranks go there",
                     host, config_.blacklist_after, config_.blacklist_after == 1 ? "" : "s"));
}

bool ElasticGrowth::may_grow() const {
  if (members_.empty() || finishing_) return false;  // the job is ending
  if (config_.max_np > 0 && static_cast<int>(members_.size()) >= config_.max_np) return false;
  // One growth at a time: a membership the running members have not met in yet would be
  // skipped by those that read the next one first, and its newcomers would wait for nobody.
  return formed();
}

void ElasticGrowth::tick() {
  if (forming_) decide(std::nullopt);
  if (discovery_) {
    // The script runs while the supervisor forwards output: look, never wait.
    std::optional<Discovery> found = discovery_->poll();
    if (!found) return;
    discovery_.reset();
    if (may_grow()) grow(*found);  // the members may have changed while it ran
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now < next_poll_) return;
  next_poll_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(config_.interval_seconds));
  if (members_.empty() || finishing_) return;
  if (!pending_.empty()) {
    settle_pending();
    return;
  }
  if (may_grow()) discovery_.emplace(config_.discovery_script, kDiscoveryTimeoutSeconds);
}

void ElasticGrowth::grow(const Discovery& found) {
  if (!found.error.empty()) {
    if (found.error != last_error_) say_("tuttirun: " + found.error + "; keeping the hosts known");
    last_error_ = found.error;
    return;
  }
  last_error_.clear();
  int room = config_.max_np > 0 ? config_.max_np - static_cast<int>(members_.size()) : 1 << 20;
  std::vector<Member> joining;
  for (const hostfile::Host& h : found.hosts.hosts) {
    if (room == 0) break;
    const auto fails = failures_.find(h.name);
    if (fails != failures_.end() && fails->second >= config_.blacklist_after) continue;
    int used = static_cast<int>(std::count_if(members_.begin(), members_.end(),
                                              [&](const Member& m) { return m.host == h.name; }));
    for (; used < h.slots && room > 0; ++used, --room)
      joining.push_back(Member{next_id_++, h.name});
  }
  if (!joining.empty()) start(joining);
}

void ElasticGrowth::start(const std::vector<Member>& joining) {
  // Each starts with its expected place (TUTTI_RANK, TUTTI_SIZE); the published membership, which
  // leaves out those that died meanwhile, is what it goes by.
  std::vector<Member> next = members_;
  next.insert(next.end(), joining.begin(), joining.end());
  const std::vector<RankSlot> slots = membership_slots(next);
  const int epoch = epoch_ + 1;
  pending_since_ = std::chrono::steady_clock::now();
  for (size_t i = members_.size(); i < next.size(); ++i) {
    const Member& m = next[i];
    pending_.push_back(m);
    start_(m.id, slots[i], static_cast<int>(next.size()),
           {{"TUTTI_JOB_ID", keys::job_id(base_job_id_, epoch)},
            {"TUTTI_ELASTIC_EPOCH", std::to_string(epoch)},
            {"TUTTI_MEMBER_ID", std::to_string(m.id)},
            {"TUTTI_ELASTIC_JOB", base_job_id_}});
  }
}

void ElasticGrowth::settle_pending() {
  std::vector<std::string> arrival_keys;
  for (const Member& m : pending_) arrival_keys.push_back(keys::arrived(m.id));
  const std::vector<std::string> missing = store_.missing(arrival_keys);
  const bool late = std::chrono::steady_clock::now() - pending_since_ > kArrivalTimeout;
  if (!missing.empty() && !late) return;
  std::vector<Member> arrived;
  for (const Member& m : pending_)
    if (std::find(missing.begin(), missing.end(), keys::arrived(m.id)) == missing.end())
      arrived.push_back(m);
    else
      say_(
          fmt::format("tuttirun: member {} on {} did not start within {} s; the membership goes "
                      "on without it",
                      m.id, m.host, kArrivalTimeout.count()));
  pending_.clear();
  if (!arrived.empty()) publish(arrived);
}

void ElasticGrowth::publish(const std::vector<Member>& joining) {
  const int epoch = epoch_ + 1;
  std::vector<Member> next = members_;
  next.insert(next.end(), joining.begin(), joining.end());
  std::vector<int> ids;
  for (const Member& m : next) ids.push_back(m.id);
  // The list first: members read it once the epoch key says it exists.
  store_.set(keys::members(epoch), keys::format_members(ids));
  std::string who;
  for (size_t i = members_.size(); i < next.size(); ++i)
    who += fmt::format("{}member {} on {} as rank {}", who.empty() ? "" : ", ", next[i].id,
                       next[i].host, i);
  Forming forming{epoch, ids, members_, {}};
  for (const Member& m : joining) forming.newcomers.push_back(m.id);
  forming_ = std::move(forming);
  members_ = std::move(next);
  epoch_ = epoch;
  store_.add(std::string(keys::kEpoch), 1);
  say_(fmt::format("tuttirun: membership {}: {} ranks; joining: {}", epoch, members_.size(), who));
}

}  // namespace tutti::launcher
