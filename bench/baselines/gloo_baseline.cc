#include "baselines/gloo_baseline.hpp"

#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/math.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <stdlib.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "env_value.hpp"

namespace tutti::bench {
namespace {

// Gloo blocks at most this long in a rendezvous or a collective before it throws; a bench whose
// peer died fails instead of hanging.
constexpr std::chrono::seconds kGlooTimeout{120};

// Rank 0 creates the rendezvous directory; every rank learns its path from a tutti broadcast.
std::string shared_rendezvous_dir(Communicator& comm) {
  std::array<char, 512> path{};
  if (comm.rank() == 0) {
    std::string pattern =
        fmt::format("{}/tutti-bench-gloo.XXXXXX", env_value("TMPDIR").value_or("/tmp"));
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
  }
  comm.broadcast(path.data(), path.size(), DataType::kUInt8, 0);
  if (path[0] == '\0')
    throw Error(ErrorCode::kSystem,
                fmt::format("--baseline gloo: rank {} got no rendezvous directory from rank 0 "
                            "(see rank 0's error)",
                            comm.rank()));
  return path.data();
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
    if (comm.local_size() != comm.size())
      throw Error(ErrorCode::kConfig,
                  fmt::format("--baseline gloo: rank {} sees {} of {} ranks on its host; the Gloo "
                              "baseline rendezvouses through a local directory and needs every "
                              "rank on one host",
                              comm.rank(), comm.local_size(), comm.size()));
    const std::string dir = shared_rendezvous_dir(comm);
    RemoveDirAtExit cleanup(dir, comm.rank() == 0);
    const std::string host = "127.0.0.1";
    std::shared_ptr<gloo::Context> context;
    try {
      gloo::transport::tcp::attr attr(host.c_str());
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(comm.rank(), comm.size());
      ctx->setTimeout(std::chrono::duration_cast<std::chrono::milliseconds>(kGlooTimeout));
      gloo::rendezvous::FileStore store(dir);
      ctx->connectFullMesh(store, device);
      context = std::move(ctx);
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kPeerFailure,
                  fmt::format("--baseline gloo: rank {} could not connect Gloo's tcp mesh on {} "
                              "through {}: {}",
                              comm.rank(), host, dir, e.what()));
    }
    // Everyone has read the store before rank 0's cleanup removes it.
    comm.barrier();
    return std::make_unique<GlooBaseline>(comm, std::move(context), host);
  }
};

}  // namespace

std::unique_ptr<BaselineSession> start_gloo_session() {
  return std::make_unique<GlooSession>();
}

}  // namespace tutti::bench
