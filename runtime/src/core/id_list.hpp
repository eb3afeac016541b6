// Lists of ranks or member ids as tutti writes them into a job's store, "3,0,5": the survivors a
// shrink agreed on, the ranks of a group call, an elastic membership's members. The store may be
// shared with another program (a torch Store), so the reader takes back only what the writer makes.
#pragma once

#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tutti {

// "3,0,5", in the order given; "" for no ids.
std::string format_ids(std::span<const int> ids);

// The ids of format_ids' text, in its order: each a non-negative decimal below `limit`, none twice.
// nullopt for any other text (a blank, a sign, an empty item, a number too large). "" is no ids.
std::optional<std::vector<int>> parse_ids(std::string_view text,
                                          int limit = std::numeric_limits<int>::max());

}  // namespace tutti
