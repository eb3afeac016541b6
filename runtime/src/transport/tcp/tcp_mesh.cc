#include "transport/tcp/tcp_mesh.hpp"

#include <algorithm>
#include <chrono>

#include "bootstrap/handshake.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "transport/framed_channel.hpp"
#include "transport/tcp/tcp_stream.hpp"

namespace tutti::transport {
namespace {

// An accepted connection must say Hello promptly; a silent stranger may not hold up the mesh.
constexpr auto kHelloBudget = std::chrono::seconds(10);

}  // namespace

TcpMesh::TcpMesh(const MeshContext& context, std::vector<int> peers)
    : context_(context), peers_(std::move(peers)) {
  const MeshConfig& c = context_.config;
  endpoint_.host = c.listen_address.empty() ? "127.0.0.1" : c.listen_address;
  listener_ = bootstrap::listen_tcp(endpoint_.host, 0, &endpoint_.port);
  context_.store.set(context_.key("tcp", c.rank), endpoint_.to_string());
  log::debug("rank {} listens for data connections on {}", c.rank, endpoint_.to_string());
}

void TcpMesh::connect(std::vector<std::unique_ptr<Channel>>& channels) {
  const int rank = context_.config.rank;
  std::vector<int> higher;
  // Lower ranks first: they only wait for us once they reach their accept loop, and the chain
  // ends at rank 0, which only accepts; so no cycle of waits can form.
  for (int peer : peers_) {
    if (peer < rank)
      connect_to(peer, channels);
    else
      higher.push_back(peer);
  }
  if (!higher.empty()) accept_from(higher, channels);
}

void TcpMesh::connect_to(int peer, std::vector<std::unique_ptr<Channel>>& channels) {
  const MeshConfig& c = context_.config;
  std::string text = context_.store.get(context_.key("tcp", peer), context_.deadline);
  bootstrap::Endpoint endpoint =
      bootstrap::parse_endpoint(text, fmt::format("data endpoint of rank {}", peer));
  std::string who = fmt::format("rank {} on host {} (tcp {})", peer, context_.host(peer), text);
  bootstrap::Hello hello;
  hello.kind = bootstrap::ConnectionKind::kData;
  hello.rank = c.rank;
  hello.token = c.job_token;
  bootstrap::Fd socket;
  try {
    socket = bootstrap::connect_tcp(endpoint, context_.deadline);
    bootstrap::client_handshake(socket.get(), hello, context_.deadline, who);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw;
    context_.throw_missing({peer}, "accept this rank's data connection", text);
  }
  channels[peer] = std::make_unique<FramedChannel>(
      peer, std::make_unique<TcpStream>(std::move(socket), peer, context_.host(peer), text));
}

void TcpMesh::accept_from(const std::vector<int>& higher,
                          std::vector<std::unique_ptr<Channel>>& channels) {
  const MeshConfig& c = context_.config;
  std::vector<int> missing = higher;
  while (!missing.empty()) {
    std::string address;
    bootstrap::Fd socket = bootstrap::accept_tcp(listener_.get(), context_.deadline, &address);
    if (!socket.valid()) context_.throw_missing(missing, "connect", endpoint_.to_string());
    bootstrap::Hello hello;
    try {
      hello = bootstrap::server_handshake(socket.get(), c.job_token,
                                          context_.deadline.earlier(Deadline::after(kHelloBudget)),
                                          address);
    } catch (const Error& e) {
      log::warn("rank {} refused a data connection from {}: {}", c.rank, address, e.what());
      continue;
    }
    auto it = std::find(missing.begin(), missing.end(), hello.rank);
    if (hello.kind != bootstrap::ConnectionKind::kData || it == missing.end()) {
      log::warn("rank {} refused a data connection from {} claiming to be rank {} (kind {}): {}",
                c.rank, address, hello.rank, static_cast<int>(hello.kind),
                hello.kind != bootstrap::ConnectionKind::kData ? "not a data connection"
                : hello.rank >= 0 && hello.rank < c.size && channels[hello.rank]
                    ? "that rank is already connected"
                    : "no such peer rank expected here");
      continue;
    }
    missing.erase(it);
    int peer = hello.rank;
    channels[peer] = std::make_unique<FramedChannel>(
        peer, std::make_unique<TcpStream>(std::move(socket), peer, context_.host(peer), address));
  }
}

}  // namespace tutti::transport
