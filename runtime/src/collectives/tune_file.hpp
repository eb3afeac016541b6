// Reads the tuning file that `tutti-bench allreduce --tune FILE` writes (TUTTI_TUNE_FILE):
//   {"tutti_tune": 1, "lines": [{"algorithm": "ring", "ranks": 4, "hosts": 2, "transport": "auto",
//                                "alpha_us": 12.5, "beta_ns_per_byte": 0.21, ...}, ...]}
// Other keys (the measured points) are ignored.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collectives/cost_model.hpp"

namespace tutti::collectives {

// Far above any real tuning file (a few KiB); bounds what a wrong path (/dev/zero, a log file)
// costs.
inline constexpr size_t kMaxTuneFileBytes = 16u << 20;

// Throws Error(kConfig) naming the file and what is wrong with it, also when it is larger than
// kMaxTuneFileBytes.
std::vector<TunedLine> read_tune_file(const std::string& path);
std::vector<TunedLine> parse_tune_json(const std::string& text, const std::string& source);

}  // namespace tutti::collectives
