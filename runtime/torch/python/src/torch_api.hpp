// The c10d interface this extension is built against. PyTorch 1.13's backends subclass
// c10d::ProcessGroup; from 2.0 on they subclass c10d::Backend, which torch wraps in a ProcessGroup
// of its own (one per device type), and which gained the tensor-form and coalesced collectives,
// split, abort and shutdown. TUTTI_TORCH_BACKEND_API says which one this build has.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#define TUTTI_TORCH_BACKEND_API 1
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#define TUTTI_TORCH_BACKEND_API 0
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace tutti::torch_backend {

#if TUTTI_TORCH_BACKEND_API
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

}  // namespace tutti::torch_backend
