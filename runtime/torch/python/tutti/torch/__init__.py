"""Backend "tutti" for torch.distributed (CPU tensors on PyTorch 1.13 and 2.x, CUDA tensors on 2.x).

    import tutti.torch                                   # registers the backend
    torch.distributed.init_process_group(backend="tutti")

Importing this module registers the backend once per process. torch.distributed then calls the
creator with its own (prefix) store, the rank, the size and the timeout, for the default group and
again for every new_group: each group gets its own tutti communicator and worker thread.
"""
import inspect as _inspect
import logging as _logging
import os as _os
import socket as _socket

import torch.distributed as _dist

from ._backend import ProcessGroupTutti

__all__ = ["ProcessGroupTutti", "BACKEND_NAME"]

BACKEND_NAME = "tutti"


def _address_toward(host):
    """This host's address on the route to `host` ("" when unknown). A UDP connect sends nothing."""
    try:
        family = _socket.getaddrinfo(host, None)[0][0]
        with _socket.socket(family, _socket.SOCK_DGRAM) as s:
            s.connect((host, 9))
            return s.getsockname()[0]
    except OSError:
        return ""


def _create_process_group(store, rank, size, timeout):
    # Peers on other hosts must dial an address of ours they can reach. torch's store is at
    # MASTER_ADDR under env:// (torchrun, tuttirun, Kubeflow), so the route to it is the one they
    # use; without it tutti falls back to the address the host name resolves to.
    master = _os.environ.get("MASTER_ADDR", "")
    group = ProcessGroupTutti(store, rank, size, timeout, _address_toward(master) if master else "")
    # What the group found about OpenMP threads on this host (tutti/torch_openmp.hpp), once per
    # process and note: whether libgomp's spin-wait was throttled for ranks that share the CPUs.
    if group._openmp_note not in _openmp_notes:
        _openmp_notes.add(group._openmp_note)
        _logging.getLogger(__name__).info("tutti: %s", group._openmp_note)
    return group


_openmp_notes = set()


def _register():
    # torch 2.x asks which device types a backend serves (and warns when it must guess); tutti's
    # backend takes CPU and CUDA tensors there (one communicator for both: torch registers a
    # single backend object when every device maps to the same backend). torch 1.13's
    # register_backend has no such argument, and its tutti takes CPU tensors only.
    if "devices" in _inspect.signature(_dist.Backend.register_backend).parameters:
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group, devices=["cpu", "cuda"])
    else:
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)


if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _register()
