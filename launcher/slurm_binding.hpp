// Whether the Slurm cluster tuttirun runs in binds tasks to CPUs (TaskPlugin task/affinity or
// task/cgroup). tuttirun's ranks run as one-task steps that share the allocation (--overlap); where
// Slurm binds, each such step would be pinned to the same first CPU of its node, so tuttirun turns
// binding off for them (--cpu-bind=none), which Slurm refuses with a warning per rank on a cluster
// that never binds.
#pragma once

namespace tutti::launcher {

// From `scontrol show config` (5 s at most, read once per process); true when that cannot be read,
// so that binding is turned off wherever it might be on.
bool slurm_binds_tasks();

}  // namespace tutti::launcher
