#include "launcher/signal_watcher.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

TEST(SignalWatcher, SignalsBecomeBytesOnThePipe) {
  SignalWatcher watcher;
  EXPECT_TRUE(watcher.take().empty());
  ASSERT_EQ(::raise(SIGTERM), 0);  // handled, so the test process lives on
  ASSERT_EQ(::raise(SIGINT), 0);
  pollfd p{watcher.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  EXPECT_EQ(watcher.take(), (std::vector<int>{SIGTERM, SIGINT}));
  EXPECT_TRUE(watcher.take().empty());
}

TEST(SignalWatcher, OneAtATimeAndHandlersRestored) {
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  {
    SignalWatcher watcher;
    EXPECT_THROW(SignalWatcher second, Error);
    struct sigaction during {};
    ::sigaction(SIGTERM, nullptr, &during);
    EXPECT_NE(during.sa_handler, before.sa_handler);
  }
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  SignalWatcher again;  // the slot is free again
}

}  // namespace
}  // namespace tutti::launcher
