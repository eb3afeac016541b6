// Negotiation (decentralised): every rank sends the same cycle's announcements to every rank
// (one allgatherv) and sets the cache bits of its ready cached names (one bitwise-and allreduce).
// Every rank then feeds the same bytes, in rank order, through its own Negotiation, which
// therefore reaches the same decisions in the same order on every rank: which names run, in which
// order, which fail and why. No rank coordinates the data path; rank 0 only adds its stall-timeout
// and autotune decisions, because those follow its clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/operation.hpp"
#include "engine/response.hpp"
#include "engine/response_cache.hpp"
#include "net/wire.hpp"

namespace tutti::engine {

using Clock = std::chrono::steady_clock;

// One rank's announcements of one cycle.
class Announcements {
 public:
  void request(const std::string& name, const OpSpec& spec);
  void join();
  void shutdown(const std::string& reason);
  // rank 0 only
  void stall_fail(const std::string& name, const std::string& message);
  void tune(uint64_t fusion_threshold, uint64_t cycle_time_us);

  bool empty() const { return writer_.view().empty(); }
  std::span<const std::byte> bytes() const { return writer_.view(); }
  void clear() { writer_ = {}; }

 private:
  net::wire::Writer writer_;
};

struct TuneDecision {
  uint64_t fusion_threshold = 0;
  uint64_t cycle_time_us = 0;
};

// A name that some ranks announced and others not yet.
struct Stall {
  std::string name;
  std::string what;          // the first announcer's spec, described
  std::vector<int> missing;  // ranks that have not announced it (joined ranks excluded)
  std::vector<int> present;
  Clock::duration age{};
};

class Negotiation {
 public:
  Negotiation(int rank, int size, size_t cache_capacity, std::string label);

  struct Outcome {
    std::vector<Response> responses;  // in the order every rank runs them
    bool announcements = false;       // some rank announced something
    std::optional<TuneDecision> tune;
  };
  // `and_bits`: the bitwise and over ranks of every rank's cache bits (bit s of word s/64);
  // `payloads`: every rank's announcements, in rank order (empty spans when none).
  Outcome process(std::span<const uint64_t> and_bits,
                  std::span<const std::span<const std::byte>> payloads);

  ResponseCache& cache() { return cache_; }
  const ResponseCache& cache() const { return cache_; }
  bool announced(const std::string& name) const { return table_.count(name) != 0; }
  bool joined(int rank) const { return joined_.count(rank) != 0; }
  bool any_joined() const { return !joined_.empty(); }
  // Nothing announced and waiting, no rank joined, none shut down: a cycle of cache bits alone
  // decides everything.
  bool idle() const { return table_.empty() && joined_.empty() && shut_down_.empty(); }
  // The first shutdown seen ("" when no rank shut down its engine).
  const std::string& shutdown_message() const { return shutdown_message_; }
  bool all_shut_down() const { return static_cast<int>(shut_down_.size()) == size_; }

  // Names announced by some ranks for longer than `older_than` (rank 0's stall inspector).
  std::vector<Stall> stalls(Clock::time_point now, Clock::duration older_than) const;

 private:
  struct Pending {
    std::vector<std::optional<OpSpec>> specs;  // per rank
    int first = -1;                            // first announcing rank
    Clock::time_point first_seen;
    uint64_t order = 0;
  };
  void add_request(int rank, const std::string& name, OpSpec spec);
  bool complete(const Pending& p) const;
  Response decide(const std::string& name, const Pending& p);
  Response failure(const std::string& name, ErrorCode code, std::string message) const;

  int rank_;
  int size_;
  std::string label_;
  ResponseCache cache_;
  std::unordered_map<std::string, Pending> table_;
  uint64_t next_order_ = 0;
  std::set<int> joined_;  // ranks joined since the last completed join
  int last_joined_ = -1;
  std::map<int, std::string> shut_down_;
  std::string shutdown_message_;
};

// "0-3,5,7-8"
std::string rank_list(const std::vector<int>& ranks);

}  // namespace tutti::engine
