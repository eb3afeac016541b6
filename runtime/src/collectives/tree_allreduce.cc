// Double binary tree allreduce. The data is halved; half t is reduced up tree t to its root and
// broadcast back down the same tree. Both halves are cut into segments and interleaved, so the
// two trees (whose interior nodes differ) keep every link busy in both directions.
//
// Each rank walks the items (tree, segment) in one fixed order. At iteration i it reduces item i
// (waits for its children's segments, combines, sends up) and then completes the broadcast of
// item i - lag (waits for the parent's final segment, sends it down). The lag lets the reduction
// run ahead of the broadcast by about one round trip through the tree so that both pipelines flow;
// a wait only ever depends on earlier iterations or on the same item deeper or higher in its tree,
// so the schedule cannot deadlock.
#include <algorithm>
#include <array>
#include <bit>
#include <vector>

#include "collectives/checks.hpp"
#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"
#include "collectives/scratch_slots.hpp"
#include "collectives/tree_topology.hpp"
#include "reduce/reduce.hpp"

namespace tutti::collectives {
namespace {

// Children segments received ahead of the one being reduced (per child).
constexpr size_t kWindow = 4;
constexpr size_t kPruneSends = 256;

struct Item {
  int tree = 0;
  size_t segment = 0;
};

class TreeRun {
 public:
  TreeRun(Context& ctx, const void* send, void* recv, size_t count, DataType type, ReduceOp op)
      : ctx_(ctx),
        send_(bytes_of(send)),
        recv_(bytes_of(recv)),
        type_(type),
        op_(op),
        element_bytes_(element_size(type)),
        per_segment_(segment_elements(ctx.segment_bytes, element_bytes_)),
        halves_(count, 2),
        nodes_(double_tree_node(ctx.size, ctx.rank)) {
    // A leaf child sends its raw input, an interior one a partial sum (already prescaled).
    for (int t = 0; t < 2; ++t)
      for (int c = 0; c < 2; ++c) {
        const int child = nodes_[t].children[c];
        child_is_leaf_[t][c] = child >= 0 && double_tree_node(ctx.size, child)[t].children[0] < 0;
      }
    segments_ = {segment_count(halves_.size(0), per_segment_),
                 segment_count(halves_.size(1), per_segment_)};
    // Half 0 is never smaller, so it has the same number of segments or one more.
    items_ = segments_[0] + segments_[1];
    const int depth = std::bit_width(static_cast<unsigned>(ctx.size));
    lag_ = std::min<size_t>(2 * static_cast<size_t>(depth) + 2, items_);
    staging_ = ctx.scratch.get(kStagingSlot, kWindow * 2 * per_segment_ * element_bytes_).data();
    broadcasts_.resize(lag_ + 1);
  }

  void run() {
    size_t posted = 0;
    auto post_more = [&](size_t processed) {
      for (; posted < items_ && posted < processed + kWindow; ++posted) post_children(posted);
    };
    post_more(0);
    for (size_t i = 0; i < items_ + lag_; ++i) {
      if (i < items_) {
        reduce_item(i);
        post_more(i + 1);
      }
      if (i >= lag_) broadcast_item(i - lag_);
    }
    ctx_.transport.wait(sends_, ctx_.deadline, "tree allreduce");
  }

 private:
  // Segments alternate between the trees while both have some left; half 0's extra one goes last.
  Item item(size_t index) const {
    const size_t paired = 2 * segments_[1];
    if (index < paired) return {static_cast<int>(index % 2), index / 2};
    return {0, segments_[1] + (index - paired)};
  }

  size_t elements(const Item& it) const {
    return std::min(per_segment_, halves_.size(it.tree) - it.segment * per_segment_);
  }
  size_t offset_bytes(const Item& it) const {
    return (halves_.begin(it.tree) + it.segment * per_segment_) * element_bytes_;
  }
  transport::Tag up_tag(int tree) const {
    return transport::make_tag(ctx_.sequence, static_cast<uint32_t>(2 * tree));
  }
  transport::Tag down_tag(int tree) const {
    return transport::make_tag(ctx_.sequence, static_cast<uint32_t>(2 * tree + 1));
  }
  std::byte* child_staging(size_t index, int child) const {
    return staging_ +
           ((index % kWindow) * 2 + static_cast<size_t>(child)) * per_segment_ * element_bytes_;
  }

  void post_children(size_t index) {
    const Item it = item(index);
    const TreeNode& node = nodes_[it.tree];
    for (int c = 0; c < 2; ++c) {
      auto& request = children_[index % kWindow][c];
      request = {};
      if (node.children[c] < 0) continue;
      request =
          ctx_.transport.channel(node.children[c])
              .irecv(up_tag(it.tree), {child_staging(index, c), elements(it) * element_bytes_});
    }
  }

  void reduce_item(size_t index) {
    const Item it = item(index);
    const TreeNode& node = nodes_[it.tree];
    auto& requests = children_[index % kWindow];
    ctx_.transport.wait(requests, ctx_.deadline, "tree allreduce (reduce)");
    const size_t n = elements(it);
    const std::byte* own = send_ + offset_bytes(it);
    std::byte* result = recv_ + offset_bytes(it);
    // A leaf sends its own data up unchanged, straight from send.
    const std::byte* up = own;
    if (node.children[0] >= 0 && ctx_.scaled()) {
      // The root's last combine makes the result final: postscale there.
      const bool second = node.children[1] >= 0;
      const double final_scale = node.parent < 0 ? ctx_.postscale : 1.0;
      const double pre = ctx_.prescale;
      const auto& leaf = child_is_leaf_[it.tree];
      reduce::combine_scaled(type_, result, own, pre, child_staging(index, 0), leaf[0] ? pre : 1.0,
                             second ? 1.0 : final_scale, n);
      if (second)
        reduce::combine_scaled(type_, result, result, 1.0, child_staging(index, 1),
                               leaf[1] ? pre : 1.0, final_scale, n);
      up = result;
    } else if (node.children[0] >= 0) {
      reduce::combine(type_, op_, result, own, child_staging(index, 0), n);
      if (node.children[1] >= 0) reduce::accumulate(type_, op_, result, child_staging(index, 1), n);
      up = result;
    }
    if (node.parent >= 0) {
      push_send(
          ctx_.transport.channel(node.parent).isend(up_tag(it.tree), {up, n * element_bytes_}));
      // The parent answers only after it has our segment, so posting into result now is safe.
      broadcasts_[index % broadcasts_.size()] =
          ctx_.transport.channel(node.parent)
              .irecv(down_tag(it.tree), {result, n * element_bytes_});
    } else {
      send_down(it, result, n);
    }
  }

  void broadcast_item(size_t index) {
    const Item it = item(index);
    if (nodes_[it.tree].parent < 0) return;  // the root sent it down when it reduced it
    auto& request = broadcasts_[index % broadcasts_.size()];
    ctx_.transport.wait(std::span(&request, 1), ctx_.deadline, "tree allreduce (broadcast)");
    send_down(it, recv_ + offset_bytes(it), elements(it));
  }

  void send_down(const Item& it, const std::byte* data, size_t n) {
    for (int child : nodes_[it.tree].children) {
      if (child < 0) continue;
      push_send(ctx_.transport.channel(child).isend(down_tag(it.tree), {data, n * element_bytes_}));
    }
  }

  void push_send(transport::Request request) {
    if (sends_.size() >= kPruneSends) std::erase_if(sends_, [](auto& r) { return r.complete(); });
    sends_.push_back(std::move(request));
  }

  Context& ctx_;
  const std::byte* send_;
  std::byte* recv_;
  DataType type_;
  ReduceOp op_;
  std::array<std::array<bool, 2>, 2> child_is_leaf_{};  // [tree][child]
  size_t element_bytes_;
  size_t per_segment_;
  Split halves_;
  std::array<TreeNode, 2> nodes_;
  std::array<size_t, 2> segments_{};
  size_t items_ = 0;
  size_t lag_ = 0;
  std::byte* staging_ = nullptr;
  std::array<std::array<transport::Request, 2>, kWindow> children_;
  std::vector<transport::Request> broadcasts_;
  std::vector<transport::Request> sends_;
};

}  // namespace

void tree_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op) {
  check_buffers(ctx, "tree allreduce", send, recv, count, type);
  check_op(ctx, "tree allreduce", op, type);
  if (count == 0) return;
  if (ctx.size == 1) {
    copy_unless_same(send, recv, count * element_size(type));
    return;
  }
  TreeRun(ctx, send, recv, count, type, op).run();
}

}  // namespace tutti::collectives
