#include "collectives/tree_topology.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <functional>
#include <vector>

namespace tutti::collectives {
namespace {

// Checks that nodes[] forms one tree over all ranks: exactly one root, parent and child links
// agree, every rank is reached once from the root. Returns the depth.
int check_tree(const std::vector<TreeNode>& nodes, int size) {
  int root = -1;
  for (int r = 0; r < size; ++r) {
    if (nodes[r].parent < 0) {
      EXPECT_EQ(root, -1) << "two roots in a tree of " << size;
      root = r;
    } else {
      EXPECT_LT(nodes[r].parent, size);
      const auto& siblings = nodes[nodes[r].parent].children;
      EXPECT_TRUE(siblings[0] == r || siblings[1] == r)
          << "rank " << r << " is not a child of its parent " << nodes[r].parent << ", size "
          << size;
    }
    for (int child : nodes[r].children) {
      if (child >= 0) {
        EXPECT_EQ(nodes[child].parent, r) << "size " << size;
      }
    }
  }
  EXPECT_GE(root, 0);
  std::vector<int> seen(size, 0);
  int depth = 0;
  std::function<void(int, int)> walk = [&](int r, int d) {
    ++seen[r];
    depth = std::max(depth, d);
    for (int child : nodes[r].children)
      if (child >= 0) walk(child, d + 1);
  };
  if (root >= 0) walk(root, 0);
  for (int r = 0; r < size; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r << ", size " << size;
  return depth;
}

TEST(DoubleBinaryTree, BothTreesSpanEveryRankWithLogarithmicDepth) {
  for (int size = 1; size <= 70; ++size) {
    for (int t = 0; t < 2; ++t) {
      std::vector<TreeNode> nodes;
      for (int r = 0; r < size; ++r) nodes.push_back(double_tree_node(size, r)[t]);
      const int depth = check_tree(nodes, size);
      EXPECT_LE(depth, std::bit_width(static_cast<unsigned>(size))) << "size " << size;
    }
  }
}

TEST(DoubleBinaryTree, NoRankCarriesMoreThanTwoChildrenOverBothTrees) {
  for (int size = 2; size <= 70; ++size) {
    for (int r = 0; r < size; ++r) {
      auto nodes = double_tree_node(size, r);
      int children = 0;
      int interior = 0;
      for (const auto& n : nodes) {
        const int c = (n.children[0] >= 0) + (n.children[1] >= 0);
        children += c;
        interior += c > 0;
      }
      EXPECT_LE(children, 2) << "rank " << r << ", size " << size;
      // With an even number of ranks the mirror makes the interiors disjoint.
      if (size % 2 == 0) {
        EXPECT_LE(interior, 1) << "rank " << r << ", size " << size;
      }
    }
  }
}

TEST(DoubleBinaryTree, KnownShapeOfEightRanks) {
  // Tree 0: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7. Tree 1 mirrors it: 7 -> 3; 3 -> 5, 1; ...
  EXPECT_EQ(binary_tree_node(8, 0).children[0], 4);
  EXPECT_EQ(binary_tree_node(8, 4).children, (std::array<int, 2>{2, 6}));
  EXPECT_EQ(binary_tree_node(8, 6).children, (std::array<int, 2>{5, 7}));
  EXPECT_EQ(binary_tree_node(8, 7).parent, 6);
  EXPECT_EQ(double_tree_node(8, 7)[1].parent, -1);
  EXPECT_EQ(double_tree_node(8, 3)[1].parent, 7);
  EXPECT_EQ(double_tree_node(8, 3)[1].children, (std::array<int, 2>{5, 1}));
}

}  // namespace
}  // namespace tutti::collectives
