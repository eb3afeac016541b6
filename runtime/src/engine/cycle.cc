// One negotiation cycle: take what was enqueued, decide per name whether its cache bit says enough
// or it must be announced, exchange (one bitwise-and allreduce, and an allgatherv only when some
// rank has something to announce), and run what the negotiation decided.
#include <fmt/format.h>

#include <algorithm>

#include "comm/communicator.hpp"
#include "core/log.hpp"
#include "engine/engine.hpp"
#include "engine/timeline.hpp"

namespace tutti::engine {
namespace {

// A cached name that waited this long for its bit announces itself, so that the stall inspector
// sees which ranks it waits for (bits say only "not everyone").
Clock::duration cached_patience(const EngineSettings& s) {
  return std::min<Clock::duration>(std::chrono::seconds(1), s.options.stall_warning / 2);
}

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

void Engine::classify(Announcements& out, std::vector<uint64_t>& bits) {
  const Clock::time_point now = Clock::now();
  const ResponseCache& cache = negotiation_.cache();
  for (auto& [name, e] : pending_) {
    if (e.state == Entry::State::kWaitingReady) {
      if (e.request.ready && !e.request.ready->ready()) continue;
      e.state = Entry::State::kNew;
      e.drained = now;
      if (e.enqueued != Clock::time_point{})
        Timeline::instance().span(label_, name, "queue", e.enqueued, now);
    }
    if (e.state == Entry::State::kAnnounced) continue;
    std::optional<uint32_t> slot;
    // A joined rank sets no bits, so while any has joined every name goes by announcement.
    if (!negotiation_.announced(name) && !negotiation_.any_joined())
      slot = cache.slot_for(name, e.request.spec, rank_);
    if (e.state == Entry::State::kCached &&
        (!slot || *slot != e.slot || now - e.cached_since > cached_patience(settings_)))
      slot.reset();
    if (slot) {
      if (e.state != Entry::State::kCached) e.cached_since = now;
      e.state = Entry::State::kCached;
      e.slot = *slot;
      bits[*slot / 64] |= uint64_t{1} << (*slot % 64);
    } else {
      e.state = Entry::State::kAnnounced;
      out.request(name, e.request.spec);
      std::lock_guard lock(mutex_);
      ++stats_.announced;
    }
  }
}

void Engine::inspect_stalls(Announcements& out) {
  const Clock::time_point now = Clock::now();
  const auto warning = Clock::duration(settings_.options.stall_warning);
  const auto timeout = Clock::duration(settings_.options.stall_timeout);
  const auto first = timeout.count() > 0 ? std::min(warning, timeout) : warning;
  std::unordered_map<std::string, Clock::time_point> still;
  for (const Stall& s : negotiation_.stalls(now, first)) {
    const std::string missing = rank_list(s.missing);
    if (timeout.count() > 0 && s.age >= timeout) {
      if (stall_failed_.insert(s.name).second)
        out.stall_fail(
            s.name,
            fmt::format("{}: tensor '{}' ({}) stalled: rank{} {} did not submit it within {:.0f} s "
                        "(TUTTI_STALL_TIMEOUT), while rank{} {} did. Every rank must submit the "
                        "same names; a rank that has no more data can join().",
                        label_, s.name, s.what, s.missing.size() > 1 ? "s" : "", missing,
                        seconds(timeout), s.present.size() > 1 ? "s" : "", rank_list(s.present)));
      continue;
    }
    auto it = stall_warned_.find(s.name);
    Clock::time_point next = it == stall_warned_.end() ? now : it->second;
    if (s.age >= warning && now >= next) {
      log::warn(
          "{}: tensor '{}' ({}) has waited {:.0f} s for rank{} {} to submit it (rank{} {} "
          "did); it fails after TUTTI_STALL_TIMEOUT={:.0f} s",
          label_, s.name, s.what, seconds(s.age), s.missing.size() > 1 ? "s" : "", missing,
          s.present.size() > 1 ? "s" : "", rank_list(s.present), seconds(timeout));
      next = now + warning;
    }
    still[s.name] = next;
  }
  stall_warned_ = std::move(still);
  // A failed name may be announced again later: forget it once it left the table.
  std::erase_if(stall_failed_, [&](const std::string& n) { return !negotiation_.announced(n); });
}

std::vector<std::vector<std::byte>> Engine::exchange(const Announcements& mine, bool quiet) {
  std::vector<std::vector<std::byte>> payloads(static_cast<size_t>(size_));
  if (quiet) return payloads;
  const uint64_t my_size = mine.bytes().size();
  std::vector<uint64_t> sizes(static_cast<size_t>(size_));
  comm_->allgather(&my_size, sizes.data(), 1, DataType::kInt64);
  std::vector<size_t> counts(sizes.begin(), sizes.end());
  size_t total = 0;
  for (size_t c : counts) total += c;
  std::vector<std::byte> all(total);
  comm_->allgatherv(mine.bytes().data(), all.data(), counts, DataType::kUInt8);
  size_t at = 0;
  for (int q = 0; q < size_; ++q) {
    const size_t n = counts[static_cast<size_t>(q)];
    payloads[static_cast<size_t>(q)].assign(all.begin() + static_cast<ptrdiff_t>(at),
                                            all.begin() + static_cast<ptrdiff_t>(at + n));
    at += n;
  }
  return payloads;
}

void Engine::cycle() {
  const bool candidate = take_incoming();
  const Clock::time_point began = Clock::now();
  Announcements mine;
  if (candidate) {
    if (replay_matches()) {
      bits_.assign(plan_.bits.begin(), plan_.bits.end());
      comm_->allreduce(bits_.data(), bits_.data(), bits_.size(), DataType::kInt64, ReduceOp::kBand);
      if (bits_ == plan_.bits) {
        replay();
        return;
      }
      // Some rank differs (other names, not ready yet, something to announce): these names wait
      // for their bits as classify would have left them, and the cycle goes on from its and.
      park_replay(true);
      negotiate_and_run(mine, bits_, true, began);
      return;
    }
    park_replay(false);
  }
  const size_t words = (negotiation_.cache().slots() + 63) / 64;
  std::vector<uint64_t> cache_bits(words, 0);
  classify(mine, cache_bits);
  {
    std::lock_guard lock(mutex_);
    if (join_requested_ && !join_announced_) {
      mine.join();
      join_announced_ = true;
    }
    if (shutdown_requested_ && !shutdown_announced_) {
      mine.shutdown(shutdown_reason_);
      shutdown_announced_ = true;
    }
  }
  if (rank_ == 0) inspect_stalls(mine);
  if (pending_tune_) {
    mine.tune(pending_tune_->fusion_threshold, pending_tune_->cycle_time_us);
    pending_tune_.reset();
  }
  // Word 0, bit 0: "I have nothing to announce"; the and over ranks says whether anyone has.
  bits_.assign(1 + words, 0);
  bits_[0] = mine.empty() ? 1 : 0;
  std::copy(cache_bits.begin(), cache_bits.end(), bits_.begin() + 1);
  negotiate_and_run(mine, bits_, false, began);
}

void Engine::negotiate_and_run(Announcements& mine, std::vector<uint64_t>& bits, bool reduced,
                               Clock::time_point began) {
  if (!reduced)
    comm_->allreduce(bits.data(), bits.data(), bits.size(), DataType::kInt64, ReduceOp::kBand);
  const bool quiet = (bits[0] & 1) != 0;
  auto payloads = exchange(mine, quiet);
  std::vector<std::span<const std::byte>> views(payloads.begin(), payloads.end());
  auto outcome = negotiation_.process(std::span<const uint64_t>(bits).subspan(1), views);
  {
    std::lock_guard lock(mutex_);  // stats() and the engine thread's wait read them
    if (outcome.tune) {
      fusion_threshold_.store(outcome.tune->fusion_threshold);
      cycle_time_ = std::chrono::microseconds(outcome.tune->cycle_time_us);
    }
    active_ = outcome.announcements || !outcome.responses.empty();
  }
  if (!outcome.responses.empty() && Timeline::instance().active()) {
    const Clock::time_point now = Clock::now();
    for (const Response& r : outcome.responses) {
      auto it = pending_.find(r.name);
      if (it != pending_.end())
        Timeline::instance().span(label_, r.name, "negotiate", it->second.drained, now);
    }
    Timeline::instance().span(label_, "(cycles)", "cycle", began, now);
  }
  execute(outcome.responses);
  if (tuner_) autotune_after(outcome.responses);
  // A rank shut its engine down: what is still waiting here can never run.
  if (!negotiation_.shutdown_message().empty() && !pending_.empty()) {
    for (auto& [name, e] : pending_) {
      {
        std::lock_guard lock(mutex_);
        forget_name_locked(e);
      }
      settle(e.handle,
             Error(ErrorCode::kAborted, fmt::format("{} before tensor '{}' ran on every rank",
                                                    negotiation_.shutdown_message(), name)));
    }
    pending_.clear();
  }
  keep_plan(outcome, quiet);
}

void Engine::autotune_after(const std::vector<Response>& responses) {
  uint64_t bytes = 0;
  for (const Response& r : responses)
    if (r.kind == Response::Kind::kRun)
      bytes += r.spec.count * element_size(r.spec.type) *
               (r.per_rank.empty() ? 1 : static_cast<uint64_t>(size_));
  const auto choice = tuner_->record(bytes, Clock::now());
  if (!choice) return;
  pending_tune_ = choice;
  if (!tuner_->done()) return;
  log::info("{}: autotune chose {}", label_, tuner_->summary());
  if (!settings_.options.autotune_file.empty()) {
    try {
      Autotuner::write(settings_.options.autotune_file, tuner_->best(), tuner_->summary());
    } catch (const Error& e) {
      log::warn("{}: {}", label_, e.what());
    }
  }
  tuner_.reset();
}

}  // namespace tutti::engine
