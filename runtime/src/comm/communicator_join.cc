// Joining a world: through the store a launcher names (tutti::init), or a caller's store. Both
// meet the same way: a job id for the namespace, every rank's host id, then the fabric of
// connections and the world communicator (context 0) on it.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "bootstrap/elastic_keys.hpp"
#include "bootstrap/node_cpus.hpp"
#include "bootstrap/rendezvous.hpp"
#include "bootstrap/store_adapters.hpp"
#include "comm/communicator.hpp"
#include "comm/forming_store.hpp"
#include "comm/shared_store.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "net/host_interfaces.hpp"
#include "net/socket.hpp"
#include "transport/mesh.hpp"

namespace tutti::comm {
namespace {

std::string random_hex(size_t bytes) {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!urandom.read(raw.data(), static_cast<std::streamsize>(bytes)))
    throw make_error(ErrorCode::kSystem, "cannot read /dev/urandom to make a job id");
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// Every rank publishes its host id; this both tells us who shares memory and is the point where a
// rank that never started is noticed, so the error lists exactly the missing ranks. The world size
// goes with it ("<size> <host>"): ranks that were told different sizes (torch's new_group with
// different member lists on different ranks) fail at once naming the disagreement, instead of
// one going on alone into the transports and the other timing out.
//
// Ranks told different sizes may also be told the same rank (torch: new_group([0, 1]) on rank 0,
// new_group([1]) on rank 1: both are rank 0 of their group, under the same keys), and then one
// value overwrites the other. So each rank also claims its index with a counter: a second claim
// fails at once, and so does the first one's wait, which sees the count go up. `also_claimed`
// (when given) is a counter the rank claimed before (rank 0's claim on drawing the job id).
//
// A second line carries the rank's CPUs and machine (bootstrap/node_cpus.hpp) for the cost model;
// a value without it (a process of an older build) counts as unknown CPUs.
struct RankHosts {
  std::vector<std::string> hosts;
  std::vector<bootstrap::NodeCpus> cpus;
};

RankHosts exchange_host_ids(bootstrap::Store& store, const std::string& job_id, int rank, int size,
                            const std::string& host_id, Deadline deadline, double timeout_s,
                            const std::string& also_claimed) {
  auto key = [&](int r) { return fmt::format("{}/host/{}", job_id, r); };
  const std::string claim = key(rank) + "/claims";
  auto check_claims = [&](int64_t mine) {
    int64_t other = 0;
    if (mine <= 1 && !also_claimed.empty()) other = store.add(also_claimed, 0);
    if (mine > 1 || other > 1)
      throw make_error(ErrorCode::kMismatch,
                       "init: another process joined as rank {} under the same store keys ({}) "
                       "while this one joins as rank {} of {}; every rank must be given the same "
                       "members, and each world a store (or prefix) of its own (torch: call "
                       "new_group with the same ranks on every member)",
                       rank, store.describe(), rank, size);
  };
  check_claims(store.add(claim, 1));
  const bootstrap::NodeCpus my_cpus = bootstrap::node_cpus_here();
  store.set(key(rank), fmt::format("{} {}\n{}", size, host_id, bootstrap::to_string(my_cpus)));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(key(r));
  // The host id of a published value, after checking the size that came with it.
  auto host_of = [&](int r, const std::string& value) {
    const size_t space = value.find(' ');
    const std::string said = value.substr(0, space);
    if (space == std::string::npos || said != std::to_string(size))
      throw make_error(ErrorCode::kMismatch,
                       "init: rank {} joins a world of {} ranks, but rank {} joins one of {} under "
                       "the same store keys ({}); every rank must be given the same size (torch: "
                       "call new_group with the same ranks on every member)",
                       rank, size, r, said, store.describe());
    // The CPUs are the last line, so a host id (TUTTI_HOST) with a newline of its own survives.
    const size_t line = value.rfind('\n');
    bootstrap::NodeCpus cpus;
    if (line != std::string::npos)
      cpus = bootstrap::parse_node_cpus(std::string_view(value).substr(line + 1))
                 .value_or(bootstrap::NodeCpus{});
    return std::pair{value.substr(space + 1, line == std::string::npos ? line : line - space - 1),
                     std::move(cpus)};
  };
  // Each peer's value is read once, as soon as it is there: a 128-rank world must not re-read
  // every present key every slice.
  std::vector<std::optional<std::pair<std::string, bootstrap::NodeCpus>>> hosts(
      static_cast<size_t>(size));
  hosts[static_cast<size_t>(rank)] = std::pair{host_id, my_cpus};
  auto fetch = [&](int r) {
    if (!hosts[static_cast<size_t>(r)])
      hosts[static_cast<size_t>(r)] = host_of(r, store.get(keys[static_cast<size_t>(r)], deadline));
  };
  for (;;) {
    try {
      store.wait(keys, Deadline::after(std::chrono::milliseconds(100)).earlier(deadline));
      break;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout) throw;
    }
    const std::vector<std::string> missing_keys = store.missing(keys);
    const std::unordered_set<std::string> absent(missing_keys.begin(), missing_keys.end());
    std::vector<int> missing;
    for (int r = 0; r < size; ++r) {
      if (absent.contains(keys[static_cast<size_t>(r)]))
        missing.push_back(r);
      else
        fetch(r);  // a disagreement ends the wait now
    }
    if (missing.empty()) break;
    check_claims(store.add(claim, 0));
    if (!deadline.expired()) continue;
    throw make_error(
        ErrorCode::kTimeout,
        "init: timed out after {} s (TUTTI_TIMEOUT) waiting for rank{} {} of {} to join the store "
        "at {}; check that every rank was started and can reach the store",
        timeout_s, missing.size() == 1 ? "" : "s", join_ranks(missing), size, store.describe());
  }
  RankHosts out;
  for (int r = 0; r < size; ++r) {
    fetch(r);
    auto& [host, cpus] = *hosts[static_cast<size_t>(r)];
    out.hosts.push_back(std::move(host));
    out.cpus.push_back(std::move(cpus));
  }
  return out;
}

// What both ways of joining know before meeting.
struct Joining {
  int rank = 0;
  int size = 1;
  std::string host_id;
  std::string job_id;  // empty: rank 0 draws one and publishes it under `id_key`
  std::string id_key;
  std::string job_token;
  std::string local_address;   // our address that reaches the store ("" if unknown)
  std::string ifname_address;  // the address Options::socket_ifname selects ("" if unset)
};

// Where this rank listens for peers, which is also the address it advertises to them: an explicit
// listen_address (TUTTI_ADDR) wins, then the interface socket_ifname (TUTTI_SOCKET_IFNAME)
// selects, then the address that reaches the store, else loopback.
std::string listen_address(const Options& options, const Joining& j) {
  if (!options.listen_address.empty()) return net::bare_host(options.listen_address);
  if (!j.ifname_address.empty()) return j.ifname_address;
  if (!j.local_address.empty()) return j.local_address;
  return "127.0.0.1";
}

// The address socket_ifname selects, chosen before the rank meets anyone so that a pattern that
// matches nothing fails this rank at once, naming it, instead of its peers at their timeout.
std::string ifname_address(const Options& options, int rank) {
  if (options.socket_ifname.empty() || !options.listen_address.empty()) return "";
  return net::select_interface_address(options.socket_ifname, fmt::format("rank {}", rank));
}

std::shared_ptr<Job> meet(std::shared_ptr<Job> job, const Joining& j, const Options& options,
                          Deadline deadline) {
  bootstrap::Store& store = *job->store;
  job->job_id = j.job_id;
  job->job_token = j.job_token;
  job->local_address = j.local_address;
  std::string drawn_claim;
  if (job->job_id.empty()) {
    // Without a launcher-given id, rank 0 draws one so that concurrent jobs never share keys or
    // shared-memory names. Two processes that both think they are rank 0 would each draw one
    // (and then wait apart): the second to claim the drawing fails at once, the first in its wait.
    if (j.rank == 0) {
      drawn_claim = j.id_key + "/drawers";
      if (store.add(drawn_claim, 1) > 1)
        throw make_error(ErrorCode::kMismatch,
                         "init: another process joined as rank 0 under the same store keys ({}) "
                         "while this one joins as rank 0 of {}; every rank must be given the "
                         "same members, and each world a store (or prefix) of its own (torch: "
                         "call new_group with the same ranks on every member)",
                         store.describe(), j.size);
      store.set(j.id_key, "job-" + random_hex(8));
    }
    job->job_id = store.get(j.id_key, deadline);
  }
  RankHosts met =
      exchange_host_ids(store, job->job_id, j.rank, j.size, j.host_id, deadline,
                        std::chrono::duration<double>(options.init_timeout).count(), drawn_claim);
  job->host_ids = std::move(met.hosts);
  job->node_cpus = std::move(met.cpus);

  transport::MeshConfig mesh;
  mesh.rank = j.rank;
  mesh.size = j.size;
  mesh.host_ids = job->host_ids;
  mesh.job_id = job->job_id;
  mesh.job_token = j.job_token;
  mesh.listen_address = listen_address(options, j);
  mesh.options = options;
  mesh.mpi = job->mpi;
  job->fabric = transport::connect_fabric(mesh, store, deadline);
  return job;
}

std::shared_ptr<Communicator> world_of(const std::shared_ptr<Job>& job, const Options& options,
                                       Deadline deadline, int size) {
  std::vector<int> members(size);
  for (int r = 0; r < size; ++r) members[r] = r;
  return Communicator::make(job, 0, std::move(members), options, deadline);
}

// Where a rank that meets through a caller's store listens when nothing says: the address this
// host's name resolves to (a pod's IP under Kubernetes; IPv4 first, else IPv6 that is neither
// loopback nor link-local), else loopback (one host).
std::string host_name_address() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(name.data(), nullptr, &hints, &found) != 0 || found == nullptr)
    return "127.0.0.1";
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
  std::string ipv4, ipv6;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    std::array<char, NI_MAXHOST> text{};
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text.data(), text.size(), nullptr, 0,
                    NI_NUMERICHOST) != 0)
      continue;
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      if (ipv4.empty() && (ntohl(in->sin_addr.s_addr) >> 24) != 127) ipv4 = text.data();
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (ipv6.empty() && !IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) &&
          !IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr))
        ipv6 = text.data();
    }
  }
  return !ipv4.empty() ? ipv4 : !ipv6.empty() ? ipv6 : "127.0.0.1";
}

// Where a process started into a running elastic job (TUTTI_ELASTIC_EPOCH > 0) goes: it says it
// arrived, then waits for the launcher to publish a membership at least as new as the one it was
// started for (the launcher publishes once every newcomer arrived or died), and finds its member
// id there.
struct ElasticPlace {
  int rank = 0;
  int size = 1;
  int64_t epoch = 0;
  std::string job_id;
};

ElasticPlace elastic_place(bootstrap::Store& store, int64_t started_for, Deadline deadline) {
  namespace keys = bootstrap::elastic_keys;
  const int member = static_cast<int>(env::get_int("TUTTI_MEMBER_ID"));
  store.set(keys::arrived(member), "1");
  int64_t epoch = store.add(std::string(keys::kEpoch), 0);
  while (epoch < started_for) {
    if (deadline.expired())
      throw make_error(ErrorCode::kTimeout,
                       "init: member {} was started into membership {} of an elastic job, but "
                       "the launcher has published only {} so far (its store {}); raise "
                       "TUTTI_TIMEOUT if the other newcomers are slow to start",
                       member, started_for, epoch, store.describe());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    epoch = store.add(std::string(keys::kEpoch), 0);
  }
  const std::string text = store.get(keys::members(epoch), deadline);
  const std::vector<int> ids = keys::parse_members(text);
  const auto at = std::find(ids.begin(), ids.end(), member);
  if (at == ids.end())
    throw make_error(ErrorCode::kAborted,
                     "init: member {} is not in membership {} ({}) of the elastic job it was "
                     "started into: the launcher left it out",
                     member, epoch, text);
  const std::string base = env::get_string("TUTTI_ELASTIC_JOB");
  return ElasticPlace{static_cast<int>(at - ids.begin()), static_cast<int>(ids.size()), epoch,
                      keys::job_id(base, epoch)};
}

// The job of a world that met through `met`: its store (and store server), MPI and PMI.
std::shared_ptr<Job> job_of(bootstrap::Rendezvous& met) {
  auto job = std::make_shared<Job>();
  job->mpi = std::move(met.mpi);
  job->pmi = std::move(met.pmi);
  job->server = std::move(met.connection.server);
  job->store = std::make_shared<SharedStore>(std::move(met.connection.store));
  return job;
}

void check_options(const Options& options) {
  if (options.segment_bytes == 0)
    throw make_error(ErrorCode::kConfig,
                     "Options::segment_bytes (TUTTI_SEGMENT_BYTES) must be > 0");
  if (options.init_timeout.count() <= 0 || options.timeout.count() <= 0)
    throw make_error(ErrorCode::kConfig, "Options: init_timeout and timeout must be positive");
}

}  // namespace

std::shared_ptr<Communicator> Communicator::create(const bootstrap::WorldInfo& launcher_info,
                                                   const Options& options, int incarnation) {
  check_options(options);
  bootstrap::WorldInfo info = launcher_info;  // MPI may number a PMIx launcher's ranks
  log::set_rank(info.rank);
  const std::string chosen_by_ifname = ifname_address(options, info.rank);
  const Deadline deadline = Deadline::after(options.init_timeout);
  bootstrap::Rendezvous met =
      bootstrap::rendezvous(info, options.transport == TransportKind::kMpi, deadline,
                            options.init_timeout, options.etcd_lease_ttl);
  log::set_rank(info.rank);
  log::debug("rank {} of {} meets the others through {}", info.rank, info.size, met.how);
  auto job = job_of(met);
  // A process the launcher started into a running elastic job learns its place from the store.
  const int64_t epoch =
      env::is_set("TUTTI_ELASTIC_EPOCH") ? env::get_int("TUTTI_ELASTIC_EPOCH") : -1;
  int64_t formed_epoch = epoch;
  std::shared_ptr<FormingStore> forming;
  if (epoch > 0) {
    const ElasticPlace place = elastic_place(*job->store, epoch, deadline);
    // As the running members' regroup: a member that ends before the membership formed ends this
    // meeting too (kPeerFailure), and this process with it.
    forming = std::make_shared<FormingStore>(job->store, place.epoch);
    job->store = forming;
    info.rank = place.rank;
    info.size = place.size;
    info.local_rank = -1;  // the launcher's guess; the host ids say
    info.job_id = place.job_id;
    formed_epoch = place.epoch;
    log::set_rank(info.rank);
  }
  // A later incarnation's names differ from the earlier ones' (the same TUTTI_JOB_ID, the same
  // store): its shared-memory segments would otherwise meet the ones the ranks of the world before
  // were still unlinking ("not a tutti segment of this version").
  const std::string again = incarnation > 0 ? fmt::format("-w{}", incarnation) : "";
  Joining j{.rank = info.rank,
            .size = info.size,
            .host_id = info.host_id,
            .job_id = info.job_id.empty() ? "" : info.job_id + again,
            .id_key = "tutti/job_id" + again,
            .job_token = met.job_token,
            .local_address = met.connection.local_address,
            .ifname_address = chosen_by_ifname};
  std::shared_ptr<Communicator> world;
  try {
    meet(job, j, options, deadline);
    world = world_of(job, options, deadline, info.size);
  } catch (const Error&) {
    if (forming) forming->throw_if_abandoned(deadline);
    throw;
  }
  const Topology& topology = world->topology();
  // A launcher may number a host's ranks in its own order (Open MPI 5 maps round-robin over
  // packages): only a different count means the two disagree on who shares this host.
  if (info.local_rank >= 0 && info.local_size != topology.local_size)
    log::warn(
        "launcher says local rank {}/{} but host ids say {}/{}; using the host ids (set TUTTI_HOST "
        "to override)",
        info.local_rank, info.local_size, topology.local_rank, topology.local_size);
  else if (info.local_rank >= 0 && info.local_rank != topology.local_rank)
    log::debug("launcher numbers this rank {} of {} on its host, host ids {}; using the host ids",
               info.local_rank, info.local_size, topology.local_rank);

  // (An etcd store is not the launcher's: tuttirun --store leaves the ranks without a lifeline.)
  if (info.launcher_lifeline && !info.store_address.empty() &&
      !info.store_address.starts_with("file:") && !info.store_address.starts_with("etcd")) {
    // The launcher holds the store; when its connection drops the launcher is gone and nobody will
    // ever collect this rank's result: every call from then on fails (the launcher's process
    // group and parent-death signals stop the rank itself; the library never ends the process).
    std::string where = info.store_address;
    std::weak_ptr<Job> weak = job;
    job->lifeline = std::make_unique<bootstrap::StoreLifeline>(
        net::parse_endpoint(info.store_address, "TUTTI_STORE"), info.job_token, info.rank, deadline,
        [weak, where] {
          log::error("lost the connection to the launcher's store at {}: the launcher is gone",
                     where);
          if (auto job = weak.lock())
            job->fail_all(make_error(ErrorCode::kAborted,
                                     "the launcher is gone (its store at {} closed the "
                                     "connection): the job is over",
                                     where));
        },
        info.launch_id);
  }
  // A member of an elastic job's membership (tuttirun --max-np) tells the launcher it is in.
  // A newcomer goes on only once the launcher says every member met (a member that ended
  // meanwhile sends them all back, and this process out).
  if (forming)
    forming->await_outcome(deadline);
  else if (formed_epoch >= 0)
    job->store->add(bootstrap::elastic_keys::formed(formed_epoch), 1);
  log::debug("joined world of {} as rank {} (local {}/{}, host {}/{}), job {}", info.size,
             info.rank, topology.local_rank, topology.local_size, topology.cross_rank,
             topology.cross_size, job->job_id);
  return world;
}

std::shared_ptr<Communicator> Communicator::create(std::shared_ptr<tutti::Store> store, int rank,
                                                   int size, const Options& options) {
  check_options(options);
  if (size < 1 || rank < 0 || rank >= size)
    throw make_error(ErrorCode::kInvalidArgument,
                     "Communicator::create: rank {} is not a rank of a world of {}", rank, size);
  // The i-th create() of each process meets the i-th of the others, unless a name says otherwise.
  static std::atomic<uint64_t> creates{0};
  const std::string name =
      options.name.empty() ? fmt::format("comm-{}", creates.fetch_add(1)) : options.name;
  log::set_rank_if_unknown(rank);
  const std::string chosen_by_ifname = ifname_address(options, rank);
  const Deadline deadline = Deadline::after(options.init_timeout);
  auto job = std::make_shared<Job>();
  job->store = std::make_shared<SharedStore>(bootstrap::adopt_user_store(std::move(store)));
  Joining j{.rank = rank,
            .size = size,
            .host_id = options.host_id.empty() ? bootstrap::default_host_id() : options.host_id,
            .job_id = {},
            .id_key = fmt::format("tutti/{}/job_id", name),
            .job_token = options.job_token,
            .local_address = host_name_address(),
            .ifname_address = chosen_by_ifname};
  meet(job, j, options, deadline);
  return world_of(job, options, deadline, size);
}

std::shared_ptr<Communicator> Communicator::create(std::shared_ptr<bootstrap::MpiSession> mpi,
                                                   const Options& options) {
  check_options(options);
  const int rank = mpi->rank();
  const int size = mpi->size();
  log::set_rank_if_unknown(rank);
  const std::string chosen_by_ifname = ifname_address(options, rank);
  const Deadline deadline = Deadline::after(options.init_timeout);
  bootstrap::Rendezvous met = bootstrap::rendezvous_over_mpi(std::move(mpi), options.job_token,
                                                             deadline, options.init_timeout);
  auto job = job_of(met);
  Joining j{.rank = rank,
            .size = size,
            .host_id = options.host_id.empty() ? bootstrap::default_host_id() : options.host_id,
            .job_id = {},
            .id_key = "tutti/job_id",
            .job_token = met.job_token,
            .local_address = met.connection.local_address,
            .ifname_address = chosen_by_ifname};
  meet(job, j, options, deadline);
  return world_of(job, options, deadline, size);
}

int64_t Communicator::membership_epoch() {
  return job_->store->add(std::string(bootstrap::elastic_keys::kEpoch), 0);
}

std::shared_ptr<Communicator> Communicator::regroup(int64_t epoch) {
  namespace keys = bootstrap::elastic_keys;
  const Deadline deadline = Deadline::after(options_.init_timeout);
  const int fabric_rank = members_[static_cast<size_t>(rank_)];
  const int member = env::is_set("TUTTI_MEMBER_ID")
                         ? static_cast<int>(env::get_int("TUTTI_MEMBER_ID"))
                         : fabric_rank;
  const std::string text = job_->store->get(keys::members(epoch), deadline);
  const std::vector<int> ids = keys::parse_members(text);
  if (ids.empty())
    throw make_error(ErrorCode::kInvalidArgument,
                     "regroup: membership {} in the store ({}) is not a list of member ids: '{}'",
                     epoch, job_->store->describe(), text);
  const auto at = std::find(ids.begin(), ids.end(), member);
  if (at == ids.end())
    throw make_error(ErrorCode::kInvalidArgument,
                     "regroup: member {} (rank {} of {}) is not in membership {} ({}); the "
                     "launcher left this process out (it counted it as failed?)",
                     member, rank_, size_, epoch, text);
  const std::string base =
      env::is_set("TUTTI_ELASTIC_JOB") ? env::get_string("TUTTI_ELASTIC_JOB") : job_->job_id;
  auto job = std::make_shared<Job>();
  // The launcher's, shared with the world before; while the membership forms, a member that ends
  // makes the launcher abandon it, which ends every wait of the meeting at once.
  auto forming = std::make_shared<FormingStore>(job_->store, epoch);
  job->store = forming;
  Joining j{.rank = static_cast<int>(at - ids.begin()),
            .size = static_cast<int>(ids.size()),
            .host_id = job_->host_ids[static_cast<size_t>(fabric_rank)],
            .job_id = keys::job_id(base, epoch),
            .id_key = {},
            .job_token = job_->job_token,
            .local_address = job_->local_address,
            .ifname_address = ifname_address(options_, rank_)};
  std::shared_ptr<Communicator> world;
  try {
    meet(job, j, options_, deadline);
    world = world_of(job, options_, deadline, j.size);
  } catch (const Error& e) {
    // A member that ended mid-meeting breaks it in many ways (a wait, a refused connection): the
    // launcher's outcome says whether that is why. Every member then goes back alike.
    forming->throw_if_abandoned(deadline);
    throw;
  }
  // Every member goes on in the new world only once all met there: the launcher decides it once,
  // so that a member that ends now sends all of them back, not some.
  forming->await_outcome(deadline);
  log::debug("member {} regrouped as rank {} of {} in membership {}", member, j.rank, j.size,
             epoch);
  return world;
}

}  // namespace tutti::comm
