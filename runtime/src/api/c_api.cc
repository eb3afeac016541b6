// The C API: every entry point catches everything, stores the message for tutti_last_error() and
// returns a negative code, so no C++ exception ever crosses into C.
#include <fmt/format.h>

#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "api/c_support.hpp"
#include "tutti/tutti.h"
#include "tutti/tutti.hpp"

using namespace tutti::c_support;

extern "C" {

int tutti_init(void) {
  return guarded([] {
    tutti::init();
    return 0;
  });
}

int tutti_finalize(void) {
  return guarded([] {
    tutti::finalize();
    return 0;
  });
}

int tutti_initialized(void) {
  return tutti::initialized() ? 1 : 0;
}

int tutti_rank(void) {
  return guarded([] { return tutti::world().rank(); });
}
int tutti_size(void) {
  return guarded([] { return tutti::world().size(); });
}
int tutti_local_rank(void) {
  return guarded([] { return tutti::world().local_rank(); });
}
int tutti_local_size(void) {
  return guarded([] { return tutti::world().local_size(); });
}

int tutti_allreduce(const void* send, void* recv, size_t count, tutti_dtype_t dtype,
                    tutti_op_t op) {
  return guarded([&] {
    tutti::world().allreduce(send, recv, count, to_type(dtype), to_op(op), c_call_options());
    return 0;
  });
}

int tutti_broadcast(void* buf, size_t count, tutti_dtype_t dtype, int root) {
  return guarded([&] {
    tutti::world().broadcast(buf, count, to_type(dtype), root, c_call_options());
    return 0;
  });
}

int tutti_allgather(const void* send, void* recv, size_t count, tutti_dtype_t dtype) {
  return guarded([&] {
    tutti::world().allgather(send, recv, count, to_type(dtype), c_call_options());
    return 0;
  });
}

int tutti_reduce_scatter(const void* send, void* recv, size_t recv_count, tutti_dtype_t dtype,
                         tutti_op_t op) {
  return guarded([&] {
    tutti::world().reduce_scatter(send, recv, recv_count, to_type(dtype), to_op(op),
                                  c_call_options());
    return 0;
  });
}

int tutti_barrier(void) {
  return guarded([] {
    tutti::world().barrier();
    return 0;
  });
}

int tutti_cross_rank(void) {
  return guarded([] { return tutti::world().cross_rank(); });
}
int tutti_cross_size(void) {
  return guarded([] { return tutti::world().cross_size(); });
}

int tutti_comm_world(tutti_comm_t* out) {
  return guarded([&] { return give(tutti::world(), out); });
}
int tutti_comm_split(tutti_comm_t comm, int color, int key, tutti_comm_t* out) {
  return guarded([&] {
    out_pointer(out);
    return give(comm_of(comm).split(color, key), out);
  });
}
int tutti_comm_group(tutti_comm_t comm, const int* ranks, int n, tutti_comm_t* out) {
  return guarded([&] {
    out_pointer(out);
    if (n <= 0 || ranks == nullptr)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "tutti_comm_group: no ranks listed");
    return give(comm_of(comm).group(std::span<const int>(ranks, static_cast<size_t>(n))), out);
  });
}
int tutti_comm_dup(tutti_comm_t comm, tutti_comm_t* out) {
  return guarded([&] {
    out_pointer(out);
    return give(comm_of(comm).dup(), out);
  });
}
int tutti_comm_shrink(tutti_comm_t comm, tutti_comm_t* out) {
  return guarded([&] {
    out_pointer(out);
    return give(comm_of(comm).shrink(), out);
  });
}
int tutti_comm_free(tutti_comm_t comm) {
  return guarded([&] {
    std::unique_ptr<tutti_comm> owned(comm);
    return 0;
  });
}
int tutti_comm_abort(tutti_comm_t comm, const char* reason) {
  return guarded([&] {
    comm_of(comm).abort(reason ? reason : "");
    return 0;
  });
}

int tutti_comm_rank(tutti_comm_t comm) {
  return guarded([&] { return comm_of(comm).rank(); });
}
int tutti_comm_size(tutti_comm_t comm) {
  return guarded([&] { return comm_of(comm).size(); });
}
int tutti_comm_local_rank(tutti_comm_t comm) {
  return guarded([&] { return comm_of(comm).local_rank(); });
}
int tutti_comm_local_size(tutti_comm_t comm) {
  return guarded([&] { return comm_of(comm).local_size(); });
}
int tutti_comm_cross_rank(tutti_comm_t comm) {
  return guarded([&] { return comm_of(comm).cross_rank(); });
}
int tutti_comm_cross_size(tutti_comm_t comm) {
  return guarded([&] { return comm_of(comm).cross_size(); });
}

int tutti_comm_allreduce(tutti_comm_t comm, const void* send, void* recv, size_t count,
                         tutti_dtype_t dtype, tutti_op_t op) {
  return guarded([&] {
    comm_of(comm).allreduce(send, recv, count, to_type(dtype), to_op(op), c_call_options());
    return 0;
  });
}
int tutti_comm_allreduce_scaled(tutti_comm_t comm, const void* send, void* recv, size_t count,
                                tutti_dtype_t dtype, tutti_op_t op, double prescale,
                                double postscale) {
  return guarded([&] {
    tutti::CallOptions call = c_call_options();
    call.prescale = prescale;
    call.postscale = postscale;
    comm_of(comm).allreduce(send, recv, count, to_type(dtype), to_op(op), call);
    return 0;
  });
}
int tutti_comm_broadcast(tutti_comm_t comm, void* buf, size_t count, tutti_dtype_t dtype,
                         int root) {
  return guarded([&] {
    comm_of(comm).broadcast(buf, count, to_type(dtype), root, c_call_options());
    return 0;
  });
}
int tutti_comm_allgather(tutti_comm_t comm, const void* send, void* recv, size_t count,
                         tutti_dtype_t dtype) {
  return guarded([&] {
    comm_of(comm).allgather(send, recv, count, to_type(dtype), c_call_options());
    return 0;
  });
}
int tutti_comm_reduce_scatter(tutti_comm_t comm, const void* send, void* recv, size_t recv_count,
                              tutti_dtype_t dtype, tutti_op_t op) {
  return guarded([&] {
    comm_of(comm).reduce_scatter(send, recv, recv_count, to_type(dtype), to_op(op),
                                 c_call_options());
    return 0;
  });
}
int tutti_comm_barrier(tutti_comm_t comm) {
  return guarded([&] {
    comm_of(comm).barrier();
    return 0;
  });
}

// ---- The rest of the collective set: one body per collective, for a handle and for the world.

namespace {

// The per-rank counts a C caller passes: one per rank of comm; NULL is refused.
std::span<const size_t> counts_of(const tutti::Communicator& comm, const size_t* counts,
                                  const char* name) {
  if (counts == nullptr)
    throw tutti::Error(
        tutti::ErrorCode::kInvalidArgument,
        fmt::format("{} is NULL; pass one count per rank ({} entries)", name, comm.size()));
  return {counts, static_cast<size_t>(comm.size())};
}

int c_reduce(const tutti::Communicator& c, const void* send, void* recv, size_t count,
             tutti_dtype_t dtype, tutti_op_t op, int root) {
  return guarded([&] {
    c.reduce(send, recv, count, to_type(dtype), to_op(op), root);
    return 0;
  });
}
int c_gather(const tutti::Communicator& c, const void* send, void* recv, size_t count,
             tutti_dtype_t dtype, int root) {
  return guarded([&] {
    c.gather(send, recv, count, to_type(dtype), root);
    return 0;
  });
}
int c_gatherv(const tutti::Communicator& c, const void* send, void* recv, const size_t* counts,
              tutti_dtype_t dtype, int root) {
  return guarded([&] {
    c.gatherv(send, recv, counts_of(c, counts, "counts"), to_type(dtype), root);
    return 0;
  });
}
int c_scatter(const tutti::Communicator& c, const void* send, void* recv, size_t count,
              tutti_dtype_t dtype, int root) {
  return guarded([&] {
    c.scatter(send, recv, count, to_type(dtype), root);
    return 0;
  });
}
int c_scatterv(const tutti::Communicator& c, const void* send, void* recv, const size_t* counts,
               tutti_dtype_t dtype, int root) {
  return guarded([&] {
    c.scatterv(send, recv, counts_of(c, counts, "counts"), to_type(dtype), root);
    return 0;
  });
}
int c_allgatherv(const tutti::Communicator& c, const void* send, void* recv, const size_t* counts,
                 tutti_dtype_t dtype) {
  return guarded([&] {
    c.allgatherv(send, recv, counts_of(c, counts, "counts"), to_type(dtype));
    return 0;
  });
}
int c_reduce_scatterv(const tutti::Communicator& c, const void* send, void* recv,
                      const size_t* counts, tutti_dtype_t dtype, tutti_op_t op) {
  return guarded([&] {
    c.reduce_scatterv(send, recv, counts_of(c, counts, "counts"), to_type(dtype), to_op(op));
    return 0;
  });
}
int c_alltoall(const tutti::Communicator& c, const void* send, void* recv, size_t count,
               tutti_dtype_t dtype) {
  return guarded([&] {
    c.alltoall(send, recv, count, to_type(dtype));
    return 0;
  });
}
int c_alltoallv(const tutti::Communicator& c, const void* send, const size_t* send_counts,
                void* recv, const size_t* recv_counts, tutti_dtype_t dtype) {
  return guarded([&] {
    c.alltoallv(send, counts_of(c, send_counts, "send_counts"), recv,
                counts_of(c, recv_counts, "recv_counts"), to_type(dtype));
    return 0;
  });
}

}  // namespace

int tutti_reduce(const void* send, void* recv, size_t count, tutti_dtype_t dtype, tutti_op_t op,
                 int root) {
  return guarded([&] { return c_reduce(tutti::world(), send, recv, count, dtype, op, root); });
}
int tutti_comm_reduce(tutti_comm_t comm, const void* send, void* recv, size_t count,
                      tutti_dtype_t dtype, tutti_op_t op, int root) {
  return guarded([&] { return c_reduce(comm_of(comm), send, recv, count, dtype, op, root); });
}
int tutti_gather(const void* send, void* recv, size_t count, tutti_dtype_t dtype, int root) {
  return guarded([&] { return c_gather(tutti::world(), send, recv, count, dtype, root); });
}
int tutti_comm_gather(tutti_comm_t comm, const void* send, void* recv, size_t count,
                      tutti_dtype_t dtype, int root) {
  return guarded([&] { return c_gather(comm_of(comm), send, recv, count, dtype, root); });
}
int tutti_gatherv(const void* send, void* recv, const size_t* counts, tutti_dtype_t dtype,
                  int root) {
  return guarded([&] { return c_gatherv(tutti::world(), send, recv, counts, dtype, root); });
}
int tutti_comm_gatherv(tutti_comm_t comm, const void* send, void* recv, const size_t* counts,
                       tutti_dtype_t dtype, int root) {
  return guarded([&] { return c_gatherv(comm_of(comm), send, recv, counts, dtype, root); });
}
int tutti_scatter(const void* send, void* recv, size_t count, tutti_dtype_t dtype, int root) {
  return guarded([&] { return c_scatter(tutti::world(), send, recv, count, dtype, root); });
}
int tutti_comm_scatter(tutti_comm_t comm, const void* send, void* recv, size_t count,
                       tutti_dtype_t dtype, int root) {
  return guarded([&] { return c_scatter(comm_of(comm), send, recv, count, dtype, root); });
}
int tutti_scatterv(const void* send, void* recv, const size_t* counts, tutti_dtype_t dtype,
                   int root) {
  return guarded([&] { return c_scatterv(tutti::world(), send, recv, counts, dtype, root); });
}
int tutti_comm_scatterv(tutti_comm_t comm, const void* send, void* recv, const size_t* counts,
                        tutti_dtype_t dtype, int root) {
  return guarded([&] { return c_scatterv(comm_of(comm), send, recv, counts, dtype, root); });
}
int tutti_allgatherv(const void* send, void* recv, const size_t* counts, tutti_dtype_t dtype) {
  return guarded([&] { return c_allgatherv(tutti::world(), send, recv, counts, dtype); });
}
int tutti_comm_allgatherv(tutti_comm_t comm, const void* send, void* recv, const size_t* counts,
                          tutti_dtype_t dtype) {
  return guarded([&] { return c_allgatherv(comm_of(comm), send, recv, counts, dtype); });
}
int tutti_reduce_scatterv(const void* send, void* recv, const size_t* counts, tutti_dtype_t dtype,
                          tutti_op_t op) {
  return guarded([&] { return c_reduce_scatterv(tutti::world(), send, recv, counts, dtype, op); });
}
int tutti_comm_reduce_scatterv(tutti_comm_t comm, const void* send, void* recv,
                               const size_t* counts, tutti_dtype_t dtype, tutti_op_t op) {
  return guarded([&] { return c_reduce_scatterv(comm_of(comm), send, recv, counts, dtype, op); });
}
int tutti_alltoall(const void* send, void* recv, size_t count, tutti_dtype_t dtype) {
  return guarded([&] { return c_alltoall(tutti::world(), send, recv, count, dtype); });
}
int tutti_comm_alltoall(tutti_comm_t comm, const void* send, void* recv, size_t count,
                        tutti_dtype_t dtype) {
  return guarded([&] { return c_alltoall(comm_of(comm), send, recv, count, dtype); });
}
int tutti_alltoallv(const void* send, const size_t* send_counts, void* recv,
                    const size_t* recv_counts, tutti_dtype_t dtype) {
  return guarded(
      [&] { return c_alltoallv(tutti::world(), send, send_counts, recv, recv_counts, dtype); });
}
int tutti_comm_alltoallv(tutti_comm_t comm, const void* send, const size_t* send_counts, void* recv,
                         const size_t* recv_counts, tutti_dtype_t dtype) {
  return guarded(
      [&] { return c_alltoallv(comm_of(comm), send, send_counts, recv, recv_counts, dtype); });
}

int tutti_comm_send(tutti_comm_t comm, const void* buf, size_t count, tutti_dtype_t dtype, int peer,
                    int tag) {
  return guarded([&] {
    comm_of(comm).send(buf, count, to_type(dtype), peer, tag);
    return 0;
  });
}
int tutti_comm_recv(tutti_comm_t comm, void* buf, size_t count, tutti_dtype_t dtype, int peer,
                    int tag) {
  return guarded([&] {
    comm_of(comm).recv(buf, count, to_type(dtype), peer, tag);
    return 0;
  });
}
int tutti_comm_isend(tutti_comm_t comm, const void* buf, size_t count, tutti_dtype_t dtype,
                     int peer, int tag, tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    return give(comm_of(comm).isend(buf, count, to_type(dtype), peer, tag), request);
  });
}
int tutti_comm_irecv(tutti_comm_t comm, void* buf, size_t count, tutti_dtype_t dtype, int peer,
                     int tag, tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    return give(comm_of(comm).irecv(buf, count, to_type(dtype), peer, tag), request);
  });
}
int tutti_test(tutti_request_t request, int* done) {
  return guarded([&] {
    if (request == nullptr || done == nullptr)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "tutti_test: null request or flag");
    if (request->handle) return poll_handle(request, done);
    *done = request->request.test() ? 1 : 0;
    if (*done) std::unique_ptr<tutti_request> owned(request);
    return 0;
  });
}
int tutti_wait(tutti_request_t request) {
  return guarded([&] {
    std::unique_ptr<tutti_request> owned(request);
    if (!owned) throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "tutti_wait: null request");
    if (owned->handle)
      owned->handle.wait();
    else
      owned->request.wait();
    return 0;
  });
}
int tutti_request_free(tutti_request_t request) {
  return guarded([&] {
    std::unique_ptr<tutti_request> owned(request);
    return 0;
  });
}

int tutti_set_stream(void* stream) {
  t_stream = stream;
  return 0;
}

int tutti_set_enqueue_only(int on) {
  t_enqueue_only = on != 0;
  return 0;
}

int tutti_comm_device_done(tutti_comm_t comm, int* done) {
  return guarded([&] {
    if (done == nullptr)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                         "tutti_comm_device_done: done is NULL");
    *done = comm_of(comm).device_done() ? 1 : 0;
    return 0;
  });
}

int tutti_comm_device_wait(tutti_comm_t comm) {
  return guarded([&] {
    comm_of(comm).device_wait();
    return 0;
  });
}

const char* tutti_last_error(void) {
  return t_last_error.c_str();
}

const char* tutti_error_name(int code) {
  switch (code) {
    case TUTTI_OK:
      return "TUTTI_OK";
    case TUTTI_ERR_INVALID_ARGUMENT:
      return "TUTTI_ERR_INVALID_ARGUMENT";
    case TUTTI_ERR_NOT_INITIALIZED:
      return "TUTTI_ERR_NOT_INITIALIZED";
    case TUTTI_ERR_TIMEOUT:
      return "TUTTI_ERR_TIMEOUT";
    case TUTTI_ERR_PEER_FAILURE:
      return "TUTTI_ERR_PEER_FAILURE";
    case TUTTI_ERR_MISMATCH:
      return "TUTTI_ERR_MISMATCH";
    case TUTTI_ERR_AUTH:
      return "TUTTI_ERR_AUTH";
    case TUTTI_ERR_SYSTEM:
      return "TUTTI_ERR_SYSTEM";
    case TUTTI_ERR_CONFIG:
      return "TUTTI_ERR_CONFIG";
    case TUTTI_ERR_INTERNAL:
      return "TUTTI_ERR_INTERNAL";
    case TUTTI_ERR_ABORTED:
      return "TUTTI_ERR_ABORTED";
    case TUTTI_ERR_DEVICE:
      return "TUTTI_ERR_DEVICE";
    default:
      return "TUTTI_ERR_UNKNOWN";
  }
}

}  // extern "C"

// The C enums are cast straight to the C++ ones; keep their values in step.
static_assert(TUTTI_FLOAT32 == static_cast<int>(tutti::DataType::kFloat32));
static_assert(TUTTI_BFLOAT16 == static_cast<int>(tutti::DataType::kBFloat16));
static_assert(TUTTI_UINT8 == static_cast<int>(tutti::DataType::kUInt8));
static_assert(TUTTI_AVG == static_cast<int>(tutti::ReduceOp::kAvg));
static_assert(TUTTI_BOOL == static_cast<int>(tutti::DataType::kBool));
static_assert(TUTTI_INT8 == static_cast<int>(tutti::DataType::kInt8));
static_assert(TUTTI_INT16 == static_cast<int>(tutti::DataType::kInt16));
static_assert(TUTTI_BXOR == static_cast<int>(tutti::ReduceOp::kBxor));
static_assert(TUTTI_BAND == static_cast<int>(tutti::ReduceOp::kBand));
static_assert(TUTTI_ERR_INTERNAL == -static_cast<int>(tutti::ErrorCode::kInternal));
static_assert(TUTTI_ERR_ABORTED == -static_cast<int>(tutti::ErrorCode::kAborted));
static_assert(TUTTI_ERR_DEVICE == -static_cast<int>(tutti::ErrorCode::kDevice));
static_assert(TUTTI_ERR_TIMEOUT == -static_cast<int>(tutti::ErrorCode::kTimeout));
