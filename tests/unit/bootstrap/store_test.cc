// One suite, every Store: they must behave the same whatever the backend.
#include "bootstrap/store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/etcd_store.hpp"
#include "bootstrap/file_store.hpp"
#include "bootstrap/memory_store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "core/error.hpp"
#include "unit/bootstrap/support/etcd_server.hpp"
#include "unit/bootstrap/support/test_util.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;

// Each backend gives a first store and "another handle on the same store" (a second client, a
// second object on the same directory), as a second rank would have.
struct MemoryBackend {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();
  std::shared_ptr<Store> open() { return store; }
};

struct FileBackend {
  testing::TempDir dir;
  std::shared_ptr<Store> open() { return std::make_shared<FileStore>(dir.path()); }
};

struct TcpBackend {
  TcpStoreServer server{"127.0.0.1", 0, "job-token"};
  std::shared_ptr<Store> open() {
    return std::make_shared<TcpStore>(net::Endpoint{"127.0.0.1", server.port()}, "job-token", 0,
                                      Deadline::after(10s));
  }
};

// A real etcd (the tests start one), each test under a prefix of its own. Without an etcd binary
// open() gives nothing and the test is skipped.
struct EtcdBackend {
  testing::EtcdServer* server = testing::EtcdServer::shared();
  std::string url = server != nullptr ? server->fresh_url("store") : "";
  std::shared_ptr<Store> open() {
    if (server == nullptr) return nullptr;
    return std::make_shared<EtcdStore>(parse_etcd_address(url, "test"), 10s, 10s,
                                       Deadline::after(10s));
  }
};

template <typename Backend>
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!store) GTEST_SKIP() << testing::EtcdServer::skip_reason();
  }
  Backend backend;
  std::shared_ptr<Store> store = backend.open();
};

using Backends = ::testing::Types<MemoryBackend, FileBackend, TcpBackend, EtcdBackend>;
TYPED_TEST_SUITE(StoreTest, Backends);

TYPED_TEST(StoreTest, SetThenGetAndOverwrite) {
  this->store->set("a", "1");
  EXPECT_EQ(this->store->get("a", Deadline::after(5s)), "1");
  this->store->set("a", "two");
  EXPECT_EQ(this->store->get("a", Deadline::after(5s)), "two");
  auto other = this->backend.open();
  EXPECT_EQ(other->get("a", Deadline::after(5s)), "two");
}

TYPED_TEST(StoreTest, ValuesAreBinarySafe) {
  std::string value("\0\x01\xff tab\t newline\n", 17);
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4097) big[i] = static_cast<char>(i);
  this->store->set("bin", value);
  this->store->set("big", big);
  this->store->set("empty", "");
  EXPECT_EQ(this->store->get("bin", Deadline::after(5s)), value);
  EXPECT_EQ(this->store->get("big", Deadline::after(5s)), big);
  EXPECT_EQ(this->store->get("empty", Deadline::after(5s)), "");
}

TYPED_TEST(StoreTest, AnyByteStringIsAKeyAndKeysStayDistinct) {
  std::vector<std::string> keys = {"a/b",
                                   "a%2Fb",
                                   "a_b",
                                   "..",
                                   ".",
                                   "/",
                                   "lock",
                                   "tmp-1",
                                   "key-",
                                   " sp",
                                   "A",
                                   "a",
                                   std::string("nul\0byte", 8),
                                   std::string(600, 'k'),
                                   std::string(600, 'k') + "2",
                                   "\xff\xfe"};
  for (size_t i = 0; i < keys.size(); ++i) this->store->set(keys[i], std::to_string(i));
  for (size_t i = 0; i < keys.size(); ++i)
    EXPECT_EQ(this->store->get(keys[i], Deadline::after(5s)), std::to_string(i)) << i;
  EXPECT_TRUE(this->store->missing(keys).empty());
}

TYPED_TEST(StoreTest, GetWaitsForALaterSetFromAnotherThread) {
  auto writer_store = this->backend.open();
  auto writer = std::async(std::launch::async, [&] {
    // Lets the reader start waiting first; the test holds either way.
    std::this_thread::sleep_for(30ms);
    writer_store->set("late", "arrived");
  });
  EXPECT_EQ(this->store->get("late", Deadline::after(20s)), "arrived");
  writer.get();
}

TYPED_TEST(StoreTest, WaitReturnsOnceOtherThreadsSetEveryKey) {
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) keys.push_back("rank/" + std::to_string(i));
  std::vector<std::future<void>> writers;
  for (const auto& k : keys) {
    writers.push_back(std::async(std::launch::async, [this, k] {
      auto s = this->backend.open();
      s->set(k, "here");
    }));
  }
  this->store->wait(keys, Deadline::after(20s));
  EXPECT_TRUE(this->store->missing(keys).empty());
  for (auto& w : writers) w.get();
}

TYPED_TEST(StoreTest, AddFromManyThreadsGivesTheExactTotal) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 50;
  std::vector<std::future<std::vector<int64_t>>> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.push_back(std::async(std::launch::async, [this, t] {
      // Half the threads share the fixture's handle, half have their own.
      auto s = t % 2 == 0 ? this->store : this->backend.open();
      std::vector<int64_t> seen;
      for (int i = 0; i < kAdds; ++i) seen.push_back(s->add("counter", 1));
      return seen;
    }));
  }
  std::set<int64_t> all;
  for (auto& w : workers)
    for (int64_t v : w.get()) all.insert(v);
  // Every add saw a distinct intermediate total: none was lost or duplicated.
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kAdds));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kAdds);
  EXPECT_EQ(this->store->get("counter", Deadline::after(5s)), std::to_string(kThreads * kAdds));
  EXPECT_EQ(this->store->add("counter", -kThreads * kAdds - 5), -5);
  EXPECT_EQ(this->store->add("fresh", 0), 0);
}

TYPED_TEST(StoreTest, AddOnANonIntegerValueIsRejectedNamingTheKey) {
  this->store->set("word", "hello");
  try {
    this->store->add("word", 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'word'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(this->store->get("word", Deadline::after(5s)), "hello");
}

// Counters never wrap: an add past 2^63 - 1, or onto a stored number beyond it, is an error.
TYPED_TEST(StoreTest, AddThatWouldOverflowIsRejectedAndLeavesTheValue) {
  EXPECT_EQ(this->store->add("big", INT64_MAX - 1), INT64_MAX - 1);
  for (int64_t delta : {int64_t{2}, INT64_MAX}) {
    try {
      this->store->add("big", delta);
      FAIL() << "add(" << delta << ") wrapped";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("overflow"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(this->store->get("big", Deadline::after(5s)), std::to_string(INT64_MAX - 1));
  this->store->set("huge", "99999999999999999999");
  EXPECT_THROW(this->store->add("huge", 1), Error);
}

TYPED_TEST(StoreTest, GetTimeoutThrowsNamingTheKeyAndStore) {
  try {
    this->store->get("never/set", Deadline::after(50ms));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    std::string m = e.what();
    EXPECT_NE(m.find("'never/set'"), std::string::npos) << m;
    EXPECT_NE(m.find(this->store->describe()), std::string::npos) << m;
  }
}

TYPED_TEST(StoreTest, WaitTimeoutListsOnlyTheMissingKeys) {
  this->store->set("present", "1");
  try {
    this->store->wait({"present", "absent1", "absent2"}, Deadline::after(50ms));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    std::string m = e.what();
    EXPECT_NE(m.find("'absent1'"), std::string::npos) << m;
    EXPECT_NE(m.find("'absent2'"), std::string::npos) << m;
    EXPECT_EQ(m.find("'present'"), std::string::npos) << m;
  }
}

TYPED_TEST(StoreTest, MissingReturnsTheAbsentKeysInOrder) {
  this->store->set("b", "1");
  EXPECT_EQ(this->store->missing({"c", "b", "a"}), (std::vector<std::string>{"c", "a"}));
  EXPECT_TRUE(this->store->missing({}).empty());
  EXPECT_TRUE(this->store->missing({"b"}).empty());
}

TYPED_TEST(StoreTest, ExpiredDeadlineStillReturnsPresentKeys) {
  this->store->set("k", "v");
  Deadline past = Deadline::after(0ns);
  EXPECT_EQ(this->store->get("k", past), "v");
  this->store->wait({"k"}, past);
}

TYPED_TEST(StoreTest, DescribeSaysWhereTheStoreIs) {
  EXPECT_FALSE(this->store->describe().empty());
}

}  // namespace
}  // namespace tutti::bootstrap
