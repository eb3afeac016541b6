"""Fashion-MNIST from its IDX files (gzip'd or not), as float tensors in [0, 1] and int64 labels.

Debian's dataset-fashion-mnist puts them in /usr/share/datasets/fashion-mnist; nothing is
downloaded.
"""

import gzip
import os
import struct
import zlib

import torch

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def _open(path):
    if os.path.exists(path):
        return open(path, "rb")
    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rb")
    raise FileNotFoundError(
        f"{path}(.gz) not found: install Debian's dataset-fashion-mnist or pass --data DIR"
    )


def read_idx(path):
    """One IDX file as a uint8 tensor of its shape (only the unsigned-byte type is used here)."""
    try:
        with _open(path) as f:
            data = f.read()
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        # A truncated or damaged .gz: say which file, not a traceback on every rank.
        raise ValueError(f"{path}: truncated or corrupt ({type(e).__name__}: {e}); reinstall "
                         "dataset-fashion-mnist or pass --data DIR") from e
    if len(data) < 4:
        raise ValueError(f"{path}: not an IDX file (too short)")
    zero, dtype, ndim = struct.unpack_from(">HBB", data, 0)
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {zero:#x} {dtype:#x})")
    dims = struct.unpack_from(f">{ndim}I", data, 4)
    offset = 4 + 4 * ndim
    count = 1
    for d in dims:
        count *= d
    if len(data) - offset != count:
        raise ValueError(f"{path}: {len(data) - offset} bytes of data for shape {dims}")
    return torch.frombuffer(bytearray(data[offset:]), dtype=torch.uint8).reshape(dims)


def load(directory, split):
    """(images [N, 1, 28, 28] float32, labels [N] int64) of split 'train' or 't10k'."""
    images = read_idx(os.path.join(directory, f"{split}-images-idx3-ubyte"))
    labels = read_idx(os.path.join(directory, f"{split}-labels-idx1-ubyte"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{directory}: {images.shape[0]} {split} images but {labels.shape[0]} labels")
    return images.unsqueeze(1).float().div_(255.0), labels.long()
