#!/usr/bin/env python3
"""PyTorch's own distributed test suite (torch/testing/_internal/distributed/distributed_test.py,
as Debian's python3-torch ships it) run against one backend, the way a plugin backend's project
drives it (torch_ucc's test driver does the same for "ucc"):

    BACKEND=tutti WORLD_SIZE=2 dist_suite.py [unittest args: -k PATTERN, -v, test names]
    BACKEND=gloo  WORLD_SIZE=2 dist_suite.py ...      # the same tests on gloo, for comparison

distributed_test.py reads BACKEND and WORLD_SIZE at import, so they are set before it is imported.
Each test forks WORLD_SIZE rank processes from this one (fork, not torch's spawn: a spawned child
imports torch again, ~2 s per rank per test on a small machine; nothing here has started a thread
yet when it forks). Each rank calls init_process_group(BACKEND) on a FileStore of the test's own.

For "tutti" the driver tells the suite what the backend supports, through DistTestCases, the
suite's own switchboard for plugin backends: DDP, subgroups, plugin (a group may override the
backend with gloo); recv from any source is not supported.
"""
import os
import sys

BACKEND = os.environ.setdefault("BACKEND", "tutti")
os.environ.setdefault("WORLD_SIZE", "2")

try:
    import expecttest  # noqa: F401
except ImportError:
    # torch's common_utils only subclasses expecttest.TestCase (assertExpectedInline, which no
    # distributed test uses); Debian has no python3-expecttest, so unittest's TestCase stands in.
    import types
    import unittest

    sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase, ACCEPT=False)

import torch  # noqa: E402
import torch.multiprocessing  # noqa: E402

if BACKEND == "tutti":
    import tutti.torch  # noqa: E402,F401  (registers the backend)

from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if BACKEND == "tutti":
    for feature in ("ddp", "subgroup", "plugin"):
        DistTestCases.backend_feature[feature].add(BACKEND)
    DistTestCases.skip_collective["sendrecv anysource"].add(BACKEND)

from torch.testing._internal.common_utils import run_tests  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)


class TestDistBackendWithFork(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._start_processes(torch.multiprocessing.get_context("fork").Process)


if __name__ == "__main__":
    run_tests()
