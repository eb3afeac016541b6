#include "baselines/gloo_baseline.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "env_value.hpp"

namespace tutti::bench {
namespace {

// Gloo blocks at most this long in a rendezvous or a collective before it throws; a bench whose
// peer died fails instead of hanging.
constexpr std::chrono::seconds kGlooTimeout{120};

// The ranks whose `ok` is false, in rank order, the same list on every rank: a failure that only
// some ranks see must still stop every rank, or the others would wait in Gloo's rendezvous until
// kGlooTimeout.
std::vector<int> failing_ranks(Communicator& comm, bool ok) {
  const int32_t mine = ok ? 1 : 0;
  std::vector<int32_t> all(static_cast<size_t>(comm.size()));
  comm.allgather(&mine, all.data(), 1, DataType::kInt32);
  std::vector<int> failing;
  for (int r = 0; r < comm.size(); ++r)
    if (all[static_cast<size_t>(r)] == 0) failing.push_back(r);
  return failing;
}

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

// Gloo's rendezvous reads and writes files here; rank 0 drops it in so the others can tell that
// they see the directory rank 0 made, not merely one of the same name on their own filesystem.
constexpr const char* kMarker = "made-by-rank-0";

// Rank 0 creates the rendezvous directory; every rank learns its path from a tutti broadcast and
// checks that it sees it, since a FileStore only works in a directory all ranks share.
std::string shared_rendezvous_dir(Communicator& comm) {
  std::array<char, 512> path{};
  const std::string tmpdir = env_value("TMPDIR").value_or("/tmp");
  if (comm.rank() == 0) {
    std::string pattern = fmt::format("{}/tutti-bench-gloo.XXXXXX", tmpdir);
    std::strncpy(path.data(), pattern.c_str(), path.size() - 1);
    if (::mkdtemp(path.data()) == nullptr) {
      // Still broadcast (an empty path) so the other ranks fail with rank 0 instead of waiting.
      int err = errno;
      path[0] = '\0';
      comm.broadcast(path.data(), path.size(), DataType::kUInt8, 0);
      throw Error(ErrorCode::kSystem,
                  fmt::format("--baseline gloo: rank 0 cannot create {}: {}; set TMPDIR to a "
                              "writable directory",
                              pattern, std::strerror(err)));
    }
    if (std::FILE* f = std::fopen(fmt::format("{}/{}", path.data(), kMarker).c_str(), "w"))
      std::fclose(f);
  }
  comm.broadcast(path.data(), path.size(), DataType::kUInt8, 0);
  if (path[0] == '\0')
    throw Error(ErrorCode::kSystem,
                fmt::format("--baseline gloo: rank {} got no rendezvous directory from rank 0 "
                            "(see rank 0's error)",
                            comm.rank()));
  std::error_code ec;
  const bool sees = std::filesystem::exists(fmt::format("{}/{}", path.data(), kMarker), ec);
  const std::vector<int> blind = failing_ranks(comm, sees);
  if (!blind.empty()) {
    // Rank 0 still owns the directory: the caller's cleanup has not been set up yet.
    if (comm.rank() == 0) std::filesystem::remove_all(path.data(), ec);
    throw Error(ErrorCode::kConfig,
                fmt::format("--baseline gloo: {} cannot see {}, the rendezvous directory rank 0 "
                            "made under its TMPDIR, so Gloo's file store cannot work; set TMPDIR "
                            "on every rank to a directory on a filesystem all ranks share "
                            "(reported by rank {})",
                            rank_list(blind), path.data(), comm.rank()));
  }
  return path.data();
}

// Where Gloo's tcp device listens, as this rank chose it.
struct DeviceChoice {
  gloo::transport::tcp::attr attr;
  std::string where;  // for description(): the interface or address, and why
};

// GLOO_SOCKET_IFNAME, as PyTorch's gloo backend reads it, else loopback when every rank is on
// this host. PyTorch takes a comma-separated list there and opens one device per interface; this
// baseline opens one device, on the first interface listed.
DeviceChoice choose_device(Communicator& comm) {
  DeviceChoice choice;
  if (auto ifname = env_value("GLOO_SOCKET_IFNAME")) {
    std::string first = ifname->substr(0, ifname->find(','));
    choice.attr.iface = first;
    choice.where = fmt::format("interface {} (GLOO_SOCKET_IFNAME)", first);
    return choice;
  }
  if (comm.local_size() == comm.size()) {
    choice.attr.hostname = "127.0.0.1";
    choice.where = "127.0.0.1 (all ranks on one host)";
    return choice;
  }
  throw Error(ErrorCode::kConfig,
              fmt::format("--baseline gloo: rank {} has {} of the {} ranks on its host, so Gloo "
                          "cannot use 127.0.0.1; set GLOO_SOCKET_IFNAME on every rank to the "
                          "network interface the ranks reach each other on (e.g. "
                          "GLOO_SOCKET_IFNAME=eth0)",
                          comm.rank(), comm.local_size(), comm.size()));
}

std::string numeric_address(const gloo::transport::tcp::attr& attr) {
  std::array<char, NI_MAXHOST> host{};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&attr.ai_addr),
                    static_cast<socklen_t>(attr.ai_addrlen), host.data(), host.size(), nullptr, 0,
                    NI_NUMERICHOST) != 0)
    return "?";
  return host.data();
}

// Opens this rank's device, then every rank learns whether all did; on any failure every rank
// throws kConfig naming the ranks that failed (and this rank's own reason when it is one).
// Returns the device and, for description(), where rank 0's listens.
std::pair<std::shared_ptr<gloo::transport::Device>, std::string> open_device(Communicator& comm) {
  std::shared_ptr<gloo::transport::Device> device;
  std::string where;
  std::string why;
  try {
    DeviceChoice choice = choose_device(comm);
    where = choice.where;
    if (!choice.attr.iface.empty()) {
      // Gloo takes the interface's first address of any family, which may be an IPv6 link-local
      // one that only works with a scope; prefer the IPv4 address when the interface has one.
      choice.attr.ai_family = AF_INET;
      try {
        choice.attr = gloo::transport::tcp::CreateDeviceAttr(choice.attr);
      } catch (const std::exception&) {
        choice.attr.ai_family = AF_UNSPEC;
        choice.attr = gloo::transport::tcp::CreateDeviceAttr(choice.attr);
      }
      where = fmt::format("{}, rank 0 at {}", where, numeric_address(choice.attr));
    }
    device = gloo::transport::tcp::CreateDevice(choice.attr);
  } catch (const Error& e) {
    why = e.what();
  } catch (const std::exception& e) {
    const auto ifname = env_value("GLOO_SOCKET_IFNAME");
    why = fmt::format(
        "--baseline gloo: rank {} cannot open Gloo's tcp device on {}: {}; {}", comm.rank(),
        ifname ? fmt::format("interface {} (GLOO_SOCKET_IFNAME={})",
                             ifname->substr(0, ifname->find(',')), *ifname)
               : std::string("127.0.0.1"),
        e.what(),
        ifname ? "set GLOO_SOCKET_IFNAME to an interface that exists and has an address on every "
                 "rank's host (see `ip -brief address`)"
               : "check that loopback is up");
  }
  const std::vector<int> failed = failing_ranks(comm, device != nullptr);
  if (!failed.empty()) {
    if (!why.empty()) throw Error(ErrorCode::kConfig, why);
    throw Error(ErrorCode::kConfig,
                fmt::format("--baseline gloo: {} could not open Gloo's tcp device (see their "
                            "errors); rank {} stops with them",
                            rank_list(failed), comm.rank()));
  }
  // Every rank reports the same place: rank 0's.
  std::array<char, 256> text{};
  std::strncpy(text.data(), where.c_str(), text.size() - 1);
  comm.broadcast(text.data(), text.size(), DataType::kUInt8, 0);
  return {std::move(device), text.data()};
}

// Rank 0 removes the rendezvous directory when connect() ends, connected or not: by then every
// rank has read the store (after the barrier), or the connection failed and nobody needs it.
class RemoveDirAtExit {
 public:
  RemoveDirAtExit(std::string dir, bool owner) : dir_(std::move(dir)), owner_(owner) {}
  ~RemoveDirAtExit() {
    std::error_code ignored;
    if (owner_) std::filesystem::remove_all(dir_, ignored);
  }
  RemoveDirAtExit(const RemoveDirAtExit&) = delete;
  RemoveDirAtExit& operator=(const RemoveDirAtExit&) = delete;

 private:
  std::string dir_;
  bool owner_;
};

// The Gloo algorithm for one buffer, count, type and op; Gloo binds buffers at construction.
struct Prepared {
  void* buf = nullptr;
  size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  std::unique_ptr<gloo::Algorithm> algorithm;
};

template <typename T>
const gloo::ReductionFunction<T>* gloo_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return gloo::ReductionFunction<T>::sum;
    case ReduceOp::kProd:
      return gloo::ReductionFunction<T>::product;
    case ReduceOp::kMax:
      return gloo::ReductionFunction<T>::max;
    case ReduceOp::kMin:
      return gloo::ReductionFunction<T>::min;
    default:
      return nullptr;
  }
}

template <typename T>
std::unique_ptr<gloo::Algorithm> ring_chunked(const std::shared_ptr<gloo::Context>& ctx, void* buf,
                                              size_t count, ReduceOp op) {
  std::vector<T*> ptrs{static_cast<T*>(buf)};
  return std::make_unique<gloo::AllreduceRingChunked<T>>(ctx, ptrs, static_cast<int>(count),
                                                         gloo_fn<T>(op));
}

// gloo::allreduce's reduction functions (c = a op b over n elements).
template <typename T>
void (*out_of_place_fn(ReduceOp op))(void*, const void*, const void*, size_t) {
  switch (op) {
    case ReduceOp::kSum:
      return &gloo::sum<T>;
    case ReduceOp::kProd:
      return &gloo::product<T>;
    case ReduceOp::kMax:
      return &gloo::max<T>;
    case ReduceOp::kMin:
      return &gloo::min<T>;
    default:
      throw Error(ErrorCode::kInvalidArgument, "--baseline gloo: no such Gloo reduction");
  }
}

// The unbound-buffer API's messages carry a tag; the algorithm objects' pairs do not use it.
constexpr uint32_t kOutOfPlaceTag = 0x7455;

class GlooBaseline final : public Baseline {
 public:
  GlooBaseline(Communicator& comm, std::shared_ptr<gloo::Context> context, std::string host)
      : comm_(comm), context_(std::move(context)), host_(std::move(host)) {}

  std::string description() const override {
    return fmt::format("Gloo {}.{}.{} AllreduceRingChunked, tcp transport on {}",
                       GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, host_);
  }
  bool supports(DataType type, ReduceOp op) const override {
    bool type_ok = type == DataType::kFloat32 || type == DataType::kFloat64 ||
                   type == DataType::kInt32 || type == DataType::kInt64;
    return type_ok && op != ReduceOp::kAvg;
  }
  void prepare(void* buf, size_t count, DataType type, ReduceOp op) override {
    if (count > static_cast<size_t>(INT_MAX))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--baseline gloo: {} elements do not fit Gloo's int count; use a "
                              "smaller -e",
                              count));
    if (prepared_.algorithm && prepared_.buf == buf && prepared_.count == count &&
        prepared_.type == type && prepared_.op == op)
      return;
    // No rank may still be inside the old algorithm when its buffers go away.
    comm_.barrier();
    prepared_.algorithm.reset();
    prepared_ = Prepared{buf, count, type, op, build(buf, count, type, op)};
  }
  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override {
    prepare(buf, count, type, op);
    prepared_.algorithm->run();
  }
  // AllreduceRingChunked binds one buffer, so out of place is Gloo's other API (what PyTorch's
  // ProcessGroupGloo calls): gloo::allreduce with an input, an output and its ring algorithm.
  void allreduce_out_of_place(const void* send, void* recv, size_t count, DataType type,
                              ReduceOp op) override {
    switch (type) {
      case DataType::kFloat32:
        return ring_out_of_place<float>(send, recv, count, op);
      case DataType::kFloat64:
        return ring_out_of_place<double>(send, recv, count, op);
      case DataType::kInt32:
        return ring_out_of_place<int32_t>(send, recv, count, op);
      case DataType::kInt64:
        return ring_out_of_place<int64_t>(send, recv, count, op);
      default:
        throw Error(ErrorCode::kInvalidArgument,
                    "--baseline gloo: this dtype has no Gloo reduction here; use -d float, "
                    "double, int32 or int64");
    }
  }

 private:
  template <typename T>
  void ring_out_of_place(const void* send, void* recv, size_t count, ReduceOp op) {
    gloo::AllreduceOptions options(context_);
    options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    // Gloo's options take non-const pointers; it only reads its input.
    options.setInput(static_cast<T*>(const_cast<void*>(send)), count);
    options.setOutput(static_cast<T*>(recv), count);
    options.setReduceFunction(out_of_place_fn<T>(op));
    options.setTag(kOutOfPlaceTag);
    options.setTimeout(std::chrono::duration_cast<std::chrono::milliseconds>(kGlooTimeout));
    gloo::allreduce(options);
  }

  std::unique_ptr<gloo::Algorithm> build(void* buf, size_t count, DataType type, ReduceOp op) {
    switch (type) {
      case DataType::kFloat32:
        return ring_chunked<float>(context_, buf, count, op);
      case DataType::kFloat64:
        return ring_chunked<double>(context_, buf, count, op);
      case DataType::kInt32:
        return ring_chunked<int32_t>(context_, buf, count, op);
      case DataType::kInt64:
        return ring_chunked<int64_t>(context_, buf, count, op);
      default:
        throw Error(ErrorCode::kInvalidArgument,
                    "--baseline gloo: this dtype has no Gloo reduction here; use -d float, "
                    "double, int32 or int64");
    }
  }

  Communicator& comm_;
  std::shared_ptr<gloo::Context> context_;
  std::string host_;
  Prepared prepared_;
};

class GlooSession final : public BaselineSession {
 public:
  std::unique_ptr<Baseline> connect(Communicator& comm) override {
    auto [device, where] = open_device(comm);
    const std::string dir = shared_rendezvous_dir(comm);
    RemoveDirAtExit cleanup(dir, comm.rank() == 0);
    std::shared_ptr<gloo::Context> context;
    try {
      auto ctx = std::make_shared<gloo::rendezvous::Context>(comm.rank(), comm.size());
      ctx->setTimeout(std::chrono::duration_cast<std::chrono::milliseconds>(kGlooTimeout));
      gloo::rendezvous::FileStore store(dir);
      ctx->connectFullMesh(store, device);
      context = std::move(ctx);
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kPeerFailure,
                  fmt::format("--baseline gloo: rank {} could not connect Gloo's tcp mesh on {} "
                              "through {}: {}; check that the ranks reach each other on that "
                              "interface (GLOO_SOCKET_IFNAME)",
                              comm.rank(), where, dir, e.what()));
    }
    // Everyone has read the store before rank 0's cleanup removes it.
    comm.barrier();
    return std::make_unique<GlooBaseline>(comm, std::move(context), where);
  }
};

}  // namespace

std::unique_ptr<BaselineSession> start_gloo_session() {
  return std::make_unique<GlooSession>();
}

}  // namespace tutti::bench
