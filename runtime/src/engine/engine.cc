#include "engine/engine.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "engine/timeline.hpp"

namespace tutti::engine {

thread_local bool on_engine_thread = false;

namespace {
// How long the engine thread sleeps, after the enqueue that woke it, before it looks whether the
// burst that enqueue began (a backward pass, a trainer's loop over its gradients) is still
// growing; it waits again while it grows, at most TUTTI_CYCLE_TIME in all.
constexpr std::chrono::microseconds kBurstWindow{100};
// While the burst so far is the start of the kept plan's step (plan.hpp), the engine thread waits
// for the rest up to this many cycle times: a thread descheduled in the middle of its burst (8
// ranks on 2 CPUs) would otherwise cut the step in two, neither half replaying, and the plan would
// be made again only after two whole steps. The enqueue that completes the step wakes it. Never
// more than kPlanPatienceMost, nor less than one cycle time: a long TUTTI_CYCLE_TIME must not
// hold a step that really is shorter (its rest never comes) for seconds.
constexpr int kPlanPatienceCycles = 10;
constexpr std::chrono::milliseconds kPlanPatienceMost{100};
// Standby (see caller_took_burst and take_cycle): entered when waiting callers took this many
// more bursts than the engine thread (which counts twice); the engine thread then looks this
// often, unwoken; each look that finds nothing doubles the next wait, up to kStandbyPollMost.
// With 8 ranks on 2 CPUs a look every 10 ms was one more context switch per step and rank,
// taking the CPU from a rank with work; a burst only polled for waits at most this much longer.
constexpr int kStandbyAfter = 8;
constexpr std::chrono::milliseconds kStandbyPoll{10};
constexpr std::chrono::milliseconds kStandbyPollMost{40};

// Marks the calling thread as running an engine cycle, where waiting for a handle is refused.
class OnEngineThread {
 public:
  OnEngineThread() : saved_(on_engine_thread) { on_engine_thread = true; }
  ~OnEngineThread() { on_engine_thread = saved_; }
  OnEngineThread(const OnEngineThread&) = delete;
  OnEngineThread& operator=(const OnEngineThread&) = delete;

 private:
  bool saved_;
};
}  // namespace

namespace {

void check_request(const EnqueueRequest& q, int size) {
  const OpSpec& s = q.spec;
  const auto bad = [&](std::string_view why) {
    return make_error(ErrorCode::kInvalidArgument, "{} '{}': {}", to_string(s.kind), q.name, why);
  };
  if (q.name.empty()) throw bad("the tensor name is empty; every enqueued tensor needs a name");
  if (s.kind == OpKind::kBarrier) return;
  if (!valid(s.type)) throw bad(fmt::format("invalid dtype {}", static_cast<int>(s.type)));
  const bool reduces = s.kind == OpKind::kAllreduce || s.kind == OpKind::kReduceScatter;
  if (reduces && !valid(s.op)) throw bad(fmt::format("invalid op {}", static_cast<int>(s.op)));
  if (reduces && !supports(s.type, s.op))
    throw bad(fmt::format("op {} is not defined on {}", to_string(s.op), to_string(s.type)));
  if ((s.prescale != 1.0 || s.postscale != 1.0) &&
      !(s.kind == OpKind::kAllreduce && is_floating(s.type) &&
        (s.op == ReduceOp::kSum || s.op == ReduceOp::kAvg)))
    throw bad("prescale and postscale apply to allreduce with sum or avg on floating types only");
  if (s.kind == OpKind::kBroadcast && (s.root < 0 || s.root >= size))
    throw bad(fmt::format("root {} is not a rank of this process set (0..{})", s.root, size - 1));
  // rows x row size (and an alltoall's total) must not wrap: every rank would agree on a garbage
  // size and the collective would run past the buffers.
  const auto product = [&](uint64_t a, uint64_t b) {
    uint64_t p = 0;
    if (__builtin_mul_overflow(a, b, &p) || p > (uint64_t{1} << 60))
      throw bad(fmt::format("{} x {} elements is beyond any buffer", a, b));
    return p;
  };
  if (s.kind == OpKind::kReduceScatter) product(s.count, static_cast<uint64_t>(size));
  if (s.kind == OpKind::kAllgather) product(s.rows, s.count);
  uint64_t split_total = 0;
  for (uint64_t rows : s.splits) split_total = product(1, split_total + product(rows, s.count));
  uint64_t send_elems = s.count;
  uint64_t recv_elems = s.count;
  if (s.kind == OpKind::kReduceScatter) send_elems = s.count * static_cast<uint64_t>(size);
  if (s.kind == OpKind::kAllgather) send_elems = s.rows * s.count, recv_elems = 0;
  if (q.recv_capacity > 0 && q.recv == nullptr) throw bad("the receive buffer is null");
  if (s.kind == OpKind::kAlltoall) {
    if (s.splits.size() != static_cast<size_t>(size))
      throw bad(fmt::format("{} splits given, one per rank ({}) needed", s.splits.size(), size));
    send_elems = 0;
    for (uint64_t rows : s.splits) send_elems += rows * s.count;
    recv_elems = 0;
  }
  if (s.kind == OpKind::kBroadcast) send_elems = 0;  // in place: recv is the buffer
  if (send_elems > 0 && q.send == nullptr) throw bad("the send buffer is null");
  if (recv_elems > 0 && q.recv == nullptr) throw bad("the receive buffer is null");
}

}  // namespace

Engine::Engine(std::shared_ptr<comm::Communicator> comm, EngineSettings settings, std::string label)
    : comm_(std::move(comm)),
      settings_(settings),
      label_(std::move(label)),
      rank_(comm_->rank()),
      size_(comm_->size()),
      negotiation_(rank_, size_, settings.options.cache_capacity, label_),
      fusion_threshold_(settings.options.fusion_threshold),
      cycle_time_(settings.options.cycle_time) {
  check_settings_agree();
  if (rank_ == 0) {
    const Autotuner::Choice start{settings_.options.fusion_threshold,
                                  static_cast<uint64_t>(settings_.options.cycle_time.count())};
    std::optional<Autotuner::Choice> saved;
    if (!settings_.options.autotune_file.empty())
      saved = Autotuner::read(settings_.options.autotune_file);
    if (saved) {
      pending_tune_ = saved;
      log::info("{}: fusion threshold {} and cycle time {} us from {}", label_,
                saved->fusion_threshold, saved->cycle_time_us, settings_.options.autotune_file);
    } else if (settings_.options.autotune) {
      tuner_ = std::make_unique<Autotuner>(start, settings_.options.autotune_window);
    }
  }
  thread_ = std::thread([this] { loop(); });
}

// Ranks with different cache capacities would give a slot to different names (a bit would then
// pair two different tensors), and different fusion thresholds would pack different batches: both
// must be the same on every rank, so the first asynchronous call checks them.
void Engine::check_settings_agree() {
  const int64_t mine[2] = {static_cast<int64_t>(settings_.options.cache_capacity),
                           static_cast<int64_t>(settings_.options.fusion_threshold)};
  int64_t lo[2], hi[2];
  comm_->allreduce(mine, lo, 2, DataType::kInt64, ReduceOp::kMin);
  comm_->allreduce(mine, hi, 2, DataType::kInt64, ReduceOp::kMax);
  const char* names[2] = {"TUTTI_CACHE_CAPACITY", "TUTTI_FUSION_THRESHOLD"};
  for (int i = 0; i < 2; ++i)
    if (lo[i] != hi[i])
      throw make_error(ErrorCode::kConfig,
                       "{}: {} differs between ranks (from {} to {}; this rank has {}); every rank "
                       "of a process set must use the same value",
                       label_, names[i], lo[i], hi[i], mine[i]);
}

void Engine::abort(const std::string& reason) {
  comm_->abort(reason);
}

Engine::~Engine() {
  try {
    shutdown("its communicator was released");
  } catch (const std::exception& e) {
    log::warn("{}: shutting down: {}", label_, e.what());
  }
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();  // released from its own completion callback: it ends right after
    else
      thread_.join();
  }
}

const std::weak_ptr<CycleRunner>& Engine::runner() {
  std::call_once(runner_once_, [this] { runner_ = weak_from_this(); });
  return runner_;
}

std::shared_ptr<HandleState> Engine::enqueue(EnqueueRequest request) {
  check_request(request, size_);
  auto handle = std::make_shared<HandleState>();
  handle->wait_limit = 2 * (Clock::duration(settings_.options.stall_timeout) +
                            Clock::duration(comm_->options().timeout));
  handle->runner = runner();
  bool wake = false;
  bool pace_news = false;
  bool wake_plan = false;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) throw unshared(*stopped_);
    if (shutdown_requested_)
      throw make_error(ErrorCode::kAborted, "{}: '{}' was submitted after this rank's shutdown",
                       label_, request.name);
    if (join_requested_)
      throw make_error(ErrorCode::kInvalidArgument,
                       "{}: rank {} has joined; wait for the join to complete before submitting "
                       "'{}'",
                       label_, rank_, request.name);
    InFlightNames::Tag tag;
    const bool fresh = in_flight_.add(request.name, tag);
    if (!fresh)
      throw make_error(ErrorCode::kInvalidArgument,
                       "{}: tensor '{}' is already in flight on rank {}: a name must not be reused "
                       "until the handle of its previous submission has finished",
                       label_, request.name, rank_);
    Entry e;
    e.request = std::move(request);
    e.handle = handle;
    e.name_tag = tag;
    if (Timeline::instance().active()) e.enqueued = Clock::now();
    incoming_.push_back(std::move(e));
    // The engine thread waits for exactly this many (take_cycle).
    if (incoming_.size() == plan_awaited_) wake_plan = true;
    // The first enqueue of a burst wakes the engine thread; the rest do not (it sleeps through
    // the burst), nor does any while a waiting caller runs the cycles or the thread is in standby.
    if (!news_) news_since_ = Clock::now();
    wake = !news_ && runners_ == 0 && !standby_;
    pace_news = !news_ && runners_ > 0;
    news_ = true;
  }
  if (wake || wake_plan) cv_.notify_one();
  if (pace_news) cycle_cv_.notify_all();  // a waiting caller pacing its cycles
  return handle;
}

std::shared_ptr<HandleState> Engine::join(int* last_joined_out) {
  auto handle = std::make_shared<HandleState>();
  handle->runner = runner();
  {
    std::lock_guard lock(mutex_);
    if (stopped_) throw unshared(*stopped_);
    if (join_requested_)
      throw make_error(ErrorCode::kInvalidArgument, "{}: rank {} has already joined", label_,
                       rank_);
    join_requested_ = true;
    join_handle_ = handle;
    join_out_ = last_joined_out;
    news_ = true;
    wake_ = true;
  }
  cv_.notify_one();
  cycle_cv_.notify_all();
  return handle;
}

void Engine::shutdown(const std::string& reason) {
  std::unique_lock lock(mutex_);
  if (!shutdown_requested_) {
    shutdown_requested_ = true;
    shutdown_reason_ = reason;
    news_ = true;
    wake_ = true;
    cv_.notify_one();
    cycle_cv_.notify_all();
  }
  if (thread_.get_id() == std::this_thread::get_id() || on_engine_thread) return;
  if (done_cv_.wait_for(lock, settings_.shutdown_timeout, [&] { return thread_done_; })) return;
  lock.unlock();
  // Some rank never shut down its engine: abort the engine's communicator, which ends our cycle.
  comm_->abort(fmt::format("{}: rank {} gave up waiting {} s for every rank to shut down", label_,
                           rank_, settings_.shutdown_timeout.count() / 1000));
  lock.lock();
  done_cv_.wait(lock, [&] { return thread_done_; });
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  EngineStats s = stats_;
  s.fusion_threshold = fusion_threshold_.load();
  s.cycle_time_us = static_cast<uint64_t>(cycle_time_.count());
  s.standby = standby_;
  return s;
}

bool Engine::engine_thread_needed() const {
  return news_ || pending_count_ > 0 || join_requested_ || shutdown_requested_ ||
         !deferred_.empty();
}

// The engine thread: waits until a cycle is due and no caller's thread runs cycles, then marks
// the cycle as its own. False once cycles are over.
bool Engine::take_cycle() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!deferred_.empty()) {
      std::vector<std::shared_ptr<HandleState>> handles;
      handles.swap(deferred_);
      lock.unlock();
      for (auto& h : handles) h->run_deferred_callbacks();
      lock.lock();
      continue;
    }
    if (over_) return false;
    const bool others = runners_ > 0 || cycling_;
    const bool pending = pending_count_ > 0 || join_requested_ || shutdown_requested_;
    if (standby_) {
      // Unwoken by enqueues, it looks every standby_poll_ whether something waits that no caller
      // takes: news older than a cycle time, work left behind, a heartbeat due.
      cv_.wait_for(lock, standby_poll_, [&] { return over_ || wake_ || !deferred_.empty(); });
      const bool woken = std::exchange(wake_, false);
      if (over_ || !deferred_.empty()) continue;
      const auto nothing_found = [&] {
        standby_poll_ = std::min<Clock::duration>(2 * standby_poll_, kStandbyPollMost);
      };
      if (runners_ > 0 || cycling_) {
        nothing_found();
        continue;
      }
      const Clock::time_point now = Clock::now();
      const bool stale_news = news_ && now - news_since_ >= cycle_time_;
      const bool heartbeat_due = now - last_cycle_ >= settings_.heartbeat;
      if (!woken && !stale_news && !pending && !heartbeat_due) {
        nothing_found();
        continue;
      }
      standby_ = false;
      callers_took_ = 0;
    } else {
      const Clock::duration wait = !others && (pending || active_)
                                       ? Clock::duration(cycle_time_)
                                       : Clock::duration(settings_.heartbeat);
      cv_.wait_for(lock, wait, [&] {
        return over_ || wake_ || standby_ || !deferred_.empty() ||
               (news_ && runners_ == 0 && !cycling_);
      });
      wake_ = false;
      if (over_ || !deferred_.empty()) continue;
      if (standby_ || runners_ > 0 || cycling_) continue;  // a waiting caller runs the cycles
    }
    const bool for_news = news_;
    // A burst of enqueues is still coming in: take it into this cycle instead of cutting it in
    // two. Sleeping, not yielding: on as many cores as ranks a spinning engine thread takes the
    // core from the thread that enqueues (or the other ranks').
    // While it is the start of the kept plan's step, it sleeps until the enqueue that completes
    // the step, at most kPlanPatienceCycles cycle times in all (a waiting caller takes the cycle
    // over meanwhile: runners_).
    const auto step = std::min<Clock::duration>(cycle_time_, kBurstWindow);
    const Clock::time_point began = Clock::now();
    const Clock::time_point cap = began + Clock::duration(cycle_time_);
    const Clock::time_point plan_cap =
        began + std::max<Clock::duration>(
                    cycle_time_, std::min<Clock::duration>(kPlanPatienceCycles * cycle_time_,
                                                           kPlanPatienceMost));
    size_t matched = 0;
    // A caller that ran a cycle while this thread slept took what it was looking at.
    const uint64_t cycles = stats_.cycles;
    for (size_t seen = incoming_.size();
         seen > 0 && !over_ && runners_ == 0 && stats_.cycles == cycles;) {
      const PlanPrefix prefix = plan_prefix(matched);
      if (prefix == PlanPrefix::kWhole) break;
      if (prefix == PlanPrefix::kStart) {
        plan_awaited_ = plan_.names.size();
        cv_.wait_until(lock, plan_cap, [&] {
          return over_ || shutdown_requested_ || incoming_.size() >= plan_awaited_;
        });
        plan_awaited_ = 0;
        if (Clock::now() >= plan_cap || shutdown_requested_) break;
      } else {
        cv_.wait_until(lock, std::min(Clock::now() + step, cap),
                       [&] { return over_ || shutdown_requested_; });
        if (incoming_.size() == seen || Clock::now() >= cap || shutdown_requested_) break;
      }
      seen = incoming_.size();
    }
    if (over_) continue;
    // A waiting caller takes the burst now, or took it while this thread slept through it (no
    // empty cycle for that: the other ranks would have to match it). What came in after a
    // caller's cycle is a new burst, looked at from the start (not cut where this thread woke).
    if (runners_ > 0 || cycling_ || (for_news && !news_) || stats_.cycles != cycles) continue;
    if (news_) {
      // This thread takes a burst (awake for one that a caller took, it found the next): that
      // counts against standby as any other.
      callers_took_ = std::max(0, callers_took_ - 2);
      standby_ = false;
    }
    cycling_ = true;
    return true;
  }
}

// Under mutex_, on the engine thread with no cycle running (plan_ is the cycle's, written only
// by the thread that held it before): how the names enqueued so far stand to the plan's, checked
// from `matched` on (a burst is looked at as it grows).
Engine::PlanPrefix Engine::plan_prefix(size_t& matched) const {
  if (!plan_.valid() || pending_count_ > 0 || join_requested_ || shutdown_requested_ || tuner_ ||
      incoming_.size() > plan_.names.size())
    return PlanPrefix::kOther;
  for (; matched < incoming_.size(); ++matched)
    if (incoming_[matched].request.name != plan_.names[matched]) return PlanPrefix::kOther;
  return incoming_.size() == plan_.names.size() ? PlanPrefix::kWhole : PlanPrefix::kStart;
}

// A waiting caller's cycle takes a burst of news. A trainer that enqueues its gradients and then
// waits does so every step, and the engine thread's wake-up for that burst only takes a CPU from a
// thread with work (without them: the engine's CPU per tensor alone 0.50 -> 0.39 us; 256 x 16 KiB
// between 2 pods 0.870x -> 0.885x one flat call, medians of 8 runs).
// Each such burst counts one, each burst the engine thread takes minus two (a trainer that
// overlaps its communication with its work, whose bursts the engine thread takes, never gets
// there; one whose caller was only sometimes slow to reach its wait does). At kStandbyAfter
// enqueues stop waking the engine thread (standby); take_cycle says what ends it.
void Engine::caller_took_burst() {
  if (standby_ || ++callers_took_ < kStandbyAfter) return;
  standby_ = true;
  standby_poll_ = kStandbyPoll;
  cv_.notify_one();  // the engine thread may sleep for a heartbeat: it polls from now on
}

// One cycle, on whichever thread marked it as its own (cycling_); an error or the end of every
// rank's engine stops the engine here.
void Engine::run_cycle() {
  std::optional<Error> stop;
  try {
    cycle();
    if (negotiation_.all_shut_down())
      stop = Error(ErrorCode::kAborted, negotiation_.shutdown_message().empty()
                                            ? label_ + ": shut down"
                                            : negotiation_.shutdown_message());
  } catch (const Error& e) {
    stop = Error(e.code(), fmt::format("{} stopped: {}", label_, e.what()));
  } catch (const std::exception& e) {
    stop = Error(ErrorCode::kInternal,
                 fmt::format("{} stopped: internal error: {}", label_, e.what()));
  }
  if (stop) fail_everything(*stop);
  std::lock_guard lock(mutex_);
  if (stop) over_ = true;
  pending_count_ = pending_.size();
  last_cycle_ = Clock::now();
  cycling_ = false;
  cycle_cv_.notify_all();
  if (over_ || !deferred_.empty()) {
    wake_ = true;
    cv_.notify_one();
  }
}

void Engine::run_cycles_until(const HandleState& handle, Deadline deadline) {
  std::unique_lock lock(mutex_);
  ++runners_;
  bool ran = false;
  while (!over_ && !handle.finished() && !deadline.expired()) {
    if (cycling_) {
      cycle_cv_.wait_until(lock, deadline.at(), [&] { return !cycling_ || over_; });
      continue;
    }
    if (ran && !active_ && !news_) {
      // The last cycle saw nothing anywhere (every rank waits, or the others are still busy):
      // pace like the engine thread, one cycle per TUTTI_CYCLE_TIME until something is new,
      // instead of spinning through empty collectives on every waiting rank.
      const auto until = std::min(deadline.at(), Clock::now() + Clock::duration(cycle_time_));
      cycle_cv_.wait_until(lock, until, [&] { return news_ || over_ || handle.finished(); });
      if (cycling_ || over_ || handle.finished() || deadline.expired()) continue;
    }
    ran = true;
    if (news_) caller_took_burst();
    cycling_ = true;
    lock.unlock();
    {
      const OnEngineThread mark;
      run_cycle();
    }
    lock.lock();
  }
  if (--runners_ == 0 && engine_thread_needed()) {
    wake_ = true;
    cv_.notify_one();
  }
}

// Completes a handle. Its callbacks run on the engine's own thread: on a caller's thread running
// the cycle (run_cycles_until) they are handed to it.
void Engine::settle(const std::shared_ptr<HandleState>& handle, const std::optional<Error>& error) {
  if (thread_.get_id() == std::this_thread::get_id()) {
    if (error)
      handle->fail(*error);
    else
      handle->complete();
    return;
  }
  if (!handle->finish_deferring_callbacks(error ? std::optional<Error>(unshared(*error))
                                                : std::nullopt))
    return;
  std::lock_guard lock(mutex_);
  deferred_.push_back(handle);
}

void Engine::loop() {
  on_engine_thread = true;
  while (take_cycle()) run_cycle();
  std::lock_guard lock(mutex_);
  thread_done_ = true;
  done_cv_.notify_all();
}

void Engine::fail_everything(const Error& error) {
  std::vector<Entry> incoming;
  std::shared_ptr<HandleState> join_handle;
  {
    std::lock_guard lock(mutex_);
    if (!stopped_) stopped_ = unshared(error);
    incoming.swap(incoming_);
    join_handle = std::move(join_handle_);
    in_flight_.clear();
  }
  for (auto& [name, e] : pending_) settle(e.handle, error);
  pending_.clear();
  // A replay's entries not yet settled (a settled one no longer holds its handle), and the
  // group whose collective failed (its handles taken from its entries).
  for (Entry& e : replay_)
    if (e.handle) settle(e.handle, error);
  for (Taken& t : replay_taken_)
    if (t.handle) settle(t.handle, error);
  replay_taken_.clear();
  replay_.clear();
  plan_.clear();
  for (auto& e : incoming) settle(e.handle, error);
  if (join_handle) settle(join_handle, error);
}

}  // namespace tutti::engine
