"""Checkpoints that survive a kill at any moment.

Rank 0 writes the whole state to a temporary file beside the checkpoint, fsyncs it, moves the
current checkpoint to PATH.prev and renames the new one into place (then fsyncs the directory), so
PATH is always either the old or the new checkpoint, complete. Loading tries PATH, then PATH.prev:
a truncated or corrupt file is reported and the previous one is used; if none is usable the error
says which files were tried and why.
"""

import io
import os

import torch

FORMAT = "tutti-fashion-mnist-1"


class CheckpointError(RuntimeError):
    pass


def check_path(path):
    """Raises CheckpointError saying what is wrong with `path` as a checkpoint file, before training:
    a folder, a folder that does not exist, one under a regular file, one where no file can be
    written. (Found only at the first save, these ended in a traceback on every rank, and a folder
    given as the file was met with "remove these files".)"""
    if os.path.isdir(path):
        raise CheckpointError(f"--checkpoint {path} is a folder; name a file in it, e.g. "
                              f"{os.path.join(path, 'fmnist.pt')}")
    parent = os.path.dirname(os.path.abspath(path))
    walk = parent
    while not os.path.exists(walk):
        walk = os.path.dirname(walk)
    if not os.path.isdir(walk):
        raise CheckpointError(f"--checkpoint {path}: {walk} is a file, not a folder")
    if walk != parent:
        raise CheckpointError(f"--checkpoint {path}: its folder {parent} does not exist; create it "
                              "(on storage every restart of the job sees)")
    # A save writes a file beside `path` and renames it: make (and remove) one there now. Permission
    # bits alone do not say (os.access answers yes to root, under NFS's root squash too, and for
    # folders like /sys where nothing can be made).
    probe = f"{path}.probe.{os.getpid()}"
    try:
        with open(probe, "xb") as f:
            f.write(b"t")
        os.remove(probe)
    except OSError as e:
        raise CheckpointError(f"--checkpoint {path}: no file can be written in its folder {parent} "
                              f"({e.strerror}); checkpoints could not be saved there: choose a "
                              "writable folder") from None


def _fsync_dir(path):
    fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(path, state):
    """Atomically replaces `path` with `state` (a dict), keeping the previous one as path.prev."""
    state = dict(state, format=FORMAT)
    tmp = f"{path}.tmp.{os.getpid()}"
    buffer = io.BytesIO()
    torch.save(state, buffer)
    with open(tmp, "wb") as f:
        f.write(buffer.getbuffer())
        f.flush()
        os.fsync(f.fileno())
    if os.path.exists(path):
        os.replace(path, path + ".prev")
    os.replace(tmp, path)
    _fsync_dir(path)


def _load_one(path):
    try:
        state = torch.load(path, map_location="cpu")
    except Exception as e:  # torch raises RuntimeError, EOFError, UnpicklingError, ... by damage
        raise CheckpointError(f"{path} is truncated or corrupt ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a checkpoint of this trainer (format {FORMAT})")
    for key in ("model", "optimizer", "epoch", "step", "step_in_epoch"):
        if key not in state:
            raise CheckpointError(f"{path} lacks '{key}'")
    return state


def load(path, log):
    """The newest usable checkpoint as (state, file) or (None, None) when there is none at all.

    Raises CheckpointError naming every file tried when checkpoints exist but none is usable.
    """
    candidates = [p for p in (path, path + ".prev") if os.path.exists(p)]
    if not candidates:
        return None, None
    problems = []
    for candidate in candidates:
        try:
            return _load_one(candidate), candidate
        except CheckpointError as e:
            problems.append(str(e))
            log(f"warning: {e}; trying the previous checkpoint")
    raise CheckpointError(
        "no usable checkpoint: " + "; ".join(problems)
        + ". Remove these files to start from scratch, or point --checkpoint elsewhere."
    )
