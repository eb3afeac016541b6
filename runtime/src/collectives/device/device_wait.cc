// The host's wait for a device call: the blocking call returns only once its work is done, and
// never waits past its deadline, an NCCL async error, a peer failure or an abort. The calls that
// returned once enqueued (CallOptions::enqueue_only) get the same checks later, in settle().
#include <thread>

#include "collectives/device/device_collectives.hpp"
#include "core/error.hpp"

namespace tutti::collectives {

namespace {

// Spin on the event briefly (a small collective finishes in microseconds), then sleep in growing
// naps up to 1 ms: a long NCCL call costs the host at most a thousand wakeups a second.
constexpr int kSpinQueries = 200;
constexpr auto kFirstNap = std::chrono::microseconds(20);
constexpr auto kLongestNap = std::chrono::microseconds(1000);

}  // namespace

void DeviceCollectives::wait_on_host(Context& ctx, const DeviceCall& call, device::EventId event,
                                     const std::string& what) {
  watch(ctx, call, event, what, ctx.deadline, std::chrono::steady_clock::now(), /*block=*/true);
}

bool DeviceCollectives::watch(Context& ctx, const DeviceCall& call, device::EventId event,
                              const std::string& what, Deadline deadline,
                              std::chrono::steady_clock::time_point began, bool block) {
  device::DeviceApi& api = device::api();
  auto nap = kFirstNap;
  const auto check_async_error = [&] {
    device::NcclComm* comm = nullptr;
    {
      std::lock_guard lock(nccl_mutex_);
      comm = nccl_.get();
    }
    if (comm == nullptr) return comm;
    if (std::string error = comm->async_error(); !error.empty())
      fail(ErrorCode::kDevice,
           fmt::format("rank {}: {} on device {} failed in NCCL: {}; the NCCL communicator was "
                       "aborted and this communicator is broken (make a new one)",
                       rank_, what, device_, error));
    return comm;
  };
  for (int round = 0; !api.query(event); ++round) {
    if (block && round < kSpinQueries) continue;
    device::NcclComm* comm = check_async_error();
    try {
      if (call.check_interrupt) call.check_interrupt();
      // Abort notices and dead peers arrive on the host connections: one look at each.
      ctx.transport.progress_all();
    } catch (...) {
      abort();  // the peers will not finish their part: end ours
      throw;
    }
    if (deadline.expired()) {
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      fail(ErrorCode::kTimeout,
           fmt::format("rank {}: {} on device {} did not complete within {:.1f} s (NCCL "
                       "communicator of {} ranks{}); it was aborted with ncclCommAbort. A peer "
                       "may be stuck or in another call; raise TUTTI_COLLECTIVE_TIMEOUT if the "
                       "work is just slow",
                       rank_, what, device_, waited, size_,
                       comm != nullptr ? "" : ", not yet made"));
    }
    if (!block) return false;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, kLongestNap);
  }
  // A failed NCCL operation still lets the stream move on (its kernels exit when the
  // communicator breaks, and the events after them complete): a completed event alone does not
  // mean a result, so the error (and an abort of this communicator) is looked at once more.
  check_async_error();
  if (call.check_interrupt) {
    try {
      call.check_interrupt();
    } catch (...) {
      abort();
      throw;
    }
  }
  return true;
}

bool DeviceCollectives::settle_oldest(Context& ctx, const DeviceCall& call, bool block) {
  InFlight& oldest = in_flight_.front();
  if (!watch(ctx, call, oldest.done.id(), oldest.what + " (returned once enqueued)",
             oldest.deadline, oldest.began, block))
    return false;
  spare_events_.push_back(std::move(oldest.done));
  in_flight_.pop_front();
  return true;
}

bool DeviceCollectives::settle(Context& ctx, const DeviceCall& call, bool block) {
  while (!in_flight_.empty())
    if (!settle_oldest(ctx, call, block)) return false;
  return true;
}

}  // namespace tutti::collectives
