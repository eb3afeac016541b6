"""Backend "tutti" for torch.distributed (PyTorch 1.13 CPU tensors).

    import tutti.torch                                   # registers the backend
    torch.distributed.init_process_group(backend="tutti")

Importing this module registers the backend once per process. torch.distributed then calls the
creator with its own (prefix) store, the rank, the size and the timeout, for the default group and
again for every new_group: each group gets its own tutti communicator and worker thread.
"""
import torch.distributed as _dist

from ._backend import ProcessGroupTutti

__all__ = ["ProcessGroupTutti", "BACKEND_NAME"]

BACKEND_NAME = "tutti"


def _create_process_group(store, rank, size, timeout):
    return ProcessGroupTutti(store, rank, size, timeout)


if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)
