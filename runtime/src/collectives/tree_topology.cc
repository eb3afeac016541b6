#include "collectives/tree_topology.hpp"

namespace tutti::collectives {

TreeNode binary_tree_node(int size, int rank) {
  TreeNode node;
  int bit = 1;
  while (bit < size && (rank & bit) == 0) bit <<= 1;
  if (rank == 0) {
    // bit is now the smallest power of two >= size; the root's one child heads the largest subtree.
    if (size > 1) node.children[0] = bit >> 1;
    return node;
  }
  node.parent = (rank ^ bit) | (bit << 1);
  if (node.parent >= size) node.parent = rank ^ bit;
  int low = bit >> 1;
  if (low > 0) {
    node.children[0] = rank - low;
    while (low > 0 && rank + low >= size) low >>= 1;
    if (low > 0) node.children[1] = rank + low;
  }
  return node;
}

namespace {

TreeNode map_node(const TreeNode& node, int size, bool mirror) {
  auto map = [&](int r) {
    if (r < 0) return -1;
    return mirror ? size - 1 - r : (r + 1) % size;
  };
  TreeNode out;
  out.parent = map(node.parent);
  out.children = {map(node.children[0]), map(node.children[1])};
  return out;
}

}  // namespace

std::array<TreeNode, 2> double_tree_node(int size, int rank) {
  const bool mirror = size % 2 == 0;
  const int position = mirror ? size - 1 - rank : (rank - 1 + size) % size;
  return {binary_tree_node(size, rank), map_node(binary_tree_node(size, position), size, mirror)};
}

}  // namespace tutti::collectives
