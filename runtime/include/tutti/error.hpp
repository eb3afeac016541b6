// The one error type of tutti. Everything inside C++ throws tutti::Error; the C API turns it into
// a negative TUTTI_ERR_* code plus tutti_last_error().
#pragma once

#include <stdexcept>
#include <string>

namespace tutti {

// Values are the negated TUTTI_ERR_* codes of tutti.h.
enum class ErrorCode : int {
  kInvalidArgument = 1,  // the caller passed something wrong (null buffer, bad dtype, bad root)
  kNotInitialized = 2,   // tutti_init() was not called, or finalize already ran
  kTimeout = 3,          // a deadline passed (peer never arrived, collective stalled)
  kPeerFailure = 4,      // a peer died, closed its connection, or aborted
  kMismatch = 5,         // ranks called collectives that do not match (size, dtype, order)
  kAuth = 6,             // wrong job token, wrong magic or protocol version
  kSystem = 7,           // an OS call failed (socket, mmap, ...)
  kConfig = 8,           // bad environment variable or option
  kInternal = 9,         // a bug in tutti
  kAborted = 10,         // the communicator was aborted (abort(), or the launcher went away)
  kDevice = 11,  // a CUDA or NCCL call failed, or a device buffer met a build or host without one
};

// Default visibility so that catch (tutti::Error&) works across the libtutti.so boundary.
class __attribute__((visibility("default"))) Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace tutti
