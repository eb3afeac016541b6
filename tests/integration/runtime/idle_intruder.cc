// idle_intruder: while a job forms, opens connections that never finish a handshake to the store
// port and to the data ports of ranks 0 .. N-2: most say nothing at all, some send garbage, some
// send half a Hello and stall. None needs the job token. Started by the last rank of the job before
// that rank itself starts: it announces the rank's host in the store (as the rank is about to) so
// that the other ranks open their data ports and wait there, finds those ports in the store (with
// the token, as any store client could; a port scan would find them too), opens its connections,
// creates the marker file argv[1] and holds them until it is killed (at most 120 s).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/tcp_store.hpp"
#include "bootstrap/world_info.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "net/socket.hpp"

using namespace tutti;

namespace {

constexpr int kSilentPerPort = 6;

std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    fmt::print(stderr, "idle_intruder: {} is not set; run me inside a tuttirun job\n", name);
    std::exit(2);
  }
  return v;
}

void send_text(const net::Fd& fd, const std::string& text) {
  net::write_all(fd.get(), std::as_bytes(std::span(text.data(), text.size())),
                 Deadline::after_seconds(5), "target");
}

// kSilentPerPort connections that say nothing, one speaking HTTP, one stalling after half a Hello.
void besiege(const net::Endpoint& target, std::vector<net::Fd>& held) {
  for (int i = 0; i < kSilentPerPort; ++i)
    held.push_back(net::connect_tcp(target, Deadline::after_seconds(10)));
  held.push_back(net::connect_tcp(target, Deadline::after_seconds(10)));
  send_text(held.back(), "GET / HTTP/1.1\r\nHost: tutti\r\n\r\n");
  held.push_back(net::connect_tcp(target, Deadline::after_seconds(10)));
  send_text(held.back(), std::string("TTUT\x01\x00", 6));  // magic and version, then silence
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: idle_intruder MARKER_FILE\n");
    return 2;
  }
  int size = 0;
  try {
    size = static_cast<int>(parse::integer(required_env("TUTTI_SIZE"), "TUTTI_SIZE", 2, 1 << 20));
  } catch (const Error& e) {
    fmt::print(stderr, "idle_intruder: {}\n", e.what());
    return 2;
  }
  const int last = size - 1;
  const std::string job = required_env("TUTTI_JOB_ID");
  net::Endpoint store_endpoint = net::parse_endpoint(required_env("TUTTI_STORE"), "TUTTI_STORE");
  std::vector<net::Fd> held;
  try {
    besiege(store_endpoint, held);
    bootstrap::TcpStore store(store_endpoint, required_env("TUTTI_JOB_TOKEN"), -1,
                              Deadline::after_seconds(30));
    // As a rank announces itself (comm/communicator_join.cc): "<world size> <host id>", here
    // without the second line of CPUs a rank adds (such a value counts as unknown CPUs).
    store.set(fmt::format("{}/host/{}", job, last),
              fmt::format("{} {}", size, bootstrap::default_host_id()));
    for (int r = 0; r < last; ++r) {
      std::string address =
          store.get(fmt::format("{}/tcp/{}", job, r), Deadline::after_seconds(30));
      besiege(net::parse_endpoint(address, fmt::format("rank {}'s data address", r)), held);
    }
  } catch (const Error& e) {
    fmt::print("idle_intruder: could not set up: {}\n", e.what());
    return 1;
  }
  fmt::print("idle_intruder: holding {} connections that never finish a handshake\n", held.size());
  std::fflush(stdout);
  std::ofstream(argv[1]) << "connected\n";
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}
