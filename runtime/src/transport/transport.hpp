// Transport: every Channel of one rank plus the loop that drives them while a caller waits.
// Waiting progresses all channels (so an abort notice from any peer is seen promptly), spins
// briefly, then yields or sleeps in poll() on the channels' fds, and always honours the deadline.
#pragma once

#include <poll.h>

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/deadline.hpp"
#include "transport/channel.hpp"

namespace tutti::transport {

class Transport {
 public:
  // channels[rank] is null (no channel to self); every other entry is set.
  Transport(int rank, std::vector<std::unique_ptr<Channel>> channels);
  ~Transport();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(channels_.size()); }
  Channel& channel(int peer);

  // Waits until every request completes. Throws the channel's Error when a peer fails, or
  // Error(kTimeout) at the deadline naming `what` and the peers still pending.
  void wait(std::span<const Request> requests, Deadline deadline, std::string_view what);

  // Sends an abort notice with `reason` to every peer (best effort).
  void abort_all(const std::string& reason) noexcept;

 private:
  // Sleeps in poll() on the channels' fds for at most timeout_ns (the idle path of wait()).
  void sleep_on_fds(long timeout_ns);
  [[noreturn]] void throw_timeout(std::string_view what, double waited_seconds) const;

  int rank_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<pollfd> pollfds_;  // reused between waits
};

}  // namespace tutti::transport
