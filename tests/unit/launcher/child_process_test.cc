#include "launcher/child_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "launcher/output_mux.hpp"
#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

SpawnRequest shell(const std::string& script, pid_t group = 0) {
  return SpawnRequest{"/bin/sh", {"sh", "-c", script}, {"PATH=/usr/bin:/bin", "MARK=m1"}, group};
}

// Reads the child's output to EOF and reaps it.
ExitStatus finish(ChildProcess& child, MemorySink& sink) {
  OutputMux mux(sink, false);
  mux.add(0, Stream::kStdout, child.take_stdout());
  mux.add(0, Stream::kStderr, child.take_stderr());
  mux.drain(Deadline::after_seconds(30));
  Deadline deadline = Deadline::after_seconds(30);
  while (!child.try_reap() && !deadline.expired()) ::usleep(1000);
  return child.status().value_or(ExitStatus::exited(-1));
}

TEST(ChildProcess, OutputEnvironmentAndStatus) {
  ChildProcess child =
      ChildProcess::spawn(shell("echo out $MARK; echo err >&2; read x; echo read=$?; exit 3"));
  MemorySink sink;
  ExitStatus s = finish(child, sink);
  EXPECT_EQ(s.kind, ExitStatus::Kind::kExited);
  EXPECT_EQ(s.value, 3);
  // stdin is /dev/null: read hits EOF at once.
  EXPECT_EQ(sink.out, "out m1\nread=1\n");
  EXPECT_EQ(sink.err, "err\n");
}

TEST(ChildProcess, OwnProcessGroupAndJoiningIt) {
  ChildProcess leader = ChildProcess::spawn(shell("sleep 30"));
  EXPECT_EQ(::getpgid(leader.pid()), leader.pid());
  ChildProcess member = ChildProcess::spawn(shell("sleep 30", leader.pid()));
  EXPECT_EQ(::getpgid(member.pid()), leader.pid());
  ASSERT_EQ(::kill(-leader.pid(), SIGKILL), 0);
  MemorySink sink;
  EXPECT_EQ(finish(member, sink).shell_code(), 128 + SIGKILL);
  EXPECT_EQ(finish(leader, sink).shell_code(), 128 + SIGKILL);
}

TEST(ChildProcess, ExecFailureThrowsNamingTheProgram) {
  try {
    ChildProcess::spawn(SpawnRequest{"/nonexistent/prog", {"prog"}, {}, 0});
    FAIL() << "spawn should have thrown";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/prog"), std::string::npos) << e.what();
  }
}

TEST(ChildProcess, DestructorKillsAndReaps) {
  pid_t pid = 0;
  {
    ChildProcess child = ChildProcess::spawn(shell("sleep 30"));
    pid = child.pid();
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  // Reaped, so the pid is gone (not even a zombie).
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(ChildProcess, SignalAfterReapIsANoOp) {
  ChildProcess child = ChildProcess::spawn(shell("exit 0"));
  MemorySink sink;
  EXPECT_TRUE(finish(child, sink).success());
  child.signal(SIGKILL);  // must not signal a recycled pid
  EXPECT_TRUE(child.reaped());
}

}  // namespace
}  // namespace tutti::launcher
