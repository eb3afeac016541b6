// What the C API's files share: the error funnel (guarded: every exception becomes a code and
// tutti_last_error()), the handle structs and the checks on C arguments.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "api/world_incarnation.hpp"
#include "tutti/tutti.h"
#include "tutti/tutti.hpp"

namespace tutti::c_support {

inline thread_local std::string t_last_error;
// tutti_set_stream: the CUDA stream this thread's calls on device buffers order after.
inline thread_local void* t_stream = nullptr;
// tutti_set_enqueue_only: this thread's device calls return once enqueued.
inline thread_local bool t_enqueue_only = false;

// The per-call options of a C call: its stream and whether it returns once enqueued (device
// buffers only read them).
inline tutti::CallOptions c_call_options() {
  tutti::CallOptions call;
  call.stream = t_stream;
  call.enqueue_only = t_enqueue_only;
  return call;
}

// The runtime's messages name the C++ API ("call tutti::init() first"); a C caller must read the
// names it can call.
inline std::string for_c_callers(std::string message) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"tutti::init()", "tutti_init()"}, {"tutti::finalize()", "tutti_finalize()"}};
  for (auto [cpp, c] : kNames)
    for (size_t at = message.find(cpp); at != std::string::npos;
         at = message.find(cpp, at + c.size()))
      message.replace(at, cpp.size(), c);
  return message;
}

inline int fail(tutti::ErrorCode code, const char* message) {
  t_last_error = for_c_callers(message);
  return -static_cast<int>(code);
}

template <typename Body>
inline int guarded(Body&& body) {
  try {
    t_last_error.clear();
    return body();
  } catch (const tutti::Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(tutti::ErrorCode::kSystem, "out of memory");
  } catch (const std::exception& e) {
    return fail(tutti::ErrorCode::kInternal, e.what());
  } catch (...) {
    return fail(tutti::ErrorCode::kInternal, "unknown exception");
  }
}

inline tutti::DataType to_type(tutti_dtype_t t) {
  return static_cast<tutti::DataType>(t);
}
inline tutti::ReduceOp to_op(tutti_op_t op) {
  return static_cast<tutti::ReduceOp>(op);
}

}  // namespace tutti::c_support

// The C handles own a C++ handle each.
struct tutti_comm {
  tutti::Communicator comm;
  int incarnation = 0;  // the world it was made in (tutti::world_incarnation())
};
struct tutti_request {
  tutti::Request request;  // a point-to-point operation
  tutti::Handle handle;    // or an engine operation, when set
};

namespace tutti::c_support {

template <typename T>
T* out_pointer(T* out) {
  if (out == nullptr) throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "null output pointer");
  return out;
}

inline tutti::Communicator& comm_of(tutti_comm_t comm) {
  if (comm == nullptr) throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "null tutti_comm_t");
  // A handle kept past tutti_finalize() belongs to a world that is over (it used to go on working,
  // against the README), also after a new tutti_init().
  if (comm->incarnation != tutti::world_incarnation() || !tutti::initialized())
    throw tutti::Error(tutti::ErrorCode::kNotInitialized,
                       "this tutti_comm_t belongs to a world that tutti_finalize() ended; "
                       "tutti_comm_free it, and make new handles after tutti_init()");
  return comm->comm;
}

// Hands a new handle to C: it is the caller's until tutti_comm_free.
inline int give(tutti::Communicator comm, tutti_comm_t* out) {
  if (out == nullptr) throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "null output pointer");
  *out = comm
             ? std::make_unique<tutti_comm>(tutti_comm{std::move(comm), tutti::world_incarnation()})
                   .release()
             : nullptr;
  return 0;
}

inline int give(tutti::Request request, tutti_request_t* out) {
  if (out == nullptr)
    throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "null request pointer");
  auto r = std::make_unique<tutti_request>();
  r->request = std::move(request);
  *out = r.release();
  return 0;
}

// tutti_test/tutti_poll on an engine operation: *done = 1 once finished, and then the request is
// freed and the operation's own result returned.
int poll_handle(tutti_request_t request, int* done);

}  // namespace tutti::c_support
