// TUTTI_ALGO overrides the cost model: Settings carries the named algorithm to every allreduce,
// and only kAuto reaches the model (collectives/select.cc).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "comm/communicator.hpp"
#include "comm/topology.hpp"
#include "core/error.hpp"

namespace tutti::comm {
namespace {

class AlgoOverride
    : public ::testing::TestWithParam<std::pair<const char*, collectives::Algorithm>> {
 protected:
  void TearDown() override { unsetenv("TUTTI_ALGO"); }
};

TEST_P(AlgoOverride, TuttiAlgoNamesTheAlgorithm) {
  setenv("TUTTI_ALGO", GetParam().first, 1);
  EXPECT_EQ(Settings::from_env().algorithm, GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(Names, AlgoOverride,
                         ::testing::Values(std::pair{"hier", collectives::Algorithm::kHierarchical},
                                           std::pair{"ring", collectives::Algorithm::kRing},
                                           std::pair{"shm", collectives::Algorithm::kShm},
                                           std::pair{"auto", collectives::Algorithm::kAuto}));

TEST(AlgoOverrideErrors, UnknownNameIsRefused) {
  setenv("TUTTI_ALGO", "butterfly", 1);
  EXPECT_THROW(Settings::from_env(), Error);
  unsetenv("TUTTI_ALGO");
}

TEST(HostIndex, EqualIdsShareAnIndexNumberedByLowestRank) {
  EXPECT_EQ(host_index_of_ranks({"b", "a", "b", "c", "a"}), (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(host_index_of_ranks({"x"}), (std::vector<int>{0}));
  // Agrees with each rank's own topology.
  const std::vector<std::string> ids = {"h1", "h2", "h2", "h1", "h3"};
  const auto index = host_index_of_ranks(ids);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(index[r], topology_from_hosts(ids, r).cross_rank) << r;
}

}  // namespace
}  // namespace tutti::comm
