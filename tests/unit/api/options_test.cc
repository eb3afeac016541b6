// Options::from_env: TUTTI_ALGO names the algorithm every allreduce of the communicator uses (only
// kAuto reaches the cost model, collectives/select.cc); a bad value is a configuration error.
#include "tutti/options.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "comm/topology.hpp"
#include "core/error.hpp"

namespace tutti {
namespace {

class AlgoOverride : public ::testing::TestWithParam<std::pair<const char*, Algorithm>> {
 protected:
  void TearDown() override { unsetenv("TUTTI_ALGO"); }
};

TEST_P(AlgoOverride, TuttiAlgoNamesTheAlgorithm) {
  setenv("TUTTI_ALGO", GetParam().first, 1);
  EXPECT_EQ(Options::from_env().algorithm, GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(Names, AlgoOverride,
                         ::testing::Values(std::pair{"hier", Algorithm::kHierarchical},
                                           std::pair{"ring", Algorithm::kRing},
                                           std::pair{"shm", Algorithm::kShm},
                                           std::pair{"auto", Algorithm::kAuto}));

TEST(OptionsFromEnv, EverySettingFillsItsField) {
  setenv("TUTTI_COLLECTIVE_TIMEOUT", "2.5", 1);
  setenv("TUTTI_SEGMENT_BYTES", "64K", 1);
  setenv("TUTTI_TRANSPORT", "tcp", 1);
  setenv("TUTTI_TCP_STREAMS", "3", 1);
  setenv("TUTTI_SHM_WINDOW_BYTES", "96K", 1);
  setenv("TUTTI_SHM_SPIN_ROUNDS", "77", 1);
  setenv("TUTTI_SOCKET_IFNAME", "^docker,lo", 1);
  setenv("TUTTI_ADDR", "::1", 1);
  setenv("TUTTI_TCP_CONGESTION", "reno", 1);
  const Options o = Options::from_env();
  EXPECT_EQ(o.tcp_congestion, "reno");
  EXPECT_EQ(o.socket_ifname, "^docker,lo");
  EXPECT_EQ(o.listen_address, "::1");
  EXPECT_EQ(o.shm_window_bytes, 96u << 10);
  EXPECT_EQ(o.shm_spin_rounds, 77);
  EXPECT_EQ(o.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(o.segment_bytes, 64u << 10);
  EXPECT_EQ(o.transport, TransportKind::kTcp);
  EXPECT_EQ(o.tcp_streams, 3);
  for (const char* name : {"TUTTI_COLLECTIVE_TIMEOUT", "TUTTI_SEGMENT_BYTES", "TUTTI_TRANSPORT",
                           "TUTTI_TCP_STREAMS", "TUTTI_SHM_WINDOW_BYTES", "TUTTI_SHM_SPIN_ROUNDS",
                           "TUTTI_SOCKET_IFNAME", "TUTTI_ADDR", "TUTTI_TCP_CONGESTION"})
    unsetenv(name);
  // Unset, they are tutti's defaults.
  const Options d = Options::from_env();
  const Options defaults;
  EXPECT_EQ(d.timeout, defaults.timeout);
  EXPECT_EQ(d.segment_bytes, defaults.segment_bytes);
  EXPECT_EQ(d.transport, defaults.transport);
  EXPECT_EQ(d.tcp_streams, defaults.tcp_streams);
  EXPECT_EQ(d.shm_window_bytes, defaults.shm_window_bytes);
  EXPECT_FALSE(d.shm_spin_rounds.has_value());
  EXPECT_EQ(d.socket_ifname, "");
  EXPECT_EQ(d.listen_address, "");
  EXPECT_EQ(d.tcp_congestion, "auto");
}

// A value that names no congestion control fails at init, not at the first TCP connection.
TEST(OptionsFromEnv, MalformedTcpCongestionIsRefused) {
  setenv("TUTTI_TCP_CONGESTION", "Cubic", 1);
  try {
    Options::from_env();
    ADD_FAILURE() << "accepted TUTTI_TCP_CONGESTION=Cubic";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("TUTTI_TCP_CONGESTION='Cubic'"), std::string::npos)
        << e.what();
  }
  unsetenv("TUTTI_TCP_CONGESTION");
}

TEST(AlgoOverrideErrors, UnknownNameIsRefused) {
  setenv("TUTTI_ALGO", "butterfly", 1);
  EXPECT_THROW(Options::from_env(), Error);
  unsetenv("TUTTI_ALGO");
}

TEST(HostIndex, EqualIdsShareAnIndexNumberedByLowestRank) {
  EXPECT_EQ(comm::host_index_of_ranks({"b", "a", "b", "c", "a"}),
            (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(comm::host_index_of_ranks({"x"}), (std::vector<int>{0}));
  // Agrees with each rank's own topology.
  const std::vector<std::string> ids = {"h1", "h2", "h2", "h1", "h3"};
  const auto index = comm::host_index_of_ranks(ids);
  for (int r = 0; r < 5; ++r)
    EXPECT_EQ(index[r], comm::topology_from_hosts(ids, r).cross_rank) << r;
}

}  // namespace
}  // namespace tutti
