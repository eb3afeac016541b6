// tutti C++ API. Errors are thrown as tutti::Error (see tutti/error.hpp).
//
//   tutti::World world;  // init from the environment; finalize at scope exit
//   auto& comm = world.communicator();
//   comm.allreduce(grad.data(), grad.data(), grad.size(), tutti::DataType::kFloat32,
//                  tutti::ReduceOp::kSum);
//   comm.allreduce(std::span<float>(grad), tutti::ReduceOp::kAvg);  // typed, in place
//   tutti::Communicator half = comm.split(comm.rank() % 2, comm.rank());  // even and odd ranks
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tutti/async.hpp"
#include "tutti/error.hpp"
#include "tutti/options.hpp"
#include "tutti/store.hpp"
#include "tutti/types.hpp"

#if defined(__GNUC__)
#define TUTTI_CXX_API __attribute__((visibility("default")))
#else
#define TUTTI_CXX_API
#endif

namespace tutti {

namespace comm {
class Communicator;
class Request;
}  // namespace comm

template <typename T>
constexpr DataType data_type_of() {
  if constexpr (std::is_same_v<T, float>)
    return DataType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::kFloat64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DataType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DataType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DataType::kUInt8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DataType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DataType::kInt16;
  else if constexpr (std::is_same_v<T, bool>)
    return DataType::kBool;
  else
    static_assert(sizeof(T) == 0,
                  "no tutti DataType for this element type; use the void* overloads");
}

// A posted point-to-point send or receive. Its buffer must stay valid until it completes.
class TUTTI_CXX_API Request {
 public:
  Request();
  explicit Request(std::unique_ptr<comm::Request> impl);
  ~Request();
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;

  // True once complete (moves bytes once if not). Throws the error that failed it.
  bool test();
  // Returns once complete; Error(kTimeout) after `timeout` (default: the communicator's).
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

 private:
  std::unique_ptr<comm::Request> impl_;
};

// A group of ranks that run collectives together: the world, or a split, group or dup of another
// communicator. A Communicator is a handle: copies refer to the same communicator, which lives
// until the last copy goes. Calls are synchronous and are made by one thread at a time (another
// thread's call on the same communicator is refused); different communicators may be used from
// different threads at once. A failed call leaves the communicator broken (later calls rethrow the
// error); other communicators go on unless a peer process died.
class TUTTI_CXX_API Communicator {
 public:
  Communicator() = default;  // null: a split() with a negative color returns one
  explicit Communicator(std::shared_ptr<comm::Communicator> impl);
  ~Communicator();
  Communicator(const Communicator&) = default;
  Communicator& operator=(const Communicator&) = default;
  Communicator(Communicator&&) noexcept = default;
  Communicator& operator=(Communicator&&) noexcept = default;

  // `size` ranks meet through `store` (each process calls this with its own rank). Options
  // default to the TUTTI_* environment; the i-th create() of each process meets the i-th of the
  // others unless Options::name pairs them.
  static Communicator create(std::shared_ptr<Store> store, int rank, int size,
                             const Options& options = Options::from_env());

  explicit operator bool() const { return impl_ != nullptr; }

  int rank() const;
  int size() const;
  int local_rank() const;
  int local_size() const;
  int cross_rank() const;
  int cross_size() const;

  // MPI_Comm_split: every rank calls it; ranks with the same color form a communicator, ordered by
  // key (then by rank here). A negative color joins none: the result is null.
  Communicator split(int color, int key) const;
  // Only the listed ranks (of this communicator, in the order given) call it; they form the new
  // communicator. A rank that is not listed gets Error(kInvalidArgument).
  Communicator group(std::span<const int> ranks) const;
  // The same ranks in a communicator of their own (collective): for a second thread, or a library
  // that must not share call order with its caller.
  Communicator dup() const;
  // The survivors go on (docs/ELASTIC.md): after a call failed because a peer died, every rank
  // still alive calls shrink() and gets a communicator of the ranks still here, renumbered in
  // their order here; no process restarts. Ranks agree through the job's store (which must
  // outlive the dead rank: tuttirun's, or a store a surviving rank hosts). A dead rank is left
  // out as soon as any caller sees it gone; a live one that does not call within the init timeout
  // is left out too, and its own shrink fails with Error(kTimeout). Also works with no rank lost
  // (then like dup()). The old communicator stays broken; free it.
  Communicator shrink() const;
  // Elastic jobs (tuttirun --max-np; tutti/elastic.hpp does both for you): the number of the
  // latest membership the launcher published (0: none), one store read on this rank; and this
  // process's communicator in membership `epoch`, where running members meet the ranks the
  // launcher started for it (collective over its members; docs/ELASTIC.md).
  int64_t membership_epoch() const;
  Communicator regroup(int64_t epoch) const;

  // From any thread: every pending and later call on this communicator, on every rank, fails with
  // Error(kAborted) naming this rank and `reason`. Other communicators are not affected.
  void abort(const std::string& reason) const;

  void allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                 const CallOptions& call = {}) const;
  void broadcast(void* buf, size_t count, DataType type, int root,
                 const CallOptions& call = {}) const;
  void allgather(const void* send, void* recv, size_t count, DataType type,
                 const CallOptions& call = {}) const;
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op,
                      const CallOptions& call = {}) const;
  void barrier(const CallOptions& call = {}) const;
  // Device calls made with CallOptions::enqueue_only return once their work is enqueued on the
  // caller's stream. device_done() looks at that work from the host once (true when all of it
  // completed; it never blocks), device_wait() waits for it. Both throw the error of such a call
  // that failed after it returned (a peer died, NCCL's asynchronous error, its timeout passed):
  // its NCCL work is then aborted and the communicator broken, as for a call that fails while it
  // waits. True at once where no such call was made.
  bool device_done() const;
  void device_wait() const;

  // The rest of the collective set. Buffers hold every rank's block back to back, in rank order;
  // `counts` (v-forms) has one entry per rank, zero allowed, and every rank passes the same list.
  // A buffer that only the root reads or writes may be null on the other ranks.
  //
  // root's recv = op over ranks of send (count elements); send == recv is in place at the root.
  void reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op, int root,
              const CallOptions& call = {}) const;
  // root's recv (size * count) = every rank's send (count), in rank order.
  void gather(const void* send, void* recv, size_t count, DataType type, int root,
              const CallOptions& call = {}) const;
  // root's recv (sum of counts) = every rank's send (counts[rank] elements), in rank order.
  void gatherv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
               int root, const CallOptions& call = {}) const;
  // Each rank's recv (count) = block `rank` of root's send (size * count).
  void scatter(const void* send, void* recv, size_t count, DataType type, int root,
               const CallOptions& call = {}) const;
  // Each rank's recv (counts[rank]) = block `rank` of root's send (sum of counts).
  void scatterv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
                int root, const CallOptions& call = {}) const;
  // Every recv (sum of counts) = every rank's send (counts[rank]), in rank order. send may be
  // this rank's block of recv (in place).
  void allgatherv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
                  const CallOptions& call = {}) const;
  // send holds sum(counts) elements; this rank's recv (counts[rank]) = op over ranks of block
  // `rank`. recv may be this rank's block of send (in place).
  void reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts, DataType type,
                       ReduceOp op, const CallOptions& call = {}) const;
  // Block p of send (count elements) goes to rank p, where it becomes block `rank` of recv.
  // send == recv is in place (at the cost of a copy); other overlaps are refused.
  void alltoall(const void* send, void* recv, size_t count, DataType type,
                const CallOptions& call = {}) const;
  // As alltoall with per-peer counts: rank p's send_counts[q] must equal rank q's
  // recv_counts[p] (else Error(kMismatch) on both).
  void alltoallv(const void* send, std::span<const size_t> send_counts, void* recv,
                 std::span<const size_t> recv_counts, DataType type,
                 const CallOptions& call = {}) const;

  // Point-to-point: a message to `peer` with `tag` (0 .. 2^31-1) is received by the receive from
  // this rank with the same tag, in order. Sizes must match: a mismatch fails both sides with
  // Error(kMismatch). A sent buffer must stay unchanged until its request completes.
  Request isend(const void* buf, size_t count, DataType type, int peer, int tag) const;
  Request irecv(void* buf, size_t count, DataType type, int peer, int tag) const;
  void send(const void* buf, size_t count, DataType type, int peer, int tag,
            const CallOptions& call = {}) const;
  void recv(void* buf, size_t count, DataType type, int peer, int tag,
            const CallOptions& call = {}) const;

  // ---- Engine: asynchronous named collectives (Horovod's model) ----------------------------
  // Any thread enqueues a tensor by name and gets a Handle at once; the communicator's engine
  // (a background thread with a communicator of its own) agrees with the other ranks which names
  // are ready everywhere, fuses ready allreduces, runs them and finishes the handles. Ranks may
  // enqueue in different orders; every rank must enqueue every name (or join()). A name may be
  // reused once its previous handle finished. The first asynchronous call on a communicator is
  // collective: every member's first one sets up its engine together.
  //
  // recv = op over ranks of send (count elements); send == recv in place.
  Handle allreduce_async(const std::string& name, const void* send, void* recv, size_t count,
                         DataType type, ReduceOp op, const AsyncOptions& options = {}) const;
  // Every rank's `rows` rows of `row_count` elements, in rank order; ranks may give different
  // row counts. Into `recv` (capacity `recv_count` elements) when given, else into the handle's
  // output(); output_rows() tells who sent how many.
  Handle allgather_async(const std::string& name, const void* send, size_t rows, size_t row_count,
                         DataType type, void* recv = nullptr, size_t recv_count = 0,
                         const AsyncOptions& options = {}) const;
  // buf (count elements) becomes root's.
  Handle broadcast_async(const std::string& name, void* buf, size_t count, DataType type, int root,
                         const AsyncOptions& options = {}) const;
  // send holds size * recv_count elements; recv gets the reduction of block `rank`.
  Handle reduce_scatter_async(const std::string& name, const void* send, void* recv,
                              size_t recv_count, DataType type, ReduceOp op,
                              const AsyncOptions& options = {}) const;
  // send holds, for each rank p in order, send_rows[p] rows of `row_count` elements for p; each
  // rank receives the rows the others sent it, in rank order (recv as for allgather_async).
  Handle alltoall_async(const std::string& name, const void* send,
                        std::span<const size_t> send_rows, size_t row_count, DataType type,
                        void* recv = nullptr, size_t recv_count = 0,
                        const AsyncOptions& options = {}) const;
  // Finishes once every rank has reached it (one barrier in flight per rank at a time).
  Handle barrier_async() const;
  // This rank has no more data: until every rank has joined, it takes part in the others'
  // allreduce (with the op's identity: zeros for sum; avg still divides by size()), allgather
  // (no rows), broadcast (not as root) and barrier; reduce_scatter and alltoall fail. The handle
  // finishes when all have joined; last_joined() is the rank that joined last.
  Handle join(const AsyncOptions& options = {}) const;
  // The engine's counters (zeros before the first asynchronous call).
  EngineStats engine_stats() const;

  template <typename T>
  void allreduce(std::span<T> data, ReduceOp op, const CallOptions& call = {}) const {
    allreduce(data.data(), data.data(), data.size(), data_type_of<std::remove_const_t<T>>(), op,
              call);
  }
  template <typename T>
  void allreduce(std::span<const T> send, std::span<T> recv, ReduceOp op,
                 const CallOptions& call = {}) const {
    if (send.size() != recv.size())
      throw Error(ErrorCode::kInvalidArgument, "allreduce: send and recv sizes differ");
    allreduce(send.data(), recv.data(), send.size(), data_type_of<T>(), op, call);
  }
  template <typename T>
  void broadcast(std::span<T> data, int root, const CallOptions& call = {}) const {
    broadcast(data.data(), data.size(), data_type_of<T>(), root, call);
  }

 private:
  comm::Communicator& get() const;
  std::shared_ptr<comm::Communicator> impl_;
};

// Joins the world from the environment (idempotent) and returns the world communicator.
TUTTI_CXX_API Communicator& init();
TUTTI_CXX_API void finalize();
TUTTI_CXX_API bool initialized();
// The world communicator; throws Error(kNotInitialized) before init().
TUTTI_CXX_API Communicator& world();

// RAII: init() on construction, finalize() on destruction.
class TUTTI_CXX_API World {
 public:
  World() : comm_(&init()) {}
  ~World() { finalize(); }
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  Communicator& communicator() { return *comm_; }

 private:
  Communicator* comm_;
};

}  // namespace tutti
