#include "launcher/torch_env.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <future>

#include "bootstrap/tcp_store.hpp"
#include "launcher/rank_agent.hpp"
#include "net/fd.hpp"
#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

TEST(TorchEnv, IdentityIsTorchrunsAndStaleMasterIsDropped) {
  Environment env = Environment::from_strings({"MASTER_ADDR=old", "MASTER_PORT=1", "RANK=9"});
  RankSlot slot{5, 1, 3, 1, 2, "b"};
  set_torch_identity(env, {}, slot, 6);
  EXPECT_EQ(env.get("RANK"), "5");
  EXPECT_EQ(env.get("WORLD_SIZE"), "6");
  EXPECT_EQ(env.get("LOCAL_RANK"), "1");
  EXPECT_EQ(env.get("LOCAL_WORLD_SIZE"), "3");
  EXPECT_EQ(env.get("GROUP_RANK"), "1");
  EXPECT_EQ(env.get("GROUP_WORLD_SIZE"), "2");
  EXPECT_FALSE(env.get("MASTER_ADDR"));
  EXPECT_FALSE(env.get("MASTER_PORT"));
}

TEST(TorchEnv, RanksSharingAHostGetOneThreadUnlessTheUserChose) {
  RankSlot shared{0, 0, 2, 0, 1, "a"};  // one of 2 ranks on its host
  RankSlot alone{0, 0, 1, 0, 2, "a"};   // the only rank on its host
  Environment env = Environment::from_strings({});
  EXPECT_TRUE(set_torch_identity(env, {}, shared, 2));
  EXPECT_EQ(env.get("OMP_NUM_THREADS"), "1");
  Environment single = Environment::from_strings({});
  EXPECT_FALSE(set_torch_identity(single, {}, alone, 2));
  EXPECT_FALSE(single.get("OMP_NUM_THREADS"));
  Environment inherited = Environment::from_strings({"OMP_NUM_THREADS=4"});
  EXPECT_FALSE(set_torch_identity(inherited, {}, shared, 2));
  EXPECT_EQ(inherited.get("OMP_NUM_THREADS"), "4");
  Environment exported = Environment::from_strings({});
  EXPECT_FALSE(set_torch_identity(exported, {{"OMP_NUM_THREADS", "3"}}, shared, 2));
}

TEST(TorchEnv, ExportedMasterIsKept) {
  std::vector<EnvExport> exports{{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}};
  Environment env = Environment::from_strings({"MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"});
  set_torch_identity(env, exports, RankSlot{}, 1);
  EXPECT_EQ(env.get("MASTER_ADDR"), "10.0.0.1");
  EXPECT_TRUE(torch_master_exported(exports));
  EXPECT_FALSE(torch_master_exported({}));
}

TEST(TorchEnv, OneOfTheMasterPairAloneIsRefused) {
  try {
    torch_master_exported({{"MASTER_ADDR", "10.0.0.1"}});
    FAIL() << "accepted MASTER_ADDR without MASTER_PORT";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without -x MASTER_PORT"), std::string::npos) << e.what();
  }
  EXPECT_THROW(torch_master_exported({{"MASTER_PORT", "1"}}), Error);
}

TEST(TorchEnv, PickedPortCanBeBound) {
  uint16_t port = pick_free_tcp_port();
  ASSERT_GT(port, 0);
  net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
}

TEST(TorchEnv, AgentsAgreeOnRankZerosAddressThroughTheStore) {
  bootstrap::TcpStoreServer server("127.0.0.1", 0, "token");
  std::string store = "127.0.0.1:" + std::to_string(server.port());
  // Rank 1 asks first: it must wait for rank 0.
  auto other = std::async(std::launch::async, [&] {
    Environment env;
    arrange_torch_master(env, 1, store, "token", 20'000);
    return env;
  });
  Environment zero;
  arrange_torch_master(zero, 0, store, "token", 20'000);
  Environment one = other.get();
  EXPECT_EQ(zero.get("MASTER_ADDR"), "127.0.0.1");
  ASSERT_TRUE(zero.get("MASTER_PORT"));
  EXPECT_NE(zero.get("MASTER_PORT"), "0");
  EXPECT_EQ(one.get("MASTER_ADDR"), zero.get("MASTER_ADDR"));
  EXPECT_EQ(one.get("MASTER_PORT"), zero.get("MASTER_PORT"));
}

TEST(TorchEnv, AMissingRankZeroIsNamedAfterTheDeadline) {
  bootstrap::TcpStoreServer server("127.0.0.1", 0, "");
  Environment env;
  try {
    arrange_torch_master(env, 2, "127.0.0.1:" + std::to_string(server.port()), "", 300);
    FAIL() << "returned without rank 0";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("rank 2: rank 0's host never published"),
              std::string::npos)
        << e.what();
  }
}

TEST(TorchEnv, TheAgentRequestCarriesTheFlag) {
  AgentRequest r;
  r.argv = {"train.py"};
  r.torch_master = true;
  std::string line = encode_agent_request(r);
  EXPECT_TRUE(decode_agent_request(line.substr(0, line.size() - 1)).torch_master);
  r.torch_master = false;
  line = encode_agent_request(r);
  EXPECT_FALSE(decode_agent_request(line.substr(0, line.size() - 1)).torch_master);
}

}  // namespace
}  // namespace tutti::launcher
