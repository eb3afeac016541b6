// Runs a body on every rank of an in-process world (one thread per rank) built from ThreadChannel,
// the test double described in thread_channel.hpp. A rank that throws sends an abort notice to all
// others so that the world fails fast instead of waiting for deadlines.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "collectives/context.hpp"
#include "collectives/scratch.hpp"
#include "transport/transport.hpp"

namespace tutti::testing {

struct Rank {
  int rank;
  int size;
  transport::Transport& transport;
  collectives::Scratch& scratch;
  uint64_t sequence = 0;

  // A context for the next collective call; every rank must call it once per collective.
  collectives::Context context(size_t segment_bytes = 64 << 10, double timeout_seconds = 60);
};

// The exception each rank ended with (null where it returned normally).
std::vector<std::exception_ptr> run_ranks(int size, const std::function<void(Rank&)>& body);

// Messages of every rank's exception, "rank 2: ..."; empty when all succeeded.
std::string describe_failures(const std::vector<std::exception_ptr>& failures);

}  // namespace tutti::testing
