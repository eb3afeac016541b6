#include "launcher/options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tutti::launcher {
namespace {

ParseResult parse(std::vector<std::string> args) {
  return parse_options(args);
}

TEST(Options, MinimalCommandLine) {
  ParseResult r = parse({"-np", "4", "./prog"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->np, 4);
  EXPECT_EQ(r.options->command, std::vector<std::string>{"./prog"});
  EXPECT_TRUE(r.options->tag_output);
  EXPECT_DOUBLE_EQ(r.options->grace_seconds, 5.0);
  EXPECT_FALSE(r.options->timeout.has_value());
  EXPECT_TRUE(r.options->job_id.empty());
  EXPECT_EQ(r.options->store_port, 0);
  EXPECT_FALSE(r.options->verbose);
}

TEST(Options, EveryOption) {
  ParseResult r = parse({"-n", "3", "--timeout", "30s", "--grace", "500ms", "--no-tag-output", "-x",
                         "FOO", "-x", "BAR=1=2", "--job-id", "my.job-1", "--store-port", "29500",
                         "--verbose", "prog", "a"});
  ASSERT_TRUE(r.should_run()) << r.message;
  const LaunchOptions& o = *r.options;
  EXPECT_EQ(o.np, 3);
  EXPECT_EQ(o.timeout, "30s");
  EXPECT_DOUBLE_EQ(o.grace_seconds, 0.5);
  EXPECT_FALSE(o.tag_output);
  EXPECT_EQ(o.exports, (std::vector<std::string>{"FOO", "BAR=1=2"}));
  EXPECT_EQ(o.job_id, "my.job-1");
  EXPECT_EQ(o.store_port, 29500);
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.command, (std::vector<std::string>{"prog", "a"}));
}

TEST(Options, CommandKeepsItsOwnOptions) {
  ParseResult r = parse({"-np", "2", "prog", "-np", "7", "--verbose", "-x", "--", "y"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->np, 2);
  EXPECT_FALSE(r.options->verbose);
  EXPECT_EQ(r.options->command,
            (std::vector<std::string>{"prog", "-np", "7", "--verbose", "-x", "--", "y"}));
}

TEST(Options, DoubleDashStartsTheCommand) {
  ParseResult r = parse({"--np=2", "--tag-output", "--", "-weird-name", "--help"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->np, 2);
  EXPECT_EQ(r.options->command, (std::vector<std::string>{"-weird-name", "--help"}));
}

TEST(Options, HelpAndVersionExitZero) {
  for (auto args : {std::vector<std::string>{"--help"}, {"-h"}, {"-np", "2", "--help", "prog"}}) {
    ParseResult r = parse(args);
    EXPECT_FALSE(r.should_run());
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.message.find("-np"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("--grace"), std::string::npos) << r.message;
  }
  ParseResult v = parse({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.message.find("tuttirun"), std::string::npos);
}

struct BadCase {
  std::vector<std::string> args;
  std::string expected_in_message;
};

class BadOptions : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadOptions, ExitTwoWithAMessage) {
  ParseResult r = parse(GetParam().args);
  EXPECT_FALSE(r.should_run());
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.message.find(GetParam().expected_in_message), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("tuttirun --help"), std::string::npos) << r.message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadOptions,
    ::testing::Values(
        BadCase{{"prog"}, "-np N is required"}, BadCase{{}, "-np N is required"},
        BadCase{{"-np", "0", "prog"}, "-np='0' is out of range"},
        BadCase{{"-np", "-3", "prog"}, "-3"}, BadCase{{"-np", "abc", "prog"}, "abc"},
        BadCase{{"-np", "2"}, "no command"}, BadCase{{"-np", "2", "--"}, "no command"},
        BadCase{{"-np"}, "np"}, BadCase{{"-np", "2", "--bogus", "prog"}, "--bogus"},
        BadCase{{"-np", "2", "--timeout", "soon", "prog"}, "--timeout"},
        BadCase{{"-np", "2", "--grace", "-1", "prog"}, "--grace"},
        BadCase{{"-np", "2", "--job-id", "a/b", "prog"}, "--job-id"},
        BadCase{{"-np", "2", "--store-port", "70000", "prog"}, "--store-port"},
        BadCase{{"-np", "2", "-x", "=v", "prog"}, "-x"},
        // Range checks through tutti::parse: no wrapping, no silent defaults.
        BadCase{{"-np", "4294967297", "prog"}, "-np='4294967297' is out of range"},
        BadCase{{"-np", "2000000", "prog"}, "between 1 and 1048576"},
        BadCase{{"--pods", "a,b", "--slots", "0", "prog"}, "--slots='0' is out of range"},
        BadCase{{"-np", "2", "--timeout", "0", "prog"}, "--timeout='0' is refused"},
        BadCase{{"-np", "2", "--timeout", "inf", "prog"}, "--timeout"},
        BadCase{{"-np", "2", "--grace", "1e400", "prog"}, "--grace"},
        BadCase{{"-np", "2", "--restarts", "-1", "prog"}, "--restarts"},
        BadCase{{"-np", "2", "--store-port", "-1", "prog"}, "--store-port"},
        BadCase{{"-np", "2", "--exec", "rsh", "prog"}, "--exec"},
        BadCase{{"-np", "2", "--min-np", "0", "prog"}, "--min-np"},
        BadCase{{"-np", "2", "--min-np", "3", "prog"}, "--min-np 3 is more than -np 2"},
        BadCase{{"-np", "2", "--min-np", "1", "--mpirun", "prog"}, "--min-np cannot go with"}));

// --min-np: absent (0) stops the job at the first failure; a value takes the next argument.
TEST(Options, MinNp) {
  EXPECT_EQ(parse({"-np", "4", "prog"}).options->min_np, 0);
  ParseResult r = parse({"-np", "4", "--min-np", "2", "prog", "--min-np"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->min_np, 2);
  EXPECT_EQ(r.options->command, (std::vector<std::string>{"prog", "--min-np"}));
}

// --exec arrives as the kind it names; without it the launcher chooses from the hosts.
TEST(Options, ExecNamesAKind) {
  EXPECT_FALSE(parse({"-np", "2", "prog"}).options->exec.has_value());
  const std::pair<const char*, ExecKind> named[] = {
      {"local", ExecKind::kLocal}, {"ssh", ExecKind::kSsh}, {"kubexec", ExecKind::kKubexec}};
  for (const auto& [name, kind] : named) {
    ParseResult r = parse({"-np", "2", "--exec", name, "prog"});
    ASSERT_TRUE(r.should_run()) << r.message;
    EXPECT_EQ(r.options->exec, kind) << name;
  }
}

TEST(Options, CommandStartSkipsOptionValues) {
  bool dd = false;
  std::vector<std::string> args{"-np", "2", "-x", "A", "--verbose", "prog", "-x"};
  EXPECT_EQ(command_start(args, &dd), 5u);
  EXPECT_FALSE(dd);
  std::vector<std::string> with_dd{"--np=2", "--", "prog"};
  EXPECT_EQ(command_start(with_dd, &dd), 2u);
  EXPECT_TRUE(dd);
}

TEST(Options, JobIdCharacters) {
  EXPECT_TRUE(valid_job_id("job_1.a-B"));
  EXPECT_FALSE(valid_job_id(""));
  EXPECT_FALSE(valid_job_id("a b"));
  EXPECT_FALSE(valid_job_id("../x"));
  EXPECT_FALSE(valid_job_id(std::string(129, 'a')));
}

}  // namespace
}  // namespace tutti::launcher

namespace tutti::launcher {
namespace {

TEST(Options, ElasticGrowthOptions) {
  ParseResult r =
      parse({"--host-discovery-script", "./hosts.sh --now", "--max-np", "8", "--discovery-interval",
             "2.5", "--blacklist-after", "3", "--min-np", "2", "./train", "--lr", "1"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->host_discovery_script, "./hosts.sh --now");
  EXPECT_EQ(r.options->max_np, 8);
  EXPECT_DOUBLE_EQ(r.options->discovery_interval_seconds, 2.5);
  EXPECT_EQ(r.options->blacklist_after, 3);
  EXPECT_EQ(r.options->np, 0);  // not required: the script gives the hosts
  EXPECT_EQ(r.options->command, (std::vector<std::string>{"./train", "--lr", "1"}));
}

TEST(Options, ElasticGrowthMisuseIsRefused) {
  const std::vector<std::vector<std::string>> bad = {
      {"-np", "2", "--max-np", "4", "prog"},                  // no script
      {"-np", "2", "--discovery-interval", "1", "prog"},      // no script
      {"--host-discovery-script", "s", "-H", "a:2", "prog"},  // two sources of hosts
      {"--host-discovery-script", "s", "--mpirun", "prog"},
      {"--host-discovery-script", "s", "-np", "5", "--max-np", "4", "prog"},
      {"--host-discovery-script", "s", "--min-np", "5", "--max-np", "4", "prog"},
      {"--host-discovery-script", "s", "--blacklist-after", "0", "prog"},
      {"--host-discovery-script", "s", "--discovery-interval", "0", "prog"},
      {"--host-discovery-script", "s", "--slots", "2", "prog"},  // the script says the slots
  };
  for (const auto& args : bad) {
    ParseResult r = parse(args);
    EXPECT_FALSE(r.should_run()) << args[0] << " " << args[1] << " " << args[2];
    EXPECT_EQ(r.exit_code, kExitUsage);
    EXPECT_FALSE(r.message.empty());
  }
}

}  // namespace
}  // namespace tutti::launcher

namespace tutti::launcher {
namespace {

TEST(Options, PodsSelectorIsDiscoveryThroughKubectl) {
  ParseResult r =
      parse({"--pods-selector", "app=t5,role=worker", "--slots", "2", "--max-np", "8", "./train"});
  ASSERT_TRUE(r.should_run()) << r.message;
  const std::string& script = r.options->host_discovery_script;
  EXPECT_NE(script.find("get pods"), std::string::npos) << script;
  EXPECT_NE(script.find("-l app=t5,role=worker"), std::string::npos) << script;
  EXPECT_NE(script.find("status.phase=Running"), std::string::npos) << script;
  EXPECT_NE(script.find("KUBEXEC_KUBECTL"), std::string::npos) << script;
  EXPECT_NE(script.find(":2/"), std::string::npos) << script;  // --slots 2 per pod
  ASSERT_TRUE(r.options->exec.has_value());
  EXPECT_EQ(*r.options->exec, ExecKind::kKubexec);
}

TEST(Options, PodsSelectorMisuseIsRefused) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--pods-selector", "app", "prog"},             // no k=v
           {"--pods-selector", "app=x;rm -rf /", "prog"},  // not a selector
           {"--pods-selector", "app=x", "--host-discovery-script", "s", "prog"},
           {"--pods-selector", "app=x", "--pods", "a,b", "prog"}}) {
    ParseResult r = parse(args);
    EXPECT_FALSE(r.should_run()) << args[1];
    EXPECT_EQ(r.exit_code, kExitUsage);
  }
}

TEST(Options, StoreTakesAnEtcdAndLeavesTheCommandAlone) {
  ParseResult r =
      parse({"-np", "4", "--store", "etcd://etcd-0:2379,etcd-1/jobs", "./train", "--store", "x"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->store_url, "etcd://etcd-0:2379,etcd-1/jobs");
  EXPECT_EQ(r.options->command,
            (std::vector<std::string>{"./train", "--store", "x"}));  // the rank's own option
}

TEST(Options, StoreMisuseIsRefusedSayingWhy) {
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"-np", "2", "--store", "10.0.0.1:2379", "p"}, "etcd://"},
           {{"-np", "2", "--store", "etcds://h", "p"}, "TLS"},
           {{"-np", "2", "--store", "etcd://h", "--store-port", "5", "p"}, "--store-port"},
           {{"-np", "2", "--store", "etcd://h", "--store-addr", "a", "p"}, "--store-addr"},
           {{"-np", "2", "--store", "etcd://h", "--mpirun", "p"}, "TUTTI_STORE=etcd://"}}) {
    ParseResult r = parse(args);
    EXPECT_FALSE(r.should_run()) << args[3];
    EXPECT_EQ(r.exit_code, kExitUsage);
    EXPECT_NE(r.message.find(says), std::string::npos) << r.message;
  }
}

TEST(Options, ElasticTimeoutGoesWithDiscovery) {
  ParseResult r = parse({"--host-discovery-script", "./hosts.sh", "--elastic-timeout", "30", "p"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->elastic_timeout_seconds, 30.0);
  EXPECT_EQ(parse({"--host-discovery-script", "s", "p"}).options->elastic_timeout_seconds, 600.0);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-np", "2", "--elastic-timeout", "30", "p"},                      // no discovery
           {"--host-discovery-script", "s", "--elastic-timeout", "0", "p"},   // zero
           {"--host-discovery-script", "s", "--elastic-timeout", "x", "p"}})  // not a number
    EXPECT_EQ(parse(args).exit_code, kExitUsage) << args[args.size() - 3];
}

// --hang-timeout: unset means the default with --min-np and off without; 0 is off; a silence
// shorter than two heartbeats would take busy ranks for hung ones and is refused.
TEST(Options, HangTimeout) {
  ParseResult r = parse({"-np", "4", "--min-np", "2", "--hang-timeout", "30", "p"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.options->hang_timeout_seconds, 30.0);
  EXPECT_FALSE(parse({"-np", "4", "p"}).options->hang_timeout_seconds.has_value());
  EXPECT_EQ(parse({"-np", "4", "--hang-timeout", "0", "p"}).options->hang_timeout_seconds, 0.0);
  // The option takes its value: the command is "p", not "30".
  EXPECT_EQ(r.options->command, std::vector<std::string>{"p"});
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-np", "2", "--hang-timeout", "1.5", "p"},  // shorter than two beats
           {"-np", "2", "--hang-timeout", "x", "p"},    // not a duration
           {"-np", "2", "--hang-timeout", "-3", "p"}})  // negative
    EXPECT_EQ(parse(args).exit_code, kExitUsage) << args[3];
}

}  // namespace
}  // namespace tutti::launcher
