// What the C API's entry points share, for those defined outside c_api.cc (api/mpi/).
#pragma once

#include <functional>

#include "tutti/tutti.h"
#include "tutti/tutti.hpp"

namespace tutti::c_api {

// Runs body; an exception becomes a negative code and the message of tutti_last_error().
int guarded(const std::function<int()>& body);
// Hands a new handle to C: it is the caller's until tutti_comm_free.
int give(Communicator comm, tutti_comm_t* out);

}  // namespace tutti::c_api
