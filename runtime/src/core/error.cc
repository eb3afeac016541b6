#include "core/error.hpp"

#include <cstring>

namespace tutti {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotInitialized:
      return "not initialized";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kPeerFailure:
      return "peer failure";
    case ErrorCode::kMismatch:
      return "mismatch";
    case ErrorCode::kAuth:
      return "authentication";
    case ErrorCode::kSystem:
      return "system";
    case ErrorCode::kConfig:
      return "configuration";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kAborted:
      return "aborted";
    case ErrorCode::kDevice:
      return "device";
  }
  return "unknown";
}

void throw_system_error(std::string_view what, int err) {
  throw make_error(ErrorCode::kSystem, "{}: {}", what, std::strerror(err));
}

}  // namespace tutti
