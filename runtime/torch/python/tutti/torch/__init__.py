"""Backend "tutti" for torch.distributed (CPU tensors on PyTorch 1.13 and 2.x, CUDA tensors on 2.x).

    import tutti.torch                                   # registers the backend
    torch.distributed.init_process_group(backend="tutti")

Importing this module registers the backend once per process. torch.distributed then calls the
creator with its own (prefix) store, the rank, the size and the timeout, for the default group and
again for every new_group: each group gets its own tutti communicator and worker thread.

It also checks, before torch makes a tutti group with new_group, that every process passed the
same ranks (see _agree_on_new_group), and stops the groups' worker threads at exit (atexit), before
the interpreter finalizes.
"""
import atexit as _atexit
import functools as _functools
import hashlib as _hashlib
import inspect as _inspect
import json as _json
import logging as _logging
import operator as _operator
import os as _os
import socket as _socket
import sys as _sys
import time as _time

import torch as _torch
import torch.distributed as _dist
from torch.distributed import distributed_c10d as _c10d

__all__ = ["ProcessGroupTutti", "BACKEND_NAME"]

BACKEND_NAME = "tutti"

# ---- Which build of the extension -----------------------------------------------------------
# The extension links against the libtorch it was built with; loaded under another torch it aborts
# (std::system_error) or crashes at import. Each build writes what it was built for into _build.json
# beside the extension, read here before anything loads. A tutti build tree has two: build/python
# (Debian's torch) and build/torch2/python (the torch 2.x venv). Only build/python holds the core
# package `tutti`, so with both on PYTHONPATH `tutti.torch` is always build/python's; when it is
# not this torch's, the build that is (on sys.path) is put first on this package's path.
_BUILD_FILE = "_build.json"


def _build_of(folder):
    try:
        with open(_os.path.join(folder, _BUILD_FILE), encoding="utf-8") as f:
            return _json.load(f)
    except (OSError, ValueError):
        return None


def _release(version):
    # "2.15.0+cu132" and "2.15.0+cpu" are one release of torch: the same C++ interface.
    return str(version).split("+")[0]


def _python_version():
    return "%d.%d" % _sys.version_info[:2]


def _fits(build):
    return (_release(build.get("torch", "")) == _release(_torch.__version__)
            and build.get("python") == _python_version())


def _describe(folder, build):
    return f"{folder} (torch {build.get('torch', '?')} under Python {build.get('python', '?')})"


def _choose_build():
    here = _os.path.dirname(_os.path.abspath(__file__))
    mine = _build_of(here)
    if mine is None or _fits(mine):
        return  # the build for this torch (or an older one that says nothing: tried as it is)
    seen, others = {_os.path.realpath(here)}, []
    for entry in _sys.path:
        folder = _os.path.join(_os.path.abspath(entry or "."), "tutti", "torch")
        if _os.path.realpath(folder) in seen:
            continue
        seen.add(_os.path.realpath(folder))
        build = _build_of(folder)
        if build is None:
            continue
        if _fits(build):
            __path__.insert(0, folder)  # noqa: F821  (the package's own): _backend comes from there
            return
        others.append(_describe(folder, build))
    also = f" Also on sys.path, for other torches: {'; '.join(others)}." if others else ""
    raise ImportError(
        f"tutti.torch: {here} holds the backend built for torch {mine.get('torch')} under Python "
        f"{mine.get('python')} (by {mine.get('python_executable')}), but this Python "
        f"({_sys.executable}) runs torch {_torch.__version__} under Python {_python_version()} "
        f"({_os.path.dirname(_torch.__file__)}): the extension loads only under the torch and "
        f"Python it was built for.{also} Use the build for "
        f"torch {_torch.__version__}: in a tutti build tree, build/python is the one for the "
        "Python the build found (Debian's torch 1.13: /usr/bin/python3) and build/torch2/python "
        "the one for the torch 2.x venv (make build); both folders may be on PYTHONPATH together. "
        f"Or build one for this Python: `{_sys.executable} -m pip install --no-build-isolation .` "
        f"in tutti's source tree, or `cmake -S runtime/torch -B build-torch "
        f"-DPython3_EXECUTABLE={_sys.executable}` there.")


_choose_build()

from ._backend import ProcessGroupTutti, _stop_workers  # noqa: E402

# Worker threads must be stopped while Python can still run them: see
# ProcessGroupTutti::stop_all_workers (a thread that takes the GIL during finalization is ended by
# Python, and that ends the process with SIGABRT). atexit runs before finalization.
_atexit.register(_stop_workers)


def _address_toward(host):
    """This host's address on the route to `host` ("" when unknown). A UDP connect sends nothing."""
    try:
        family = _socket.getaddrinfo(host, None)[0][0]
        with _socket.socket(family, _socket.SOCK_DGRAM) as s:
            s.connect((host, 9))
            return s.getsockname()[0]
    except OSError:
        return ""


# ---- Agreeing on the members ------------------------------------------------------------------
# torch names a new_group's store prefix by a counter, not by its ranks, so processes that pass
# different lists of the same size meet under one prefix: two of them took the same place in the
# group, and one got the other's data (rank 0's [0, 1] answered 101 where 11 was due when rank 2
# passed [1, 2]), or waited until the timeout. Both checks below go through torch's store, by
# counters (Store.add): torch 1.13's Python store has no check(), and its TCPStore wait() breaks
# the connection when it times out (see store_adapter.cc).


def _ranks_text(ranks):
    return "[" + ", ".join(str(r) for r in ranks) + "]"


def _who(ranks):
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"


def _seconds(timeout):
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


def _wait_for_counters(store, keys, timeout):
    """Waits until every counter in `keys` is positive. Returns (the keys still at 0, seconds
    waited): none missing unless `timeout` passed."""
    started = _time.monotonic()
    deadline = started + _seconds(timeout)
    pause = 0.0005
    missing = list(keys)
    while True:
        missing = [k for k in missing if store.add(k, 0) <= 0]
        now = _time.monotonic()
        if not missing or now >= deadline:
            return missing, now - started
        _time.sleep(min(pause, deadline - now))
        pause = min(pause * 2, 0.02)


def _wait_for_count(store, key, count, timeout):
    """Waits until the counter `key` reaches `count`: None once it has, else (when `timeout` has
    passed) the seconds waited."""
    started = _time.monotonic()
    deadline = started + _seconds(timeout)
    pause = 0.0005
    while store.add(key, 0) < count:
        now = _time.monotonic()
        if now >= deadline:
            return now - started
        _time.sleep(min(pause, deadline - now))
        pause = min(pause * 2, 0.02)
    return None


def _differences(lists):
    """Who passed what, for {rank: list text}: "[0, 1] on ranks 0 and 1; [1, 2] on rank 2"."""
    by_list = {}
    for rank, text in sorted(lists.items()):
        by_list.setdefault(text, []).append(rank)
    return "; ".join(f"{text} on {_who(ranks)}" for text, ranks in by_list.items())


def _check_members(store, group_rank, members, timeout, group_id):
    """In the creator, on the members only: every member's list must be this one. Keyed by global
    rank under the group's store, so two processes that think they hold one place in the group
    cannot both pass. A member whose list differs from a listed member's fails here, naming both,
    before it joins anything; members that agree among themselves make their group without it."""
    me = members[group_rank]
    mine = _ranks_text(members)
    store.set(f"tutti/members/{me}", mine)
    store.add(f"tutti/members/{me}/here", 1)
    missing, waited = _wait_for_counters(
        store, [f"tutti/members/{r}/here" for r in members], timeout)
    if missing:
        absent = [r for r in members if f"tutti/members/{r}/here" in missing]
        raise RuntimeError(
            f"tutti new_group (group {group_id}) on rank {me}: {_who(absent)} of the members "
            f"{mine} did not join the group within {waited:.1f} s; every process must call "
            "new_group with the same ranks")
    lists = {r: store.get(f"tutti/members/{r}").decode() for r in members}
    if any(text != mine for text in lists.values()):
        raise RuntimeError(
            f"tutti new_group (group {group_id}) on rank {me}: the members passed different ranks: "
            f"{_differences(lists)}; every process must pass new_group the same ranks (they are "
            "the group's members, in order)")


_new_group_calls = 0


def _agree_on_new_group(ranks, timeout, sort_ranks):
    """Before torch makes a tutti group with new_group, on every process: torch's new_group is
    collective over all processes (members or not), so all of them publish the ranks they passed
    and compare. Any difference fails every process, naming each list, before anything is made;
    a process that never calls new_group is named when `timeout` has passed."""
    global _new_group_calls
    _new_group_calls += 1
    store = _c10d._get_default_store()
    world, me = _dist.get_world_size(), _dist.get_rank()
    if ranks is None:
        text = _ranks_text(range(world))
    else:
        try:
            listed = [_operator.index(r) for r in ranks]
            text = _ranks_text(sorted(listed) if sort_ranks else listed)
        except TypeError:
            text = repr(ranks)  # torch refuses it after; the others must still see it
    # A handful of store requests a process whatever the world's size (torch's own store barrier
    # is one counter too): its list under its rank (read back only to say what differs), a count
    # of the processes that passed the same list, then one count of the arrived, polled. Every
    # process counts itself in before it arrives, so once all have arrived the counts are final:
    # each sees its list's count below the world's size exactly when some list differs.
    base = f"tutti/new_group/{_new_group_calls}"
    same = f"{base}/list/" + _hashlib.sha1(text.encode()).hexdigest()
    store.set(f"{base}/{me}", text)
    store.add(f"{base}/{me}/here", 1)
    store.add(same, 1)
    store.add(f"{base}/arrived", 1)
    waited = _wait_for_count(store, f"{base}/arrived", world, timeout)
    if waited is not None:
        absent = [r for r in range(world) if store.add(f"{base}/{r}/here", 0) <= 0]
        raise RuntimeError(
            f"tutti new_group on rank {me}: {_who(absent)} did not call new_group within "
            f"{waited:.1f} s (this process's new_group call {_new_group_calls}, ranks {text}); "
            "new_group is collective: every process must call it, with the same ranks, members "
            "or not (torch 2.x: new_group(..., use_local_synchronization=True) is called by the "
            "members only)")
    if store.add(same, 0) < world:
        lists = {r: store.get(f"{base}/{r}").decode() for r in range(world)}
        raise RuntimeError(
            f"tutti new_group on rank {me}: the processes passed different ranks: "
            f"{_differences(lists)}. new_group is collective: every process, member or not, must "
            "pass the same ranks (they are the group's members, in order); no group was made")


def _default_timeout(backend):
    if hasattr(_c10d, "_get_default_timeout"):
        return _c10d._get_default_timeout(backend)
    return _c10d.default_pg_timeout


def _wrap_new_group():
    original = _c10d.new_group
    if getattr(original, "_tutti_checks_members", False):
        return
    signature = _inspect.signature(original)

    @_functools.wraps(original)
    def new_group(*args, **kwargs):
        try:
            call = signature.bind(*args, **kwargs).arguments
        except TypeError:
            return original(*args, **kwargs)  # torch says what is wrong with the call
        if _dist.is_initialized() and not call.get("use_local_synchronization", False):
            backend = call.get("backend") or _dist.get_backend()
            if BACKEND_NAME in str(backend).lower():
                timeout = call.get("timeout") or _default_timeout(backend)
                _agree_on_new_group(call.get("ranks"), timeout, call.get("sort_ranks", True))
        return original(*args, **kwargs)

    new_group._tutti_checks_members = True
    new_group._torch_new_group = original
    # Both names: scripts call torch.distributed.new_group, torch's own helpers (new_subgroups,
    # FSDP's hybrid sharding) the module's global.
    _c10d.new_group = new_group
    _dist.new_group = new_group


def _join(store, rank, size, timeout, members, group_id):
    """The group's communicator. A rank that never arrives fails the others when `timeout` has
    passed, with an error that names it: each rank marks its arrival on the store first, since
    tutti's own message is about the key it waited for last (with torch's agent store: "torch store
    wait 'tutti/torch/job_id': not set within 0 ms", the last 50 ms slice of a 15 s wait)."""
    started = _time.monotonic()
    store.add(f"tutti/arrived/{rank}", 1)
    # Peers on other hosts must dial an address of ours they can reach. torch's store is at
    # MASTER_ADDR under env:// (torchrun, tuttirun, Kubeflow), so the route to it is the one they
    # use; without it tutti falls back to the address the host name resolves to.
    master = _os.environ.get("MASTER_ADDR", "")
    try:
        return ProcessGroupTutti(store, rank, size, timeout,
                                 _address_toward(master) if master else "")
    except Exception:
        waited = _time.monotonic() - started
        if waited < 0.9 * _seconds(timeout):
            raise  # not a wait that ran out: a rank not here yet may only be slow
        try:
            absent = [r for r in range(size) if store.add(f"tutti/arrived/{r}", 0) <= 0]
        except Exception:
            absent = []  # the store itself failed: tutti's error says so
        if not absent:
            raise
        if members:
            call, me = f"new_group (group {group_id})", f"rank {members[rank]}"
            absent = [members[r] for r in absent]
        else:
            call, me = "init_process_group", f"rank {rank} of {size}"
        raise RuntimeError(
            f"tutti {call} on {me}: {_who(absent)} never arrived: waited {waited:.1f} s (the "
            f"timeout of {call}: {_seconds(timeout):g} s) for {_who(absent)} to call {call.split()[0]}"
            "; check that every process was started, calls it with the same world size and "
            "store, and reaches the store") from None


def _create_process_group(options, backend_options=None):
    # torch's extended creator API (both 1.13 and 2.x): the group's global ranks come with it.
    store, rank, size, timeout = options.store, options.group_rank, options.group_size, options.timeout
    members = list(options.global_ranks_in_group)
    if members:  # a new group (the default group has none)
        _check_members(store, rank, members, timeout, options.group_id)
    group = _join(store, rank, size, timeout, members, options.group_id)
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
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group, extended_api=True,
                                       devices=["cpu", "cuda"])
    else:
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group, extended_api=True)


if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _register()
    _wrap_new_group()
