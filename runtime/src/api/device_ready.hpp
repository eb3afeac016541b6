// Device buffers at the API: whether a call's buffers are on a GPU, and the readiness the engine
// waits for when the caller gave none (the stream the caller named, else the legacy default
// stream, which orders after every kernel of the classic CUDA programming model).
#pragma once

#include <memory>

#include "tutti/async.hpp"

namespace tutti::api {

bool on_device(const void* a, const void* b);
// Null for host buffers (ready now); an event recorded on `stream` for device buffers.
std::shared_ptr<ReadyEvent> ready_for(const void* send, const void* recv, void* stream);

}  // namespace tutti::api
