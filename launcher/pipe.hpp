// The launcher's pipes (rank output, the signal pipe, exec error reports), each end a net::Fd.
#pragma once

#include "net/fd.hpp"

namespace tutti::launcher {

// A pipe whose both ends are O_CLOEXEC (so no rank inherits another rank's pipe) and, when asked,
// O_NONBLOCK on the read end. Throws kSystem on failure.
struct Pipe {
  net::Fd read_end;
  net::Fd write_end;
};
Pipe make_pipe(bool nonblocking_read);

}  // namespace tutti::launcher
