// What only an etcd store does: addresses with several endpoints and a prefix, leases that outlive
// a live process and expire after a dead one, a rank's claim across runs, and etcd's refusals, all
// against a real etcd the test starts.
#include "bootstrap/etcd_store.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "bootstrap/store_factory.hpp"
#include "core/error.hpp"
#include "unit/bootstrap/support/etcd_server.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;

std::string message_of(const std::function<void()>& call, ErrorCode expected) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(EtcdAddress, EndpointsPortsAndPrefix) {
  EtcdAddress a = parse_etcd_address("etcd://10.0.0.5", "TUTTI_STORE");
  ASSERT_EQ(a.endpoints.size(), 1u);
  EXPECT_EQ(a.endpoints[0].host, "10.0.0.5");
  EXPECT_EQ(a.endpoints[0].port, 2379);
  EXPECT_EQ(a.prefix, "/tutti");
  a = parse_etcd_address("etcd://etcd-0.etcd:2379,etcd-1.etcd:12379,[fd00::1]/jobs/t5/", "X");
  ASSERT_EQ(a.endpoints.size(), 3u);
  EXPECT_EQ(a.endpoints[0].host, "etcd-0.etcd");
  EXPECT_EQ(a.endpoints[1].port, 12379);
  EXPECT_EQ(a.endpoints[2].host, "fd00::1");
  EXPECT_EQ(a.endpoints[2].port, 2379);
  EXPECT_EQ(a.prefix, "/jobs/t5");
  EXPECT_EQ(parse_etcd_address("etcd://[::1]:2400", "X").endpoints[0].port, 2400);
}

TEST(EtcdAddress, BadAddressesAreConfigErrorsThatSayWhatToWrite) {
  std::string m =
      message_of([] { parse_etcd_address("etcds://h:2379", "TUTTI_STORE"); }, ErrorCode::kConfig);
  EXPECT_NE(m.find("TLS is not supported"), std::string::npos) << m;
  m = message_of([] { parse_etcd_address("etcd://a:1,,b:2", "TUTTI_STORE"); }, ErrorCode::kConfig);
  EXPECT_NE(m.find("empty endpoint"), std::string::npos) << m;
  m = message_of([] { parse_etcd_address("etcd:///prefix", "TUTTI_STORE"); }, ErrorCode::kConfig);
  EXPECT_NE(m.find("TUTTI_STORE"), std::string::npos) << m;
  message_of([] { parse_etcd_address("etcd://h:notaport", "TUTTI_STORE"); }, ErrorCode::kConfig);
  message_of([] { parse_etcd_address("etcd://h:0", "TUTTI_STORE"); }, ErrorCode::kConfig);
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server = testing::EtcdServer::shared();
    if (server == nullptr) GTEST_SKIP() << testing::EtcdServer::skip_reason();
    url = server->fresh_url("etcd");
  }
  std::unique_ptr<EtcdStore> open(std::chrono::seconds ttl, const std::string& address = "") {
    return std::make_unique<EtcdStore>(parse_etcd_address(address.empty() ? url : address, "test"),
                                       ttl, 10s, Deadline::after(10s));
  }
  testing::EtcdServer* server = nullptr;
  std::string url;
};

// The point of the lease: a killed process's keys go one TTL later, a live one's stay (its
// keep-alives run while it waits).
TEST_F(EtcdStoreTest, ADeadProcessKeysExpireAndALiveOnesStay) {
  auto live = open(3s);
  live->set("live", "1");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    try {
      auto mine = open(3s);
      mine->set("dead", "1");
      mine->add("dead-counter", 5);
    } catch (...) {
      ::_exit(1);
    }
    (void)!::write(ready[1], "x", 1);
    for (;;) ::pause();  // killed below, its keep-alive thread still running till then
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  EXPECT_TRUE(live->missing({"dead", "dead-counter"}).empty());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const auto killed = std::chrono::steady_clock::now();
  const Deadline limit = Deadline::after(8s);
  while (live->missing({"dead", "dead-counter"}).size() < 2 && !limit.expired())
    std::this_thread::sleep_for(100ms);
  const double gone_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_EQ(live->missing({"dead", "dead-counter"}).size(), 2u) << "still there after 8 s";
  EXPECT_GT(gone_after, 0.5);  // not deleted by anything but the lease
  // Far past its own TTL, the live store's key is still there.
  EXPECT_EQ(live->get("live", Deadline::after(1s)), "1");
  EXPECT_EQ(live->lease_ttl(), 3s);
}

TEST_F(EtcdStoreTest, NoLeaseKeysStay) {
  auto store = open(0s);
  store->set("k", "v");
  EXPECT_EQ(store->lease_ttl(), 0s);
  store.reset();
  EXPECT_EQ(open(0s)->get("k", Deadline::after(1s)), "v");
}

// clear() removes every key under the prefix, and only there; clear(keep) all but that one (keys
// just below and above it, and one it prefixes, go too).
TEST_F(EtcdStoreTest, ClearRemovesThePrefixButTheKeptKey) {
  auto store = open(0s);
  auto neighbour = open(0s, url + "x");  // a prefix that shares this one's first bytes
  neighbour->set("n", "1");
  for (const char* key : {"a", "holder", "holder2", "holdeq", "z"}) store->set(key, "v");
  EXPECT_EQ(store->clear("holder"), 4);
  EXPECT_EQ(store->missing({"a", "holder", "holder2", "holdeq", "z"}),
            (std::vector<std::string>{"a", "holder2", "holdeq", "z"}));
  EXPECT_EQ(store->clear(), 1);
  EXPECT_EQ(store->missing({"holder"}), std::vector<std::string>{"holder"});
  EXPECT_EQ(neighbour->get("n", Deadline::after(1s)), "1");
}

TEST_F(EtcdStoreTest, ACounterKeepsItsCreatorsLease) {
  auto creator = open(10s);
  auto other = open(0s);
  EXPECT_EQ(creator->add("c", 1), 1);
  EXPECT_EQ(other->add("c", 1), 2);
  EXPECT_EQ(creator->add("c", 1), 3);
  EXPECT_EQ(other->get("c", Deadline::after(1s)), "3");
}

TEST_F(EtcdStoreTest, ASecondEndpointIsUsedWhenTheFirstIsDown) {
  const uint16_t dead = testing::free_port();
  const auto live = server->endpoint();
  const std::string two =
      fmt::format("etcd://127.0.0.1:{},127.0.0.1:{}/failover-{}", dead, live.port, ::getpid());
  auto store = open(10s, two);
  store->set("a", "1");
  EXPECT_EQ(store->get("a", Deadline::after(2s)), "1");
  EXPECT_NE(store->describe().find(std::to_string(dead)), std::string::npos);
}

TEST_F(EtcdStoreTest, NoEtcdListeningIsATimeoutNamingTheUrl) {
  const uint16_t dead = testing::free_port();
  const auto started = std::chrono::steady_clock::now();
  std::string m = message_of(
      [&] {
        EtcdStore(parse_etcd_address(fmt::format("etcd://127.0.0.1:{}", dead), "TUTTI_STORE"), 10s,
                  1s, Deadline::after(700ms));
      },
      ErrorCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_NE(m.find(fmt::format("http://127.0.0.1:{}", dead)), std::string::npos) << m;
  EXPECT_NE(m.find("check that etcd runs"), std::string::npos) << m;
}

TEST_F(EtcdStoreTest, AValueOverEtcdsRequestLimitSaysWhichFlagToRaise) {
  auto store = open(10s);
  std::string m =
      message_of([&] { store->set("huge", std::string(20 << 20, 'x')); }, ErrorCode::kConfig);
  EXPECT_NE(m.find("'huge'"), std::string::npos) << m;
  EXPECT_NE(m.find("--max-request-bytes"), std::string::npos) << m;
}

TEST_F(EtcdStoreTest, ATooShortLeaseIsRefused) {
  std::string m = message_of([&] { open(1s); }, ErrorCode::kConfig);
  EXPECT_NE(m.find("3 s or more"), std::string::npos) << m;
}

// TUTTI_STORE=etcd://...: a rank's claim. A second live process as the same rank is refused once
// the first one's lease has outlived a TTL; the keys of a killed earlier run are waited out.
TEST_F(EtcdStoreTest, ARankIsClaimedOnceAndAKilledRunsClaimExpires) {
  WorldInfo w;
  w.rank = 1;
  w.size = 2;
  w.job_id = "claim";
  w.store_address = url;
  StoreConnection first = open_store(w, Deadline::after(10s), 10s, 3s);
  const auto started = std::chrono::steady_clock::now();
  std::string m =
      message_of([&] { open_store(w, Deadline::after(20s), 10s, 3s); }, ErrorCode::kConfig);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 3s);
  EXPECT_NE(m.find("job 'claim' for rank 1"), std::string::npos) << m;
  EXPECT_NE(m.find("TUTTI_JOB_ID"), std::string::npos) << m;

  w.job_id = "rerun";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      StoreConnection earlier = open_store(w, Deadline::after(10s), 10s, 3s);
      ::_exit(0);  // no destructors: as a killed process leaves it
    } catch (...) {
      ::_exit(1);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_EQ(status, 0);
  StoreConnection again = open_store(w, Deadline::after(20s), 10s, 3s);
  EXPECT_TRUE(again.store != nullptr);
}

TEST_F(EtcdStoreTest, AnEtcdAddressAsMasterAddrIsRefused) {
  WorldInfo w;
  w.size = 2;
  w.store_address = url;
  w.host_store = true;
  std::string m =
      message_of([&] { open_store(w, Deadline::after(2s), 2s, 3s); }, ErrorCode::kConfig);
  EXPECT_NE(m.find("TUTTI_STORE=etcd://"), std::string::npos) << m;
}

}  // namespace
}  // namespace tutti::bootstrap
