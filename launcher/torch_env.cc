#include "launcher/torch_env.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "bootstrap/etcd_store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "core/deadline.hpp"
#include "core/error.hpp"
#include "launcher/local_host.hpp"
#include "net/fd.hpp"
#include "net/socket.hpp"

namespace tutti::launcher {
namespace {

constexpr const char* kMasterKey = "tuttirun/torch_master";

bool exported(const std::vector<EnvExport>& exports, const std::string& name) {
  return std::any_of(exports.begin(), exports.end(),
                     [&](const EnvExport& e) { return e.name == name; });
}

}  // namespace

bool set_torch_identity(Environment& env, const std::vector<EnvExport>& exports,
                        const RankSlot& slot, int world_size) {
  env.set("RANK", std::to_string(slot.rank));
  env.set("WORLD_SIZE", std::to_string(world_size));
  env.set("LOCAL_RANK", std::to_string(slot.local_rank));
  env.set("LOCAL_WORLD_SIZE", std::to_string(slot.local_size));
  env.set("GROUP_RANK", std::to_string(slot.cross_rank));
  env.set("GROUP_WORLD_SIZE", std::to_string(slot.cross_size));
  // Inside a PyTorchJob pod these name that job's master, not this one's.
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT"})
    if (!exported(exports, name)) env.erase(name);
  // Each process of torch (and of any OpenMP program) starts a thread per core by default, so N
  // ranks on a host would run N x cores threads, and a rank's collectives wait behind its own
  // compute threads (FSDP on tutti 5-20x slower, docs/PERFORMANCE.md). torchrun sets 1 for the
  // same reason; the user's own value, inherited or exported, wins.
  if (slot.local_size > 1 && !env.get("OMP_NUM_THREADS") && !exported(exports, "OMP_NUM_THREADS")) {
    env.set("OMP_NUM_THREADS", "1");
    return true;
  }
  return false;
}

bool torch_master_exported(const std::vector<EnvExport>& exports) {
  bool addr = exported(exports, "MASTER_ADDR");
  bool port = exported(exports, "MASTER_PORT");
  if (addr != port)
    throw make_error(ErrorCode::kConfig,
                     "-x {} without -x {}: torch.distributed needs both, and tuttirun can only "
                     "choose them together (give both, or neither to let tuttirun choose)",
                     addr ? "MASTER_ADDR" : "MASTER_PORT", addr ? "MASTER_PORT" : "MASTER_ADDR");
  return port;
}

void set_torch_master(Environment& env, const TorchMaster& master) {
  env.set("MASTER_ADDR", master.address);
  env.set("MASTER_PORT", std::to_string(master.port));
}

uint16_t pick_free_tcp_port() {
  // IPv6's wildcard covers IPv4 too where the host allows dual stack (torch's TCPStore binds that
  // way); a host without IPv6 gets the IPv4 wildcard.
  for (int family : {AF_INET6, AF_INET}) {
    net::Fd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      len = sizeof(sockaddr_in6);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      len = sizeof(sockaddr_in);
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) continue;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    return family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                              : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  throw_system_error("bind a TCP socket to find a free port for MASTER_PORT", errno);
}

void arrange_torch_master(Environment& env, int rank, const std::string& store_address,
                          const std::string& job_token, int64_t timeout_ms) {
  Deadline deadline = Deadline::after(std::chrono::milliseconds(timeout_ms));
  std::unique_ptr<bootstrap::Store> opened;
  std::string local_address;
  if (store_address.starts_with("etcd")) {
    // tuttirun --store: this host's address is the one on its route to etcd.
    bootstrap::EtcdAddress etcd = bootstrap::parse_etcd_address(store_address, "TUTTI_STORE");
    opened = std::make_unique<bootstrap::EtcdStore>(etcd, std::chrono::seconds(10),
                                                    std::chrono::seconds(10), deadline);
    local_address = address_on_route_to(net::bare_host(etcd.endpoints.front().host))
                        .value_or(default_route_address().value_or("127.0.0.1"));
  } else {
    auto tcp = std::make_unique<bootstrap::TcpStore>(
        net::parse_endpoint(store_address, "TUTTI_STORE"), job_token, rank, deadline);
    local_address = tcp->local_address();
    opened = std::move(tcp);
  }
  bootstrap::Store& store = *opened;
  if (rank == 0) {
    TorchMaster master{local_address, pick_free_tcp_port()};
    store.set(kMasterKey, net::Endpoint{master.address, master.port}.to_string());
    set_torch_master(env, master);
    return;
  }
  std::string published;
  try {
    published = store.get(kMasterKey, deadline);
  } catch (const Error& e) {
    throw make_error(ErrorCode::kTimeout,
                     "rank {}: rank 0's host never published MASTER_ADDR/MASTER_PORT for "
                     "torch.distributed ({}); is rank 0's agent running? Give -x MASTER_ADDR=.. -x "
                     "MASTER_PORT=.. to choose them yourself",
                     rank, e.what());
  }
  net::Endpoint master = net::parse_endpoint(published, "rank 0's MASTER_ADDR:MASTER_PORT");
  set_torch_master(env, TorchMaster{net::bare_host(master.host), master.port});
}

}  // namespace tutti::launcher
