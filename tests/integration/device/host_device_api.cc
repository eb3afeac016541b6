#include "host_device_api.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "reduce/device_reduce.hpp"
#include "reduce/reduce.hpp"

namespace tutti::testing {

namespace {
thread_local bool on_stream_thread = false;
thread_local int current_device_of_thread = 0;  // cudaSetDevice's state is per thread
}  // namespace

// One stream: a thread running its closures in order.
class HostDeviceApi::Worker {
 public:
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    thread_.join();  // after everything enqueued ran
  }
  void push(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    ready_.notify_all();
  }
  void drain() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && !running_; });
  }

 private:
  void run() {
    on_stream_thread = true;
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto work = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      lock.unlock();
      try {
        work();
      } catch (const std::exception& e) {
        // A closure of the stand-in itself failed: a bug in the test, not a result to check.
        std::fprintf(stderr, "host stand-in stream: %s\n", e.what());
        std::abort();
      }
      lock.lock();
      running_ = false;
      idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

struct HostDeviceApi::EventState {
  std::mutex mutex;
  std::condition_variable reached_cv;
  uint64_t recorded = 0;  // generations recorded
  uint64_t reached = 0;   // the latest generation its stream ran
};

// An NCCL communicator: a host Communicator whose calls run on the streams.
class HostDeviceApi::Comm final : public device::NcclComm {
 public:
  struct Shared {
    std::shared_ptr<comm::Communicator> host;
    std::mutex mutex;
    std::condition_variable aborted_cv;
    bool aborted = false;
    std::string async_error;
  };

  Comm(HostDeviceApi& api, std::shared_ptr<comm::Communicator> host)
      : api_(api), shared_(std::make_shared<Shared>()) {
    shared_->host = std::move(host);
  }

  int rank() const override { return shared_->host->rank(); }
  int size() const override { return shared_->host->size(); }
  bool supports(DataType type, ReduceOp op) const override {
    return type != DataType::kInt16 && !is_bitwise(op);
  }
  void all_reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                  double scale, device::StreamId stream) override {
    ++api_.counters_.all_reduces;
    const size_t bytes = count * element_size(type);
    enqueue(stream, {range(send, bytes)}, {range(recv, bytes)}, [=](comm::Communicator& host) {
      CallOptions call;
      call.prescale = scale;
      host.allreduce(send, recv, count, type, op, call);
    });
  }
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op,
                      double scale, device::StreamId stream) override {
    ++api_.counters_.reduce_scatters;
    const size_t bytes = recv_count * element_size(type);
    enqueue(stream, {range(send, bytes * static_cast<size_t>(size()))}, {range(recv, bytes)},
            [=](comm::Communicator& host) {
              if (scale == 1.0) return host.reduce_scatter(send, recv, recv_count, type, op);
              const size_t count = recv_count * static_cast<size_t>(host.size());
              std::vector<std::byte> scaled(count * element_size(type));
              reduce::scale(type, scaled.data(), send, scale, count);
              host.reduce_scatter(scaled.data(), recv, recv_count, type, op);
            });
  }
  void all_gather(const void* send, void* recv, size_t send_count, DataType type,
                  device::StreamId stream) override {
    ++api_.counters_.all_gathers;
    const size_t bytes = send_count * element_size(type);
    enqueue(stream, {range(send, bytes)}, {range(recv, bytes * static_cast<size_t>(size()))},
            [=](comm::Communicator& host) { host.allgather(send, recv, send_count, type); });
  }
  void broadcast(const void* send, void* recv, size_t count, DataType type, int root,
                 device::StreamId stream) override {
    const size_t bytes = count * element_size(type);
    enqueue(stream, {range(send, bytes)}, {range(recv, bytes)}, [=](comm::Communicator& host) {
      if (host.rank() == root && send != recv && count > 0)
        std::memcpy(recv, send, count * element_size(type));
      host.broadcast(recv, count, type, root);
    });
  }
  void group_start() override { ++group_depth_; }
  void group_end() override {
    if (--group_depth_ > 0 || grouped_.empty()) return;
    auto ops = std::move(grouped_);
    grouped_.clear();
    const device::StreamId stream = ops.front().stream;
    ++api_.counters_.p2p_groups;
    std::vector<Range> reads, writes;
    for (const PointToPoint& p : ops) (p.is_send ? reads : writes).push_back(range(p.buf, p.bytes));
    enqueue(stream, std::move(reads), std::move(writes), [ops](comm::Communicator& host) {
      std::vector<comm::Request> requests;
      for (const PointToPoint& p : ops)
        requests.push_back(p.is_send ? host.isend(p.buf, p.bytes, DataType::kUInt8, p.peer, 0)
                                     : host.irecv(p.buf, p.bytes, DataType::kUInt8, p.peer, 0));
      for (auto& r : requests) r.wait();
    });
  }
  void send(const void* buf, size_t bytes, int peer, device::StreamId stream) override {
    group_start();
    grouped_.push_back({true, const_cast<void*>(buf), bytes, peer, stream});
    group_end();
  }
  void recv(void* buf, size_t bytes, int peer, device::StreamId stream) override {
    group_start();
    grouped_.push_back({false, buf, bytes, peer, stream});
    group_end();
  }
  std::string async_error() override {
    std::lock_guard lock(shared_->mutex);
    return shared_->async_error;
  }
  void abort() noexcept override {
    ++api_.counters_.aborts;
    {
      std::lock_guard lock(shared_->mutex);
      shared_->aborted = true;
    }
    shared_->aborted_cv.notify_all();
    shared_->host->abort("ncclCommAbort (host stand-in)");
  }
  std::unique_ptr<device::NcclComm> split(int color, int key, std::chrono::milliseconds) override {
    ++api_.counters_.nccl_splits;
    // NCCL's non-blocking split answers in progress and completes a while later.
    std::this_thread::sleep_for(api_.draw_delay() * 10);
    auto child = shared_->host->split(color, key);
    if (!child) return nullptr;
    return std::make_unique<Comm>(api_, std::move(child));
  }

 private:
  struct PointToPoint {
    bool is_send;
    void* buf;
    size_t bytes;
    int peer;
    device::StreamId stream;
  };

  using Range = HostDeviceApi::Range;
  static Range range(const void* p, size_t bytes) {
    return {static_cast<const std::byte*>(p), p == nullptr ? 0 : bytes};
  }

  void enqueue(device::StreamId stream, std::vector<Range> reads, std::vector<Range> writes,
               std::function<void(comm::Communicator&)> op) {
    ++api_.counters_.nccl_ops;
    std::string injected_error;
    const bool hang = api_.take_injection(injected_error);
    api_.submit(stream, std::move(reads), std::move(writes),
                [shared = shared_, op = std::move(op), hang, injected_error] {
                  std::unique_lock lock(shared->mutex);
                  if (hang) {
                    // What a stuck NCCL kernel does: nothing, until ncclCommAbort.
                    if (!injected_error.empty()) shared->async_error = injected_error;
                    shared->aborted_cv.wait(lock, [&] { return shared->aborted; });
                    return;
                  }
                  if (shared->aborted) return;
                  lock.unlock();
                  try {
                    op(*shared->host);
                  } catch (const Error& e) {
                    lock.lock();
                    if (!shared->aborted && shared->async_error.empty())
                      shared->async_error =
                          fmt::format("remote process failed (host stand-in: {})", e.what());
                  }
                });
  }

  HostDeviceApi& api_;
  std::shared_ptr<Shared> shared_;
  int group_depth_ = 0;
  std::vector<PointToPoint> grouped_;
};

namespace {

long env_number(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0) {
    std::fprintf(stderr, "host stand-in: %s=%s is not a number >= 0\n", name, text);
    std::exit(2);
  }
  return value;
}

}  // namespace

HostDeviceApi::HostDeviceApi(std::shared_ptr<Store> store)
    : store_(std::move(store)), default_stream_(std::make_unique<Worker>()) {
  devices_ = static_cast<int>(std::max(1L, env_number("TUTTI_FAKE_DEVICES", 1)));
  longest_delay_ = std::chrono::microseconds(env_number("TUTTI_FAKE_DEVICE_DELAY_US", 200));
  drop_waits_ = env_number("TUTTI_FAKE_DEVICE_DROP_WAITS", 0) != 0;
  const auto seed = static_cast<uint64_t>(
      env_number("TUTTI_FAKE_DEVICE_SEED", static_cast<long>(std::random_device{}() >> 1)));
  random_.seed(seed);
  std::fprintf(stderr,
               "host stand-in (pid %d): %d device(s), operations delayed up to %lld us, "
               "TUTTI_FAKE_DEVICE_SEED=%llu%s\n",
               static_cast<int>(::getpid()), devices_,
               static_cast<long long>(longest_delay_.count()),
               static_cast<unsigned long long>(seed),
               drop_waits_ ? ", every stream wait on an event dropped" : "");
}

std::chrono::microseconds HostDeviceApi::draw_delay() {
  if (longest_delay_.count() == 0) return {};
  std::lock_guard lock(mutex_);
  // Mostly short, now and then the longest: most kernels finish quickly, a few are late.
  const uint64_t draw = random_();
  const auto longest = static_cast<uint64_t>(longest_delay_.count());
  return std::chrono::microseconds(draw % 8 == 0 ? longest : (draw >> 3) % (longest / 4 + 1));
}

void HostDeviceApi::submit(device::StreamId stream, std::vector<Range> reads,
                           std::vector<Range> writes, std::function<void()> work) {
  Worker& w = worker(stream);
  const auto delay = draw_delay();
  uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_operation_++;
    for (const Range& write : writes) {
      bool touched = false;
      for (const Range& read : reads) touched = touched || write.overlaps(read);
      for (const auto& [other, r] : pending_) touched = touched || write.overlaps(r);
      // What a host read that did not wait sees: garbage, not the old bytes.
      if (!touched && write.bytes > 0)
        std::memset(const_cast<std::byte*>(write.begin), static_cast<int>(kPoison), write.bytes);
    }
    for (const Range& r : reads) pending_.emplace(id, r);
    for (const Range& r : writes) pending_.emplace(id, r);
  }
  w.push([this, id, delay, work = std::move(work)] {
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    work();
    std::lock_guard lock(mutex_);
    pending_.erase(id);
  });
}

void HostDeviceApi::memcpy_legacy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  // Staged now (the caller may reuse src at once); the DMA into dst runs later on the legacy
  // default stream, after at least a millisecond: a real one is late by the last chunk's DMA.
  auto staged = std::make_shared<std::vector<std::byte>>(
      static_cast<const std::byte*>(src), static_cast<const std::byte*>(src) + bytes);
  submit(nullptr, {}, {{static_cast<const std::byte*>(dst), bytes}}, [dst, staged] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::memcpy(dst, staged->data(), staged->size());
  });
}

void HostDeviceApi::synchronize(device::StreamId stream) {
  worker(stream).drain();
}

HostDeviceApi::~HostDeviceApi() {
  drain_all();
}

void HostDeviceApi::inject_hang(std::string async_error) {
  std::lock_guard lock(mutex_);
  hang_next_ = true;
  hang_error_ = std::move(async_error);
}

bool HostDeviceApi::take_injection(std::string& async_error) {
  std::lock_guard lock(mutex_);
  if (!hang_next_) return false;
  hang_next_ = false;
  async_error = std::exchange(hang_error_, {});
  return true;
}

void HostDeviceApi::enqueue(device::StreamId stream, std::function<void()> work) {
  worker(stream).push(std::move(work));
}

HostDeviceApi::Worker& HostDeviceApi::worker(device::StreamId stream) {
  if (stream == nullptr) return *default_stream_;
  std::lock_guard lock(mutex_);
  auto it = workers_.find(static_cast<Worker*>(stream));
  if (it == workers_.end())
    throw make_error(ErrorCode::kInternal, "host stand-in: unknown stream {}", stream);
  return *it->second;
}

void HostDeviceApi::drain_all() {
  std::vector<Worker*> all{default_stream_.get()};
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, w] : workers_) all.push_back(w.get());
  }
  for (Worker* w : all) w->drain();
}

device::PointerInfo HostDeviceApi::locate(const void* p) {
  // On a stream thread the calls come from a stand-in NCCL communicator's host Communicator:
  // there the "device" memory must take the host path.
  if (on_stream_thread || p == nullptr) return {};
  auto* b = static_cast<const std::byte*>(p);
  std::lock_guard lock(mutex_);
  auto it = device_sizes_.upper_bound(b);
  if (it == device_sizes_.begin()) return {};
  --it;
  if (b >= it->first + std::max<size_t>(it->second.first, 1)) return {};
  ++counters_.device_locates;
  return {.on_device = true, .device = it->second.second};
}

void HostDeviceApi::set_device(int device) {
  if (device < 0 || device >= devices_)
    throw make_error(ErrorCode::kDevice,
                     "cudaSetDevice({}): invalid device ordinal (host stand-in with {} device(s))",
                     device, devices_);
  current_device_of_thread = device;
}

int HostDeviceApi::current_device() {
  return current_device_of_thread;
}

device::StreamId HostDeviceApi::create_stream(int) {
  auto w = std::make_unique<Worker>();
  Worker* id = w.get();
  ++counters_.streams;
  std::lock_guard lock(mutex_);
  workers_.emplace(id, std::move(w));
  return id;
}

void HostDeviceApi::destroy_stream(device::StreamId stream) noexcept {
  std::unique_ptr<Worker> w;
  {
    std::lock_guard lock(mutex_);
    auto it = workers_.find(static_cast<Worker*>(stream));
    if (it == workers_.end()) return;
    w = std::move(it->second);
    workers_.erase(it);
  }
  // Joined after its queue ran (cudaStreamDestroy lets pending work finish too).
}

device::EventId HostDeviceApi::create_event(int) {
  auto e = std::make_unique<EventState>();
  EventState* id = e.get();
  std::lock_guard lock(mutex_);
  events_.emplace(id, std::move(e));
  return id;
}

void HostDeviceApi::destroy_event(device::EventId event) noexcept {
  drain_all();  // no closure may still point at it
  std::lock_guard lock(mutex_);
  events_.erase(static_cast<EventState*>(event));
}

void HostDeviceApi::record(device::EventId event, device::StreamId stream) {
  auto* e = static_cast<EventState*>(event);
  uint64_t generation = 0;
  {
    std::lock_guard lock(e->mutex);
    generation = ++e->recorded;
  }
  worker(stream).push([e, generation] {
    {
      std::lock_guard lock(e->mutex);
      e->reached = std::max(e->reached, generation);
    }
    e->reached_cv.notify_all();
  });
}

void HostDeviceApi::wait(device::StreamId stream, device::EventId event) {
  if (drop_waits_) return;  // the fault the ordering tests must catch
  auto* e = static_cast<EventState*>(event);
  uint64_t generation = 0;
  {
    std::lock_guard lock(e->mutex);
    generation = e->recorded;
  }
  worker(stream).push([e, generation] {
    std::unique_lock lock(e->mutex);
    e->reached_cv.wait(lock, [&] { return e->reached >= generation; });
  });
}

bool HostDeviceApi::query(device::EventId event) {
  auto* e = static_cast<EventState*>(event);
  std::lock_guard lock(e->mutex);
  return e->reached >= e->recorded;
}

void* HostDeviceApi::alloc(size_t bytes, int device) {
  if (device < 0 || device >= devices_)
    throw make_error(ErrorCode::kDevice,
                     "cudaMalloc({} bytes on device {}): invalid device ordinal (host stand-in "
                     "with {} device(s))",
                     bytes, device, devices_);
  auto memory = std::make_unique<std::byte[]>(std::max<size_t>(bytes, 1));
  std::byte* p = memory.get();
  // cudaMalloc's memory holds whatever was there before: never zeros to lean on.
  std::memset(p, static_cast<int>(kPoison), std::max<size_t>(bytes, 1));
  std::lock_guard lock(mutex_);
  device_memory_.emplace(p, std::move(memory));
  device_sizes_.emplace(p, std::make_pair(bytes, device));
  return p;
}

void HostDeviceApi::free(void* p) noexcept {
  drain_all();  // cudaFree waits for the device too
  std::lock_guard lock(mutex_);
  device_memory_.erase(static_cast<std::byte*>(p));
  device_sizes_.erase(static_cast<std::byte*>(p));
}

void* HostDeviceApi::alloc_host(size_t bytes) {
  auto memory = std::make_unique<std::byte[]>(std::max<size_t>(bytes, 1));
  std::byte* p = memory.get();
  std::lock_guard lock(mutex_);
  host_memory_.emplace(p, std::move(memory));
  return p;
}

void HostDeviceApi::free_host(void* p) noexcept {
  drain_all();
  std::lock_guard lock(mutex_);
  host_memory_.erase(static_cast<std::byte*>(p));
}

void HostDeviceApi::copy_async(void* dst, const void* src, size_t bytes, device::StreamId stream) {
  ++counters_.copies;
  if (bytes == 0) return;
  submit(stream, {{static_cast<const std::byte*>(src), bytes}},
         {{static_cast<const std::byte*>(dst), bytes}}, [=] { std::memmove(dst, src, bytes); });
}

void HostDeviceApi::reduce_async(const device::ReduceArgs& args, device::StreamId stream) {
  // The kernels' own refusals, at enqueue as the CUDA path's (cuda_device_api.cc).
  reduce::validate(args);
  if (args.count == 0) return;
  const size_t bytes = args.count * element_size(args.type);
  submit(stream,
         {{static_cast<const std::byte*>(args.a), bytes},
          {static_cast<const std::byte*>(args.b), bytes}},
         {{static_cast<const std::byte*>(args.out), bytes}}, [a = args] {
           const bool scaled = a.scale_a != 1.0 || a.scale_b != 1.0 || a.post != 1.0;
           if (is_floating(a.type) && a.op == ReduceOp::kSum && scaled) {
             reduce::combine_scaled(a.type, a.out, a.a, a.scale_a, a.b, a.scale_b, a.post, a.count);
             return;
           }
           reduce::combine(a.type, a.op, a.out, a.a, a.b, a.count);
           // Integer avg's last step (validate() allowed a divisor only there): truncating, as the
           // kernels and the host path.
           if (a.divisor != 1) reduce::divide(a.type, a.out, a.count, a.divisor);
         });
}

device::UniqueId HostDeviceApi::nccl_unique_id() {
  device::UniqueId id{};
  std::random_device random;
  const std::string text =
      fmt::format("{:08x}{:08x}-{}-{}", random(), random(), ::getpid(), ++ids_drawn_);
  std::memcpy(id.data(), text.data(), std::min(text.size(), id.size()));
  return id;
}

std::unique_ptr<device::NcclComm> HostDeviceApi::nccl_init(const device::UniqueId& id, int nranks,
                                                           int rank, int device,
                                                           std::chrono::milliseconds timeout) {
  ++counters_.nccl_inits;
  if (device < 0 || device >= devices_)
    throw make_error(ErrorCode::kDevice,
                     "ncclCommInitRankConfig on rank {}: invalid device {} (host stand-in with {} "
                     "device(s))",
                     rank, device, devices_);
  Options options = Options::from_env();
  options.name =
      "stand-in-nccl-" + std::string(reinterpret_cast<const char*>(id.data()),
                                     strnlen(reinterpret_cast<const char*>(id.data()), id.size()));
  options.init_timeout = timeout;
  // NCCL's non-blocking init answers in progress and completes a while later.
  std::this_thread::sleep_for(draw_delay() * 10);
  auto host = comm::Communicator::create(store_, rank, nranks, options);
  // NCCL's init exchanges every rank's host and device and refuses two ranks of one communicator
  // on one GPU of one host (ncclInvalidUsage, "Duplicate GPU detected"), on every rank. NCCL
  // tells hosts apart by NCCL_HOSTID when set, else by host name.
  char name[256] = {};
  std::string host_id;
  if (const char* given = std::getenv("NCCL_HOSTID"); given != nullptr && *given != '\0')
    host_id = given;
  else if (::gethostname(name, sizeof name - 1) == 0)
    host_id = name;
  constexpr size_t kIdBytes = 64;
  std::vector<char> mine(kIdBytes + sizeof(int), '\0');
  std::memcpy(mine.data(), host_id.data(), std::min(host_id.size(), kIdBytes - 1));
  std::memcpy(mine.data() + kIdBytes, &device, sizeof device);
  std::vector<char> all(mine.size() * static_cast<size_t>(nranks));
  host->allgather(mine.data(), all.data(), mine.size(), DataType::kUInt8);
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) continue;
    const char* theirs = all.data() + mine.size() * static_cast<size_t>(r);
    if (std::memcmp(theirs, mine.data(), mine.size()) == 0)
      throw make_error(ErrorCode::kDevice,
                       "ncclCommInitRankConfig failed on rank {} of {} (device {}): invalid usage "
                       "(host stand-in: Duplicate GPU detected: rank {} and rank {} both on CUDA "
                       "device {} of host '{}'); give each rank its own GPU, or set NCCL_HOSTID "
                       "per rank where ranks only pretend to be on different hosts",
                       rank, nranks, device, std::min(r, rank), std::max(r, rank), device, host_id);
  }
  return std::make_unique<Comm>(*this, std::move(host));
}

}  // namespace tutti::testing
