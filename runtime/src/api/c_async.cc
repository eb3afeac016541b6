// The C API of the engine: the *_async calls, tutti_poll / tutti_wait_for / tutti_request_then,
// the engine's counters and the timeline.
#include <algorithm>
#include <chrono>
#include <vector>

#include "api/c_support.hpp"
#include "api/device_ready.hpp"

using namespace tutti::c_support;

namespace tutti::c_support {

int poll_handle(tutti_request_t request, int* done) {
  *done = request->handle.poll() ? 1 : 0;
  if (*done) {
    std::unique_ptr<tutti_request> owned(request);
    owned->handle.wait();
  }
  return 0;
}

}  // namespace tutti::c_support

namespace {

int give(tutti::Handle handle, tutti_request_t* out) {
  auto r = std::make_unique<tutti_request>();
  r->handle = std::move(handle);
  *out = r.release();
  return 0;
}

const char* name_of(const char* name) {
  if (name == nullptr) throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "null tensor name");
  return name;
}

tutti::Communicator world_comm() {
  return tutti::world();
}

}  // namespace

extern "C" {

int tutti_comm_allreduce_async(tutti_comm_t comm, const char* name, const void* send, void* recv,
                               size_t count, tutti_dtype_t dtype, tutti_op_t op, double prescale,
                               double postscale, tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    tutti::AsyncOptions options;
    options.prescale = prescale;
    options.postscale = postscale;
    options.ready = tutti::api::ready_for(send, recv, t_stream);
    return give(comm_of(comm).allreduce_async(name_of(name), send, recv, count, to_type(dtype),
                                              to_op(op), options),
                request);
  });
}

int tutti_comm_allgather_async(tutti_comm_t comm, const char* name, const void* send, size_t rows,
                               size_t row_count, tutti_dtype_t dtype, void* recv,
                               size_t recv_capacity, size_t* rows_per_rank,
                               tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    if (recv == nullptr)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                         "tutti_comm_allgather_async: null receive buffer");
    tutti::AsyncOptions options;
    options.rows_per_rank = rows_per_rank;
    options.ready = tutti::api::ready_for(send, recv, t_stream);
    return give(comm_of(comm).allgather_async(name_of(name), send, rows, row_count, to_type(dtype),
                                              recv, recv_capacity, options),
                request);
  });
}

int tutti_comm_broadcast_async(tutti_comm_t comm, const char* name, void* buf, size_t count,
                               tutti_dtype_t dtype, int root, tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    tutti::AsyncOptions options;
    options.ready = tutti::api::ready_for(buf, buf, t_stream);
    return give(
        comm_of(comm).broadcast_async(name_of(name), buf, count, to_type(dtype), root, options),
        request);
  });
}

int tutti_comm_reduce_scatter_async(tutti_comm_t comm, const char* name, const void* send,
                                    void* recv, size_t recv_count, tutti_dtype_t dtype,
                                    tutti_op_t op, tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    tutti::AsyncOptions options;
    options.ready = tutti::api::ready_for(send, recv, t_stream);
    return give(comm_of(comm).reduce_scatter_async(name_of(name), send, recv, recv_count,
                                                   to_type(dtype), to_op(op), options),
                request);
  });
}

int tutti_comm_alltoall_async(tutti_comm_t comm, const char* name, const void* send,
                              const size_t* send_rows, size_t row_count, tutti_dtype_t dtype,
                              void* recv, size_t recv_capacity, size_t* rows_per_rank,
                              tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    tutti::Communicator& c = comm_of(comm);
    if (send_rows == nullptr || recv == nullptr)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                         "tutti_comm_alltoall_async: null send_rows or receive buffer");
    std::span<const size_t> rows(send_rows, static_cast<size_t>(c.size()));
    tutti::AsyncOptions options;
    options.rows_per_rank = rows_per_rank;
    return give(c.alltoall_async(name_of(name), send, rows, row_count, to_type(dtype), recv,
                                 recv_capacity, options),
                request);
  });
}

int tutti_comm_barrier_async(tutti_comm_t comm, tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    return give(comm_of(comm).barrier_async(), request);
  });
}

int tutti_comm_join_async(tutti_comm_t comm, int* last_joined, tutti_request_t* request) {
  return guarded([&] {
    out_pointer(request);
    tutti::AsyncOptions options;
    options.last_joined = last_joined;
    return give(comm_of(comm).join(options), request);
  });
}

int tutti_allreduce_async(const char* name, const void* send, void* recv, size_t count,
                          tutti_dtype_t dtype, tutti_op_t op, tutti_request_t* request) {
  return guarded([&] {
    tutti_comm c{world_comm()};
    return tutti_comm_allreduce_async(&c, name, send, recv, count, dtype, op, 1.0, 1.0, request);
  });
}
int tutti_allgather_async(const char* name, const void* send, size_t rows, size_t row_count,
                          tutti_dtype_t dtype, void* recv, size_t recv_capacity,
                          size_t* rows_per_rank, tutti_request_t* request) {
  return guarded([&] {
    tutti_comm c{world_comm()};
    return tutti_comm_allgather_async(&c, name, send, rows, row_count, dtype, recv, recv_capacity,
                                      rows_per_rank, request);
  });
}
int tutti_broadcast_async(const char* name, void* buf, size_t count, tutti_dtype_t dtype, int root,
                          tutti_request_t* request) {
  return guarded([&] {
    tutti_comm c{world_comm()};
    return tutti_comm_broadcast_async(&c, name, buf, count, dtype, root, request);
  });
}
int tutti_reduce_scatter_async(const char* name, const void* send, void* recv, size_t recv_count,
                               tutti_dtype_t dtype, tutti_op_t op, tutti_request_t* request) {
  return guarded([&] {
    tutti_comm c{world_comm()};
    return tutti_comm_reduce_scatter_async(&c, name, send, recv, recv_count, dtype, op, request);
  });
}
int tutti_alltoall_async(const char* name, const void* send, const size_t* send_rows,
                         size_t row_count, tutti_dtype_t dtype, void* recv, size_t recv_capacity,
                         size_t* rows_per_rank, tutti_request_t* request) {
  return guarded([&] {
    tutti_comm c{world_comm()};
    return tutti_comm_alltoall_async(&c, name, send, send_rows, row_count, dtype, recv,
                                     recv_capacity, rows_per_rank, request);
  });
}
int tutti_barrier_async(tutti_request_t* request) {
  return guarded([&] {
    tutti_comm c{world_comm()};
    return tutti_comm_barrier_async(&c, request);
  });
}
int tutti_join_async(int* last_joined, tutti_request_t* request) {
  return guarded([&] {
    tutti_comm c{world_comm()};
    return tutti_comm_join_async(&c, last_joined, request);
  });
}

int tutti_poll(tutti_request_t request, int* done) {
  return tutti_test(request, done);
}

int tutti_wait_for(tutti_request_t request, long timeout_ms) {
  return guarded([&] {
    if (request == nullptr)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "tutti_wait_for: null request");
    if (timeout_ms < 0)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "tutti_wait_for: negative timeout");
    if (!request->handle)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                         "tutti_wait_for takes engine requests; use tutti_wait for point-to-point");
    try {
      request->handle.wait(std::chrono::milliseconds(timeout_ms));
    } catch (const tutti::Error& e) {
      if (!request->handle.poll()) return static_cast<int>(TUTTI_PENDING);  // the wait ran out
      std::unique_ptr<tutti_request> owned(request);
      throw;
    }
    std::unique_ptr<tutti_request> owned(request);
    return 0;
  });
}

int tutti_request_then(tutti_request_t request, tutti_callback_t callback, void* user_data) {
  return guarded([&] {
    if (request == nullptr || callback == nullptr)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                         "tutti_request_then: null request or callback");
    if (!request->handle)
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                         "tutti_request_then takes engine requests only");
    std::unique_ptr<tutti_request> owned(request);
    tutti::Handle h = owned->handle;
    owned.reset();
    h.then([callback, user_data](const tutti::Error* error) {
      if (error)
        callback(-static_cast<int>(error->code()), error->what(), user_data);
      else
        callback(0, "", user_data);
    });
    return 0;
  });
}

int tutti_comm_engine_stats(tutti_comm_t comm, tutti_engine_stats_t* stats) {
  return guarded([&] {
    out_pointer(stats);
    const tutti::EngineStats s = comm_of(comm).engine_stats();
    *stats = tutti_engine_stats_t{s.cycles, s.tensors,    s.collectives,
                                  s.fused,  s.cache_hits, s.announced};
    return 0;
  });
}

int tutti_start_timeline(const char* path) {
  return guarded([&] {
    if (path == nullptr || *path == '\0')
      throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "tutti_start_timeline: empty path");
    tutti::start_timeline(path);
    return 0;
  });
}
int tutti_stop_timeline(void) {
  return guarded([&] {
    tutti::stop_timeline();
    return 0;
  });
}

}  // extern "C"
