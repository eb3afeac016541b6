"""Elastic training of a torch model on tutti's own communicators (docs/ELASTIC.md), as Horovod's
hvd.elastic.TorchState: a state of a model, its optimizer and plain values, with commit, restore
and sync, run by tutti.elastic.run, which goes on with the survivors when ranks die and takes in
the ranks an elastic launcher starts.

    import torch, tutti, tutti.torch.elastic as elastic
    world = tutti.init()
    model, opt = Net(), torch.optim.SGD(...)
    state = elastic.TorchState(model, opt, step=0)
    state.commit()

    def train(comm):
        while state.step < steps:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward()
            elastic.average_gradients(model, comm)   # one allreduce of every gradient
            opt.step()
            state.step += 1
            state.commit()          # what a failure rolls back to; where newcomers are noticed

    comm = elastic.run(train, state, world)

CPU and CUDA tensors both work (a CUDA tensor travels through a CPU copy in sync). The process
group of torch.distributed does not follow a shrink: train with the communicator `run` passes.
"""
import copy as _copy
import io as _io

import numpy as _numpy
import torch as _torch

import tutti as _tutti

try:
    import tutti.elastic as _elastic
except ImportError as _e:  # a tutti.torch wheel without tutti's core package
    raise ImportError("tutti.torch.elastic needs tutti's core Python package (import tutti."
                      "elastic), which this installation lacks: install tutti with its Python "
                      "package (cmake --install, or pip install . at the repository's root)") from _e

MembershipChanged = _elastic.MembershipChanged
run = _elastic.run

__all__ = ["TorchState", "run", "MembershipChanged", "average_gradients"]


def _broadcast_tensor(comm, tensor, root):
    if tensor.device.type == "cpu" and tensor.is_contiguous():
        comm.broadcast(tensor, root)
        return
    staged = tensor.detach().to("cpu").contiguous()
    comm.broadcast(staged, root)
    tensor.copy_(staged)


def _broadcast_object(comm, value, root):
    """`value` on root, for every rank: saved with torch.save, one length and one byte broadcast."""
    if comm.rank == root:
        buffer = _io.BytesIO()
        _torch.save(value, buffer)
        payload = _numpy.frombuffer(buffer.getvalue(), dtype=_numpy.uint8).copy()
        length = _numpy.array([payload.size], _numpy.int64)
    else:
        length = _numpy.zeros(1, _numpy.int64)
    comm.broadcast(length, root)
    if comm.rank != root:
        payload = _numpy.empty(int(length[0]), _numpy.uint8)
    comm.broadcast(payload, root)
    if comm.rank == root:
        return value
    buffer = _io.BytesIO(payload.tobytes())
    try:
        return _torch.load(buffer, weights_only=False)
    except TypeError:  # torch before weights_only
        return _torch.load(buffer)


def average_gradients(model, comm):
    """Averages every parameter's gradient over comm's ranks, in one allreduce of them all packed
    (parameters without a gradient are left out; every rank must have the same ones)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    dense = [g.detach() for g in grads]
    flat = _torch.cat([g.reshape(-1) for g in dense])
    on_cpu = flat.device.type == "cpu"
    staged = flat if on_cpu else flat.to("cpu")
    comm.allreduce(staged, _tutti.AVG)
    if not on_cpu:
        flat.copy_(staged)
    offset = 0
    for g in dense:
        n = g.numel()
        g.copy_(flat[offset:offset + n].view_as(g))
        offset += n


class TorchState(_elastic.State):
    """A model, its optimizer and named plain values (epoch, step: anything torch.save can write),
    plus numpy arrays as in tutti.elastic.State. Values read and write as attributes:
    TorchState(model, opt, step=0).step += 1."""

    def __init__(self, model=None, optimizer=None, **values):
        self.__dict__["_values"] = dict(values)
        super().__init__()
        self.model = model
        self.optimizer = optimizer
        self._saved = None

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        return super().__getattr__(name)

    def __setattr__(self, name, value):
        if name in self.__dict__.get("_values", {}):
            self._values[name] = value
        else:
            super().__setattr__(name, value)

    def _snapshot(self):
        model = None
        if self.model is not None:
            model = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        optimizer = _copy.deepcopy(self.optimizer.state_dict()) if self.optimizer is not None else None
        return model, optimizer, _copy.deepcopy(self._values)

    def commit(self):
        """Copies the model's and optimizer's state and the values (then the arrays): what
        restore() goes back to. Inside run() of an elastic job it also asks whether ranks joined
        and raises MembershipChanged, after the copy, when they did."""
        self._saved = self._snapshot()
        super().commit()

    def restore(self):
        """Loads the last commit back into the model, the optimizer and the values."""
        if self._saved is None:
            raise _elastic._invalid("elastic.TorchState.restore: nothing was committed yet; "
                                    "commit() the starting state first")
        model, optimizer, values = self._saved
        if self.model is not None:
            self.model.load_state_dict(model)
        if self.optimizer is not None:
            self.optimizer.load_state_dict(_copy.deepcopy(optimizer))
        self._values.clear()
        self._values.update(_copy.deepcopy(values))
        super().restore()

    def sync(self, comm, root=0):
        """Every rank's model, optimizer state and values become root's: a broadcast per model
        tensor (parameters and buffers, in place), one of the optimizer's state and the values
        together, then the arrays. What sync gives counts as committed."""
        if self.model is not None:
            with _torch.no_grad():
                for tensor in self.model.state_dict().values():
                    _broadcast_tensor(comm, tensor, root)
        rest = (self.optimizer.state_dict() if self.optimizer is not None else None, self._values)
        optimizer, values = _broadcast_object(comm, rest, root)
        if comm.rank != root:
            if self.optimizer is not None:
                self.optimizer.load_state_dict(optimizer)
            self._values.clear()
            self._values.update(values)
        super().sync(comm, root)
        self._saved = self._snapshot()
