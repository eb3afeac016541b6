// token_intruder: knocks on the job's store port and on rank 0's data port with a wrong job token
// and reports whether each refused it. Started by rank 2 of a job before rank 2 itself starts: it
// announces rank 2's host in the store (as rank 2 is about to) so that ranks 0 and 1 go on to open
// their data ports and wait there for rank 2, then knocks on rank 0's port with the wrong token.
// It uses the real token only to talk to the store, as any client of the store could.
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "bootstrap/world_info.hpp"
#include "core/error.hpp"
#include "net/handshake.hpp"
#include "net/socket.hpp"

using namespace tutti;

namespace {

std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    fmt::print(stderr, "token_intruder: {} is not set; run me inside a tuttirun job\n", name);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  // argv[1]: a file to create once the data connection is open, so the test starts rank 2 only
  // then.
  std::string connected_marker = argc > 1 ? argv[1] : "";
  const std::string wrong_token = "not-the-job-token";
  net::Endpoint store_endpoint = net::parse_endpoint(required_env("TUTTI_STORE"), "TUTTI_STORE");
  std::string job = required_env("TUTTI_JOB_ID");
  bool store_refused = false, data_refused = false;

  try {
    bootstrap::TcpStore stranger(store_endpoint, wrong_token, -1, Deadline::after_seconds(10));
    stranger.set("intruder", "was here");
  } catch (const Error& e) {
    store_refused = e.code() == ErrorCode::kAuth;
    fmt::print("token_intruder: {} by the store: {}\n", store_refused ? "refused" : "failed",
               e.what());
  }

  try {
    bootstrap::TcpStore store(store_endpoint, required_env("TUTTI_JOB_TOKEN"), -1,
                              Deadline::after_seconds(10));
    // As rank 2 of 3 announces itself (comm/communicator_join.cc): "<world size> <host id>".
    store.set(fmt::format("{}/host/2", job), fmt::format("3 {}", bootstrap::default_host_id()));
    std::string address = store.get(fmt::format("{}/tcp/0", job), Deadline::after_seconds(30));
    auto endpoint = net::parse_endpoint(address, "rank 0's data address");
    net::Fd fd = net::connect_tcp(endpoint, Deadline::after_seconds(10));
    // Rank 0 handshakes with connections only after every rank has published its address, so the
    // verdict comes once the real rank 2 has started.
    if (!connected_marker.empty()) std::ofstream(connected_marker) << "connected\n";
    net::Hello hello{net::ConnectionKind::kData, 2, wrong_token};
    net::client_handshake(fd.get(), hello, Deadline::after_seconds(60), "rank 0");
  } catch (const Error& e) {
    data_refused = e.code() == ErrorCode::kAuth;
    fmt::print("token_intruder: {} by rank 0's data port: {}\n",
               data_refused ? "refused" : "failed", e.what());
  }
  return store_refused && data_refused ? 0 : 1;
}
