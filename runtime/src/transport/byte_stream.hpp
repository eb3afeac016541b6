// ByteStream: the only thing a transport backend (TCP socket, shared-memory ring pair) provides.
// Framing, tag matching and failure bookkeeping live once, in FramedChannel, on top of it.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace tutti::transport {

using ConstPieces = std::span<const std::span<const std::byte>>;
using Pieces = std::span<const std::span<std::byte>>;

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // Both move bytes without blocking, filling/draining the pieces in order, and return how many
  // bytes moved (0 when nothing can move now). They throw Error(kPeerFailure) naming the peer when
  // it closed the connection or died.
  virtual size_t write_some(ConstPieces pieces) = 0;
  virtual size_t read_some(Pieces pieces) = 0;

  virtual int wait_fd() const = 0;
  virtual int liveness_fd() const { return -1; }
  virtual std::string describe() const = 0;
  virtual std::string_view kind() const = 0;
};

}  // namespace tutti::transport
