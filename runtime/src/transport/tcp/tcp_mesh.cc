#include "transport/tcp/tcp_mesh.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "net/handshake.hpp"
#include "net/handshake_acceptor.hpp"
#include "transport/framed_channel.hpp"
#include "transport/tcp/striped_channel.hpp"
#include "transport/tcp/tcp_stream.hpp"

namespace tutti::transport {
namespace {

// An accepted connection must say Hello (and its stream header) promptly. Handshakes run side by
// side, so this bounds what a silent stranger costs: a pending slot, not the peers' time.
constexpr auto kHelloBudget = std::chrono::seconds(5);
// Unauthenticated connections held at once; beyond that the oldest is dropped. Real peers rarely
// occupy a slot at all (their Hello has arrived when they are accepted), so this only bounds the
// file descriptors strangers can pin.
constexpr size_t kMaxPendingHandshakes = 256;

// After the Hello, the connecting side says which of how many streams this connection is, so the
// accepting side can order them however they arrive and refuse a peer configured differently.
using StreamHeader = std::array<std::byte, 8>;

// Says once per process what TUTTI_TCP_CONGESTION did to the data sockets: a switch (info), or
// an auto that could not leave BBR (warning: the setting's reason to exist is that BBR was slow).
void report_congestion(const net::CongestionResult& cc) {
  static std::atomic<bool> switched{false};
  static std::atomic<bool> kept{false};
  if (!cc.note.empty()) {
    if (!kept.exchange(true))
      log::warn(
          "TCP data sockets keep {} (TUTTI_TCP_CONGESTION=auto would use cubic): {}. Between veth "
          "pods BBR measured half of CUBIC's throughput; set TUTTI_TCP_CONGESTION=system to keep "
          "the kernel's choice without this warning",
          cc.before, cc.note);
  } else if (cc.before != cc.after && !switched.exchange(true)) {
    log::info(
        "TCP data sockets use {} instead of the kernel's {} (TUTTI_TCP_CONGESTION; system "
        "keeps the kernel's)",
        cc.after, cc.before);
  }
}

StreamHeader encode_stream_header(uint32_t index, uint32_t count) {
  StreamHeader h;
  std::memcpy(h.data(), &index, 4);
  std::memcpy(h.data() + 4, &count, 4);
  return h;
}

}  // namespace

TcpMesh::TcpMesh(const MeshContext& context, std::vector<int> peers)
    : context_(context),
      peers_(std::move(peers)),
      streams_(context.config.options.tcp_streams),
      congestion_(net::parse_congestion(context.config.options.tcp_congestion,
                                        "TUTTI_TCP_CONGESTION (Options::tcp_congestion)")),
      buffer_bytes_(static_cast<int>(context.config.options.tcp_buffer_bytes)) {
  const MeshConfig& c = context_.config;
  // Bounded like TUTTI_TCP_STREAMS / TUTTI_TCP_BUFFER_BYTES: more streams only multiply sockets.
  if (streams_ < 1 || streams_ > 16)
    throw make_error(ErrorCode::kConfig,
                     "TCP streams per pair (TUTTI_TCP_STREAMS, Options::tcp_streams) must be 1 to "
                     "16, not {}",
                     streams_);
  if (c.options.tcp_buffer_bytes > (size_t{1} << 30))
    throw make_error(ErrorCode::kConfig, "tcp buffer bytes must be at most 1G, not {}",
                     c.options.tcp_buffer_bytes);
  endpoint_.host = c.listen_address.empty() ? "127.0.0.1" : c.listen_address;
  listener_ = net::listen_tcp(endpoint_.host, 0, &endpoint_.port);
  // Accepted connections inherit the listener's congestion control, so BBR's start never runs
  // on them; set on an accepted socket instead, BBR would already have turned the kernel's own
  // pacing on, and it stays on under CUBIC (between 4 pods its timers took 4% of all CPU, and its
  // waits made a 97.5 MiB allreduce 1.4x slower).
  report_congestion(net::apply_congestion(
      listener_.get(), congestion_,
      fmt::format("the data connections rank {} accepts on {}", c.rank, endpoint_.to_string())));
  context_.store.set(context_.key("tcp", c.rank), endpoint_.to_string());
  log::debug("rank {} listens for data connections on {}", c.rank, endpoint_.to_string());
}

void TcpMesh::connect(std::vector<std::unique_ptr<Link>>& channels) {
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

void TcpMesh::connect_to(int peer, std::vector<std::unique_ptr<Link>>& channels) {
  const MeshConfig& c = context_.config;
  std::string text = context_.store.get(context_.key("tcp", peer), context_.deadline);
  net::Endpoint endpoint = net::parse_endpoint(text, fmt::format("data endpoint of rank {}", peer));
  std::string who = fmt::format("rank {} on host {} (tcp {})", peer, context_.host(peer), text);
  net::Hello hello;
  hello.kind = net::ConnectionKind::kData;
  hello.rank = c.rank;
  hello.token = c.job_token;
  std::vector<net::Fd> sockets;
  for (int i = 0; i < streams_; ++i) {
    net::Fd socket;
    try {
      // Chosen before the handshake, for the reason the listener's is (the constructor).
      socket = net::connect_tcp(
          endpoint, context_.deadline, net::RefusedConnection::kRetry, [&](int fd) {
            report_congestion(
                net::apply_congestion(fd, congestion_, "the data connection to " + who));
          });
      net::client_handshake(socket.get(), hello, context_.deadline, who);
      StreamHeader header = encode_stream_header(i, streams_);
      net::write_all(socket.get(), header, context_.deadline, who);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout) throw;
      context_.throw_missing({peer}, "accept this rank's data connection", text);
    }
    sockets.push_back(std::move(socket));
  }
  channels[peer] = make_channel(peer, std::move(sockets), text);
}

std::unique_ptr<Link> TcpMesh::make_channel(int peer, std::vector<net::Fd> sockets,
                                            const std::string& address) const {
  std::vector<std::unique_ptr<FramedChannel>> streams;
  const std::string who =
      fmt::format("rank {} on host {} (tcp {})", peer, context_.host(peer), address);
  for (auto& socket : sockets) {
    // Already chosen before the handshake; this catches a route that named another (`ip route
    // ... congctl`), which an accepted connection takes over its listener's.
    report_congestion(
        net::apply_congestion(socket.get(), congestion_, "the data connection to " + who));
    streams.push_back(std::make_unique<FramedChannel>(
        peer, std::make_unique<TcpStream>(std::move(socket), peer, context_.host(peer), address,
                                          buffer_bytes_)));
  }
  if (streams.size() == 1) return std::move(streams[0]);
  return std::make_unique<StripedChannel>(peer, std::move(streams));
}

void TcpMesh::accept_from(const std::vector<int>& higher,
                          std::vector<std::unique_ptr<Link>>& channels) {
  const MeshConfig& c = context_.config;
  std::vector<int> missing = higher;
  // Per expected peer: its streams by index, as they arrive in any order.
  std::vector<std::vector<net::Fd>> arrived(c.size);
  std::vector<int> arrived_count(c.size, 0);
  std::vector<std::string> addresses(c.size);
  net::HandshakeAcceptor acceptor(
      listener_.get(), net::HandshakePolicy{.expected_token = c.job_token,
                                            .kinds = {net::ConnectionKind::kData},
                                            .trailer_bytes = sizeof(StreamHeader),
                                            .per_connection = kHelloBudget,
                                            .max_pending = kMaxPendingHandshakes,
                                            .label = fmt::format("rank {}'s data port {}", c.rank,
                                                                 endpoint_.to_string())});
  while (!missing.empty()) {
    std::optional<net::AcceptedConnection> accepted = acceptor.next(context_.deadline);
    if (!accepted) context_.throw_missing(missing, "connect", endpoint_.to_string());
    const net::Hello& hello = accepted->hello;
    const std::string& address = accepted->address;
    auto it = std::find(missing.begin(), missing.end(), hello.rank);
    if (it == missing.end()) {
      log::warn("rank {} refused a data connection from {} claiming to be rank {}: {}", c.rank,
                address, hello.rank,
                hello.rank >= 0 && hello.rank < c.size && channels[hello.rank]
                    ? "that rank is already connected"
                    : "no such peer rank expected here");
      continue;
    }
    const int peer = hello.rank;
    uint32_t index = 0, count = 0;
    std::memcpy(&index, accepted->trailer.data(), 4);
    std::memcpy(&count, accepted->trailer.data() + 4, 4);
    if (count != static_cast<uint32_t>(streams_))
      throw make_error(ErrorCode::kConfig,
                       "rank {} (host {}) opens {} TCP streams per peer but rank {} (host {}) "
                       "expects {}: set the same TUTTI_TCP_STREAMS for every rank of the job",
                       peer, context_.host(peer), count, c.rank, context_.host(c.rank), streams_);
    std::vector<net::Fd>& streams = arrived[peer];
    streams.resize(streams_);
    if (index >= count || streams[index].valid()) {
      log::warn(
          "rank {} refused a data connection from {} claiming to be stream {} of {} of rank {}",
          c.rank, address, index, count, peer);
      continue;
    }
    streams[index] = std::move(accepted->fd);
    if (index == 0) addresses[peer] = address;
    if (++arrived_count[peer] < streams_) continue;
    missing.erase(it);
    channels[peer] = make_channel(peer, std::move(streams), addresses[peer]);
  }
}

}  // namespace tutti::transport
