// tutti's own in-place allreduce as tutti-bench's peer (--baseline inplace): the out-of-place
// column's ratio is then tutti out of place against tutti in place, interleaved round by round on
// the same ranks, which is how "out of place is as fast as in place" is measured; the in-place
// column's ratio (tutti against itself) shows how much the machine moved during the run.
#pragma once

#include <memory>

#include "baseline.hpp"

namespace tutti::bench {

std::unique_ptr<BaselineSession> start_inplace_session();

}  // namespace tutti::bench
