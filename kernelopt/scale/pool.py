"""A pool over the GPUs of one host: one harness process per GPU, each problem handed to whichever is free.

Each worker is a process of its own (`python -m kernelopt.scale.worker`) started with
CUDA_VISIBLE_DEVICES naming its one GPU, so torch, imported there, sees that GPU as cuda:0 and
nothing else. The worker's harness has its own fork server and reference processes, and its
device lock is keyed by the physical GPU (harness/sandbox/locks.py): two GPUs never wait on one
lock, two suites on one GPU do. A problem's baselines and its kernel's timings are taken in
one worker, so on one GPU; no time is compared across GPUs.

A worker that dies mid-problem (killed, out of memory) is started again; its problem is run
once more, on another GPU where there is one, and reported as an error if that try is lost too:
never dropped. A slot whose worker dies twice in a row with no problem in hand (it cannot start)
is given up.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kernelopt.hardware.gpus import physical_gpus
from kernelopt.scale.worker import work_name
from kernelopt.suite import ProblemResult, ProblemSpec, Work

RETRIES = 1  # a problem whose worker was lost is run once more, then reported
DEATHS_IN_A_ROW = 2  # a slot whose worker died this often with no problem in hand is given up
STOP_S = 10.0  # a stopped worker's time to hand back its GPU before it is killed

Notify = Callable[[str], None]


@dataclass(frozen=True)
class Slot:
    """One place problems run one at a time: a GPU of this host, or a harness on the CPU."""

    label: str  # "gpu 1": said in the progress line and kept in the result's `where`
    env: tuple[tuple[str, str], ...] = ()  # the worker's environment on top of ours


def gpu_slots(indices: Sequence[int], visible: str | None) -> list[Slot]:
    """One slot per GPU, `indices` in CUDA's numbering here (under CUDA_VISIBLE_DEVICES=`visible`),
    each worker seeing only the physical GPU behind its index."""
    return [Slot(f"gpu {gpu}", (("CUDA_VISIBLE_DEVICES", gpu),)) for gpu in physical_gpus(indices, visible)]


def cpu_slots(count: int) -> list[Slot]:
    """`count` harnesses on a host without a GPU (Triton's interpreter; timings take turns on the CPU lock)."""
    return [Slot(f"cpu worker {i}") for i in range(count)]


@dataclass
class Item:
    """A problem waiting or running, and where its lost tries ran."""

    spec: ProblemSpec
    lost_on: list[str] = field(default_factory=list)  # the slots whose worker died running it


class _Worker:
    """One worker process on its slot, and the problem it is running."""

    def __init__(self, slot: Slot, work: str, events: queue.Queue[tuple[_Worker, dict[str, Any]]],
                 log_dir: Path | None) -> None:
        self.slot = slot
        self.item: Item | None = None
        self.ready = False  # it has started and imported the work
        env = {**os.environ, **dict(slot.env), "KERNELOPT_POOL_PID": str(os.getpid()),
               "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}  # the work imports as here
        log: IO[bytes] | None = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            log = open(log_dir / f"{slot.label.replace(' ', '-')}.log", "ab")  # the child keeps it open
        self.process = subprocess.Popen([sys.executable, "-m", "kernelopt.scale.worker", work], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        if log is not None:
            log.close()
        threading.Thread(target=self._read, args=(events,), name=f"kernelopt-{slot.label}", daemon=True).start()

    def _read(self, events: queue.Queue[tuple[_Worker, dict[str, Any]]]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            events.put((self, json.loads(line)))
        events.put((self, {"gone": self.process.wait()}))

    def let_go(self) -> None:
        """Close its input (it ends once its harness has closed), and tell it to stop a problem it is running."""
        if self.process.stdin and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        if self.item is not None:
            self.process.terminate()

    def hand(self, item: Item) -> None:
        self.item = item
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(dataclasses.asdict(item.spec)) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:  # it died just now: its "gone" event is on the way
            pass

    def stop(self) -> None:
        """Close its input; a worker still running a problem is told to stop, then killed."""
        self.let_go()
        try:
            self.process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def pick(todo: deque[Item], place: str, live: set[str]) -> Item | None:
    """The first problem `place` may take (taken off `todo`): a retried one goes elsewhere while
    another live place can take it."""
    for item in todo:
        if place not in item.lost_on or live <= set(item.lost_on):
            todo.remove(item)
            return item
    return None


def lost_result(spec: ProblemSpec, where: list[str], why: str) -> ProblemResult:
    """The report of a problem whose every try was lost (never a silent drop)."""
    tries = f"lost on {', '.join(where)}" if where else "never run"
    return ProblemResult(spec.name, "error", f"{why} ({tries}); run it again with `kernelopt suite --resume`",
                         run_dir=spec.run_dir, where=where[-1] if where else None, tries=len(where))


def retry_or_report(item: Item, label: str, retries: int, todo: deque[Item], notify: Notify,
                    again: str, every: str) -> ProblemResult | None:
    """A try of `item` lost on `label`: it goes back to the front of the queue (saying `again`),
    or, past `retries`, its report comes back with `every` as the reason (never a silent drop)."""
    item.lost_on.append(label)
    if len(item.lost_on) > retries:
        return lost_result(item.spec, item.lost_on, every)
    notify(f"{item.spec.name}: {again}; running it again")
    todo.appendleft(item)
    return None


class PoolExecutor:
    """Runs problems on its slots, one worker process per slot, each problem to whichever is free."""

    def __init__(self, slots: Sequence[Slot], log_dir: Path | None = None, notify: Notify | None = None,
                 retries: int = RETRIES) -> None:
        if not slots:
            raise ValueError("a pool needs at least one slot")
        self.slots = list(slots)
        self.log_dir = log_dir
        self.notify = notify or (lambda line: None)
        self.retries = retries

    def run(self, work: Work, specs: Sequence[ProblemSpec]) -> Iterator[ProblemResult]:
        events: queue.Queue[tuple[_Worker, dict[str, Any]]] = queue.Queue()
        name = work_name(work)
        todo = deque(Item(spec) for spec in specs)
        workers = [_Worker(slot, name, events, self.log_dir) for slot in self.slots[: len(todo)]]
        deaths = dict.fromkeys((slot.label for slot in self.slots), 0)
        try:
            while todo or any(w.item for w in workers):
                live = {w.slot.label for w in workers}
                for worker in workers:
                    if worker.ready and worker.item is None and (item := pick(todo, worker.slot.label, live)):
                        worker.hand(item)
                if not workers:  # problems left and no worker to run them
                    break
                worker, event = events.get()
                if "ready" in event:
                    worker.ready = True
                elif "result" in event:
                    item, worker.item = worker.item, None
                    assert item is not None
                    yield dataclasses.replace(ProblemResult(**event["result"]), where=worker.slot.label,
                                              tries=len(item.lost_on) + 1)
                else:
                    yield from self._lost(worker, event["gone"], workers, todo, deaths, events, name)
            for item in todo:
                yield lost_result(item.spec, item.lost_on, "no worker was left to run it")
        finally:
            for worker in workers:  # all of them wind down at once, then each is waited for
                worker.let_go()
            for worker in workers:
                worker.stop()

    def _lost(self, worker: _Worker, status: int, workers: list[_Worker], todo: deque[Item],
              deaths: dict[str, int], events: queue.Queue[tuple[_Worker, dict[str, Any]]],
              name: str) -> Iterator[ProblemResult]:
        """A worker has gone: its problem is tried again or reported, and the worker is started again."""
        label = worker.slot.label
        how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        workers.remove(worker)
        if worker.item is not None:
            reported = retry_or_report(worker.item, label, self.retries, todo, self.notify,
                                       f"the worker on {label} died ({how})", f"its worker died ({how}) on every try")
            if reported is not None:
                yield reported
        deaths[label] = 0 if worker.item is not None else deaths[label] + 1  # a problem's kill is no slot's fault
        if deaths[label] < DEATHS_IN_A_ROW:
            workers.append(_Worker(worker.slot, name, events, self.log_dir))
        else:
            self.notify(f"{label}: its worker died {deaths[label]} times in a row before taking a problem; "
                        "no more problems go there"
                        + (f" (see {self.log_dir})" if self.log_dir else ""))
