"""Ray across hosts: each problem a task holding one GPU, on a node that has one free.

The driver places each task itself, pinned to a live node with a GPU free, so it knows where
every try runs: a try that is lost (its worker or its node gone) is run once more on another
node where there is one, then reported as an error, never dropped; a node that lost a try gets
no new problem while another node can take it. Results are gathered as they finish and
`run_suite` writes each as it comes, so a driver that dies is continued with `--resume`:
finished problems are not redone, the ones in flight are.

Each task runs in a fresh worker process (`max_calls=1`) whose CUDA_VISIBLE_DEVICES Ray sets to
its GPU, so baselines and timings are taken on the GPU that judges the kernel, and the device
lock is that GPU's. The problem's and kernel's texts travel with the task: a node that does not
see the driver's folders (no shared filesystem) writes them, and the problem's run folder,
under its own temp dir. The driver's PYTHONPATH, TRITON_*, KERNELOPT_* and OPENAI_* variables
are set on the workers (the last for `--optimize --model`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import socket
import tempfile
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kernelopt.scale.pool import RETRIES, Item, Notify, lost_result, pick, retry_or_report
from kernelopt.scale.worker import import_work, spec_from_json, work_name
from kernelopt.suite import ProblemResult, ProblemSpec, Work

ENV_NAMES, ENV_PREFIXES = ("PYTHONPATH",), ("TRITON_", "KERNELOPT_", "OPENAI_")
POLL_S = 1.0  # how often the nodes are looked at again while tasks run (nodes come and go)
NO_NODE_S = 120.0  # problems wait this long for a node with a GPU, then are reported


def worker_env() -> dict[str, str]:
    """The variables of the driver's environment that the workers get."""
    return {name: value for name, value in os.environ.items() if name in ENV_NAMES or name.startswith(ENV_PREFIXES)}


def _seen(spec: ProblemSpec) -> bool:
    """Whether this node sees the driver's problem file and kernels folder."""
    return Path(spec.problem_path).is_file() and (spec.kernel_path is None or Path(spec.kernel_path).parent.is_dir())


def on_node(spec: ProblemSpec, sources: dict[str, str | None]) -> ProblemSpec:
    """`spec` with its files where this node can read and write them (see the module's docstring)."""
    out = Path(spec.run_dir).parent.parent
    shared = out.is_dir() and os.access(out, os.W_OK)
    if shared and _seen(spec):
        return spec
    local = Path(tempfile.gettempdir()) / "kernelopt-ray" / hashlib.sha256(spec.run_dir.encode()).hexdigest()[:16]
    problem, kernel = local / "problem" / f"{spec.name}.py", local / "kernels" / f"{spec.name}.py"
    problem.parent.mkdir(parents=True, exist_ok=True)
    problem.write_text(sources["problem"] or "")
    if sources["kernel"] is not None:
        kernel.parent.mkdir(parents=True, exist_ok=True)
        kernel.write_text(sources["kernel"])
    return dataclasses.replace(spec, problem_path=str(problem), kernel_path=str(kernel) if spec.kernel_path else None,
                               run_dir=spec.run_dir if shared else str(local / "run"))


def run_on_node(work: str, spec_data: dict[str, Any], sources: dict[str, str | None]) -> dict[str, Any]:
    """A Ray task's body: the problem's result, saying which node and GPU judged it."""
    import ray

    result = import_work(work)(on_node(spec_from_json(spec_data), sources))
    gpus = ",".join(str(g) for g in ray.get_gpu_ids()) or "-"
    node = ray.get_runtime_context().get_node_id()[:8]
    return {**dataclasses.asdict(result), "where": f"{socket.gethostname()} node {node} gpu {gpus}"}


def _text(path: str | None) -> str | None:
    return Path(path).read_text() if path and Path(path).is_file() else None


class RayExecutor:
    """Runs problems as Ray tasks with `num_gpus=1` on the cluster at `address` ("auto", "host:port")."""

    def __init__(self, address: str, notify: Notify | None = None, retries: int = RETRIES) -> None:
        self.address = address
        self.notify = notify or (lambda line: None)
        self.retries = retries

    def _gpu_nodes(self) -> dict[str, tuple[str, int]]:
        """The live nodes with GPUs: label -> (node id, GPUs)."""
        import ray

        return {f"{n['NodeManagerAddress']} node {n['NodeID'][:8]}": (n["NodeID"], int(n["Resources"].get("GPU", 0)))
                for n in ray.nodes() if n["Alive"] and n["Resources"].get("GPU", 0) >= 1}

    def run(self, work: Work, specs: Sequence[ProblemSpec]) -> Iterator[ProblemResult]:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray.init(address=self.address, runtime_env={"env_vars": worker_env()}, logging_level=logging.WARNING,
                 log_to_driver=False)
        task = ray.remote(num_gpus=1, max_retries=0, max_calls=1)(run_on_node)
        name, todo = work_name(work), deque(Item(spec) for spec in specs)
        running: dict[Any, tuple[Item, str]] = {}
        busy: Counter[str] = Counter()
        suspect: set[str] = set()  # nodes that lost a try
        waiting_since = time.monotonic()
        try:
            while todo or running:
                nodes = self._gpu_nodes()
                trusted = set(nodes) - suspect
                for label, (node_id, gpus) in nodes.items():
                    while (busy[label] < gpus and (label in trusted or not trusted)
                           and (item := pick(todo, label, set(nodes)))):
                        strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
                        sources = {"problem": _text(item.spec.problem_path), "kernel": _text(item.spec.kernel_path)}
                        ref = task.options(scheduling_strategy=strategy).remote(
                            name, dataclasses.asdict(item.spec), sources)
                        running[ref], busy[label] = (item, label), busy[label] + 1
                if not running:
                    if time.monotonic() - waiting_since > NO_NODE_S:
                        break
                    time.sleep(POLL_S)
                    continue
                waiting_since = time.monotonic()
                ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    item, label = running.pop(ref)
                    busy[label] -= 1
                    try:
                        data = ray.get(ref)
                    except ray.exceptions.RayError as err:
                        suspect.add(label)
                        yield from self._lost(item, label, err, todo)
                    else:
                        yield dataclasses.replace(ProblemResult(**data), tries=len(item.lost_on) + 1)
            for item in todo:
                yield lost_result(item.spec, item.lost_on, f"no Ray node with a free GPU for {NO_NODE_S:.0f} s")
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
            ray.shutdown()

    def _lost(self, item: Item, label: str, err: Exception, todo: deque[Item]) -> Iterator[ProblemResult]:
        why = " ".join(str(err).split())[:200]
        reported = retry_or_report(item, label, self.retries, todo, self.notify,
                                   f"its task on {label} was lost ({type(err).__name__})",
                                   f"its task was lost on every try: {type(err).__name__}: {why}")
        if reported is not None:
            yield reported
