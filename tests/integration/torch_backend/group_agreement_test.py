#!/usr/bin/env python3
"""new_group with member lists that differ across processes, on 3 real ranks of backend tutti.

    PYTHONPATH=<build>/python /usr/bin/python3 group_agreement_test.py

torch names a new group's store prefix by a counter, so lists of the same size met under one
prefix: with [0, 1], [0, 1], [1, 2] rank 2 failed while ranks 0 and 1 "succeeded", rank 0 summing
rank 2's data (101 where 11 was due); with [0, 2], [1, 2], [0, 2] a rank hung or summed wrongly.
Checked here:
- every process fails at once (well within the timeout) with an error naming each list that was
  passed, for those two cases and for lists of different sizes, and the world goes on: a group of
  agreeing ranks afterwards gives exact sums;
- the creator's own check (torch's new_group called past tutti.torch's agreement, as a script that
  bound it before importing tutti.torch would): the process whose list disagrees fails naming both
  lists, and a group the others make sums their data only.
"""
import datetime
import sys
import time

import torch
import torch.distributed as dist

import spawn_ranks

CASES = [([0, 1], [0, 1], [1, 2]), ([0, 2], [1, 2], [0, 2]), ([0, 1], [0, 1, 2], [0, 1, 2])]


def text(ranks):
    return "[" + ", ".join(str(r) for r in ranks) + "]"


def value(rank):
    return float(10 ** rank)  # 1, 10, 100: a sum says exactly who took part


def check_every_process_fails(rank, size):
    assert size == 3
    for case in CASES:
        started = time.monotonic()
        try:
            group = dist.new_group(case[rank], timeout=datetime.timedelta(seconds=30))
        except RuntimeError as e:
            message = str(e)
        else:
            t = torch.full((2,), value(rank))
            if group != dist.GroupMember.NON_GROUP_MEMBER:
                dist.all_reduce(t, group=group)
            raise AssertionError(f"rank {rank}: new_group({case[rank]}) of {case} made a group "
                                 f"(an all_reduce in it gave {t.tolist()})")
        took = time.monotonic() - started
        for listed in case:
            assert text(listed) in message, (case, message)
        assert "different ranks" in message, message
        assert took < 10, f"{case}: failed only after {took:.1f} s: {message}"
        # The world goes on: agreeing lists make groups that sum exactly their members' data.
        for members in ([0, 1, 2], [1, 2]):
            group = dist.new_group(members)
            t = torch.full((3,), value(rank))
            if rank in members:
                dist.all_reduce(t, group=group)
                assert torch.equal(t, torch.full((3,), sum(value(m) for m in members))), (members, t)


def check_creator_refuses(rank, size):
    # torch's own new_group, past tutti.torch's agreement among all processes: the members check
    # their lists when torch creates the group (keyed by global rank).
    torch_new_group = dist.new_group._torch_new_group
    lists = ([0, 1], [0, 1], [1, 2])
    group = None
    try:
        # torch 1.13 ends new_group with a barrier over all processes, which a process that failed
        # in the creator never reaches: a short timeout for it.
        group = torch_new_group(lists[rank], timeout=datetime.timedelta(seconds=5))
    except RuntimeError as e:
        if rank == 2:
            assert "[0, 1]" in str(e) and "[1, 2]" in str(e), e
        else:
            assert torch.__version__.startswith("1."), f"rank {rank}: {e}"  # 1.13's barrier
    else:
        assert rank != 2, "rank 2's list disagrees with rank 1's: it must not get a group"
        t = torch.full((4,), value(rank))
        dist.all_reduce(t, group=group)
        assert torch.equal(t, torch.full((4,), value(0) + value(1))), t  # 11, never 101
    dist.barrier()


CHECKS = ["check_every_process_fails", "check_creator_refuses"]


def main():
    return spawn_ranks.launch(3, "group_agreement_test", CHECKS, limit=120)


if __name__ == "__main__":
    sys.exit(main())
