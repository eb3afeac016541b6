// The pieces of the remote modes that need no remote host: the rank agent's request format, shell
// quoting for the remote command, the mpirun command line, and this machine's addresses.
#include <gtest/gtest.h>
#include <unistd.h>

#include "launcher/exec_backend.hpp"
#include "launcher/local_host.hpp"
#include "launcher/mpirun_mode.hpp"
#include "launcher/rank_agent.hpp"
#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

TEST(AgentRequest, RoundTripsHostileText) {
  AgentRequest r;
  r.rank = 7;
  r.host = "job-worker-3";
  r.argv = {"prog", "a b", "'q'", "\"dq\"", "$(reboot)", "back\\slash", "new\nline", ""};
  r.env = {{"TUTTI_JOB_TOKEN", "s3cr3t"}, {"WEIRD", "x=y; rm -rf /"}, {"EMPTY", ""}};
  r.cwd = "/work dir";
  r.grace_seconds = 2.5;
  std::string line = encode_agent_request(r);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line only";
  AgentRequest back = decode_agent_request(line.substr(0, line.size() - 1));
  EXPECT_EQ(back.rank, 7);
  EXPECT_EQ(back.host, r.host);
  EXPECT_EQ(back.argv, r.argv);
  EXPECT_EQ(back.env, r.env);
  EXPECT_EQ(back.cwd, r.cwd);
  EXPECT_DOUBLE_EQ(back.grace_seconds, 2.5);
}

TEST(AgentRequest, EveryByteButNulArrivesExactly) {
  // Non-UTF-8 bytes once arrived as U+FFFD through ssh and kubexec.
  std::string all;
  for (int c = 1; c < 256; ++c) all.push_back(static_cast<char>(c));
  AgentRequest r;
  r.host = "h\xff";
  r.argv = {"prog", all, "\xff\xfe\n", "caf\xe9"};
  r.env = {{"BYTES", all}, {"LATIN1", "\xe9t\xe9"}};
  r.cwd = "/tmp/\xff";
  std::string line = encode_agent_request(r);
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line only";
  AgentRequest back = decode_agent_request(line.substr(0, line.size() - 1));
  EXPECT_EQ(back.argv, r.argv);
  EXPECT_EQ(back.env, r.env);
  EXPECT_EQ(back.cwd, r.cwd);
  EXPECT_EQ(back.host, r.host);
}

TEST(AgentRequest, RefusesWhatNoProcessCanCarry) {
  AgentRequest r;
  r.argv = {"prog", std::string("a\0b", 3)};
  std::string line = encode_agent_request(r);
  EXPECT_THROW(decode_agent_request(line.substr(0, line.size() - 1)), Error);
  r.argv = {"prog"};
  r.env = {{"A=B", "x"}};
  line = encode_agent_request(r);
  EXPECT_THROW(decode_agent_request(line.substr(0, line.size() - 1)), Error);
}

TEST(AgentRequest, MalformedIsAConfigError) {
  for (
      std::string bad :
      {"", "{", "[]", "{\"rank\":1}", "{\"tutti_rank_request\":2}",
       R"({"tutti_rank_request":1,"rank":0,"host":"h","argv":["p"],"env":[],"cwd":"","grace":1})",
       R"({"tutti_rank_request":2,"rank":0,"host":"aA==","argv":["cA=="],"env":[],"cwd":"","grace":-1})",
       R"({"tutti_rank_request":2,"rank":0,"host":"aA==","argv":["not base64!"],"env":[],"cwd":"","grace":1})",
       R"({"tutti_rank_request":2,"rank":0,"host":"aA==","argv":["cA=="],"env":[["QQ=="]],"cwd":"","grace":1})",
       R"({"tutti_rank_request":1,"rank":0,"host":"h","argv":[],"env":[]})",
       R"({"tutti_rank_request":1,"rank":"x","host":"h","argv":["p"],"env":[]})"}) {
    try {
      decode_agent_request(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig) << bad;
    }
  }
}

TEST(ShellQuote, SafeWordsStayAndOthersAreQuoted) {
  EXPECT_EQ(shell_quote("/usr/bin/tuttirun"), "/usr/bin/tuttirun");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("$(x)"), "'$(x)'");
}

TEST(Mpirun, VersionDetection) {
  EXPECT_EQ(open_mpi_major("mpirun (Open MPI) 4.1.4\n\nReport bugs to ..."), 4);
  EXPECT_EQ(open_mpi_major("mpirun (Open MPI) 5.0.3\n"), 5);
  EXPECT_EQ(open_mpi_major("HYDRA build details:\n    Version: 4.1"), std::nullopt);
  EXPECT_EQ(open_mpi_major(""), std::nullopt);
}

TEST(Mpirun, OpenMpi4And5GetTheirOwnRemoteShellVariable) {
  MpirunInputs in;
  in.mpirun = "/usr/bin/mpirun";
  in.hostfile_path = "/tmp/h";
  in.np = 4;
  in.remote_shell = "/usr/bin/kubexec";
  in.forwarded = {"TUTTI_TIMEOUT", "FOO"};
  in.command = {"./train", "--epochs", "3"};
  in.major = 4;
  MpirunCommand four = mpirun_command(in);
  EXPECT_EQ(four.argv,
            (std::vector<std::string>{"/usr/bin/mpirun", "--hostfile", "/tmp/h", "-np", "4", "-x",
                                      "TUTTI_TIMEOUT", "-x", "FOO", "./train", "--epochs", "3"}));
  ASSERT_EQ(four.env.size(), 1u);
  EXPECT_EQ(four.env[0].first, "OMPI_MCA_plm_rsh_agent");
  in.major = 5;
  MpirunCommand five = mpirun_command(in);
  ASSERT_EQ(five.env.size(), 1u);
  EXPECT_EQ(five.env[0].first, "PRTE_MCA_plm_ssh_agent");
  EXPECT_EQ(five.env[0].second, "/usr/bin/kubexec");
  in.remote_shell.clear();
  EXPECT_TRUE(mpirun_command(in).env.empty());
  in.no_tree_spawn = true;
  EXPECT_EQ(mpirun_command(in).env.at(0).first, "PRTE_MCA_plm_ssh_no_tree_spawn");
  in.major = 4;
  EXPECT_EQ(mpirun_command(in).env.at(0).first, "OMPI_MCA_plm_rsh_no_tree_spawn");
}

TEST(LocalHost, LoopbackAndOwnNameAreThisHost) {
  EXPECT_TRUE(is_this_host("localhost"));
  EXPECT_TRUE(is_this_host("127.0.0.1"));
  EXPECT_FALSE(is_this_host("job-worker-0"));
  EXPECT_FALSE(is_this_host("198.18.0.2"));
  // A longer DNS name counts only when its first label is our hostname and it leads here.
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  const std::string me = std::string(name).substr(0, std::string(name).find('.'));
  EXPECT_TRUE(is_this_host(me));
  EXPECT_FALSE(is_this_host(me + ".no-such-domain.invalid"));  // does not resolve
  EXPECT_FALSE(is_this_host("not-" + me + ".localhost"));      // resolves here, another name
  EXPECT_EQ(address_on_route_to("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(address_on_route_to("localhost"), "127.0.0.1");
  EXPECT_EQ(address_on_route_to("no-such-host.invalid"), std::nullopt);
}

}  // namespace
}  // namespace tutti::launcher
