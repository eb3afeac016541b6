#include "core/slurm_lists.hpp"

#include "core/error.hpp"
#include "core/parse.hpp"

namespace tutti::slurm {
namespace {

// More names than any allocation has: a typo such as node[1-999999999] fails instead of filling
// memory.
constexpr size_t kMaxNodes = 1 << 20;
// A node runs at most this many tasks: a typo in a count fails too.
constexpr int64_t kMaxTasksPerNode = 1 << 20;

// The top-level commas of a list, outside brackets.
std::vector<std::string_view> split_outside_brackets(std::string_view list, std::string_view what) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0)
      throw make_error(ErrorCode::kConfig, "{}='{}': a ']' without its '['", what, list);
    if (c == ',' && depth == 0) {
      if (i == start) throw make_error(ErrorCode::kConfig, "{}='{}': an empty name", what, list);
      items.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0)
    throw make_error(ErrorCode::kConfig, "{}='{}': a '[' without its ']'", what, list);
  return items;
}

void expand_item(std::string_view item, std::string prefix, std::vector<std::string>& out,
                 std::string_view what, std::string_view list) {
  size_t open = item.find('[');
  if (open == std::string_view::npos) {
    if (out.size() >= kMaxNodes)
      throw make_error(ErrorCode::kConfig, "{}='{}' names more than {} nodes", what, list,
                       kMaxNodes);
    out.push_back(prefix + std::string(item));
    return;
  }
  size_t close = item.find(']', open);
  prefix += item.substr(0, open);
  std::string_view ranges = item.substr(open + 1, close - open - 1);
  std::string_view rest = item.substr(close + 1);
  size_t pos = 0;
  while (pos <= ranges.size()) {
    size_t comma = ranges.find(',', pos);
    std::string_view range =
        ranges.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    pos = comma == std::string_view::npos ? ranges.size() + 1 : comma + 1;
    size_t dash = range.find('-');
    std::string_view first = range.substr(0, dash);
    std::string_view last = dash == std::string_view::npos ? first : range.substr(dash + 1);
    const std::string label = fmt::format("{}='{}': range [{}]", what, list, range);
    int64_t a = parse::integer(first, label, 0, int64_t{1} << 40);
    int64_t b = parse::integer(last, label, 0, int64_t{1} << 40);
    if (b < a) throw make_error(ErrorCode::kConfig, "{} runs backwards", label);
    if (static_cast<uint64_t>(b - a) >= kMaxNodes)
      throw make_error(ErrorCode::kConfig, "{} names more than {} nodes", label, kMaxNodes);
    // Slurm keeps the width of the first number: node[08-10] is node08 node09 node10.
    const size_t width = first.size();
    for (int64_t v = a; v <= b; ++v)
      expand_item(rest, prefix + fmt::format("{:0{}}", v, width), out, what, list);
  }
}

}  // namespace

std::vector<std::string> expand_nodelist(std::string_view list, std::string_view what) {
  std::vector<std::string> out;
  for (std::string_view item : split_outside_brackets(list, what))
    expand_item(item, "", out, what, list);
  return out;
}

std::vector<int> expand_tasks_per_node(std::string_view spec, std::string_view what) {
  std::vector<int> out;
  for (std::string_view item : split_outside_brackets(spec, what)) {
    int64_t repeat = 1;
    size_t paren = item.find("(x");
    if (paren != std::string_view::npos) {
      if (item.back() != ')')
        throw make_error(ErrorCode::kConfig, "{}='{}': '{}' is not N or N(xM)", what, spec, item);
      repeat = parse::integer(item.substr(paren + 2, item.size() - paren - 3),
                              fmt::format("{}='{}': a repeat count", what, spec), 1, kMaxNodes);
      item = item.substr(0, paren);
    }
    int tasks = static_cast<int>(parse::integer(
        item, fmt::format("{}='{}': a task count", what, spec), 1, kMaxTasksPerNode));
    if (out.size() + static_cast<size_t>(repeat) > kMaxNodes)
      throw make_error(ErrorCode::kConfig, "{}='{}' counts more than {} nodes", what, spec,
                       kMaxNodes);
    out.insert(out.end(), static_cast<size_t>(repeat), tasks);
  }
  return out;
}

}  // namespace tutti::slurm
