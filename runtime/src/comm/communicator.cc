#include "comm/communicator.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "bootstrap/socket.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
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
// rank that never started is noticed, so the error lists exactly the missing ranks.
std::vector<std::string> exchange_host_ids(bootstrap::Store& store, const std::string& job_id,
                                           int rank, int size, const std::string& host_id,
                                           Deadline deadline, double timeout_s) {
  auto key = [&](int r) { return fmt::format("{}/host/{}", job_id, r); };
  store.set(key(rank), host_id);
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(key(r));
  try {
    store.wait(keys, deadline);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw;
    std::vector<std::string> missing_keys = store.missing(keys);
    std::vector<int> missing;
    for (int r = 0; r < size; ++r)
      if (std::find(missing_keys.begin(), missing_keys.end(), key(r)) != missing_keys.end())
        missing.push_back(r);
    throw make_error(
        ErrorCode::kTimeout,
        "init: timed out after {} s (TUTTI_TIMEOUT) waiting for rank{} {} of {} to join the store "
        "at {}; check that every rank was started and can reach the store",
        timeout_s, missing.size() == 1 ? "" : "s", join_ranks(missing), size, store.describe());
  }
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) hosts.push_back(store.get(key(r), deadline));
  return hosts;
}

}  // namespace

Settings Settings::from_env() {
  Settings s;
  s.init_timeout_s = env::get_seconds("TUTTI_TIMEOUT");
  s.collective_timeout_s = env::get_seconds("TUTTI_COLLECTIVE_TIMEOUT");
  s.algorithm = collectives::parse_algorithm(env::get_choice("TUTTI_ALGO"));
  s.segment_bytes = env::get_bytes("TUTTI_SEGMENT_BYTES");
  if (s.segment_bytes == 0) throw make_error(ErrorCode::kConfig, "TUTTI_SEGMENT_BYTES must be > 0");
  s.shm_ring_bytes = env::get_bytes("TUTTI_SHM_RING_BYTES");
  s.transport = env::get_choice("TUTTI_TRANSPORT");
  s.listen_address = env::get_string("TUTTI_ADDR");
  return s;
}

std::unique_ptr<Communicator> Communicator::create(const bootstrap::WorldInfo& info,
                                                   const Settings& settings) {
  auto c = std::make_unique<Communicator>(Key{});
  c->rank_ = info.rank;
  c->size_ = info.size;
  c->settings_ = settings;
  log::set_rank(info.rank);
  Deadline deadline = Deadline::after_seconds(settings.init_timeout_s);

  c->store_ = bootstrap::open_store(info, deadline);
  bootstrap::Store& store = *c->store_.store;

  c->job_id_ = info.job_id;
  if (c->job_id_.empty()) {
    // Without a launcher-given id, rank 0 draws one so that concurrent jobs never share keys or
    // shared-memory names.
    if (info.rank == 0) store.set("tutti/job_id", "job-" + random_hex(8));
    c->job_id_ = store.get("tutti/job_id", deadline);
  }

  std::vector<std::string> hosts = exchange_host_ids(
      store, c->job_id_, info.rank, info.size, info.host_id, deadline, settings.init_timeout_s);
  c->topology_ = topology_from_hosts(hosts, info.rank);
  c->host_of_rank_ = host_index_of_ranks(hosts);
  if (info.local_rank >= 0 &&
      (info.local_rank != c->topology_.local_rank || info.local_size != c->topology_.local_size))
    log::warn(
        "launcher says local rank {}/{} but host ids say {}/{}; using the host ids (set TUTTI_HOST "
        "to override)",
        info.local_rank, info.local_size, c->topology_.local_rank, c->topology_.local_size);

  transport::MeshConfig mesh;
  mesh.rank = info.rank;
  mesh.size = info.size;
  mesh.host_ids = hosts;
  mesh.job_id = c->job_id_;
  mesh.job_token = info.job_token;
  mesh.listen_address = !settings.listen_address.empty()   ? settings.listen_address
                        : !c->store_.local_address.empty() ? c->store_.local_address
                                                           : "127.0.0.1";
  mesh.choice = settings.transport == "tcp"   ? transport::TransportChoice::kTcp
                : settings.transport == "shm" ? transport::TransportChoice::kShm
                                              : transport::TransportChoice::kAuto;
  mesh.shm_ring_bytes = settings.shm_ring_bytes;
  c->transport_ = transport::connect_mesh(mesh, store, deadline);

  if (env::is_set("TUTTI_LAUNCHER") && !info.store_address.empty() &&
      !info.store_address.starts_with("file:")) {
    // The launcher holds the store; when its connection drops the launcher is gone and nobody will
    // ever collect this rank's result, so the rank leaves instead of running on as an orphan.
    std::string where = info.store_address;
    c->lifeline_ = std::make_unique<bootstrap::StoreLifeline>(
        bootstrap::parse_endpoint(info.store_address, "TUTTI_STORE"), info.job_token, info.rank,
        deadline, [where] {
          log::error(
              "lost the connection to the launcher's store at {}: the launcher is gone; exiting",
              where);
          std::_Exit(1);
        });
  }
  log::debug("joined world of {} as rank {} (local {}/{}, host {}/{}), job {}", info.size,
             info.rank, c->topology_.local_rank, c->topology_.local_size, c->topology_.cross_rank,
             c->topology_.cross_size, c->job_id_);
  return c;
}

Communicator::~Communicator() = default;

namespace {

transport::CallSignature signature(transport::CallKind kind, size_t count, DataType type, int op,
                                   int root) {
  return {.kind = kind,
          .dtype = static_cast<int8_t>(type),
          .op = static_cast<int8_t>(op),
          .root = root,
          .count = count};
}

// Marks the communicator busy for one call: a second thread entering meanwhile is refused instead
// of corrupting the first call's state.
class ExclusiveCall {
 public:
  ExclusiveCall(std::atomic<bool>& busy, int rank, std::string_view name) : busy_(busy) {
    if (busy_.exchange(true, std::memory_order_acquire))
      throw make_error(
          ErrorCode::kInvalidArgument,
          "{} on rank {}: another thread is running a collective on this communicator right "
          "now. A communicator runs one collective at a time: call it from one thread (or "
          "serialize the calls)",
          name, rank);
  }
  ~ExclusiveCall() { busy_.store(false, std::memory_order_release); }
  ExclusiveCall(const ExclusiveCall&) = delete;
  ExclusiveCall& operator=(const ExclusiveCall&) = delete;

 private:
  std::atomic<bool>& busy_;
};

}  // namespace

template <typename Body>
void Communicator::run(std::string_view name, transport::CallSignature call, Body&& body) {
  ExclusiveCall exclusive(busy_, rank_, name);
  if (failure_) throw *failure_;
  uint64_t sequence = ++sequence_;
  call.sequence = sequence;
  transport_->begin_call(call);
  collectives::Context ctx{*transport_,
                           rank_,
                           size_,
                           sequence,
                           Deadline::after_seconds(settings_.collective_timeout_s),
                           settings_.segment_bytes,
                           scratch_,
                           host_of_rank_,
                           &selection_};
  try {
    try {
      body(ctx);
    } catch (const std::bad_alloc&) {
      throw make_error(ErrorCode::kSystem, "out of memory on rank {} in {}: {}", rank_, name,
                       call.describe());
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument)
      throw;  // nothing was sent; the world is still usable
    std::string reason =
        fmt::format("rank {} failed in {} (collective #{}): {}", rank_, name, sequence, e.what());
    transport_->abort_all(reason, e.code());
    failure_.emplace(e.code(), reason);
    throw *failure_;
  }
}

void Communicator::allreduce(const void* send, void* recv, size_t count, DataType type,
                             ReduceOp op) {
  run("allreduce",
      signature(transport::CallKind::kAllreduce, count, type, static_cast<int>(op), -1),
      [&](collectives::Context& ctx) {
        collectives::allreduce(ctx, settings_.algorithm, send, recv, count, type, op);
      });
}

void Communicator::broadcast(void* buf, size_t count, DataType type, int root) {
  run("broadcast", signature(transport::CallKind::kBroadcast, count, type, -1, root),
      [&](collectives::Context& ctx) { collectives::broadcast(ctx, buf, count, type, root); });
}

void Communicator::allgather(const void* send, void* recv, size_t count, DataType type) {
  run("allgather", signature(transport::CallKind::kAllgather, count, type, -1, -1),
      [&](collectives::Context& ctx) { collectives::allgather(ctx, send, recv, count, type); });
}

void Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type,
                                  ReduceOp op) {
  run("reduce_scatter",
      signature(transport::CallKind::kReduceScatter, recv_count, type, static_cast<int>(op), -1),
      [&](collectives::Context& ctx) {
        collectives::reduce_scatter(ctx, send, recv, recv_count, type, op);
      });
}

void Communicator::barrier() {
  run("barrier", {.kind = transport::CallKind::kBarrier},
      [&](collectives::Context& ctx) { collectives::barrier(ctx); });
}

}  // namespace tutti::comm
