// StoreLifeline: the server never writes on this connection, so the only thing that can make it
// readable is the server side closing (the launcher died or stopped the store). The watcher thread
// sleeps in poll() on it plus a wake-up pipe that the destructor uses, and wakes every second to
// send a heartbeat when the launcher gave this process a launch id.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/lifeline_beat.hpp"
#include "bootstrap/tcp_store.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "net/handshake.hpp"

namespace tutti::bootstrap {
namespace {

// A beat a second: cheap (a byte), and ten to one under tuttirun's default --hang-timeout, so that
// a process starved of CPU for a while is not taken for a stopped one.
constexpr std::chrono::seconds kHeartbeatInterval{1};
// How often the thread looks at its stop flag when the wake-up pipe cannot be used.
constexpr int kStopCheckMs = 100;

// Shared with the watcher thread so that an on_lost which ends up destroying the lifeline (e.g.
// via a chain of owners) does not pull the state out from under the running thread.
struct Watch {
  net::Fd connection;
  net::Fd wake_read, wake_write;
  std::function<void()> on_lost;
  std::string peer;
  int64_t launch_id = -1;
  std::atomic<bool> stopping{false};  // set by the destructor before it writes to the pipe

  // One heartbeat (the first says who beats). Best effort: a full send buffer means the server
  // is not reading, which its own silence watch judges; a broken connection shows as POLLIN.
  void beat(bool first) {
    const std::vector<std::byte> message =
        first ? lifeline_beat::hello({launch_id, static_cast<int32_t>(::getpid())})
              : std::vector<std::byte>{std::byte{lifeline_beat::kBeat}};
    (void)!::send(connection.get(), message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  // Returns true when the server side is gone, false when woken up to stop.
  bool wait_for_loss() {
    std::array<pollfd, 2> fds{pollfd{connection.get(), POLLIN, 0},
                              pollfd{wake_read.get(), POLLIN, 0}};
    nfds_t watched = fds.size();
    std::array<std::byte, 64> sink{};
    const bool beating = launch_id >= 0;
    if (beating) beat(true);
    auto next_beat = std::chrono::steady_clock::now() + kHeartbeatInterval;
    for (;;) {
      if (stopping.load()) return false;
      int timeout_ms = -1;
      if (beating) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= next_beat) {
          beat(false);
          next_beat = now + kHeartbeatInterval;
        }
        timeout_ms =
            static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(next_beat - now).count());
      }
      // Without the wake-up pipe the stop flag is all there is: look at it often.
      if (watched == 1 && (timeout_ms < 0 || timeout_ms > kStopCheckMs)) timeout_ms = kStopCheckMs;
      int n = ::poll(fds.data(), watched, timeout_ms);
      if (n == 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        log::error("lifeline to {}: poll() failed: {}; no longer watching the launcher", peer,
                   std::strerror(errno));
        return false;
      }
      if (watched == 2 && fds[1].revents != 0) {
        if (stopping.load()) return false;
        // Not the destructor's byte: another part of the process closed (and maybe reused) the
        // pipe's descriptor. Beating goes on without the pipe, rather than the thread ending
        // silently and the launcher taking a working rank for hung.
        log::error(
            "lifeline to {}: its wake-up pipe (fd {}) was closed by another part of this process "
            "(a descriptor closed twice?); heartbeats go on",
            peer, fds[1].fd);
        watched = 1;
        continue;
      }
      if (fds[0].revents == 0) continue;
      if ((fds[0].revents & POLLNVAL) != 0) {
        log::error(
            "lifeline to {}: its connection (fd {}) was closed by another part of this process (a "
            "descriptor closed twice?): no heartbeats from here on, so a launcher watching them "
            "(tuttirun --hang-timeout) will end this rank",
            peer, fds[0].fd);
        return false;
      }
      ssize_t got = ::recv(connection.get(), sink.data(), sink.size(), MSG_DONTWAIT);
      if (got > 0) continue;  // the protocol says nothing comes; ignore rather than misjudge
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      return true;
    }
  }
};

}  // namespace

struct StoreLifeline::State {
  std::shared_ptr<Watch> watch;
  std::thread thread;
};

StoreLifeline::StoreLifeline(const net::Endpoint& server, const std::string& job_token, int rank,
                             Deadline connect_deadline, std::function<void()> on_lost,
                             int64_t launch_id)
    : state_(std::make_unique<State>()) {
  auto watch = std::make_shared<Watch>();
  watch->launch_id = launch_id;
  watch->peer = "store at " + server.to_string();
  watch->on_lost = std::move(on_lost);
  watch->connection = net::connect_tcp(server, connect_deadline);
  net::client_handshake(watch->connection.get(),
                        net::Hello{net::ConnectionKind::kStoreLifeline, rank, job_token},
                        connect_deadline, watch->peer);
  std::array<int, 2> pipe_fds{};
  if (::pipe2(pipe_fds.data(), O_CLOEXEC | O_NONBLOCK) != 0)
    throw_system_error("pipe2() for the store lifeline's wake-up pipe", errno);
  watch->wake_read.reset(pipe_fds[0]);
  watch->wake_write.reset(pipe_fds[1]);
  state_->watch = watch;
  state_->thread = std::thread([watch] {
    // When the launcher is gone, so is the pipe our stderr went to: the message below must not
    // raise SIGPIPE, whose default action would end the process. Blocked in this thread only,
    // the signal stays pending here and the write just fails.
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
    if (!watch->wait_for_loss()) return;
    log::debug("lifeline to {} closed", watch->peer);
    if (watch->on_lost) watch->on_lost();
  });
}

StoreLifeline::~StoreLifeline() {
  state_->watch->stopping.store(true);
  char byte = 1;
  (void)!::write(state_->watch->wake_write.get(), &byte, 1);
  if (state_->thread.get_id() == std::this_thread::get_id()) {
    // Destroyed from inside on_lost: the thread owns a reference to the Watch and ends by itself.
    state_->thread.detach();
  } else {
    state_->thread.join();
  }
}

}  // namespace tutti::bootstrap
