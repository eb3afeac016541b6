// PmiClient against a stand-in PMI-1 launcher on the other end of a socketpair: the launcher's side
// is a thread that answers each request line as Hydra does (or misbehaves, for the error cases).
#include "bootstrap/pmi/pmi_client.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "net/fd.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;

// The launcher's end: reads request lines, answers each with what `answer` returns ("" = say
// nothing), until the client closes or `answer` returns "close".
class FakeLauncher {
 public:
  explicit FakeLauncher(std::function<std::string(const std::string&)> answer) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client_fd_.reset(fds[0]);
    launcher_fd_.reset(fds[1]);
    thread_ = std::thread([this, answer = std::move(answer)] {
      std::string pending;
      char buf[512];
      for (;;) {
        ssize_t n = ::read(launcher_fd_.get(), buf, sizeof buf);
        if (n <= 0) return;
        pending.append(buf, static_cast<size_t>(n));
        for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
          std::string line = pending.substr(0, nl);
          pending.erase(0, nl + 1);
          requests.push_back(line);
          std::string reply = answer(line);
          if (reply == "close") {
            launcher_fd_.reset();
            return;
          }
          if (!reply.empty()) {
            reply += "\n";
            EXPECT_EQ(::write(launcher_fd_.get(), reply.data(), reply.size()),
                      static_cast<ssize_t>(reply.size()));
          }
        }
      }
    });
  }
  ~FakeLauncher() { finish(); }
  // Hangs up the client's end and waits for the launcher's thread: `requests` is then complete.
  void finish() {
    ::shutdown(client_fd_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  int client_fd() const { return client_fd_.get(); }
  std::vector<std::string> requests;  // read after the client is done

 private:
  net::Fd client_fd_, launcher_fd_;
  std::thread thread_;
};

// Hydra's answers.
std::string hydra(const std::string& line) {
  auto fields = PmiClient::parse_line(line);
  const std::string& cmd = fields["cmd"];
  if (cmd == "init") return "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0";
  if (cmd == "get_maxes") return "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0";
  if (cmd == "get_my_kvsname") return "cmd=my_kvsname kvsname=kvs_42_0 rc=0";
  if (cmd == "put") return "cmd=put_result rc=0 msg=success";
  if (cmd == "barrier_in") return "cmd=barrier_out";
  if (cmd == "get") return "cmd=get_result rc=0 msg=success value=10.0.0.1:29500";
  if (cmd == "finalize") return "cmd=finalize_ack";
  return "cmd=unknown rc=1";
}

TEST(PmiClient, ParsesLines) {
  auto f = PmiClient::parse_line("cmd=get_result rc=0 msg=success value=a:1\n");
  EXPECT_EQ(f["cmd"], "get_result");
  EXPECT_EQ(f["rc"], "0");
  EXPECT_EQ(f["value"], "a:1");
  EXPECT_TRUE(PmiClient::parse_line("").empty());
}

TEST(PmiClient, SpeaksPmi1WithHydra) {
  FakeLauncher launcher(hydra);
  {
    auto client = PmiClient::over_fd(launcher.client_fd(), 0);
    const Deadline deadline = Deadline::after(5s);
    client->init(deadline);
    EXPECT_EQ(client->kvs_name(), "kvs_42_0");
    client->put("tutti-store", "10.0.0.1:29500", deadline);
    client->barrier(deadline);
    EXPECT_EQ(client->get("tutti-store", deadline), "10.0.0.1:29500");
  }  // the destructor finalizes
  launcher.finish();
  ASSERT_GE(launcher.requests.size(), 7u);
  EXPECT_EQ(launcher.requests[0], "cmd=init pmi_version=1 pmi_subversion=1");
  EXPECT_EQ(launcher.requests[3], "cmd=put kvsname=kvs_42_0 key=tutti-store value=10.0.0.1:29500");
  EXPECT_EQ(launcher.requests[4], "cmd=barrier_in");
  EXPECT_EQ(launcher.requests.back(), "cmd=finalize");
}

TEST(PmiClient, RefusesAFdThatIsNotASocket) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  net::Fd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  try {
    PmiClient::over_fd(read_end.get(), 2);
    FAIL() << "a pipe was taken for a PMI socket";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("is not a socket"), std::string::npos) << e.what();
  }
}

TEST(PmiClient, ASilentLauncherTimesOut) {
  FakeLauncher launcher([](const std::string&) { return std::string(); });
  auto client = PmiClient::over_fd(launcher.client_fd(), 0);
  const auto start = std::chrono::steady_clock::now();
  try {
    client->init(Deadline::after(200ms));
    FAIL() << "init returned without an answer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("PMI_FD="), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(PmiClient, ARefusalOrAStrangerIsAnError) {
  FakeLauncher refusing([](const std::string& line) {
    return line.starts_with("cmd=init") ? std::string("cmd=response_to_init rc=-1 msg=nope")
                                        : hydra(line);
  });
  try {
    PmiClient::over_fd(refusing.client_fd(), 1)->init(Deadline::after(2s));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerFailure);
    EXPECT_NE(std::string(e.what()).find("rc=-1"), std::string::npos) << e.what();
  }
  FakeLauncher stranger([](const std::string&) { return std::string("HTTP/1.1 400 Bad Request"); });
  try {
    PmiClient::over_fd(stranger.client_fd(), 1)->init(Deadline::after(2s));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PMI-1 launcher"), std::string::npos) << e.what();
  }
}

TEST(PmiClient, ALauncherThatHangsUpIsAnError) {
  FakeLauncher closing([](const std::string&) { return std::string("close"); });
  try {
    PmiClient::over_fd(closing.client_fd(), 3)->init(Deadline::after(2s));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerFailure);
    EXPECT_NE(std::string(e.what()).find("closed the connection"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tutti::bootstrap
