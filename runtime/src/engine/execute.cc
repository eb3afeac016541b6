// Running what a cycle decided, in the same order on every rank. Ready allreduces with the same
// dtype, op and scales are packed into the persistent fusion buffer (up to the fusion threshold),
// reduced by one collective and unpacked; everything else runs on its own.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "engine/engine.hpp"
#include "engine/identity.hpp"
#include "engine/timeline.hpp"

namespace tutti::engine {
namespace {

size_t bytes_of(const OpSpec& s) {
  return static_cast<size_t>(s.count) * element_size(s.type);
}

// Where an allgather or alltoall of `total` elements lands: the caller's buffer when it gave one,
// else `own`, which the handle takes over. A caller's buffer that is too small fails only this
// rank's handle, after the collective ran into `own` (the other ranks must not be left waiting).
template <typename EntryT>
void* output_of(EntryT* e, const Response& r, size_t total, std::vector<std::byte>& own,
                std::optional<Error>& failure) {
  const size_t el = element_size(r.spec.type);
  if (e != nullptr && e->request.recv != nullptr) {
    if (e->request.recv_capacity >= total) return e->request.recv;
    failure = make_error(ErrorCode::kInvalidArgument,
                         "{} '{}': the receive buffer holds {} elements, but {} arrived; pass a "
                         "larger one, or none (the handle then holds the result)",
                         to_string(r.spec.kind), r.name, e->request.recv_capacity, total);
  }
  own.resize(total * el);
  return own.data();
}

template <typename EntryT>
void deliver(EntryT& e, std::vector<std::byte> out, std::vector<uint64_t> rows) {
  if (e.request.rows_out != nullptr) std::copy(rows.begin(), rows.end(), e.request.rows_out);
  e.handle->output = std::move(out);
  e.handle->output_rows = std::move(rows);
}

}  // namespace

Engine::Entry* Engine::local(const Response& r) {
  auto it = pending_.find(r.name);
  if (it != pending_.end()) return &it->second;
  if (r.kind == Response::Kind::kRun && !r.has_joined(rank_))
    throw make_error(ErrorCode::kInternal, "{}: tensor '{}' runs, but rank {} never submitted it",
                     label_, r.name, rank_);
  return nullptr;
}

Engine::Entry Engine::take_pending(std::unordered_map<std::string, Entry>::iterator it) {
  auto node = pending_.extract(it);
  Entry e = std::move(node.mapped());
  if (spare_entries_.size() < kMaxSpareNodes) spare_entries_.push_back(std::move(node));
  return e;
}

void Engine::finish(const std::string& name, const std::optional<Error>& error) {
  auto it = pending_.find(name);
  if (it == pending_.end()) return;
  Entry e = take_pending(it);
  settle_taken(std::span(&e, 1), error);
}

void Engine::settle_taken(std::span<Entry> done, const std::optional<Error>& error) {
  {
    std::lock_guard lock(mutex_);
    for (const Entry& e : done) forget_name_locked(e);
    if (!error) stats_.tensors += done.size();
  }
  Timeline& timeline = Timeline::instance();
  const bool traced = timeline.active();
  for (const Entry& e : done) {
    const Clock::time_point began = traced ? Clock::now() : Clock::time_point{};
    settle(e.handle, error);
    if (traced) timeline.span(label_, e.request.name, "callback", began, Clock::now());
  }
}

void Engine::execute(const std::vector<Response>& responses) {
  const size_t hits = static_cast<size_t>(std::count_if(
      responses.begin(), responses.end(), [](const Response& r) { return r.cached; }));
  if (hits > 0) {
    std::lock_guard lock(mutex_);
    stats_.cache_hits += hits;
  }
  std::vector<const Response*> batch;
  for (const std::vector<size_t>& group : fusion_groups(responses, fusion_threshold_.load())) {
    if (group.size() == 1) {
      run_one(responses[group.front()]);
      continue;
    }
    batch.clear();
    for (size_t i : group) batch.push_back(&responses[i]);
    run_fused(batch);
  }
}

void Engine::run_one(const Response& r) {
  if (r.kind == Response::Kind::kFail) {
    if (local(r)) finish(r.name, r.error);
    return;
  }
  if (r.kind == Response::Kind::kJoin) {
    std::shared_ptr<HandleState> handle;
    {
      std::lock_guard lock(mutex_);
      join_requested_ = false;
      handle = std::move(join_handle_);
    }
    join_announced_ = false;
    if (handle) {
      handle->last_joined = r.last_joined;
      if (join_out_ != nullptr) *join_out_ = r.last_joined;
      settle(handle, std::nullopt);
    }
    return;
  }
  Entry* e = local(r);
  const OpSpec& s = r.spec;
  // Every rank agreed on zero elements: nothing to move.
  const bool empty =
      s.count == 0 && (s.kind == OpKind::kAllreduce || s.kind == OpKind::kBroadcast ||
                       s.kind == OpKind::kReduceScatter);
  if (empty) {
    if (e) finish(r.name, std::nullopt);
    return;
  }
  std::vector<std::byte> scratch;  // a joined rank's stand-in buffers
  std::optional<Error> failure;    // this rank's own, after the collective ran
  const Clock::time_point began = Clock::now();
  switch (s.kind) {
    case OpKind::kAllreduce: {
      if (e) {
        comm_->allreduce(e->request.send, e->request.recv, s.count, s.type, s.op, scaled(s));
      } else {
        scratch.resize(bytes_of(s));
        fill_identity(scratch.data(), s.count, s.type, s.op);
        comm_->allreduce(scratch.data(), scratch.data(), s.count, s.type, s.op, scaled(s));
      }
      break;
    }
    case OpKind::kBroadcast: {
      void* buf = e ? e->request.recv : nullptr;
      if (!e) {
        scratch.resize(bytes_of(s));
        buf = scratch.data();
      }
      comm_->broadcast(buf, s.count, s.type, s.root);
      break;
    }
    case OpKind::kReduceScatter:
      comm_->reduce_scatter(e->request.send, e->request.recv, s.count, s.type, s.op);
      break;
    case OpKind::kAllgather: {
      std::vector<size_t> counts(static_cast<size_t>(size_));
      std::vector<uint64_t> rows(static_cast<size_t>(size_));
      size_t total = 0;
      for (int q = 0; q < size_; ++q) {
        rows[static_cast<size_t>(q)] = r.spec_of(q).rows;
        counts[static_cast<size_t>(q)] = static_cast<size_t>(r.spec_of(q).rows * s.count);
        total += counts[static_cast<size_t>(q)];
      }
      std::vector<std::byte> out;
      comm_->allgatherv(e ? e->request.send : nullptr, output_of(e, r, total, out, failure), counts,
                        s.type);
      if (e && !failure) deliver(*e, std::move(out), std::move(rows));
      break;
    }
    case OpKind::kAlltoall: {
      std::vector<size_t> send_counts(static_cast<size_t>(size_));
      std::vector<size_t> recv_counts(static_cast<size_t>(size_));
      std::vector<uint64_t> rows(static_cast<size_t>(size_));
      size_t total = 0;
      for (int q = 0; q < size_; ++q) {
        send_counts[static_cast<size_t>(q)] =
            static_cast<size_t>(r.spec_of(rank_).splits[static_cast<size_t>(q)] * s.count);
        rows[static_cast<size_t>(q)] = r.spec_of(q).splits[static_cast<size_t>(rank_)];
        recv_counts[static_cast<size_t>(q)] =
            static_cast<size_t>(rows[static_cast<size_t>(q)] * s.count);
        total += recv_counts[static_cast<size_t>(q)];
      }
      std::vector<std::byte> out;
      comm_->alltoallv(e->request.send, send_counts, output_of(e, r, total, out, failure),
                       recv_counts, s.type);
      if (!failure) deliver(*e, std::move(out), std::move(rows));
      break;
    }
    case OpKind::kBarrier:
      comm_->barrier();
      break;
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_.collectives;
  }
  Timeline::instance().span(label_, r.name, "collective", began, Clock::now());
  if (e) finish(r.name, failure);
}

void Engine::run_fused(const std::vector<const Response*>& batch) {
  const OpSpec& s = batch.front()->spec;
  std::vector<collectives::Segment> segments;
  std::vector<std::vector<std::byte>> identities;  // a joined rank's stand-in tensors
  // The batch's entries leave pending_ now, while the cycle has just touched them, and not after
  // the collective: streaming a large batch through the caches evicts the table, and its look-ups
  // then cost about half of the completion work (docs/PERFORMANCE.md).
  std::vector<Entry> taken;
  taken.reserve(batch.size());
  collectives::SegmentsRun run;
  Clock::time_point began;
  try {
    for (const Response* r : batch) {
      auto it = pending_.find(r->name);
      if (it != pending_.end()) {
        Entry& e = taken.emplace_back(take_pending(it));
        segments.push_back({e.request.send, e.request.recv, static_cast<size_t>(r->spec.count)});
        continue;
      }
      (void)local(*r);  // throws unless this is a joined rank's stand-in
      identities.emplace_back(bytes_of(r->spec));
      fill_identity(identities.back().data(), r->spec.count, r->spec.type, r->spec.op);
      segments.push_back(
          {identities.back().data(), identities.back().data(), static_cast<size_t>(r->spec.count)});
    }
    began = Clock::now();
    run = comm_->allreduce_segments(segments, s.type, s.op, scaled(s), fusion_);
  } catch (...) {
    // The engine stops and fails whatever is pending (fail_everything): these too.
    for (Entry& e : taken) {
      std::string name = e.request.name;
      pending_.emplace(std::move(name), std::move(e));
    }
    throw;
  }
  const Clock::time_point ended = Clock::now();
  {
    std::lock_guard lock(mutex_);
    ++stats_.collectives;
    stats_.fused += batch.size();
  }
  Timeline& timeline = Timeline::instance();
  if (timeline.active())
    for (const Response* r : batch) {
      // On the shared-memory window the tensors are read and written in place (no copies of
      // their own); otherwise packing and unpacking bracket the collective.
      const auto copied_in = began + run.pack;
      const auto copied_out = ended - run.unpack;
      if (run.packed) timeline.span(label_, r->name, "fusion_copy_in", began, copied_in);
      timeline.span(label_, r->name, "collective", copied_in, copied_out);
      if (run.packed) timeline.span(label_, r->name, "fusion_copy_out", copied_out, ended);
    }
  settle_taken(taken, std::nullopt);
}

}  // namespace tutti::engine
