// DeviceCollectives: the collectives of one communicator on device (CUDA) buffers. It owns what
// the device path keeps between calls: the NCCL communicator (made on the first device call, or
// split from the parent's), our own stream, the two events that order it against the caller's
// stream, and reusable device and pinned scratch.
//
// An allreduce in a world of one takes none of the steps below after the agreement: it enqueues
// its work on the caller's stream and returns (device_alone.cc). Every other call is blocking and
// goes the same way:
//   1. agreement: an empty host barrier under the call's signature (comm stamped it), so ranks
//      in different device calls fail with kMismatch before any NCCL work is enqueued;
//   2. the NCCL communicator, made on first use (rank 0's unique id reaches the others through a
//      host broadcast);
//   3. ordering: an event recorded on the caller's stream, our stream waits on it, the work is
//      enqueued on our stream, a done event recorded there, and the caller's stream waits on it
//      (no device-wide sync anywhere);
//   4. a host wait for the done event (device_wait.cc) that polls the event, NCCL's async error,
//      the host transport (peer failures, abort notices), abort() and the deadline; on a failure
//      the NCCL communicator is aborted and the error names the rank, call and NCCL's reason.
// A call made with CallOptions::enqueue_only skips step 4: its done event joins the calls in
// flight, which the next device call looks at once (settle) and device_done()/device_wait() look
// at or wait for with the same checks, each against its own call's deadline. So the host agrees
// on call N+1 while the device still runs call N, as with NCCL's own calls.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "collectives/context.hpp"
#include "collectives/device/device_call.hpp"
#include "collectives/segments.hpp"
#include "core/deadline.hpp"
#include "device/device_api.hpp"
#include "tutti/types.hpp"

namespace tutti::collectives {

// The device ring's second stream: a chunk's reduce runs there while the next chunk moves on the
// communicator's stream (device_ring.cc).
struct DeviceReduceLane {
  device::Stream stream;
  device::Event received[2];   // recorded on the transfer stream once slot i holds its chunk
  device::Event slot_free[2];  // recorded on `stream` once slot i's reduce read it
  device::Event reduced;       // recorded on `stream` after the last reduce so far
};

class DeviceCollectives {
 public:
  // `device`: the device of the communicator's first device buffer; every later one must be on
  // it (the caller checked where the buffers live: comm/device_calls.cc). `nccl`: a communicator
  // split from the parent's, or null to make one on the first call.
  DeviceCollectives(int rank, int size, int device, std::chrono::milliseconds init_timeout,
                    std::unique_ptr<device::NcclComm> nccl = nullptr);
  ~DeviceCollectives();
  DeviceCollectives(const DeviceCollectives&) = delete;
  DeviceCollectives& operator=(const DeviceCollectives&) = delete;

  int device() const { return device_; }
  bool has_nccl();

  void allreduce(Context& ctx, const DeviceCall& call, const void* send, void* recv, size_t count,
                 DataType type, ReduceOp op);
  // The engine's fusion: the segments packed into a device fusion buffer, one allreduce,
  // unpacked; all of it on our stream.
  void allreduce_segments(Context& ctx, const DeviceCall& call, std::span<const Segment> segments,
                          DataType type, ReduceOp op);
  void broadcast(Context& ctx, const DeviceCall& call, void* buf, size_t count, DataType type,
                 int root);
  void allgather(Context& ctx, const DeviceCall& call, const void* send, void* recv, size_t count,
                 DataType type);
  void reduce_scatter(Context& ctx, const DeviceCall& call, const void* send, void* recv,
                      size_t recv_count, DataType type, ReduceOp op);

  // The calls made with CallOptions::enqueue_only whose completion was not seen yet: one look
  // (block false) or a host wait for all of them (block true); true once none is left. Throws,
  // after aborting NCCL, when one failed in NCCL or passed its call's deadline, a peer failed or
  // this communicator was aborted meanwhile. From the thread that drives the communicator.
  bool settle(Context& ctx, const DeviceCall& call, bool block);
  size_t in_flight() const { return in_flight_.size(); }

  // ncclCommSplit of our NCCL communicator (which must exist): collective over every rank of it.
  std::unique_ptr<device::NcclComm> split_nccl(int color, int key,
                                               std::chrono::milliseconds timeout);
  // From any thread: pending NCCL work ends (ncclCommAbort); this object is unusable after.
  void abort() noexcept;

 private:
  // Step 1: the call's path joins its signature, then an empty barrier checks it everywhere.
  void agree(Context& ctx, const DeviceCall& call, uint8_t path);
  // Step 2.
  device::NcclComm& nccl(Context& ctx);
  // Step 4 (device_wait.cc): returns once `event` completed; throws (after aborting NCCL) on an
  // async error, an abort, a peer failure or the deadline.
  void wait_on_host(Context& ctx, const DeviceCall& call, device::EventId event,
                    const std::string& what);
  // settle() for the oldest call in flight only (there must be one).
  bool settle_oldest(Context& ctx, const DeviceCall& call, bool block);
  // What wait_on_host does, once (block false: one look, true once `event` completed) or until
  // `event` completed (block true), against `deadline`; `began` dates the call for the timeout's
  // message.
  bool watch(Context& ctx, const DeviceCall& call, device::EventId event, const std::string& what,
             Deadline deadline, std::chrono::steady_clock::time_point began, bool block);
  // Fails with `code`: aborts NCCL first, so no work of this call stays pending.
  [[noreturn]] void fail(ErrorCode code, const std::string& message);
  // Device scratch of at least `bytes`, kept between calls: slots 0 and 1 for the ring's incoming
  // segments, kFusionSlot for the engine's fusion buffer.
  static constexpr int kFusionSlot = 2;
  // Growing one first settles the calls in flight (the free waits for the device).
  void* scratch(Context& ctx, const DeviceCall& call, int slot, size_t bytes);
  void* pinned(Context& ctx, const DeviceCall& call, size_t bytes);

  // Our stream runs nothing more until the caller's stream reached this call.
  void begin_on_stream(const DeviceCall& call);
  // The caller's stream waits for our work; the host waits for it too, or (enqueue_only) it joins
  // the calls in flight.
  void finish_on_stream(Context& ctx, const DeviceCall& call, const std::string& what);

  // One device allreduce path (a TUTTI_DEVICE_ALLREDUCE choice but auto), declared once in
  // device_collectives.cc's table: whether it takes a call, what a call it cannot take gets when
  // it is configured, and how it runs (enqueued on our stream, already ordered after the
  // caller's; the hierarchical path also waits on the host in its middle).
  struct Path {
    DeviceAllreduce id;
    bool in_auto;  // auto takes the first path in the table that is in_auto and takes the call
    bool (*takes)(const Context& ctx, bool nccl_reduces, DataType type, ReduceOp op);
    // Configured but not taking the call: refused, saying "<refusal> <type> with <op>"
    // (nullptr: the ring runs it).
    const char* refusal;
    void (DeviceCollectives::*run)(Context& ctx, const DeviceCall& call, const void* send,
                                   void* recv, size_t count, DataType type, ReduceOp op,
                                   const std::string& what);
  };
  static std::span<const Path> paths();
  // Which path an allreduce of (type, op) takes (TUTTI_DEVICE_ALLREDUCE, NCCL's abilities, the
  // placement): the same on every rank.
  const Path& path_for(device::NcclComm& comm, Context& ctx, const DeviceCall& call, DataType type,
                       ReduceOp op) const;
  void nccl_allreduce(Context& ctx, const DeviceCall& call, const void* send, void* recv,
                      size_t count, DataType type, ReduceOp op, const std::string& what);
  void ring_path(Context& ctx, const DeviceCall& call, const void* send, void* recv, size_t count,
                 DataType type, ReduceOp op, const std::string& what);
  // device_alone.cc: a world of one, enqueued on `stream` (the caller's, or ours in the ring).
  void allreduce_alone(device::StreamId stream, const DeviceCall& call, const void* send,
                       void* recv, size_t count, DataType type, ReduceOp op);
  // device_ring.cc
  void ring_allreduce(Context& ctx, device::NcclComm& comm, const DeviceCall& call,
                      const void* send, void* recv, size_t count, DataType type, ReduceOp op);
  // The ring's second stream (DeviceReduceLane), made at the first ring call (a stream is a thread
  // in the CPU stand-in).
  DeviceReduceLane& reduce_lane();
  // device_hierarchical.cc
  void hierarchical_allreduce(Context& ctx, const DeviceCall& call, const void* send, void* recv,
                              size_t count, DataType type, ReduceOp op, const std::string& what);

  const int rank_;
  const int size_;
  const int device_;
  const std::chrono::milliseconds init_timeout_;
  std::mutex nccl_mutex_;  // nccl_ and host_nccl_ against abort() from another thread
  std::unique_ptr<device::NcclComm> nccl_;
  std::unique_ptr<device::NcclComm> host_nccl_;  // this host's ranks (split), for hier
  bool aborted_ = false;                         // under nccl_mutex_
  device::Stream stream_;
  device::Event caller_ready_;
  device::Event done_;
  // Calls returned early (enqueue_only), oldest first: each one's done event, recorded on our
  // stream, so the first not yet complete bounds them all (one stream runs them in order).
  struct InFlight {
    device::Event done;
    std::string what;
    Deadline deadline;
    std::chrono::steady_clock::time_point began;
  };
  // More than this many calls in flight and the next one waits on the host for the oldest: a
  // caller that never synchronizes holds a bounded number of events, not one per call forever.
  static constexpr size_t kMaxInFlight = 128;
  std::deque<InFlight> in_flight_;
  std::vector<device::Event> spare_events_;  // done events of settled calls, for reuse
  device::Buffer scratch_[3];
  device::Buffer pinned_;
  std::unique_ptr<DeviceReduceLane> reduce_lane_;
};

}  // namespace tutti::collectives
