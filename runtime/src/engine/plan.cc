// Replaying the previous cycle's plan (plan.hpp), and the fusion groups both ways of running a
// cycle share.
#include "engine/plan.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "engine/engine.hpp"
#include "engine/timeline.hpp"

namespace tutti::engine {

CallOptions scaled(const OpSpec& s) {
  CallOptions call;
  call.prescale = s.prescale;
  call.postscale = s.postscale;
  return call;
}

std::vector<std::vector<size_t>> fusion_groups(const std::vector<Response>& responses,
                                               size_t threshold) {
  using Key = std::tuple<int, int, double, double>;
  std::vector<std::vector<size_t>> groups;
  std::map<Key, std::vector<size_t>> open;
  std::map<Key, size_t> open_bytes;
  std::vector<Key> order;  // the open batches, in the order they opened
  const auto flush = [&](const Key& k) {
    auto& batch = open[k];
    if (!batch.empty()) groups.push_back(std::move(batch));
    batch.clear();
    open_bytes[k] = 0;
  };
  const auto flush_all = [&] {
    for (const Key& k : order) flush(k);
    order.clear();
  };
  for (size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    const size_t bytes = static_cast<size_t>(r.spec.count) * element_size(r.spec.type);
    const bool fusable = r.kind == Response::Kind::kRun && r.spec.kind == OpKind::kAllreduce &&
                         bytes > 0 && bytes <= threshold;
    if (!fusable) {
      // Everything before it runs first: the order of collectives is the same on every rank.
      flush_all();
      groups.push_back({i});
      continue;
    }
    const Key k{static_cast<int>(r.spec.type), static_cast<int>(r.spec.op), r.spec.prescale,
                r.spec.postscale};
    if (open[k].empty() && std::find(order.begin(), order.end(), k) == order.end())
      order.push_back(k);
    if (open_bytes[k] + bytes > threshold) flush(k);
    open[k].push_back(i);
    open_bytes[k] += bytes;
  }
  flush_all();
  return groups;
}

bool Engine::take_incoming() {
  bool candidate;
  {
    std::lock_guard lock(mutex_);
    candidate = plan_.valid() && pending_.empty() && !join_requested_ && !shutdown_requested_ &&
                !join_announced_ && !shutdown_announced_ && !pending_tune_ && !tuner_ &&
                incoming_.size() == plan_.names.size();
    replay_.swap(incoming_);  // replay_ was empty: incoming_ keeps a capacity
    news_ = false;  // this cycle takes everything new (the join and shutdown requests too)
    ++stats_.cycles;
  }
  // A plan is made only from a cycle whose submissions all arrived in it, in a known order.
  fresh_ = pending_.empty() && !tuner_ && !Timeline::instance().active();
  if (!candidate) park_replay(false);
  return candidate;
}

bool Engine::replay_matches() const {
  if (plan_.fusion_threshold != fusion_threshold_.load() || !negotiation_.idle() ||
      plan_.cache_generation != negotiation_.cache().generation() ||
      plan_.bits.size() != 1 + (negotiation_.cache().slots() + 63) / 64)
    return false;
  for (size_t i = 0; i < replay_.size(); ++i) {
    const EnqueueRequest& q = replay_[i].request;
    if (q.ready && !q.ready->ready()) return false;
    if (q.name != plan_.names[i] || !(q.spec == plan_.specs[i])) return false;
  }
  return true;
}

void Engine::park_replay(bool cached) {
  const Clock::time_point now = Clock::now();
  if (fresh_) {
    order_.resize(replay_.size());
    for (size_t i = 0; i < replay_.size(); ++i) order_[i].assign(replay_[i].request.name);
  }
  for (size_t i = 0; i < replay_.size(); ++i) {
    Entry& e = replay_[i];
    if (cached) {
      // What classify would have made of it: ready, waiting on its cache bit.
      e.state = Entry::State::kCached;
      e.slot = plan_.entry_slots[i];
      e.cached_since = now;
      e.drained = now;
    }
    if (spare_entries_.empty()) {
      std::string name = e.request.name;
      pending_.emplace(std::move(name), std::move(e));
      continue;
    }
    auto node = std::move(spare_entries_.back());
    spare_entries_.pop_back();
    node.key() = e.request.name;  // reuses the node's string capacity
    node.mapped() = std::move(e);
    pending_.insert(std::move(node));  // names are unique here: enqueue checked in_flight_
  }
  replay_.clear();
}

void Engine::replay() {
  ResponseCache& cache = negotiation_.cache();
  // The negotiation would have touched these slots, in this order: the caches stay alike on
  // ranks that replayed and ranks that did not.
  for (uint32_t slot : plan_.slots) cache.touch(slot);
  {
    std::lock_guard lock(mutex_);
    stats_.cache_hits += replay_.size();
    ++stats_.replayed;
    active_ = true;
  }
  std::vector<collectives::Segment>& segments = replay_segments_;
  for (const std::vector<uint32_t>& group : plan_.groups) {
    const OpSpec& s = replay_[group.front()].request.spec;  // entries stay until the end
    // One pass over the group's entries before its collective (see replay_taken_).
    segments.clear();
    replay_taken_.clear();
    for (uint32_t i : group) {
      Entry& e = replay_[i];
      const EnqueueRequest& q = e.request;
      segments.push_back({q.send, q.recv, static_cast<size_t>(q.spec.count)});
      replay_taken_.push_back({std::move(e.handle), e.name_tag, &q.name});
    }
    if (group.size() > 1)
      comm_->allreduce_segments(segments, s.type, s.op, scaled(s), fusion_);
    else if (s.count > 0)
      comm_->allreduce(segments.front().send, segments.front().recv, s.count, s.type, s.op,
                       scaled(s));
    // As settle_taken, for entries that stay in replay_.
    {
      std::lock_guard lock(mutex_);
      if (group.size() > 1 || s.count > 0) ++stats_.collectives;
      if (group.size() > 1) stats_.fused += group.size();
      stats_.tensors += group.size();
      for (const Taken& t : replay_taken_) in_flight_.remove(*t.name, t.name_tag);
    }
    for (Taken& t : replay_taken_) settle(std::exchange(t.handle, nullptr), std::nullopt);
    replay_taken_.clear();
  }
  replay_.clear();
}

void Engine::keep_plan(const Negotiation::Outcome& outcome, bool quiet) {
  const auto all_cached_allreduces = [&] {
    return std::all_of(outcome.responses.begin(), outcome.responses.end(), [](const Response& r) {
      return r.cached && r.kind == Response::Kind::kRun && r.spec.kind == OpKind::kAllreduce &&
             r.per_rank.empty() && r.joined.empty();
    });
  };
  const ResponseCache& cache = negotiation_.cache();
  // The plan outlives cycles that do not match it, not a change of the cache's slots.
  if (plan_.valid() && plan_.cache_generation != cache.generation()) plan_.clear();
  bool requests;
  {
    std::lock_guard lock(mutex_);
    requests = join_requested_ || shutdown_requested_;
  }
  if (!fresh_ || !quiet || outcome.announcements || outcome.tune || requests || tuner_ ||
      !pending_.empty() || outcome.responses.empty() || outcome.responses.size() != order_.size() ||
      !negotiation_.idle() || !all_cached_allreduces()) {
    seen_count_ = 0;
    return;
  }
  // Made only when this cycle looks like the one before it (the same count, first and last
  // names): a loop whose bursts split differently every step would pay for plans it never uses.
  const bool repeats =
      seen_count_ == order_.size() && seen_first_ == order_.front() && seen_last_ == order_.back();
  seen_count_ = order_.size();
  seen_first_.assign(order_.front());
  seen_last_.assign(order_.back());
  if (!repeats) return;
  std::unordered_map<std::string_view, uint32_t> index;
  for (size_t i = 0; i < order_.size(); ++i) index.emplace(order_[i], static_cast<uint32_t>(i));
  plan_.clear();
  plan_.names = order_;
  plan_.specs.resize(order_.size());
  plan_.entry_slots.resize(order_.size());
  plan_.bits.assign(1 + (cache.slots() + 63) / 64, 0);
  plan_.bits[0] = 1;  // nothing to announce
  for (const Response& r : outcome.responses) {
    const auto at = index.find(r.name);
    const std::optional<uint32_t> slot = cache.slot_for(r.name, r.spec, rank_);
    if (at == index.end() || !slot) {  // cannot be: every response was this cycle's cached name
      plan_.clear();
      return;
    }
    plan_.specs[at->second] = r.spec;
    plan_.entry_slots[at->second] = *slot;
    plan_.slots.push_back(*slot);
    plan_.bits[1 + *slot / 64] |= uint64_t{1} << (*slot % 64);
  }
  plan_.fusion_threshold = fusion_threshold_.load();
  plan_.cache_generation = cache.generation();
  for (const std::vector<size_t>& group :
       fusion_groups(outcome.responses, plan_.fusion_threshold)) {
    std::vector<uint32_t>& g = plan_.groups.emplace_back();
    for (size_t i : group) g.push_back(index.at(outcome.responses[i].name));
  }
  // The next steps' enqueues find their names in this order (in_flight.hpp).
  std::lock_guard lock(mutex_);
  in_flight_.expect(plan_.names);
}

}  // namespace tutti::engine
