"""A candidate's sampled timed outputs reach the reference process one at a time, in the order the calls left them,
each dropped once judged: on an 80 GB H100 a candidate holding all of them (and its inputs) at KernelBench 34's 7.5 GB
outputs left the reference no room to judge."""

from __future__ import annotations

import weakref

import torch

from kernelopt.harness.sandbox import calls


class _Link:
    """The reference's line as `send_timed` uses it: what each send carried, and which earlier snapshots were still
    alive then."""

    def __init__(self, watched: list[weakref.ref]) -> None:
        self.watched, self.sent, self.alive_at_send = watched, [], []

    def send(self, kind: str, case: int, run: int, outputs: list[torch.Tensor]) -> None:
        self.sent.append((kind, case, run, [float(t[0]) for t in outputs]))
        self.alive_at_send.append([ref() is not None for ref in self.watched])


def test_each_timed_snapshot_is_sent_in_order_and_dropped_once_judged() -> None:
    snapshots = [torch.full((4,), float(i)) for i in range(3)]
    snapshots[1] = [snapshots[1], torch.full((2,), 10.0)]  # a call of two outputs: sent together
    watched = [weakref.ref(s if isinstance(s, torch.Tensor) else s[0]) for s in snapshots]
    link = _Link(watched)
    calls.send_timed(link, snapshots, torch.device("cpu"))
    assert snapshots == []
    assert link.sent == [("timed", -1, 0, [0.0]), ("timed", -1, 0, [1.0, 10.0]), ("timed", -1, 0, [2.0])]
    # the first is gone by the second's send, the second by the third's: the caller keeps none of them
    assert link.alive_at_send == [[True, True, True], [False, True, True], [False, False, True]]
