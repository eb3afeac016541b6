// device_check: the device path (collectives/device, comm's dispatch) under tuttirun, with real
// rank processes and the host-memory stand-in for the device runtime (host_device_api.hpp: the
// one fake the project allows, since no GPU exists here). The first argument picks the scenario:
//   sweep     every dtype x op x count, in place and not, against the host path's results; inputs
//             and results go through the caller's own stream (--enqueue-only: the allreduces
//             return once enqueued)
//   stale_inputs  inputs written by a plain cudaMemcpy (the legacy stream), the call on another
//             stream: some calls must read stale inputs, as on a GPU (the stand-in is unkind)
//   duplicate_gpu  two ranks on one device of one host: refused on every rank (NCCL_HOSTID)
//   order     a slow write enqueued on the caller's stream before the call is in the result
//   dispatch  host buffers never reach the device path, device buffers always do; mixed calls
//             and device buffers on host-only calls are refused
//   mismatch  a device call with a different count on one rank: kMismatch on every rank, soon
//   mixed_C   collective C with host buffers on rank 0, device buffers elsewhere: kMismatch
//   hang      a stuck NCCL operation: kTimeout at the deadline, the NCCL communicator aborted
//   async     an NCCL async error on the last rank: kDevice there, promptly; the others fail too
//   abort     abort() from another thread ends a pending device call
//   split     dup/split of a communicator with NCCL split its NCCL communicator (no new init)
//   engine    device tensors through allreduce_async (fused) complete exactly
//   enqueue   calls that return once enqueued (CallOptions::enqueue_only) behind a closed gate on
//             the caller's stream: all return before it opens, the results are exact after
//   enqueue_hang, enqueue_async  a stuck NCCL operation, an NCCL async error, in such a call:
//             device_wait() fails at the call's deadline, or at once, naming it
//   kill, kill_shrink  rank 1 is killed mid device allreduce (runtime/kill_rank.sh); with
//             kill_shrink the survivors then shrink and reduce device buffers on the shrunk
//             communicator
// Prints "ok:" lines and exits 0, or "FAIL:" lines and exits 1.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/world_info.hpp"
#include "comm/communicator.hpp"
#include "device/device_api.hpp"
#include "host_device_api.hpp"
#include "integration/support/check_report.hpp"
#include "reduce/half.hpp"
#include "tutti/tutti.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tutti::DataType;
using tutti::ReduceOp;
using tutti::testing::fail;
using tutti::testing::g_failures;
using tutti::testing::g_rank;
using tutti::testing::HostDeviceApi;
using tutti::testing::ok;

int g_device = 0;  // this rank's device: its local rank modulo the stand-in's devices

// memcpy's pointers must be valid even for 0 bytes, and an empty vector's data() may be null.
void copy_bytes(void* to, const void* from, size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= s.size()) {
    const size_t end = std::min(s.find(',', begin), s.size());
    if (end > begin) out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// Device memory of the stand-in, freed with the object.
class DeviceVector {
 public:
  DeviceVector(size_t bytes) : buffer_(bytes, g_device), bytes_(bytes) {}
  std::byte* data() const { return static_cast<std::byte*>(buffer_.data()); }
  size_t bytes() const { return bytes_; }

 private:
  tutti::device::Buffer buffer_;
  size_t bytes_;
};

// Small values every path reduces exactly: sums of a few ranks' 1..5, products of 1s and 2s,
// bools as 0/1, any bits for bitwise ops.
void fill(std::byte* out, size_t count, DataType type, ReduceOp op, int rank, int salt) {
  for (size_t i = 0; i < count; ++i) {
    const int v = op == ReduceOp::kProd   ? 1 + static_cast<int>((i + rank + salt) % 2)
                  : tutti::is_bitwise(op) ? static_cast<int>((i * 37 + rank * 11 + salt) % 127)
                                          : 1 + static_cast<int>((i * 7 + rank * 3 + salt) % 5);
    std::byte* at = out + i * tutti::element_size(type);
    switch (type) {
      case DataType::kFloat32: {
        float f = static_cast<float>(v);
        std::memcpy(at, &f, 4);
        break;
      }
      case DataType::kFloat64: {
        double d = v;
        std::memcpy(at, &d, 8);
        break;
      }
      case DataType::kFloat16: {
        uint16_t h = tutti::reduce::float_to_f16(static_cast<float>(v));
        std::memcpy(at, &h, 2);
        break;
      }
      case DataType::kBFloat16: {
        uint16_t h = tutti::reduce::float_to_bf16(static_cast<float>(v));
        std::memcpy(at, &h, 2);
        break;
      }
      case DataType::kInt32: {
        int32_t x = v;
        std::memcpy(at, &x, 4);
        break;
      }
      case DataType::kInt64: {
        int64_t x = v;
        std::memcpy(at, &x, 8);
        break;
      }
      case DataType::kInt16: {
        int16_t x = static_cast<int16_t>(v);
        std::memcpy(at, &x, 2);
        break;
      }
      case DataType::kUInt8:
      case DataType::kInt8: {
        auto x = static_cast<uint8_t>(v);
        std::memcpy(at, &x, 1);
        break;
      }
      case DataType::kBool: {
        auto x = static_cast<uint8_t>(v % 2);
        std::memcpy(at, &x, 1);
        break;
      }
    }
  }
}

double value_at(const std::byte* p, size_t i, DataType type) {
  const std::byte* at = p + i * tutti::element_size(type);
  uint16_t h = 0;
  switch (type) {
    case DataType::kFloat32: {
      float f;
      std::memcpy(&f, at, 4);
      return f;
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, at, 8);
      return d;
    }
    case DataType::kFloat16:
      std::memcpy(&h, at, 2);
      return tutti::reduce::f16_to_float(h);
    case DataType::kBFloat16:
      std::memcpy(&h, at, 2);
      return tutti::reduce::bf16_to_float(h);
    default:
      return 0;
  }
}

// Exact, except avg on floating types: NCCL (and the stand-in's fold) multiplies each input by
// 1/size before summing where the host path divides the sum, so the last bit may differ.
bool same(const std::byte* got, const std::byte* want, size_t count, DataType type, ReduceOp op,
          std::string& first_difference) {
  const bool approximate = op == ReduceOp::kAvg && tutti::is_floating(type);
  const size_t element = tutti::element_size(type);
  for (size_t i = 0; i < count; ++i) {
    bool equal = std::memcmp(got + i * element, want + i * element, element) == 0;
    if (!equal && approximate) {
      const double g = value_at(got, i, type), w = value_at(want, i, type);
      const double tolerance = element <= 2 ? 1e-2 : element == 4 ? 1e-6 : 1e-12;
      equal = std::fabs(g - w) <= tolerance * std::max(1.0, std::fabs(w));
    }
    if (!equal) {
      first_difference = fmt::format("element {} of {}", i, count);
      if (approximate || tutti::is_floating(type))
        first_difference +=
            fmt::format(": got {} want {}", value_at(got, i, type), value_at(want, i, type));
      return false;
    }
  }
  return true;
}

struct World {
  std::shared_ptr<HostDeviceApi> api;
  std::shared_ptr<tutti::comm::Communicator> comm;
};

std::shared_ptr<tutti::Store> stand_in_store(const tutti::bootstrap::WorldInfo& info) {
  std::string address = info.store_address;
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const auto port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));
  return tutti::connect_tcp_store(host, port, info.job_token);
}

// ---- sweep -----------------------------------------------------------------------------------

std::vector<DataType> all_types() {
  return {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
          DataType::kInt32,   DataType::kInt64,   DataType::kUInt8,   DataType::kInt8,
          DataType::kInt16,   DataType::kBool};
}

std::vector<ReduceOp> all_ops() {
  return {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
          ReduceOp::kAvg, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
}

DataType type_named(const std::string& s) {
  for (DataType t : all_types())
    if (tutti::to_string(t) == s) return t;
  throw std::runtime_error("unknown dtype " + s);
}

ReduceOp op_named(const std::string& s) {
  for (ReduceOp o : all_ops())
    if (tutti::to_string(o) == s) return o;
  throw std::runtime_error("unknown op " + s);
}

size_t count_named(const std::string& s, int size) {
  if (s == "N-1") return static_cast<size_t>(size - 1);
  return std::stoul(s);
}

// Which path a device allreduce took, from the stand-in's counters.
struct PathCounts {
  int all_reduces, reduce_scatters, all_gathers, p2p_groups;
};

PathCounts path_counts(HostDeviceApi& api) {
  auto& c = api.counters();
  return {c.all_reduces, c.reduce_scatters, c.all_gathers, c.p2p_groups};
}

// The path TUTTI_DEVICE_ALLREDUCE asks for (with auto's and hier's fallbacks) is the one taken.
void check_path(World& w, const PathCounts& before, DataType type, ReduceOp op,
                const std::string& what) {
  const int size = w.comm->size();
  if (size == 1) return;  // a lone rank's ring is a copy
  const char* env = std::getenv("TUTTI_DEVICE_ALLREDUCE");
  std::string path = env ? env : "auto";
  const bool nccl_reduces = type != DataType::kInt16 && !tutti::is_bitwise(op);
  const auto& topology = w.comm->topology();
  const bool uniform_hosts =
      size % topology.local_size == 0 && topology.local_size * topology.cross_size == size;
  if (path == "auto") path = nccl_reduces ? "nccl" : "ring";
  if (path == "hier" &&
      (!nccl_reduces || !uniform_hosts || (op == ReduceOp::kAvg && !tutti::is_floating(type))))
    path = "ring";
  const PathCounts after = path_counts(*w.api);
  const bool took = path == "nccl"   ? after.all_reduces == before.all_reduces + 1
                    : path == "ring" ? after.p2p_groups > before.p2p_groups &&
                                           after.all_reduces == before.all_reduces
                                     : after.reduce_scatters == before.reduce_scatters + 1 &&
                                           after.all_gathers == before.all_gathers + 1;
  if (!took) fail(fmt::format("{}: did not take the {} path", what, path));
}

// How the sweep moves its inputs into device memory before a call on its own (non-blocking)
// stream: through that stream (cudaMemcpyAsync there: right), or with a plain cudaMemcpy
// (memcpy_legacy: the legacy default stream, which the call's stream is not ordered after: what
// the first GPU check did, and a GPU then read stale inputs now and then).
enum class Inputs { kOnCallerStream, kLegacyMemcpy };

// --enqueue-only: the device allreduces return once enqueued (CallOptions::enqueue_only); their
// results are read through the caller's stream as before, and the host never waits for them.
bool g_enqueue_only = false;

void sweep(World& w, const std::vector<size_t>& counts, const std::vector<DataType>& types,
           const std::vector<ReduceOp>& ops, Inputs inputs = Inputs::kOnCallerStream) {
  auto& comm = *w.comm;
  const int rank = comm.rank();
  int checked = 0;
  int stale = 0;
  HostDeviceApi& api = *w.api;
  tutti::device::Stream caller(g_device);
  const auto to_device = [&](std::byte* dst, const std::byte* src, size_t bytes) {
    if (inputs == Inputs::kLegacyMemcpy)
      api.memcpy_legacy(dst, src, bytes);
    else
      api.copy_async(dst, src, bytes, caller.id());
  };
  // The result through the caller's stream, then cudaStreamSynchronize.
  const auto to_host = [&](std::byte* dst, const std::byte* src, size_t bytes) {
    api.copy_async(dst, src, bytes, caller.id());
    api.synchronize(caller.id());
  };
  for (size_t count : counts) {
    for (DataType type : types) {
      const size_t bytes = count * tutti::element_size(type);
      for (ReduceOp op : ops) {
        if (!tutti::supports(type, op)) continue;
        const bool scalable =
            tutti::is_floating(type) && (op == ReduceOp::kSum || op == ReduceOp::kAvg);
        for (int scaled = 0; scaled <= (scalable ? 1 : 0); ++scaled) {
          tutti::CallOptions call;
          call.stream = caller.id();
          call.enqueue_only = g_enqueue_only;
          if (scaled) {
            call.prescale = 0.5;
            call.postscale = 4.0;
          }
          for (int in_place = 0; in_place <= 1; ++in_place) {
            const std::string what = fmt::format(
                "allreduce {} x {} {}{}{}", count, tutti::to_string(type), tutti::to_string(op),
                scaled ? " scaled" : "", in_place ? " in place" : "");
            std::vector<std::byte> input(bytes), want(bytes), got(bytes);
            fill(input.data(), count, type, op, rank, checked);
            tutti::CallOptions on_host = call;
            on_host.enqueue_only = false;
            comm.allreduce(input.data(), want.data(), count, type, op, on_host);
            DeviceVector send(bytes), recv(bytes);
            to_device(send.data(), input.data(), bytes);
            std::byte* out = in_place ? send.data() : recv.data();
            const PathCounts before = path_counts(*w.api);
            comm.allreduce(send.data(), out, count, type, op, call);
            if (count > 0) check_path(w, before, type, op, what);
            to_host(got.data(), out, bytes);
            api.synchronize(nullptr);  // the legacy copy is done before its buffer is freed
            std::string difference;
            if (!same(got.data(), want.data(), count, type, op, difference)) {
              if (inputs == Inputs::kLegacyMemcpy)
                ++stale;
              else
                fail(fmt::format("{}: {}", what, difference));
            }
            ++checked;
          }
        }
      }
      // broadcast from the last rank, allgather, and reduce_scatter (sum; NCCL's types).
      {
        std::vector<std::byte> input(bytes), want(bytes);
        fill(input.data(), count, type, ReduceOp::kSum, rank, checked);
        want = input;
        comm.broadcast(want.data(), count, type, comm.size() - 1);
        DeviceVector buf(bytes);
        copy_bytes(buf.data(), input.data(), bytes);
        comm.broadcast(buf.data(), count, type, comm.size() - 1);
        if (bytes > 0 && std::memcmp(buf.data(), want.data(), bytes) != 0)
          fail(fmt::format("broadcast {} x {}", count, tutti::to_string(type)));
        const size_t all = bytes * static_cast<size_t>(comm.size());
        std::vector<std::byte> gathered(all);
        comm.allgather(input.data(), gathered.data(), count, type);
        DeviceVector dsend(bytes), drecv(all);
        copy_bytes(dsend.data(), input.data(), bytes);
        comm.allgather(dsend.data(), drecv.data(), count, type);
        if (all > 0 && std::memcmp(drecv.data(), gathered.data(), all) != 0)
          fail(fmt::format("allgather {} x {}", count, tutti::to_string(type)));
        ++checked;
      }
      if (type != DataType::kInt16) {
        const size_t all = bytes * static_cast<size_t>(comm.size());
        std::vector<std::byte> input(all), want(bytes);
        fill(input.data(), count * static_cast<size_t>(comm.size()), type, ReduceOp::kSum, rank,
             checked);
        comm.reduce_scatter(input.data(), want.data(), count, type, ReduceOp::kSum);
        DeviceVector dsend(all), drecv(bytes);
        copy_bytes(dsend.data(), input.data(), all);
        comm.reduce_scatter(dsend.data(), drecv.data(), count, type, ReduceOp::kSum);
        std::string difference;
        if (!same(drecv.data(), want.data(), count, type, ReduceOp::kSum, difference))
          fail(
              fmt::format("reduce_scatter {} x {}: {}", count, tutti::to_string(type), difference));
        ++checked;
      }
    }
  }
  if (inputs == Inputs::kLegacyMemcpy) {
    // Every rank's own count; the calls whose inputs were stale anywhere differ everywhere.
    if (stale == 0)
      fail(
          fmt::format("stale_inputs: all {} calls read their inputs although a plain cudaMemcpy "
                      "wrote them on the legacy stream: the stand-in is kinder than a GPU",
                      checked));
    else
      ok(
          fmt::format("stale_inputs: {} of {} calls read stale inputs (inputs written by a "
                      "plain cudaMemcpy, the call on a non-blocking stream), as on a GPU",
                      stale, checked));
    return;
  }
  if (g_enqueue_only) comm.settle_device(/*block=*/true);
  ok(fmt::format("sweep: {} device calls{} match the host path on {} ranks", checked,
                 g_enqueue_only ? " (allreduces returning once enqueued)" : "", comm.size()));
}

// ---- duplicate_gpu ---------------------------------------------------------------------------

// Two ranks on one device of one host (no NCCL_HOSTID): NCCL refuses the communicator on every
// rank, promptly, and says what to do.
void duplicate_gpu(World& w) {
  const auto started = Clock::now();
  DeviceVector dev(4 * 100);
  try {
    w.comm->allreduce(dev.data(), dev.data(), 100, DataType::kFloat32, ReduceOp::kSum);
    fail("duplicate_gpu: a device allreduce of two ranks on one GPU succeeded");
  } catch (const tutti::Error& e) {
    const std::string text = e.what();
    if (e.code() != tutti::ErrorCode::kDevice || text.find("Duplicate GPU") == std::string::npos ||
        text.find("NCCL_HOSTID") == std::string::npos)
      fail(fmt::format("duplicate_gpu: code {}: {}", static_cast<int>(e.code()), text));
    else if (seconds_since(started) > 20)
      fail(fmt::format("duplicate_gpu: refused only after {:.1f} s", seconds_since(started)));
    else
      ok(fmt::format("duplicate_gpu: refused on rank {}: {}", w.comm->rank(), text));
  }
}

// ---- order -----------------------------------------------------------------------------------

void order(World& w) {
  auto& comm = *w.comm;
  const size_t count = 1001;
  DeviceVector buf(count * 4);
  std::vector<float> zeros(count, 0.0f);
  std::memcpy(buf.data(), zeros.data(), count * 4);
  tutti::device::Stream caller(g_device);
  // The caller's "kernel": sleeps, then writes the input. The call must read after it.
  float* data = reinterpret_cast<float*>(buf.data());
  const int rank = comm.rank();
  w.api->enqueue(caller.id(), [data, rank, count] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + 1);
  });
  tutti::CallOptions call;
  call.stream = caller.id();
  comm.allreduce(data, data, count, DataType::kFloat32, ReduceOp::kSum, call);
  // Work enqueued on the caller's stream after the call sees the result.
  std::vector<float> seen(count);
  w.api->enqueue(caller.id(), [&] { std::memcpy(seen.data(), data, count * 4); });
  tutti::device::Event marker(g_device);
  tutti::device::api().record(marker.id(), caller.id());
  while (!tutti::device::api().query(marker.id()))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const float want = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
  for (size_t i = 0; i < count; ++i)
    if (seen[i] != want) {
      fail(
          fmt::format("order: element {} is {}, want {} (the caller's write was not ordered "
                      "before the allreduce)",
                      i, seen[i], want));
      return;
    }
  ok("order: the caller's slow write is in the result, and the caller's stream sees it");
}

// ---- dispatch --------------------------------------------------------------------------------

template <typename F>
void expect_code(tutti::ErrorCode code, const std::string& what, F&& f) {
  try {
    f();
    fail(fmt::format("{}: no error, want {}", what, static_cast<int>(code)));
  } catch (const tutti::Error& e) {
    if (e.code() != code)
      fail(fmt::format("{}: code {} ({}), want {}", what, static_cast<int>(e.code()), e.what(),
                       static_cast<int>(code)));
    else
      ok(fmt::format("{}: {}", what, e.what()));
  }
}

// A device call that goes through NCCL at any size: the allreduce, except in a world of one, whose
// allreduce runs no NCCL (device_alone.cc) and the broadcast stands in.
void nccl_call(tutti::comm::Communicator& comm, std::byte* data, size_t count,
               const tutti::CallOptions& call = {}) {
  if (comm.size() == 1)
    comm.broadcast(data, count, DataType::kFloat32, 0, call);
  else
    comm.allreduce(data, data, count, DataType::kFloat32, ReduceOp::kSum, call);
}

void dispatch(World& w) {
  auto& comm = *w.comm;
  auto& counters = w.api->counters();
  std::vector<float> host(100, 1.0f), host_out(100);
  comm.allreduce(host.data(), host_out.data(), 100, DataType::kFloat32, ReduceOp::kSum);
  comm.broadcast(host.data(), 100, DataType::kFloat32, 0);
  comm.allgather(host.data(), std::vector<float>(100 * comm.size()).data(), 100,
                 DataType::kFloat32);
  if (counters.streams != 0 || counters.nccl_inits != 0 || counters.nccl_ops != 0 ||
      counters.device_locates != 0)
    fail(
        fmt::format("dispatch: host calls reached the device path (streams {}, inits {}, ops "
                    "{}, device locates {})",
                    counters.streams.load(), counters.nccl_inits.load(), counters.nccl_ops.load(),
                    counters.device_locates.load()));
  else
    ok("dispatch: host buffers never reach the device path");
  DeviceVector dev(400);
  std::memcpy(dev.data(), host.data(), 400);
  if (comm.size() == 1) {
    // A world of one: the allreduce enqueues its copy (or nothing, in place) on the caller's
    // stream, with no NCCL and no stream or event of its own; the broadcast still goes to NCCL.
    std::vector<std::byte> out_of_place(400);
    DeviceVector dev_out(400);
    // The first device call makes the communicator's device side (its stream and events, once);
    // the calls after it must add none.
    comm.allreduce(dev.data(), dev.data(), 100, DataType::kFloat32, ReduceOp::kSum);
    const int streams = counters.streams, copies = counters.copies;
    comm.allreduce(dev.data(), dev.data(), 100, DataType::kFloat32, ReduceOp::kSum);
    comm.allreduce(dev.data(), dev_out.data(), 100, DataType::kFloat32, ReduceOp::kSum);
    if (counters.nccl_ops != 0 || counters.nccl_inits != 0 || counters.streams != streams ||
        counters.copies != copies + 1)
      fail(
          fmt::format("dispatch: a world of one's allreduce made {} NCCL ops, {} inits, {} "
                      "streams, {} copies (want 0, 0, 0, 1)",
                      counters.nccl_ops.load(), counters.nccl_inits.load(),
                      counters.streams - streams, counters.copies - copies));
    else
      ok("dispatch: a world of one's allreduce is a copy on the caller's stream");
    w.api->synchronize(nullptr);
    std::memcpy(out_of_place.data(), dev_out.data(), 400);
    if (std::memcmp(out_of_place.data(), host.data(), 400) != 0)
      fail("dispatch: a world of one's out-of-place allreduce did not copy its input");
    comm.broadcast(dev.data(), 100, DataType::kFloat32, 0);
  } else {
    comm.allreduce(dev.data(), dev.data(), 100, DataType::kFloat32, ReduceOp::kSum);
  }
  const int ops = counters.nccl_ops;
  if (ops < 1 || counters.nccl_inits != 1)
    fail(fmt::format("dispatch: a device {} made {} NCCL ops, {} inits",
                     comm.size() == 1 ? "broadcast" : "allreduce", ops,
                     counters.nccl_inits.load()));
  else
    ok("dispatch: device buffers take the device path");
  // TUTTI_ALGO ring/tree reaches NCCL as NCCL_ALGO when the NCCL communicator is made, unless the
  // user set NCCL_ALGO (the test passes WANT_NCCL_ALGO: what NCCL_ALGO must be by now).
  if (const char* want = std::getenv("WANT_NCCL_ALGO")) {
    const char* got = std::getenv("NCCL_ALGO");
    if (got == nullptr || std::string(got) != want)
      fail(fmt::format("dispatch: NCCL_ALGO is {}, want {}", got ? got : "unset", want));
    else
      ok(fmt::format("dispatch: NCCL_ALGO={}", got));
  }
  nccl_call(comm, dev.data(), 100);
  if (counters.nccl_ops <= ops || counters.nccl_inits != 1)
    fail("dispatch: a second device call did not reuse the NCCL communicator");
  // Absurd counts on device buffers are refused as on the host, before NCCL reads past them; the
  // communicator stays usable.
  for (const size_t absurd : {SIZE_MAX, size_t{1} << 62}) {
    expect_code(
        tutti::ErrorCode::kInvalidArgument, "dispatch: device allreduce, absurd count", [&] {
          comm.allreduce(dev.data(), dev.data(), absurd, DataType::kFloat32, ReduceOp::kSum);
        });
    expect_code(tutti::ErrorCode::kInvalidArgument, "dispatch: device allgather, absurd count",
                [&] { comm.allgather(dev.data(), dev.data(), absurd, DataType::kFloat32); });
  }
  comm.allreduce(dev.data(), dev.data(), 100, DataType::kFloat32, ReduceOp::kSum);
  expect_code(tutti::ErrorCode::kInvalidArgument, "dispatch: host send, device recv", [&] {
    comm.allreduce(host.data(), dev.data(), 100, DataType::kFloat32, ReduceOp::kSum);
  });
  if (comm.size() > 1) {
    const int peer = (comm.rank() + 1) % comm.size();
    expect_code(tutti::ErrorCode::kInvalidArgument, "dispatch: device send",
                [&] { comm.send(dev.data(), 100, DataType::kFloat32, peer, 0); });
    expect_code(tutti::ErrorCode::kInvalidArgument, "dispatch: device recv",
                [&] { comm.recv(dev.data(), 100, DataType::kFloat32, peer, 0); });
  }
  expect_code(tutti::ErrorCode::kInvalidArgument, "dispatch: device gather",
              [&] { comm.gather(dev.data(), host_out.data(), 1, DataType::kFloat32, 0); });
  expect_code(tutti::ErrorCode::kInvalidArgument, "dispatch: device alltoall",
              [&] { comm.alltoall(dev.data(), dev.data(), 1, DataType::kFloat32); });
  // The refusals left the communicator usable.
  comm.allreduce(dev.data(), dev.data(), 100, DataType::kFloat32, ReduceOp::kSum);
  comm.barrier();
  ok("dispatch: the communicator works after the refusals");
}

// ---- failures --------------------------------------------------------------------------------

void mismatch(World& w) {
  auto& comm = *w.comm;
  DeviceVector dev(4 * 1001);
  const size_t count = comm.rank() == comm.size() - 1 ? 1001 : 1000;
  tutti::CallOptions call;
  call.timeout = std::chrono::seconds(60);
  const auto began = Clock::now();
  expect_code(tutti::ErrorCode::kMismatch, "mismatch: device allreduce with another count", [&] {
    comm.allreduce(dev.data(), dev.data(), count, DataType::kFloat32, ReduceOp::kSum, call);
  });
  if (seconds_since(began) > 10) fail(fmt::format("mismatch took {:.1f} s", seconds_since(began)));
}

// One rank passes host buffers, the others device buffers, to the same collective: every rank
// must fail soon (not hang, not compute), whichever side it is on.
void mixed_sides(World& w, const std::string& collective) {
  auto& comm = *w.comm;
  const size_t count = 1000;
  DeviceVector dev(4 * count * static_cast<size_t>(comm.size()));
  std::vector<float> host(count * static_cast<size_t>(comm.size()));
  std::byte* buf = comm.rank() == 0 ? reinterpret_cast<std::byte*>(host.data()) : dev.data();
  tutti::CallOptions call;
  call.timeout = std::chrono::seconds(60);
  const auto began = Clock::now();
  try {
    if (collective == "allreduce")
      comm.allreduce(buf, buf, count, DataType::kFloat32, ReduceOp::kSum, call);
    else if (collective == "broadcast")
      comm.broadcast(buf, count, DataType::kFloat32, 0, call);
    else if (collective == "allgather")
      comm.allgather(buf, buf + 4 * count, count, DataType::kFloat32, call);
    else
      // In place: recv is this rank's block of send (any other overlap is refused up front).
      comm.reduce_scatter(buf, buf + 4 * (count / 2) * static_cast<size_t>(comm.rank()), count / 2,
                          DataType::kFloat32, ReduceOp::kSum, call);
    fail(
        fmt::format("mixed sides: {} ran with host buffers on rank 0 and device buffers "
                    "elsewhere",
                    collective));
  } catch (const tutti::Error& e) {
    if (e.code() != tutti::ErrorCode::kMismatch)
      fail(fmt::format("mixed sides: {}: code {} ({}), want kMismatch", collective,
                       static_cast<int>(e.code()), e.what()));
    else
      ok(fmt::format("mixed sides: {}: {}", collective, e.what()));
  }
  if (seconds_since(began) > 10)
    fail(fmt::format("mixed sides: {} took {:.1f} s", collective, seconds_since(began)));
}

// A stuck NCCL operation: kTimeout at the call's deadline, the NCCL communicator aborted, the
// error naming the rank and NCCL; later calls rethrow. With `enqueue_only` the call returns at
// once and device_wait() fails so, naming the call's early return.
void hang(World& w, bool enqueue_only) {
  const std::string name = enqueue_only ? "enqueue_hang" : "hang";
  auto& comm = *w.comm;
  DeviceVector dev(4 * 100);
  // Made first, so the hang hits the allreduce and not anything before it.
  nccl_call(comm, dev.data(), 100);
  w.api->inject_hang();
  tutti::CallOptions call;
  call.timeout = std::chrono::seconds(2);
  call.enqueue_only = enqueue_only;
  const auto began = Clock::now();
  try {
    nccl_call(comm, dev.data(), 100, call);
    if (enqueue_only) {
      if (seconds_since(began) > 1.5)
        fail(fmt::format("{}: the call returned only after {:.1f} s", name, seconds_since(began)));
      if (comm.settle_device(false)) fail(name + ": device_done() says a stuck call is done");
      comm.settle_device(true);
    }
    fail(name + ": no error");
  } catch (const tutti::Error& e) {
    const std::string text = e.what();
    if (e.code() != tutti::ErrorCode::kTimeout)
      fail(fmt::format("{}: code {} ({}), want kTimeout", name, static_cast<int>(e.code()), text));
    if (w.api->counters().aborts < 1) fail(name + ": the NCCL communicator was not aborted");
    if (text.find(fmt::format("rank {}", comm.rank())) == std::string::npos ||
        text.find("NCCL") == std::string::npos ||
        (enqueue_only && text.find("returned once enqueued") == std::string::npos))
      fail(name + ": the error does not name the rank, NCCL and the call: " + text);
    ok(name + ": " + text);
  }
  if (seconds_since(began) > 15) fail(fmt::format("{} took {:.1f} s", name, seconds_since(began)));
  // The communicator is broken now, as for host failures.
  expect_code(tutti::ErrorCode::kTimeout, name + ": later calls rethrow", [&] { comm.barrier(); });
}

// An NCCL async error on the last rank: kDevice there naming it, promptly; the others fail too.
// With `enqueue_only` the call returns once enqueued and device_wait() fails so (the others may
// learn of it while still in the call: the failing rank may get past the call's agreement, fail
// and tell them before their own agreement finished).
void async_error(World& w, bool enqueue_only) {
  const std::string name = enqueue_only ? "enqueue_async" : "async";
  auto& comm = *w.comm;
  DeviceVector dev(4 * 100);
  nccl_call(comm, dev.data(), 100);
  const bool failing = comm.rank() == comm.size() - 1;
  if (failing) w.api->inject_hang("unhandled cuda error (injected)");
  tutti::CallOptions call;
  call.timeout = std::chrono::seconds(60);
  call.enqueue_only = enqueue_only;
  const auto began = Clock::now();
  try {
    nccl_call(comm, dev.data(), 100, call);
    if (enqueue_only) comm.settle_device(true);
    fail(name + ": no error");
  } catch (const tutti::Error& e) {
    const std::string text = e.what();
    if (failing &&
        (e.code() != tutti::ErrorCode::kDevice || text.find("injected") == std::string::npos))
      fail(fmt::format("{}: code {} ({}), want kDevice naming the NCCL error", name,
                       static_cast<int>(e.code()), text));
    else
      ok(fmt::format("{}: rank {}: {}", name, comm.rank(), text));
  }
  if (seconds_since(began) > 10)
    fail(fmt::format("{}: the failure took {:.1f} s", name, seconds_since(began)));
}

void abort_from_thread(World& w) {
  auto& comm = *w.comm;
  DeviceVector dev(4 * 100);
  nccl_call(comm, dev.data(), 100);
  w.api->inject_hang();
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    comm.abort("test: abort from another thread");
  });
  const auto began = Clock::now();
  tutti::CallOptions call;
  call.timeout = std::chrono::seconds(60);
  try {
    nccl_call(comm, dev.data(), 100, call);
    fail("abort: no error");
  } catch (const tutti::Error& e) {
    // This rank's abort, or a peer's notice of its own.
    if (e.code() != tutti::ErrorCode::kAborted)
      fail(fmt::format("abort: code {} ({})", static_cast<int>(e.code()), e.what()));
    else
      ok(fmt::format("abort: {}", e.what()));
  }
  aborter.join();
  if (w.api->counters().aborts < 1) fail("abort: the NCCL communicator was not aborted");
  if (seconds_since(began) > 10) fail(fmt::format("abort took {:.1f} s", seconds_since(began)));
}

// ---- enqueue: calls that return once enqueued (CallOptions::enqueue_only)
// ------------------------

// A small exact value of rank `r`'s input element j in call i.
float enqueue_value(int r, int i, size_t j) {
  return static_cast<float>((r + 1) * static_cast<int>((static_cast<size_t>(i) + j) % 7 + 1));
}

// Behind a gate closed on the caller's stream, a loop of stream-ordered calls: a "kernel" writes
// each call's input, the call (allreduce, broadcast, allgather, reduce_scatter in turn) returns
// once enqueued, a "kernel" copies its result out. Every call must return while the gate is still
// closed (the host agrees on the next call while the device has not run the last), device_done()
// must say so, and once the gate opens every result must be exact: without the call's wait for
// the caller's stream it reads unwritten (poisoned) inputs, without the caller's wait for it the
// copy reads poisoned outputs. TUTTI_FAKE_DEVICE_DROP_WAITS=1 drops both, and this must fail.
void enqueue(World& w) {
  auto& comm = *w.comm;
  const int size = comm.size();
  const int rank = comm.rank();
  constexpr int kCalls = 24;
  const size_t count = 1001;
  const auto n = static_cast<size_t>(size);
  tutti::device::Stream caller(g_device);
  std::atomic<bool> open{false};
  w.api->enqueue(caller.id(), [&open] {
    const auto began = Clock::now();
    while (!open && seconds_since(began) < 30)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::vector<DeviceVector> in, out;
  std::vector<std::vector<float>> seen(kCalls);
  tutti::CallOptions call;
  call.stream = caller.id();
  call.enqueue_only = true;
  call.timeout = std::chrono::seconds(60);
  const auto began = Clock::now();
  for (int i = 0; i < kCalls; ++i) {
    const int kind = i % 4;
    const size_t in_count = kind == 3 ? count * n : count;
    const size_t out_count = kind == 2 ? count * n : count;
    in.emplace_back(in_count * 4);
    out.emplace_back(out_count * 4);
    auto* src = reinterpret_cast<float*>(in.back().data());
    auto* dst = reinterpret_cast<float*>(out.back().data());
    w.api->enqueue(caller.id(), [src, in_count, rank, i] {
      for (size_t j = 0; j < in_count; ++j) src[j] = enqueue_value(rank, i, j);
    });
    float* result = dst;
    if (kind == 0) {
      comm.allreduce(src, dst, count, DataType::kFloat32, ReduceOp::kSum, call);
    } else if (kind == 1) {
      comm.broadcast(src, count, DataType::kFloat32, i % size, call);
      result = src;
    } else if (kind == 2) {
      comm.allgather(src, dst, count, DataType::kFloat32, call);
    } else {
      comm.reduce_scatter(src, dst, count, DataType::kFloat32, ReduceOp::kSum, call);
    }
    seen[static_cast<size_t>(i)].resize(out_count);
    float* copy_to = seen[static_cast<size_t>(i)].data();
    w.api->enqueue(caller.id(),
                   [copy_to, result, out_count] { std::memcpy(copy_to, result, out_count * 4); });
  }
  const double issued = seconds_since(began);
  const bool done_while_closed = comm.settle_device(false);
  if (open) fail("enqueue: the gate opened before every call returned (a call waited on the host)");
  if (done_while_closed)
    fail("enqueue: device_done() said done while the caller's stream was still held");
  open = true;
  comm.settle_device(true);
  w.api->synchronize(caller.id());
  int wrong = 0;
  for (int i = 0; i < kCalls && wrong < 5; ++i) {
    const int kind = i % 4;
    const auto& got = seen[static_cast<size_t>(i)];
    for (size_t j = 0; j < got.size() && wrong < 5; ++j) {
      float want = 0;
      if (kind == 0) {
        for (int r = 0; r < size; ++r) want += enqueue_value(r, i, j);
      } else if (kind == 1) {
        want = enqueue_value(i % size, i, j);
      } else if (kind == 2) {
        want = enqueue_value(static_cast<int>(j / count), i, j % count);
      } else {
        for (int r = 0; r < size; ++r)
          want += enqueue_value(r, i, static_cast<size_t>(rank) * count + j);
      }
      if (got[j] != want) {
        ++wrong;
        fail(fmt::format("enqueue: call {} ({}) element {} is {}, want {}", i,
                         kind == 0   ? "allreduce"
                         : kind == 1 ? "broadcast"
                         : kind == 2 ? "allgather"
                                     : "reduce_scatter",
                         j, got[j], want));
      }
    }
  }
  if (wrong == 0)
    ok(
        fmt::format("enqueue: {} calls returned in {:.3f} s behind a closed gate, and every result "
                    "is exact once it opened",
                    kCalls, issued));
}

// ---- kill -9 of a peer -------------------------------------------------------------------------

// Rank 1 waits to be killed (runtime/kill_rank.sh sends SIGKILL once every rank wrote its pid);
// the others sit in a device allreduce that needs it. They must fail well before the 60 s
// deadline, with the peer named.
bool check_float_sum(tutti::comm::Communicator& comm, size_t count);

// shrink (device_kill_shrink_np3): after the failure the survivors shrink, and the shrunk
// communicator's device side (a fresh NCCL communicator of the survivors) reduces device buffers
// exactly.
bool shrink_after_kill = false;

void killed_peer(World& w) {
  auto& comm = *w.comm;
  DeviceVector dev(4 * 100000);
  comm.allreduce(dev.data(), dev.data(), 100000, DataType::kFloat32, ReduceOp::kSum);
  if (const char* dir = std::getenv("DEVICE_CHECK_PID_DIR")) {
    std::FILE* f = std::fopen(fmt::format("{}/{}.pid", dir, comm.rank()).c_str(), "w");
    if (f != nullptr) {
      std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
      std::fclose(f);
    }
  }
  if (comm.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    fail("kill: rank 1 was not killed");
    return;
  }
  const auto began = Clock::now();
  tutti::CallOptions call;
  call.timeout = std::chrono::seconds(60);
  try {
    comm.allreduce(dev.data(), dev.data(), 100000, DataType::kFloat32, ReduceOp::kSum, call);
    fail("kill: the allreduce finished without rank 1");
  } catch (const tutti::Error& e) {
    const std::string text = e.what();
    if (text.find("rank 1") == std::string::npos)
      fail(fmt::format("kill: the error does not name rank 1: {}", text));
    else if (seconds_since(began) > 15)
      fail(fmt::format("kill: took {:.1f} s: {}", seconds_since(began), text));
    else
      ok(fmt::format("kill: failed after {:.1f} s: {}", seconds_since(began), text));
  }
  if (!shrink_after_kill) return;
  const int before = comm.size();
  std::shared_ptr<tutti::comm::Communicator> shrunk = comm.shrink();
  if (shrunk->size() != before - 1)
    fail(fmt::format("shrink: {} ranks after the shrink, want {}", shrunk->size(), before - 1));
  else if (!check_float_sum(*shrunk, 100003))
    fail("shrink: the shrunk communicator's device allreduce is wrong");
  else  // every survivor says so (ok() speaks for rank 0 only)
    std::printf("ok: shrink: rank %d of %d after the shrink: device allreduce exact\n",
                shrunk->rank(), shrunk->size());
}

// ---- split -----------------------------------------------------------------------------------

bool check_float_sum(tutti::comm::Communicator& comm, size_t count) {
  DeviceVector dev(4 * count);
  auto* f = reinterpret_cast<float*>(dev.data());
  for (size_t i = 0; i < count; ++i) f[i] = static_cast<float>(comm.rank() + 1);
  comm.allreduce(f, f, count, DataType::kFloat32, ReduceOp::kSum);
  // A world of one's allreduce runs no NCCL: its broadcast makes (or splits) the NCCL
  // communicator, as the allreduce does at any larger size.
  if (comm.size() == 1) comm.broadcast(f, count, DataType::kFloat32, 0);
  const float want = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
  for (size_t i = 0; i < count; ++i)
    if (f[i] != want) return false;
  return true;
}

void split(World& w) {
  auto& comm = *w.comm;
  auto& counters = w.api->counters();
  if (!check_float_sum(comm, 777)) fail("split: the world's sum");
  auto dup = comm.dup();
  const int splits = counters.nccl_splits;
  if (splits != 1) fail(fmt::format("split: dup made {} NCCL splits, want 1", splits));
  if (!check_float_sum(*dup, 777)) fail("split: the dup's sum");
  auto half = comm.split(comm.rank() % 2, comm.rank());
  if (!check_float_sum(*half, 333)) fail("split: the half's sum");
  if (counters.nccl_inits != 1)
    fail(fmt::format("split: {} NCCL inits, want 1 (the children split the world's)",
                     counters.nccl_inits.load()));
  // A group cannot split (only its members call it): it makes its own on first use.
  std::vector<int> everyone(static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) everyone[static_cast<size_t>(r)] = r;
  auto group = comm.group(everyone);
  if (!check_float_sum(*group, 55)) fail("split: the group's sum");
  if (counters.nccl_inits != 2) fail("split: the group did not make its own NCCL communicator");
  ok("split: dup and split use ncclCommSplit, a group makes its own");
}

// ---- engine ----------------------------------------------------------------------------------

void engine(HostDeviceApi& api, int tensors, size_t count) {
  tutti::Communicator& world = tutti::init();
  std::vector<DeviceVector> buffers;
  for (int t = 0; t < tensors; ++t) buffers.emplace_back(4 * (count + t));
  std::vector<tutti::Handle> handles;
  for (int t = 0; t < tensors; ++t) {
    auto* f = reinterpret_cast<float*>(buffers[t].data());
    for (size_t i = 0; i < count + t; ++i) f[i] = static_cast<float>(world.rank() + t + 1);
    handles.push_back(world.allreduce_async(fmt::format("grad{}", t), f, f, count + t,
                                            DataType::kFloat32, ReduceOp::kSum));
  }
  for (auto& h : handles) h.wait();
  const int n = world.size();
  for (int t = 0; t < tensors; ++t) {
    auto* f = reinterpret_cast<float*>(buffers[t].data());
    const float want = static_cast<float>(n * (n + 1) / 2 + n * t);
    for (size_t i = 0; i < count + t; ++i)
      if (f[i] != want) {
        fail(fmt::format("engine: tensor {} element {} is {}, want {}", t, i, f[i], want));
        break;
      }
  }
  // The engine fuses what is ready together: the fused batches are packed into the device fusion
  // buffer with copies on our stream (allreduce_segments); a batch of one runs in place.
  if (api.counters().nccl_ops < 1) fail("engine: the device path was not used");
  if (api.counters().copies < 2) fail("engine: no fused batch was packed on the device");
  std::printf("ok: engine: rank %d: %d NCCL ops, %d copies on the device\n", world.rank(),
              api.counters().nccl_ops.load(), api.counters().copies.load());
  ok(fmt::format("engine: {} device tensors through allreduce_async", tensors));
  buffers.clear();
  tutti::finalize();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: device_check MODE [--counts ..] [--dtypes ..] [--ops ..]\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::string counts = "0,1,N-1,1001", dtypes = "every", ops = "every";
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--enqueue-only") g_enqueue_only = true;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--counts") counts = argv[i + 1];
    if (flag == "--dtypes") dtypes = argv[i + 1];
    if (flag == "--ops") ops = argv[i + 1];
  }
  try {
    const auto info = tutti::bootstrap::world_info_from_env();
    g_rank = info.rank;
    auto api = std::make_shared<HostDeviceApi>(stand_in_store(info));
    g_device = info.local_rank % api->device_count();
    tutti::device::ScopedDeviceApi scoped(api);
    if (mode == "engine") {
      engine(*api, 7, 1000);
    } else {
      World w{api, tutti::comm::Communicator::create(info, tutti::Options::from_env())};
      if (mode == "sweep") {
        std::vector<size_t> c;
        for (auto& s : split_list(counts)) c.push_back(count_named(s, w.comm->size()));
        std::vector<DataType> t;
        if (dtypes == "every")
          t = all_types();
        else
          for (auto& s : split_list(dtypes)) t.push_back(type_named(s));
        std::vector<ReduceOp> o;
        if (ops == "every")
          o = all_ops();
        else
          for (auto& s : split_list(ops)) o.push_back(op_named(s));
        sweep(w, c, t, o);
      } else if (mode == "stale_inputs") {
        sweep(w, {1001, 70001}, {DataType::kFloat32, DataType::kUInt8, DataType::kInt16},
              {ReduceOp::kSum, ReduceOp::kMax}, Inputs::kLegacyMemcpy);
      } else if (mode == "duplicate_gpu") {
        duplicate_gpu(w);
      } else if (mode == "order") {
        order(w);
      } else if (mode == "nccl_env") {
        // NCCL_P2P_NET_CHUNKSIZE: set by the first device call (TUTTI_NCCL_P2P_CHUNK_BYTES), never
        // over the user's; argv[2] is what it must read afterwards ("unset": not set).
        const std::string want = argc > 2 ? argv[2] : "524288";
        order(w);
        const char* got = std::getenv("NCCL_P2P_NET_CHUNKSIZE");
        if ((want == "unset") != (got == nullptr) || (got != nullptr && want != got))
          fail(fmt::format("NCCL_P2P_NET_CHUNKSIZE after a device call is {}, want {}",
                           got ? got : "unset", want));
      } else if (mode == "dispatch") {
        dispatch(w);
      } else if (mode == "mismatch") {
        mismatch(w);
      } else if (mode.starts_with("mixed_")) {
        mixed_sides(w, mode.substr(6));
      } else if (mode == "hang" || mode == "enqueue_hang") {
        hang(w, mode == "enqueue_hang");
      } else if (mode == "async" || mode == "enqueue_async") {
        async_error(w, mode == "enqueue_async");
      } else if (mode == "abort") {
        abort_from_thread(w);
      } else if (mode == "split") {
        split(w);
      } else if (mode == "enqueue") {
        enqueue(w);

      } else if (mode == "kill" || mode == "kill_shrink") {
        shrink_after_kill = mode == "kill_shrink";
        killed_peer(w);
      } else {
        std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
        return 2;
      }
    }
  } catch (const std::exception& e) {
    fail(fmt::format("{}: {}", mode, e.what()));
  }
  return g_failures == 0 ? 0 : 1;
}
