// The TCP half of connect_mesh: listen and publish "<job>/tcp/<rank>" = "addr:port"; then connect
// to every lower TCP peer and accept every higher one, each connection opening with a Hello that
// carries the job token, then a stream header (index, count): with TUTTI_TCP_STREAMS=K each pair of
// ranks opens K connections, joined into one StripedChannel. Strangers and wrong tokens are refused
// while accepting goes on; a peer with another stream count is a configuration error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "net/congestion.hpp"
#include "net/socket.hpp"
#include "transport/link.hpp"
#include "transport/mesh_rendezvous.hpp"

namespace tutti::transport {

class TcpMesh {
 public:
  // Listens on config.listen_address (any port) and publishes the endpoint.
  TcpMesh(const MeshContext& context, std::vector<int> peers);

  // Call once every peer has published: fills channels[p] for every TCP peer p.
  void connect(std::vector<std::unique_ptr<Link>>& channels);

 private:
  void connect_to(int peer, std::vector<std::unique_ptr<Link>>& channels);
  void accept_from(const std::vector<int>& higher, std::vector<std::unique_ptr<Link>>& channels);
  std::unique_ptr<Link> make_channel(int peer, std::vector<net::Fd> sockets,
                                     const std::string& address) const;

  const MeshContext& context_;
  std::vector<int> peers_;
  net::Fd listener_;
  net::Endpoint endpoint_;
  int streams_;                        // TUTTI_TCP_STREAMS
  net::CongestionSetting congestion_;  // TUTTI_TCP_CONGESTION
  int buffer_bytes_;  // TUTTI_TCP_BUFFER_BYTES; 0 leaves the kernel's autotuning on
};

}  // namespace tutti::transport
