// Options::from_env: TUTTI_ALGO names the algorithm every allreduce of the communicator uses (only
// kAuto reaches the cost model, collectives/select.cc); a bad value is a configuration error.
#include "tutti/options.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <variant>

#include "collectives/collectives.hpp"
#include "comm/topology.hpp"
#include "core/env.hpp"
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

// The settings table (core/env.cc) is the one declaration of a setting: the header's fields carry
// no defaults, and each names its variable in a comment. Here the comment, the row's member and
// the row's variable must agree, and every commented field must have its row.
TEST(OptionsTable, EveryFieldsCommentNamesTheRowThatSetsIt) {
  std::ifstream header(TUTTI_SOURCE_DIR "/runtime/include/tutti/options.hpp");
  ASSERT_TRUE(header.good());
  std::stringstream text;
  text << header.rdbuf();
  const std::string all = text.str();
  const size_t begin = all.find("struct TUTTI_OPTIONS_API Options {");
  ASSERT_NE(begin, std::string::npos);
  const std::string body = all.substr(begin, all.find("\n};", begin) - begin);
  const std::regex field(
      R"(\n +[A-Za-z_:<>]+ ([a-z_0-9]+)(?: = [^;\n]*)?;(?: *// (TUTTI_[A-Z0-9_]+))?)");
  std::map<std::string, std::string> variable_of_field;
  for (std::sregex_iterator m(body.begin(), body.end(), field), end; m != end; ++m)
    variable_of_field[(*m)[1]] = (*m)[2];
  size_t bound = 0;
  for (const auto& v : env::all()) {
    if (std::holds_alternative<std::monostate>(v.field)) continue;
    ++bound;
    ASSERT_TRUE(variable_of_field.count(std::string(v.field_name)))
        << v.name << " sets Options::" << v.field_name << ", which the header lacks";
    EXPECT_EQ(variable_of_field[std::string(v.field_name)], v.name)
        << "Options::" << v.field_name << "'s comment names another variable";
  }
  size_t commented = 0;
  for (const auto& [name, variable] : variable_of_field) commented += variable.empty() ? 0 : 1;
  EXPECT_EQ(commented, bound) << "a field names a variable that sets no field";
  // Of the fields, only these two are no variable's.
  EXPECT_EQ(variable_of_field.size(), bound + 2);
}

// Each row sets its own field, from the variable and from its default: a value other than the
// default changes that field and no other.
TEST(OptionsTable, EachVariableSetsItsFieldAndNoOther) {
  const Options defaults;
  for (const auto& v : env::all()) {
    if (std::holds_alternative<std::monostate>(v.field)) continue;
    std::string other;
    switch (v.kind) {
      case env::Kind::kInt:
      case env::Kind::kBytes:
        other = std::to_string(static_cast<int64_t>(v.min) + 1);
        break;
      case env::Kind::kSeconds:
        other = std::to_string(v.min * 2 + 0.5);
        break;
      case env::Kind::kBool:
        other = "yes";
        break;
      case env::Kind::kChoice:
        other = std::string(env::choice_name(v.name, 1));
        break;
      case env::Kind::kString:
        other = "reno";  // a congestion control's shape, a host id, a path: all take it
        break;
    }
    setenv(std::string(v.name).c_str(), other.c_str(), 1);
    const Options set = Options::from_env();
    unsetenv(std::string(v.name).c_str());
    for (const auto& w : env::all()) {
      std::visit(
          [&](auto member) {
            if constexpr (!std::is_same_v<decltype(member), std::monostate>) {
              const bool changed = !(set.*member == defaults.*member);
              // TUTTI_SEGMENT_BYTES alone also turns the TCP segment's growth off.
              const bool expected = w.name == v.name || (v.name == "TUTTI_SEGMENT_BYTES" &&
                                                         w.name == "TUTTI_TCP_SEGMENT_MAX_BYTES");
              EXPECT_EQ(changed, expected) << v.name << "=" << other << " and " << w.name;
            }
          },
          w.field);
    }
  }
}

// The enums' values are their choices' places in the table, and the collectives' own parser
// agrees with TUTTI_ALGO's order.
TEST(OptionsTable, ChoicesNameTheEnumsInOrder) {
  EXPECT_EQ(env::choice_name("TUTTI_TRANSPORT", static_cast<int>(TransportKind::kMpi)), "mpi");
  EXPECT_EQ(env::choice_name("TUTTI_TRANSPORT", static_cast<int>(TransportKind::kShm)), "shm");
  EXPECT_EQ(env::choice_name("TUTTI_DEVICE_ALLREDUCE", static_cast<int>(DeviceAllreduce::kHier)),
            "hier");
  EXPECT_EQ(env::choice_name("TUTTI_ALGO", static_cast<int>(Algorithm::kHalvingDoubling)), "hd");
  for (int i = 0; i < 6; ++i) {
    const std::string name(env::choice_name("TUTTI_ALGO", i));
    EXPECT_EQ(static_cast<int>(collectives::parse_algorithm(name)), i) << name;
    setenv("TUTTI_ALGO", name.c_str(), 1);
    EXPECT_EQ(static_cast<int>(Options::from_env().algorithm), i) << name;
  }
  unsetenv("TUTTI_ALGO");
  EXPECT_THROW(env::choice_name("TUTTI_ALGO", 6), Error);
}

// A misspelt variable is named with the one meant; a far one (another tool's) with none.
TEST(OptionsTable, AMisspeltVariableFindsTheOneMeant) {
  EXPECT_EQ(env::nearest("TUTTI_ALOG"), "TUTTI_ALGO");
  EXPECT_EQ(env::nearest("TUTTI_COLECTIVE_TIMOUT"), "TUTTI_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(env::nearest("TUTTI_SEGMENT_BYTE"), "TUTTI_SEGMENT_BYTES");
  EXPECT_EQ(env::nearest("TUTTI_TORCH2_VENV"), "");
  EXPECT_EQ(env::nearest("TUTTI_FAKE_DEVICES"), "");
  setenv("TUTTI_ALOG", "ring", 1);
  setenv("TUTTI_SEGMENT_BYTES", "64K", 1);
  const auto unknown = env::unknown_variables();
  unsetenv("TUTTI_ALOG");
  unsetenv("TUTTI_SEGMENT_BYTES");
  bool named = false;
  for (const auto& [name, near] : unknown) {
    EXPECT_NE(name, "TUTTI_SEGMENT_BYTES");
    if (name == "TUTTI_ALOG") named = near == "TUTTI_ALGO";
  }
  EXPECT_TRUE(named);
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
