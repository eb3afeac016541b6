// A communicator as tutti._core hands it to Python, and the exception type tutti::Error becomes:
// shared by module.cc (the collectives) and elastic.cc (tutti::elastic's loop and State).
#pragma once

#include <Python.h>

#include <cstdint>
#include <utility>

#include "tutti/tutti.hpp"

namespace tutti::python {

// Worlds this module finalized so far. A communicator holds the count it was made at, so that one
// kept past tutti.finalize() is refused as the C API refuses its handles, also once a new world
// exists. Read and written with the GIL held.
inline uint64_t g_worlds_finalized = 0;

struct PyComm {
  Communicator comm;
  uint64_t world = 0;
};

inline PyComm made_now(Communicator comm) {
  return {std::move(comm), g_worlds_finalized};
}

inline const Communicator& live(const PyComm& c) {
  if (c.world != g_worlds_finalized)
    throw Error(ErrorCode::kNotInitialized,
                "this Communicator belongs to a world that tutti.finalize() ended; make new "
                "communicators after tutti.init() (tutti.world(), split, dup, group)");
  return c.comm;
}

// tutti._core.Error (a RuntimeError with `code`, a tutti.ErrorCode), made by module.cc.
PyObject* error_type();

}  // namespace tutti::python
