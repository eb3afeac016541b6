// Fitting torch's OpenMP threads to a host that several ranks share.
//
// After every parallel region, each of libgomp's worker threads busy-waits for the next one:
// 300,000 spins by default (GOMP_SPINCOUNT), milliseconds of CPU. libgomp cuts that to 100 spins
// when it manages more threads than the process may use CPUs, its own rule for an oversubscribed
// process; but it counts only its own process. With several ranks on a host, each with several
// intra-op threads (torch's default is one per CPU), the host is oversubscribed while no process
// is, and the spinning workers take the CPUs from the ranks' collectives: fully_shard with 2
// threads a rank on 2 vCPUs ran 10-15x slower (docs/PERFORMANCE.md). torchrun and tuttirun avoid
// it by giving such ranks OMP_NUM_THREADS=1; where a user asks for more, this applies libgomp's
// rule with what the communicator knows about the host.
#pragma once

#include <string>

#include "tutti/torch_ops.hpp"

namespace tutti::torchx {

struct OpenMpFit {
  // Whether libgomp's spinning is now throttled because of this call or an earlier one.
  bool throttled = false;
  // One sentence for the log: what was found and done, or why nothing was.
  std::string note;
};

// When `ranks_on_host` ranks with torch's intra-op thread count (at::get_num_threads() of the
// calling thread) need more threads than this process may use CPUs (its affinity, which is what
// libgomp counts), and libgomp is torch's OpenMP runtime, and neither GOMP_SPINCOUNT nor
// OMP_WAIT_POLICY is set (a user's choice wins): starts one idle OpenMP team on a thread of its
// own, parked for the life of the process, large enough that libgomp manages more threads than
// CPUs and so throttles every worker's spin-wait. Does it at most once per process; later calls
// report the state. Never fails: what it cannot do it says in the note.
TUTTI_TORCH_API OpenMpFit fit_openmp_to_host(int ranks_on_host);
// The same for the communicator's host (its local_size()).
TUTTI_TORCH_API OpenMpFit fit_openmp_to_host(const Communicator& comm = world());

}  // namespace tutti::torchx
