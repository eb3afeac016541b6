// Communicator: one rank's membership in a group of ranks that run collectives together: a world
// (joined through a store), or a split, group or dup of another communicator. Many live at once in
// a process; those made from one world share its connections (transport/fabric.hpp), each with a
// namespace of its own: a context id in every message tag, "<job>/c<id>/" store keys and
// "tutti-<job>-c<id>-..." shared-memory names. One thread drives a communicator at a time
// (another thread's call is refused and aborts the communicator on every rank: exclusive_call.hpp);
// different communicators may be driven by different threads at once.
//
// The first failed call aborts the peers (they fail promptly with the reason instead of at a
// timeout) and leaves the communicator broken: every later call rethrows that error. abort() does
// the same from any thread. Other communicators live on unless a peer process died.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/world_info.hpp"
#include "collectives/collectives.hpp"
#include "collectives/device/device_collectives.hpp"
#include "collectives/selection_cache.hpp"
#include "collectives/settings.hpp"
#include "comm/exclusive_call.hpp"
#include "comm/interrupt.hpp"
#include "comm/job.hpp"
#include "comm/topology.hpp"
#include "core/error.hpp"
#include "transport/transport.hpp"
#include "tutti/error.hpp"
#include "tutti/options.hpp"
#include "tutti/store.hpp"
#include "tutti/types.hpp"

namespace tutti::comm {

class Communicator;

// What every rank of a call must agree on (transport/call_signature.hpp); -1 for no op or root.
transport::CallSignature signature(transport::CallKind kind, size_t count, DataType type, int op,
                                   int root);

// A posted point-to-point send or receive (Communicator::isend / irecv).
class Request {
 public:
  Request() = default;
  // True once complete; progresses the communicator's connections once. Throws what failed it.
  bool test();
  // Returns once complete; Error(kTimeout) after `timeout` (default: the communicator's).
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  bool valid() const { return comm_ != nullptr; }

 private:
  friend class Communicator;
  std::shared_ptr<Communicator> comm_;
  transport::Request request_;
  std::string what_;  // "send of 40 bytes to rank 2 with tag 7"
};

class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  // Joins the world `info` describes through the store it names. Throws Error(kTimeout) listing
  // ranks that never arrived. `incarnation`: how many worlds this process made and finished
  // before (tutti::init after tutti::finalize): each has its own job id and store keys, so that a
  // world never meets the leftovers (store keys, shared-memory names) of the one before it.
  static std::shared_ptr<Communicator> create(const bootstrap::WorldInfo& info,
                                              const Options& options, int incarnation = 0);
  // Joins the ranks of an MPI communicator (tutti/tutti_mpi.h), meeting through MPI; collective
  // over that communicator.
  static std::shared_ptr<Communicator> create(std::shared_ptr<bootstrap::MpiSession> mpi,
                                              const Options& options);
  // Joins `size` ranks meeting through a caller's store.
  static std::shared_ptr<Communicator> create(std::shared_ptr<tutti::Store> store, int rank,
                                              int size, const Options& options);
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Topology& topology() const { return topology_; }
  const std::string& job_id() const { return job_->job_id; }
  transport::ContextId context_id() const { return context_; }
  const Options& options() const { return options_; }

  // MPI_Comm_split: every rank of this communicator calls it; ranks with the same color form a
  // communicator, ordered by key, then by rank here. A negative color joins none (null result).
  std::shared_ptr<Communicator> split(int color, int key);
  // The listed ranks (of this communicator, in the order given) form a communicator; only they
  // call it. A caller that is not listed gets Error(kInvalidArgument).
  std::shared_ptr<Communicator> group(std::span<const int> ranks);
  // The survivors go on (communicator_shrink.cc): every rank still alive calls it, typically
  // after a call failed because a peer died; they agree through the store on who is here and get
  // a communicator of those ranks, renumbered in their order here. A rank whose process died is
  // left out as soon as any caller sees it gone; one alive that does not call within the init
  // timeout is left out too (its own shrink then fails). Works on a broken communicator.
  std::shared_ptr<Communicator> shrink();
  // The same ranks in a communicator of their own (collective).
  std::shared_ptr<Communicator> dup();
  // Elastic grow (communicator_join.cc). The launcher (tuttirun --max-np) numbers the memberships
  // it publishes in the job's store; this is the latest one's number (0: none yet), one store
  // read.
  int64_t membership_epoch();
  // This process's communicator among the members of membership `epoch`, in the launcher's order:
  // a new world (new connections) where members already running meet the processes the launcher
  // started for it. Collective over those members. Error(kInvalidArgument) when the list does not
  // name this process's member id (TUTTI_MEMBER_ID), kTimeout when a member never comes.
  std::shared_ptr<Communicator> regroup(int64_t epoch);

  // From any thread: every pending and later call on this communicator, on every rank, fails with
  // Error(kAborted) naming this rank and the reason.
  void abort(const std::string& reason);
  // The device calls that returned once enqueued (CallOptions::enqueue_only): one look (block
  // false) or a host wait (block true), each against its call's deadline; true once all completed.
  // A failure among them fails this communicator as a failed call does.
  bool settle_device(bool block);

  void allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                 const CallOptions& call = {});
  // One allreduce over several tensors as one vector (the engine's fusion): in place on the
  // shared-memory window, packed into `pack` for the other algorithms.
  collectives::SegmentsRun allreduce_segments(std::span<const collectives::Segment> segments,
                                              DataType type, ReduceOp op, const CallOptions& call,
                                              std::vector<std::byte>& pack);
  void broadcast(void* buf, size_t count, DataType type, int root, const CallOptions& call = {});
  void allgather(const void* send, void* recv, size_t count, DataType type,
                 const CallOptions& call = {});
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op,
                      const CallOptions& call = {});
  void barrier(const CallOptions& call = {});

  // The rest of the collective set (collectives/collectives.hpp; collective_set.cc). Blocks of
  // every rank lie back to back in rank order; `counts` has one entry per rank, the same on
  // every rank; buffers only the root touches may be null elsewhere.
  void reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op, int root,
              const CallOptions& call = {});
  void gather(const void* send, void* recv, size_t count, DataType type, int root,
              const CallOptions& call = {});
  void gatherv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
               int root, const CallOptions& call = {});
  void scatter(const void* send, void* recv, size_t count, DataType type, int root,
               const CallOptions& call = {});
  void scatterv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
                int root, const CallOptions& call = {});
  void allgatherv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
                  const CallOptions& call = {});
  void reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
                       ReduceOp op, const CallOptions& call = {});
  void alltoall(const void* send, void* recv, size_t count, DataType type,
                const CallOptions& call = {});
  void alltoallv(const void* send, std::span<const size_t> send_counts, void* recv,
                 std::span<const size_t> recv_counts, DataType type, const CallOptions& call = {});

  // Point-to-point: a message to `peer` with a user tag (0 .. 2^31-1) is received by the receive
  // from this rank with the same tag, in order. Sizes must match (else kMismatch on both sides).
  Request isend(const void* buf, size_t count, DataType type, int peer, int tag);
  Request irecv(void* buf, size_t count, DataType type, int peer, int tag);
  void send(const void* buf, size_t count, DataType type, int peer, int tag,
            const CallOptions& call = {});
  void recv(void* buf, size_t count, DataType type, int peer, int tag,
            const CallOptions& call = {});

  // What a higher layer keeps with this communicator (the engine of its process set): made by
  // `make` on the first call (under a lock, so once), destroyed before anything else of it. The
  // reference stays valid as long as this communicator.
  const std::shared_ptr<void>& attachment(const std::function<std::shared_ptr<void>()>& make);
  std::shared_ptr<void> attachment_if_any();

 private:
  struct Key {
    explicit Key() = default;
  };

 public:
  Communicator(Key, std::shared_ptr<Job> job, transport::ContextId context,
               std::vector<int> members, int rank, const Options& options);

  // Builds the communicator of `members` (fabric ranks; this rank among them) with `context`:
  // its transport and, when they all share this host, its shared-memory window. Every member
  // calls it.
  static std::shared_ptr<Communicator> make(std::shared_ptr<Job> job, transport::ContextId context,
                                            std::vector<int> members, const Options& options,
                                            Deadline deadline);

 private:
  // Runs one collective call: refuses a second thread, stamps the call's signature on the
  // transport (so ranks in different calls fail with kMismatch), and breaks the communicator on a
  // failure other than a bad argument.
  template <typename Body>
  void run(std::string_view name, transport::CallSignature call, const CallOptions& options,
           Body&& body);
  friend class Request;
  // Runs `body` as one call of this communicator (one thread at a time; a failure other than a
  // bad argument breaks the communicator and aborts the peers).
  template <typename Body>
  void guarded(std::string_view name, uint64_t sequence, Deadline deadline, Body&& body);
  // Posts one point-to-point operation after checking its arguments.
  Request post(bool is_send, void* buf, size_t count, DataType type, int peer, int tag);
  // Device buffers (device_calls.cc). The device of a call's buffers, or none when all are host
  // memory; Error(kInvalidArgument) when they are mixed or on two devices. Null buffers are
  // skipped.
  std::optional<int> device_of(std::string_view name,
                               std::initializer_list<const void*> buffers) const;
  // Error(kInvalidArgument) when a buffer of a call that takes host buffers only is on a device.
  void refuse_device(std::string_view name, std::initializer_list<const void*> buffers) const;
  collectives::DeviceCall device_call(const CallOptions& call);
  // An allreduce's context for where its buffers live: on `device`, the device collectives and
  // `on_device` (the registry's device entry runs it); on the host, the call's scales.
  void on_buffers(collectives::Context& ctx, std::optional<int> device,
                  const collectives::DeviceCall& on_device, const CallOptions& call);
  // The device side, made on the first device call (on `device`).
  collectives::DeviceCollectives& device_collectives(int device);
  std::shared_ptr<collectives::DeviceCollectives> device_if_any();
  void check_device_scales(std::string_view name, DataType type, ReduceOp op,
                           const CallOptions& call) const;

  // group(): every member publishes its list under the set's key and compares the others':
  // Error(kInvalidArgument) on every member when the orders differ, kTimeout naming the ranks
  // that never called.
  void agree_on_group_order(const std::string& purpose, std::span<const int> set,
                            std::span<const int> listed);
  // Waits until keys[i], which rank ranks[i] of this communicator publishes, all exist. The store
  // is asked in slices; between them an abort of this communicator, a peer's abort notice or an
  // awaited rank's death ends the wait at once, and `look` (given the ranks still missing) may end
  // it with an error of its own. Returns the ranks still missing at the deadline, else none.
  std::vector<int> wait_for_ranks(const std::vector<std::string>& keys, std::span<const int> ranks,
                                  Deadline deadline, std::string_view what,
                                  const std::function<void(std::span<const int>)>& look = nullptr);
  // A timeout's advice names Options::timeout_setting, not TUTTI_COLLECTIVE_TIMEOUT, where the
  // timeout came from elsewhere (torch); any other error as it is.
  Error with_timeout_setting(const Error& e) const;
  // A second thread entered while a call ran: abort() with the reason (exclusive_call.hpp).
  void abort_for_second_thread(std::string_view name);
  // What the call that held the communicator fails with when a second thread was refused
  // meanwhile: the abort's error, or kAborted saying the same if it is not raised yet.
  Error second_thread_error(std::string_view name) const;
  // Sends the abort notices of an abort() that found no call in progress.
  void deliver_abort_if_idle();
  // Error(kInvalidArgument) for an allreduce's prescale or postscale that is not finite.
  void check_scales(const CallOptions& call) const;
  // Fails the communicator with `error`: the peers get the notice, later calls rethrow it.
  void fail(const Error& error, std::string_view name, uint64_t sequence);
  // A new context id, the same on every rank of `members` (this communicator's ranks that call
  // it): the lowest of them draws it from the job's counter in the store, the others read it.
  transport::ContextId draw_context(std::string_view purpose, std::span<const int> members);
  // draw_context's halves: the lowest member takes the job's next id and publishes it under `key`;
  // the others read and check it (Error(kConfig) for anything but an id).
  transport::ContextId publish_new_context(const std::string& key);
  transport::ContextId read_new_context(const std::string& key, Deadline deadline);

  std::shared_ptr<Job> job_;
  transport::ContextId context_ = 0;
  std::vector<int> members_;  // fabric rank of each rank of this communicator
  int rank_ = 0;
  int size_ = 1;
  Options options_;
  Topology topology_;
  std::vector<int> host_of_rank_;    // every rank's host index, for the collectives' Context
  collectives::CpuShare cpu_share_;  // ranks per CPU on this communicator's machines
  std::unique_ptr<transport::Transport> transport_;
  collectives::Scratch scratch_;
  collectives::SelectionCache selection_;
  std::shared_ptr<const collectives::Settings> settings_;
  // The collectives' view of the members above (references into them), made once in make().
  std::optional<collectives::Group> group_;
  // The call under way, for the hang report (the job's StallWatch reads it).
  std::shared_ptr<CallProgress> progress_ = std::make_shared<CallProgress>();
  uint64_t sequence_ = 0;
  uint64_t children_ = 0;                        // communicators made by split/dup so far
  uint64_t shrinks_ = 0;                         // shrink() calls so far
  std::map<std::vector<int>, uint64_t> groups_;  // group() calls so far, per member set (sorted)
  std::optional<Error> failure_;
  CallGate busy_;  // one call at a time (exclusive_call.hpp)
  std::shared_ptr<Interrupt> interrupt_ = std::make_shared<Interrupt>();
  std::atomic<bool> abort_delivered_{false};
  // The device side: null until the first device call. The mutex is for abort() from another
  // thread; calls reach it from the one thread that drives the communicator.
  std::mutex device_mutex_;
  std::shared_ptr<collectives::DeviceCollectives> device_;
  // An NCCL communicator split from the parent's (split/dup of a communicator that had one),
  // adopted by device_ when it is made.
  std::unique_ptr<device::NcclComm> inherited_nccl_;
  // Last, so that it goes first: an engine still uses the job this communicator keeps alive.
  std::mutex attachment_mutex_;
  std::shared_ptr<void> attachment_;   // set once, never replaced
  std::atomic<bool> attached_{false};  // attachment_ is set: read it without the lock
};

template <typename Body>
void Communicator::guarded(std::string_view name, uint64_t sequence, Deadline deadline,
                           Body&& body) {
  {
    ExclusiveCall exclusive(busy_, rank_, name, [&] { abort_for_second_thread(name); });
    if (!failure_ && interrupt_->raised()) fail(interrupt_->error(), "", 0);
    if (failure_) throw *failure_;
    CallScope scope(*interrupt_, deadline);
    try {
      try {
        body();
        // An abort() during the call fails it even if the call got through without waiting.
        CallScope::check();
        // So does a second thread refused at any moment while this call held the communicator,
        // even one that has not raised the abort yet: this call may have paired with the other
        // thread's call on a peer.
        if (!exclusive.finish()) throw second_thread_error(name);
      } catch (const std::bad_alloc&) {
        throw make_error(ErrorCode::kSystem, "out of memory on rank {} in {}", rank_, name);
      }
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kInvalidArgument)
        throw;  // nothing was sent; the communicator is still usable
      fail(with_timeout_setting(e), name, sequence);
      throw *failure_;
    }
  }
  // abort() from another thread while this call finished without seeing it: deliver it now.
  deliver_abort_if_idle();
}

template <typename Body>
void Communicator::run(std::string_view name, transport::CallSignature call,
                       const CallOptions& options, Body&& body) {
  uint64_t sequence = sequence_ + 1;
  const Deadline deadline = Deadline::after(options.timeout.value_or(options_.timeout));
  guarded(name, sequence, deadline, [&] {
    sequence_ = sequence;
    call.sequence = sequence;
    progress_->enter(call);
    struct Leave {
      CallProgress& progress;
      uint64_t sequence;
      ~Leave() { progress.leave(sequence); }
    } leave{*progress_, sequence};
    transport_->begin_call(call);
    collectives::Context ctx(*group_, {sequence, deadline});
    try {
      body(ctx);
      // Messages of this call that another thread's progress delivered are checked by now.
      transport_->verify_delivered();
    } catch (const std::bad_alloc&) {
      throw make_error(ErrorCode::kSystem, "out of memory on rank {} in {}: {}", rank_, name,
                       call.describe());
    }
  });
}

}  // namespace tutti::comm
