// TcpStream: a ByteStream over one connected, non-blocking TCP socket to a peer rank.
#pragma once

#include <string>

#include "net/socket.hpp"
#include "transport/byte_stream.hpp"

namespace tutti::transport {

class TcpStream final : public ByteStream {
 public:
  // Takes a connected socket; makes it non-blocking with TCP_NODELAY and, when buffer_bytes > 0,
  // send and receive buffers of that size (capped by net.core.{w,r}mem_max).
  TcpStream(net::Fd socket, int peer, std::string peer_host, std::string peer_address,
            int buffer_bytes = kDefaultBufferBytes);

  static constexpr int kDefaultBufferBytes = 4 << 20;

  size_t write_some(ConstPieces pieces) override;
  size_t read_some(Pieces pieces) override;
  void drain_before_close(Deadline deadline) override;
  int wait_fd() const override { return socket_.get(); }
  std::string describe() const override;
  TransportKind kind() const override { return TransportKind::kTcp; }

 private:
  [[noreturn]] void throw_lost(int err) const;

  net::Fd socket_;
  int peer_;
  std::string peer_host_;
  std::string peer_address_;
};

}  // namespace tutti::transport
