// Transport: every Channel of one rank plus the loop that drives them while a caller waits.
// Waiting progresses all channels (so an abort notice from any peer is seen promptly), spins briefly,
// then yields or sleeps in poll() on the channels' fds, and always honours the deadline.
#pragma once

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
  int rank_;
  std::vector<std::unique_ptr<Channel>> channels_;
};

}  // namespace tutti::transport
