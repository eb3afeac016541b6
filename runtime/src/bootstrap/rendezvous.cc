#include "bootstrap/rendezvous.hpp"

#include <fstream>
#include <optional>

#include "bootstrap/memory_store.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "net/host_interfaces.hpp"
#include "net/socket.hpp"

namespace tutti::bootstrap {
namespace {

// PMI keys of the store's address and the job token rank 0 publishes.
constexpr const char* kStoreKey = "tutti-store";
constexpr const char* kTokenKey = "tutti-token";

std::string random_token() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::array<unsigned char, 16> raw{};
  if (!urandom.read(reinterpret_cast<char*>(raw.data()), raw.size()))
    throw make_error(ErrorCode::kSystem, "cannot read /dev/urandom to draw a job token");
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

// Rank 0's address as the other ranks reach it: loopback when every rank shares its host (it
// always works there), else its first non-loopback address that is up (IPv4 first).
std::string root_address(bool one_host) {
  if (one_host) return "127.0.0.1";
  std::string ipv6;
  for (const auto& a : net::host_interface_addresses()) {
    if (!a.up || a.loopback || a.link_local_ipv6()) continue;
    if (!a.ipv6()) return a.address;
    if (ipv6.empty()) ipv6 = a.address;
  }
  return ipv6.empty() ? "127.0.0.1" : ipv6;
}

// Rank 0 starts the store server (any free port); every rank then connects to `address`.
struct HostedStore {
  std::unique_ptr<TcpStoreServer> server;
  std::string address;
};

HostedStore host_store(int rank, const std::string& token, bool one_host) {
  HostedStore hosted;
  hosted.server = std::make_unique<TcpStoreServer>("", 0, token);
  hosted.address = net::Endpoint{root_address(one_host), hosted.server->port()}.to_string();
  log::debug("rank {} hosts the store at {}", rank, hosted.address);
  return hosted;
}

StoreConnection connect_to(const std::string& address, const std::string& token, int rank,
                           std::unique_ptr<TcpStoreServer> server, Deadline deadline,
                           std::chrono::milliseconds request_timeout) {
  StoreConnection connection;
  connection.server = std::move(server);
  auto store = std::make_unique<TcpStore>(net::parse_endpoint(address, "the rendezvous store"),
                                          token, rank, deadline, request_timeout);
  connection.local_address = store->local_address();
  connection.store = std::move(store);
  return connection;
}

void check_same_world(const WorldInfo& info, const MpiSession& mpi) {
  if (mpi.rank() == info.rank && mpi.size() == info.size) return;
  throw make_error(ErrorCode::kConfig,
                   "the {} launcher's variables say rank {} of {} but MPI ({}) says rank {} of {}; "
                   "was the program started by a different MPI than the one libtutti uses?",
                   info.source, info.rank, info.size, mpi.library(), mpi.rank(), mpi.size());
}

Rendezvous through_pmi(WorldInfo& info, Rendezvous r, Deadline deadline,
                       std::chrono::milliseconds request_timeout) {
  // One broadcast: "address token"; the token is hex or the user's TUTTI_JOB_TOKEN (which every
  // rank already has), so it goes last and may hold anything.
  r.pmi = info.pmi_fd >= 0 ? PmiClient::over_fd(info.pmi_fd, info.rank)
                           : PmiClient::over_port(info.pmi_port, info.pmi_id, info.rank, deadline);
  PmiClient& pmi = *r.pmi;
  if (info.numbered_at_rendezvous) {
    // PMI_PORT without PMI_RANK/PMI_SIZE: the launcher numbered us in its answer to cmd=initack.
    if (pmi.launcher_size() < 1 || pmi.launcher_rank() < 0 ||
        pmi.launcher_rank() >= pmi.launcher_size())
      throw make_error(ErrorCode::kPeerFailure,
                       "the PMI launcher at PMI_PORT={} numbered this process rank {} of {}; "
                       "expected a rank in [0, size)",
                       info.pmi_port, pmi.launcher_rank(), pmi.launcher_size());
    info.rank = pmi.launcher_rank();
    info.size = pmi.launcher_size();
    info.local_rank = info.local_size = info.cross_rank = info.cross_size = -1;
  }
  pmi.init(deadline);
  r.how = fmt::format("PMI ({})", pmi.kvs_name());
  HostedStore hosted;
  if (info.rank == 0) {
    std::string token = info.job_token.empty() ? random_token() : info.job_token;
    // Hydra says how many ranks share this host (MPI_LOCALNRANKS); unknown means maybe several.
    hosted = host_store(info.rank, token, info.local_size == info.size);
    pmi.put(kStoreKey, hosted.address, deadline);
    // A TUTTI_JOB_TOKEN every rank has is not published; a drawn one is.
    if (info.job_token.empty()) pmi.put(kTokenKey, token, deadline);
  }
  pmi.barrier(deadline);
  const std::string address = pmi.get(kStoreKey, deadline);
  r.job_token = info.job_token.empty() ? pmi.get(kTokenKey, deadline) : info.job_token;
  if (address.empty() || r.job_token.empty())
    throw make_error(ErrorCode::kPeerFailure,
                     "rank {}: the PMI launcher's key-value space {} holds no store address from "
                     "rank 0 after the barrier",
                     info.rank, pmi.kvs_name());
  r.connection = connect_to(address, r.job_token, info.rank, std::move(hosted.server), deadline,
                            request_timeout);
  return r;
}

}  // namespace

Rendezvous rendezvous_over_mpi(std::shared_ptr<MpiSession> mpi, const std::string& job_token,
                               Deadline deadline, std::chrono::milliseconds request_timeout) {
  Rendezvous r;
  r.mpi = std::move(mpi);
  const int rank = r.mpi->rank();
  r.how = fmt::format("MPI ({})", r.mpi->library());
  if (r.mpi->size() == 1) {
    r.connection.store = std::make_unique<MemoryStore>();
    r.job_token = job_token;
    return r;
  }
  HostedStore hosted;
  std::string sent;
  std::optional<Error> failure;
  if (rank == 0) {
    try {
      const std::string token = job_token.empty() ? random_token() : job_token;
      hosted = host_store(rank, token, r.mpi->local_size() == r.mpi->size());
      sent = hosted.address + " " + token;
    } catch (const Error& e) {
      // The others wait in the broadcast: tell them why there is no store.
      failure = e;
      sent = std::string("!") + e.what();
    }
  }
  // One broadcast: "address token"; the address holds no space, the token (drawn hex, or the
  // user's TUTTI_JOB_TOKEN) goes last and may hold anything. "!reason" when rank 0 failed.
  const std::string both = r.mpi->broadcast(sent, deadline, "the rendezvous store's address");
  if (failure) throw *failure;
  if (both.starts_with("!"))
    throw make_error(ErrorCode::kPeerFailure, "rank {}: rank 0 could not start the store: {}", rank,
                     both.substr(1));
  const size_t space = both.find(' ');
  r.job_token = both.substr(space + 1);
  r.connection = connect_to(both.substr(0, space), r.job_token, rank, std::move(hosted.server),
                            deadline, request_timeout);
  return r;
}

Rendezvous rendezvous(WorldInfo& info, bool need_mpi, Deadline deadline,
                      std::chrono::milliseconds request_timeout,
                      std::chrono::seconds etcd_lease_ttl) {
  const bool store_given = !info.store_address.empty();
  Rendezvous r;
  // A PMI launcher (Hydra's mpiexec, srun --mpi=pmi2) serves an MPICH-family MPI too: its MPI_Init
  // speaks that PMI, and tutti's own PMI client stays off the connection MPI uses. Another MPI
  // would come up as a world of one there (Hydra's -pmi-port numbers no one but through PMI), so
  // it meets through tutti's PMI client, and TUTTI_TRANSPORT=mpi is refused.
  const bool pmi_launcher = info.pmi_fd >= 0 || !info.pmi_port.empty();
  const bool mpi_meets = info.mpi_launcher || (pmi_launcher && MpiSession::serves_pmi_launcher());
  if (need_mpi && !mpi_meets)
    throw make_error(ErrorCode::kConfig,
                     "rank {}: TUTTI_TRANSPORT=mpi needs a job started by an MPI launcher of the "
                     "MPI libtutti was built with (Open MPI: mpirun or srun --mpi=pmix; MPICH or "
                     "Intel MPI: also Hydra's mpiexec or srun --mpi=pmi2); this one was started by "
                     "the {} launcher{}; use tcp or shm, or start it with that MPI's launcher",
                     info.rank, info.source,
                     pmi_launcher && MpiSession::available()
                         ? ", whose PMI this libtutti's MPI does not speak"
                         : "");
  if (need_mpi || (mpi_meets && !store_given)) {
    if (!MpiSession::available())
      throw make_error(
          ErrorCode::kConfig,
          "rank {}: {}, but this libtutti was built without MPI "
          "(TUTTI_WITH_MPI): rebuild it with an MPI (Open MPI, MPICH or Intel MPI), or give a "
          "store (TUTTI_STORE, or MASTER_ADDR and MASTER_PORT with mpirun -x)",
          info.rank, need_mpi ? "TUTTI_TRANSPORT=mpi" : "the job was started by mpirun");
    r.mpi = MpiSession::world();
    // Before the store: a rank that fails here must not leave the others waiting for its store.
    if (need_mpi) r.mpi->require_transport_thread_level(r.mpi->rank());
    if (info.source == "default" || info.numbered_at_rendezvous) {
      // Only PMIX_RANK was set (a PMIx launcher other than Open MPI's mpirun), or Hydra's
      // -pmi-port mode, which numbers a process only in its PMI answers: MPI numbers us.
      if (info.source == "default") info.source = "pmix";
      info.numbered_at_rendezvous = false;
      info.rank = r.mpi->rank();
      info.size = r.mpi->size();
      info.local_rank = r.mpi->local_rank();
      info.local_size = r.mpi->local_size();
      info.cross_rank = info.cross_size = -1;
      if (info.size > 1) info.job_id.clear();  // rank 0 draws one in the store
    }
    check_same_world(info, *r.mpi);
  }
  if (store_given && info.numbered_at_rendezvous)
    throw make_error(ErrorCode::kConfig,
                     "the PMI launcher at PMI_PORT={} tells rank and size only through PMI, but a "
                     "store was given (TUTTI_STORE or MASTER_ADDR): unset it so that the ranks "
                     "meet through PMI",
                     info.pmi_port);
  if (store_given) {
    r.connection = open_store(info, deadline, request_timeout, etcd_lease_ttl);
    r.job_token = info.job_token;
    r.how = fmt::format("store at {}", info.store_address);
    return r;
  }
  if (r.mpi)
    return rendezvous_over_mpi(std::move(r.mpi), info.job_token, deadline, request_timeout);
  if (info.pmi_fd >= 0 || !info.pmi_port.empty())
    return through_pmi(info, std::move(r), deadline, request_timeout);
  r.connection = open_store(info, deadline, request_timeout);  // a world of one, or the error
  r.job_token = info.job_token;
  r.how = "no store (a world of one)";
  return r;
}

}  // namespace tutti::bootstrap
