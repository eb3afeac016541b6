"""Data-parallel Fashion-MNIST in plain JAX + optax, gradients averaged through tutti.

    tuttirun -np 2 -- python train_jax.py --epochs 1

Every rank starts from the same weights (rank 0's, broadcast), trains on its own shard of each
epoch's shuffled training set, and averages its gradients with the others every step through
tutti's engine (allreduce_async per parameter, fused by the engine, on the JAX arrays themselves:
tutti reads them through DLPack and returns new JAX arrays). The weights therefore stay equal on
every rank; each prints `rank R: N steps, weights checksum H` at the end, and rank 0 the test
accuracy after each epoch.

The data are Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist); nothing is
downloaded.
"""
import argparse
import gzip
import hashlib
import os
import struct
import sys
import time
import zlib

import numpy as np

import jax
import jax.numpy as jnp
import optax

import tutti

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="folder of the four IDX files (.gz or not)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: none)")
    p.add_argument("--log-every", type=int, default=100)
    args = p.parse_args()
    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        p.error("--epochs and --batch-size must be at least 1, --lr positive")
    return args


def read_idx(path):
    """One unsigned-byte IDX file as a numpy array of its shape."""
    for name, opener in ((path, open), (path + ".gz", gzip.open)):
        if os.path.exists(name):
            try:
                with opener(name, "rb") as f:
                    data = f.read()
            except (EOFError, zlib.error, gzip.BadGzipFile) as e:
                raise ValueError(f"{name}: truncated or corrupt ({e}); reinstall "
                                 "dataset-fashion-mnist or pass --data DIR") from e
            break
    else:
        raise FileNotFoundError(f"{path}(.gz) not found: install Debian's dataset-fashion-mnist "
                                "or pass --data DIR")
    zero, kind, ndim = struct.unpack_from(">HBB", data, 0)
    if zero != 0 or kind != 0x08:
        raise ValueError(f"{name}: not an unsigned-byte IDX file")
    dims = struct.unpack_from(f">{ndim}I", data, 4)
    array = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim)
    if array.size != int(np.prod(dims)):
        raise ValueError(f"{name}: {array.size} bytes of data for shape {dims}")
    return array.reshape(dims)


def load(directory, split):
    images = read_idx(os.path.join(directory, f"{split}-images-idx3-ubyte"))
    labels = read_idx(os.path.join(directory, f"{split}-labels-idx1-ubyte"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{directory}: {images.shape[0]} {split} images, {labels.shape[0]} labels")
    return images.reshape(len(images), -1).astype(np.float32) / 255.0, labels.astype(np.int32)


def init_params(key, sizes=(784, 256, 128, 10)):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append({"w": jax.random.normal(sub, (fan_in, fan_out)) * jnp.sqrt(2.0 / fan_in),
                       "b": jnp.zeros(fan_out)})
    return params


def forward(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(forward(params, x), y).mean()


def checksum(params):
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(params):
        h.update(np.asarray(leaf).tobytes())
    return h.hexdigest()[:16]


def main():
    args = parse_args()
    world = tutti.init()
    rank, size = world.rank, world.size
    try:
        train_x, train_y = load(args.data, "train")
        test_x, test_y = load(args.data, "t10k")
    except (OSError, ValueError) as e:
        print(f"train_jax.py: rank {rank}: {e}", file=sys.stderr, flush=True)
        return 1

    # The same start on every rank: rank 0's weights, broadcast (JAX arrays are immutable: tutti
    # returns new ones).
    params = init_params(jax.random.PRNGKey(args.seed))
    params = jax.tree_util.tree_map(lambda leaf: world.broadcast(leaf, 0), params)
    optimizer = optax.adam(args.lr)
    state = optimizer.init(params)
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))

    @jax.jit
    def apply(params, state, grads):
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    predict = jax.jit(lambda params, x: jnp.argmax(forward(params, x), axis=-1))
    leaves, treedef = jax.tree_util.tree_flatten(params)
    names = [f"grad.{i}" for i in range(len(leaves))]
    if rank == 0:
        print(f"train_jax.py: {size} ranks, jax {jax.__version__} on {jax.default_backend()}, "
              f"{sum(leaf.size for leaf in leaves)} parameters", flush=True)

    per_step = args.batch_size * size
    steps_per_epoch = len(train_x) // per_step
    step, started = 0, time.time()
    for epoch in range(args.epochs):
        order = np.random.default_rng(args.seed + epoch).permutation(len(train_x))
        for s in range(steps_per_epoch):
            batch = order[s * per_step + rank * args.batch_size:
                          s * per_step + (rank + 1) * args.batch_size]
            loss, grads = grad_fn(params, train_x[batch], train_y[batch])
            # Every gradient to tutti's engine by name, then the averages back: one fused
            # allreduce per step where they fit the fusion buffer.
            handles = [world.allreduce_async(n, g, tutti.AVG)
                       for n, g in zip(names, jax.tree_util.tree_leaves(grads))]
            grads = jax.tree_util.tree_unflatten(treedef, [h.wait() for h in handles])
            params, state = apply(params, state, grads)
            step += 1
            if rank == 0 and step % args.log_every == 0:
                print(f"epoch {epoch} step {step} loss {float(loss):.4f} "
                      f"({(time.time() - started) / step * 1e3:.1f} ms/step)", flush=True)
            if args.max_steps and step >= args.max_steps:
                break
        if rank == 0:
            correct = int(np.sum(np.asarray(predict(params, test_x)) == test_y))
            print(f"epoch {epoch}: test accuracy {100.0 * correct / len(test_y):.2f}% "
                  f"({correct}/{len(test_y)})", flush=True)
        if args.max_steps and step >= args.max_steps:
            break
    sys.stdout.write(f"rank {rank}: {step} steps, weights checksum {checksum(params)}\n")
    sys.stdout.flush()
    tutti.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
