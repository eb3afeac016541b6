// The double binary tree of NCCL: two binary trees over the same ranks, built so that (for an even
// number of ranks) the interior nodes of one tree are the leaves of the other. Each tree carries
// half of the data, so every rank sends and receives about as much as in a ring while the depth,
// and so the latency, stays logarithmic.
#pragma once

#include <array>

namespace tutti::collectives {

struct TreeNode {
  int parent = -1;                      // -1 at the root
  std::array<int, 2> children{-1, -1};  // -1 where there is no child
};

// A binary tree rooted at rank 0 whose shape follows the ranks' lowest set bit: odd ranks are
// leaves, rank 2^k(2j+1) is the parent of 2^k(2j+1) +- 2^(k-1). The root has a single child.
TreeNode binary_tree_node(int size, int rank);

// Tree 0 is binary_tree_node; tree 1 mirrors it (rank -> size-1-rank) when size is even and shifts
// it by one rank when size is odd.
std::array<TreeNode, 2> double_tree_node(int size, int rank);

}  // namespace tutti::collectives
