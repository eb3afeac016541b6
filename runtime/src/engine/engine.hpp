// The engine of one process set (a communicator): Horovod's asynchronous named-tensor collectives.
// Any thread enqueues a named tensor and gets a handle; the engine's own thread negotiates with
// the other ranks which names are ready everywhere (negotiation.hpp), packs ready allreduces into
// a fusion buffer, runs them on the engine's own communicator (a dup of the process set's, so the
// caller's synchronous calls never mix with the engine's), and completes the handles.
//
// Cycles: a rank starts a negotiation cycle when something new happened locally (an enqueue, a
// join, a shutdown), once the burst of enqueues it belongs to stopped growing (at most 100 us or
// TUTTI_CYCLE_TIME); otherwise after TUTTI_CYCLE_TIME while it has work pending or other ranks are
// active, and after a one-second heartbeat when idle. Every cycle is a collective of the engine's
// communicator, so a rank that waits for others waits inside it, woken by their arrival, never by
// a fixed sleep.
//
// Who runs a cycle: the engine's own thread, or a caller's thread blocked in Handle::wait()
// (run_cycles_until). A trainer that enqueues its gradients and then waits would otherwise hand
// every step to the engine thread and back: two threads per rank where one has work, competing
// for one core where there are as many cores as ranks. One thread at a time runs cycles
// (`cycling_`); completion callbacks always run on the engine's own thread. Once waiting callers
// take the bursts, enqueues stop waking the engine thread (standby, see caller_took_burst).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "collectives/segments.hpp"
#include "engine/autotune.hpp"
#include "engine/handle_state.hpp"
#include "engine/in_flight.hpp"
#include "engine/negotiation.hpp"
#include "engine/operation.hpp"
#include "engine/plan.hpp"
#include "tutti/error.hpp"
#include "tutti/options.hpp"

namespace tutti::comm {
class Communicator;
}

namespace tutti::engine {

// The engine's communicator's Options (cycle time, fusion threshold, cache, stall deadlines,
// autotune) and the two deadlines derived from them.
struct EngineSettings {
  Options options;
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds shutdown_timeout{600'000};
};

struct EnqueueRequest {
  std::string name;
  OpSpec spec;
  const void* send = nullptr;
  void* recv = nullptr;
  std::shared_ptr<tutti::ReadyEvent> ready;  // null: ready now
  // allgather and alltoall: the receive buffer and its size in elements (null: into the handle)
  // and where to write the rows received from each rank (null: only into the handle).
  size_t recv_capacity = 0;
  size_t* rows_out = nullptr;
};

class Engine : public CycleRunner, public std::enable_shared_from_this<Engine> {
 public:
  // `comm` is the engine's own communicator; `label` names the process set in messages, the same
  // on every rank ("tutti engine (world, 4 ranks)").
  Engine(std::shared_ptr<comm::Communicator> comm, EngineSettings settings, std::string label);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& label() const { return label_; }

  // Refuses (throws) a bad argument, a name still in flight on this rank, and any request once
  // the engine stopped (naming why); otherwise the handle finishes later.
  std::shared_ptr<HandleState> enqueue(EnqueueRequest request);
  // This rank has no more data: it takes part in the others' allreduce, allgather, broadcast and
  // barrier with nothing of its own, until every rank has joined. The handle's last_joined is
  // the rank that joined last.
  std::shared_ptr<HandleState> join(int* last_joined_out = nullptr);
  // Collective over the process set: waits (up to shutdown_timeout) until every rank shut down;
  // operations still pending fail, naming the reason. Idempotent.
  void shutdown(const std::string& reason);

  tutti::EngineStats stats() const;
  // From any thread: every pending and later operation fails with Error(kAborted) and `reason`,
  // on every rank (the engine's communicator is aborted).
  void abort(const std::string& reason);

  void run_cycles_until(const HandleState& handle, Deadline deadline) override;

 private:
  void check_settings_agree();
  struct Entry {
    EnqueueRequest request;
    std::shared_ptr<HandleState> handle;
    InFlightNames::Tag name_tag;  // where in_flight_ recorded its name (beside the handle: the
                                  // replay reads both, and one cache line is one miss)
    Clock::time_point enqueued;
    Clock::time_point drained;
    enum class State { kWaitingReady, kNew, kCached, kAnnounced } state = State::kWaitingReady;
    uint32_t slot = 0;
    Clock::time_point cached_since;
  };

  void loop();
  bool take_cycle();
  // The names enqueued so far: the plan's first ones (kStart), all of them (kWhole), or not.
  enum class PlanPrefix { kOther, kStart, kWhole };
  PlanPrefix plan_prefix(size_t& matched) const;
  void run_cycle();
  void cycle();
  // The cycle after this rank's cache bits are set (`bits`, not yet reduced; `reduced` when the
  // allreduce already ran): the exchange, the negotiation, running what it decided.
  void negotiate_and_run(Announcements& mine, std::vector<uint64_t>& bits, bool reduced,
                         Clock::time_point began);
  // Replay (plan.hpp). take_incoming moves the new submissions into pending_, or into replay_
  // when they may replay the plan (says which); replay_matches checks them name by name;
  // park_replay moves them into pending_ after all (waiting for their bits when `cached`);
  // replay runs the plan; keep_plan makes the next plan from this cycle, or drops the plan.
  bool take_incoming();
  bool replay_matches() const;
  void park_replay(bool cached);
  void replay();
  void keep_plan(const Negotiation::Outcome& outcome, bool quiet);
  void settle(const std::shared_ptr<HandleState>& handle, const std::optional<Error>& error);
  bool engine_thread_needed() const;
  void caller_took_burst();
  void classify(Announcements& out, std::vector<uint64_t>& bits);
  void inspect_stalls(Announcements& out);
  std::vector<std::vector<std::byte>> exchange(const Announcements& mine, bool quiet);

  void execute(const std::vector<Response>& responses);
  void autotune_after(const std::vector<Response>& responses);
  void run_one(const Response& r);
  void run_fused(const std::vector<const Response*>& batch);
  void finish(const std::string& name, const std::optional<Error>& error);
  // The rest of finish(): entries already taken out of pending_ leave in_flight_ (one lock for
  // all: a fused batch of hundreds of small tensors made per-tensor locking a measurable part of
  // the engine's cost), then their handles are settled.
  void settle_taken(std::span<Entry> done, const std::optional<Error>& error);
  // A finished entry's name leaves in_flight_; under mutex_.
  void forget_name_locked(const Entry& e) { in_flight_.remove(e.request.name, e.name_tag); }
  // Moves the entry out of pending_ and keeps its node for the next tensor.
  Entry take_pending(std::unordered_map<std::string, Entry>::iterator it);
  Entry* local(const Response& r);
  void fail_everything(const Error& error);

  // This engine as its handles' runner: made once, since turning weak_from_this() into a
  // weak_ptr<CycleRunner> locks it (two atomic operations on the engine's use count, which every
  // caller's thread shares) and it was a tenth of an enqueue's CPU.
  const std::weak_ptr<CycleRunner>& runner();
  std::once_flag runner_once_;
  std::weak_ptr<CycleRunner> runner_;

  std::shared_ptr<comm::Communicator> comm_;
  EngineSettings settings_;
  std::string label_;
  int rank_;
  int size_;

  // Shared with the callers' threads.
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> incoming_;  // a vector, not a deque: its capacity stays between cycles
  InFlightNames in_flight_;
  bool news_ = false;
  bool join_requested_ = false;
  std::shared_ptr<HandleState> join_handle_;
  int* join_out_ = nullptr;
  bool shutdown_requested_ = false;
  std::string shutdown_reason_;
  std::optional<Error> stopped_;  // why the engine no longer takes requests
  bool thread_done_ = false;
  std::condition_variable done_cv_;
  tutti::EngineStats stats_;
  // Who runs cycles (run_cycle's caller sets cycling_). cycle_cv_: a cycle ended, or news for a
  // waiting caller that paces its cycles.
  bool cycling_ = false;
  int runners_ = 0;    // callers' threads in run_cycles_until
  bool over_ = false;  // no more cycles: every rank shut down, or the engine stopped
  bool wake_ = false;  // the engine thread must look again (a runner left work to it)
  // Standby: enqueues do not wake the engine thread, because waiting callers have been taking
  // every burst (caller_took_burst); it looks every few milliseconds instead (take_cycle).
  bool standby_ = false;
  Clock::duration standby_poll_{};  // the engine thread's next look in standby (take_cycle)
  int callers_took_ = 0;          // +1 per burst a waiting caller took, -2 per one this thread took
  Clock::time_point news_since_;  // the first enqueue of the burst not yet taken
  Clock::time_point last_cycle_ = Clock::now();  // when the last cycle (by any thread) ended
  size_t pending_count_ = 0;
  // While the engine thread waits for the rest of the plan's step: its count (else 0), at which
  // enqueue wakes it.
  size_t plan_awaited_ = 0;
  bool active_ = false;  // the last cycle saw announcements or ran something
  std::condition_variable cycle_cv_;
  // Handles finished on a caller's thread whose callbacks the engine thread runs.
  std::vector<std::shared_ptr<HandleState>> deferred_;

  // The cycle's own: touched only by the thread that holds the cycle (cycling_).
  Negotiation negotiation_;
  Plan plan_;
  std::vector<Entry> replay_;  // this cycle's submissions while they may replay the plan
  std::vector<collectives::Segment> replay_segments_;
  // A replayed group's handles and name tags, taken from its entries with the segments, before
  // its collective: after it, the entries (216 bytes each, in the group's order, not the order
  // they arrived in) are no longer in the cache, and touching each again was most of replay()'s
  // CPU with 8 ranks on 2 CPUs. fail_everything fails these too.
  struct Taken {
    std::shared_ptr<HandleState> handle;
    InFlightNames::Tag name_tag;
    const std::string* name;  // the entry's, which outlives the settling (for a hash-set tag)
  };
  std::vector<Taken> replay_taken_;
  // The cycle's submissions in order, when pending_ held nothing else (the next plan's names).
  std::vector<std::string> order_;
  bool fresh_ = false;
  // The last cycle a plan could have been made from: its count, first and last names.
  size_t seen_count_ = 0;
  std::string seen_first_;
  std::string seen_last_;
  std::vector<uint64_t> bits_;  // the cycle's bit vector (its capacity stays between cycles)
  std::unordered_map<std::string, Entry> pending_;
  // pending_'s nodes of finished entries, reused (with their keys' capacity); at most
  // kMaxSpareNodes.
  static constexpr size_t kMaxSpareNodes = 4096;
  std::vector<std::unordered_map<std::string, Entry>::node_type> spare_entries_;
  bool join_announced_ = false;
  bool shutdown_announced_ = false;
  std::unordered_map<std::string, Clock::time_point> stall_warned_;
  std::unordered_set<std::string> stall_failed_;
  std::vector<std::byte> fusion_;
  std::atomic<uint64_t> fusion_threshold_;
  std::chrono::microseconds cycle_time_;           // read and written under mutex_
  std::unique_ptr<Autotuner> tuner_;               // rank 0 with TUTTI_AUTOTUNE
  std::optional<Autotuner::Choice> pending_tune_;  // rank 0: to announce in the next cycle

  std::thread thread_;
};

}  // namespace tutti::engine
