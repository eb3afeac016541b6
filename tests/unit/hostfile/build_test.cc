#include "hostfile/build.hpp"

#include <gtest/gtest.h>

#include "tutti/error.hpp"

namespace tutti::hostfile {
namespace {

template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(Job, WorkerNames) {
  EXPECT_EQ(job_pod_names("train", 3),
            (std::vector<std::string>{"train-worker-0", "train-worker-1", "train-worker-2"}));
  EXPECT_NE(config_error([] { job_pod_names("train", 0); }).find("--workers 0"), std::string::npos);
  EXPECT_NE(config_error([] { job_pod_names("Train", 1); }).find("job name 'Train'"),
            std::string::npos);
  EXPECT_NE(config_error([] { job_pod_names(std::string(55, 'j'), 100); }).find("at most 63"),
            std::string::npos);
}

TEST(Job, Domain) {
  EXPECT_EQ(job_domain("train", "ml"), "train.ml.svc");
  EXPECT_NE(config_error([] { job_domain("train", "ML"); }).find("namespace 'ML'"),
            std::string::npos);
}

TEST(FromPods, SlotsAndDomain) {
  Hostfile h = from_pods({"a", "b"}, 4, "");
  EXPECT_EQ(h, (Hostfile{{Host{"a", 4, std::nullopt}, Host{"b", 4, std::nullopt}}}));
  Hostfile d = from_pods({"a"}, 1, ".job.ns.svc.cluster.local");
  EXPECT_EQ(d.hosts.at(0).name, "a.job.ns.svc.cluster.local");
}

struct BadPods {
  std::vector<std::string> pods;
  int slots;
  std::string domain;
  std::string fragment;
};
class FromPodsRejects : public ::testing::TestWithParam<BadPods> {};
TEST_P(FromPodsRejects, Clearly) {
  const BadPods& p = GetParam();
  std::string message = config_error([&] { from_pods(p.pods, p.slots, p.domain); });
  EXPECT_NE(message.find(p.fragment), std::string::npos) << message;
}
INSTANTIATE_TEST_SUITE_P(
    Hostile, FromPodsRejects,
    ::testing::Values(BadPods{{"a", "a"}, 1, "", "pod a is given twice"},
                      BadPods{{"a b"}, 1, "", "a space"}, BadPods{{"a\nb"}, 1, "", "a newline"},
                      BadPods{{"x;rm -rf /"}, 1, "", "';'"}, BadPods{{"Pod"}, 1, "", "uppercase"},
                      BadPods{{"a.b"}, 1, "", "'.'"}, BadPods{{""}, 1, "", "empty"},
                      BadPods{{}, 1, "", "no pod names"}, BadPods{{"a"}, 0, "", "--slots 0"},
                      BadPods{{"a"}, 1, "ns svc", "domain 'ns svc'"},
                      BadPods{{"a"}, 1, "a..b", "empty label"},
                      BadPods{{std::string(63, 'p')},
                              1,
                              std::string(63, 'd') + "." + std::string(63, 'd') + "." +
                                  std::string(63, 'd'),
                              "at most 253"}));

TEST(PodList, SplitsOnCommasKeepingEmptyNames) {
  EXPECT_EQ(split_pod_list("a,b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_pod_list("a,,b"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split_pod_list("a"), (std::vector<std::string>{"a"}));
}

TEST(PodsFile, WordsCommentsAndKubectlPrefix) {
  EXPECT_EQ(parse_pods_file("pod/a b\n# c\n\n  d\t# e f\r\npod/g", "f"),
            (std::vector<std::string>{"a", "b", "d", "g"}));
  EXPECT_NE(
      config_error([] { parse_pods_file("a\nb\n$(reboot)", "pods.txt"); }).find("pods.txt:3:"),
      std::string::npos);
  EXPECT_NE(config_error([] { parse_pods_file("#x\n", "pods.txt"); }).find("no pod names"),
            std::string::npos);
}

}  // namespace
}  // namespace tutti::hostfile
