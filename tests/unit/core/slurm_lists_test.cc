#include "core/slurm_lists.hpp"

#include <gtest/gtest.h>

#include "tutti/error.hpp"

namespace tutti::slurm {
namespace {

using Names = std::vector<std::string>;

std::string config_error(std::string_view list) {
  try {
    expand_nodelist(list, "SLURM_JOB_NODELIST");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << list;
  return {};
}

TEST(SlurmNodelist, ExpandsSlurmsCompressedForm) {
  EXPECT_EQ(expand_nodelist("vm", "L"), Names{"vm"});
  EXPECT_EQ(expand_nodelist("node[01-03,07],gpu1", "L"),
            (Names{"node01", "node02", "node03", "node07", "gpu1"}));
  // The first number's width is kept: 08 to 10 stays two digits.
  EXPECT_EQ(expand_nodelist("n[08-10]", "L"), (Names{"n08", "n09", "n10"}));
  // Several bracket groups in one name, and a suffix after one.
  EXPECT_EQ(expand_nodelist("r[1-2]n[1-2]-ib", "L"),
            (Names{"r1n1-ib", "r1n2-ib", "r2n1-ib", "r2n2-ib"}));
  EXPECT_EQ(expand_nodelist("a[3],b[0-1]", "L"), (Names{"a3", "b0", "b1"}));
}

TEST(SlurmNodelist, RefusesWhatSlurmNeverWrites) {
  EXPECT_NE(config_error("node[1-3").find("a '[' without its ']'"), std::string::npos);
  EXPECT_NE(config_error("node1-3]").find("a ']' without its '['"), std::string::npos);
  EXPECT_NE(config_error("a,,b").find("an empty name"), std::string::npos);
  EXPECT_NE(config_error("n[5-2]").find("runs backwards"), std::string::npos);
  EXPECT_NE(config_error("n[x-2]").find("range [x-2]"), std::string::npos);
  EXPECT_NE(config_error("n[1-999999999]").find("more than"), std::string::npos);
}

TEST(SlurmTasksPerNode, ExpandsRepeats) {
  EXPECT_EQ(expand_tasks_per_node("4", "T"), std::vector<int>{4});
  EXPECT_EQ(expand_tasks_per_node("2(x3),1", "T"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_THROW(expand_tasks_per_node("2(x3", "T"), Error);
  EXPECT_THROW(expand_tasks_per_node("0", "T"), Error);
  EXPECT_THROW(expand_tasks_per_node("two", "T"), Error);
}

}  // namespace
}  // namespace tutti::slurm
