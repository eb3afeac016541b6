"""What the GPU checks run by tests/gpu/torch_cuda.sh share (torch_cuda_check.py,
torch_cuda_train.py, dlpack_cuda_check.py): their flags, the device each rank uses, and the
one-line-per-check report.

    import gpu_check                  # before torch and tutti: --pretend-hosts sets their env
    dev = gpu_check.device(torch)
"""
import os
import sys

# --pretend-hosts: every rank says it is its own host (TUTTI_HOST, NCCL_HOSTID), so that two ranks
# can share one GPU; set before NCCL or tutti read them.
if "--pretend-hosts" in sys.argv:
    os.environ["TUTTI_HOST"] = "h" + os.environ["RANK"]
    os.environ["NCCL_HOSTID"] = "h" + os.environ["RANK"]

CPU = "--cpu" in sys.argv  # the script's own dry run on CPU tensors, where there is no GPU


def device(torch):
    """The device this rank checks: the CPU for --cpu, GPU 0 for every rank with --pretend-hosts,
    else the local rank's GPU; made current."""
    if CPU:
        return torch.device("cpu")
    if "--pretend-hosts" in sys.argv:
        dev = torch.device("cuda", 0)
    else:
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    return dev


def device_name(torch, dev):
    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU dry run"


class Report:
    """Counts failed checks; rank 0 prints every check, other ranks their failures."""

    def __init__(self, rank):
        self.rank = rank
        self.failures = 0

    def say(self, ok, what):
        if not ok:
            self.failures += 1
        if self.rank == 0 or not ok:
            print(f"[{self.rank}] {'ok  ' if ok else 'FAIL'} {what}", flush=True)
