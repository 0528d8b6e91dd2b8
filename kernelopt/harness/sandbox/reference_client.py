"""The verifier's side of the reference process: start it once per problem, ask it for verdicts.

A reference process holds a problem's expected outputs on the GPU, so only a few are kept
alive at once (the most recently used); a dropped one is started again when next needed.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from kernelopt.harness.sandbox import transfer
from kernelopt.harness.sandbox.runner import Child, WorkerLimits, start_job, watch
from kernelopt.records import HarnessError, InputError

KEPT_ALIVE = 2


class ReferenceGone(RuntimeError):
    """The reference process of a problem is no longer there to answer (killed, out of memory)."""


class ReferenceProcess:
    """A running reference process and the control connection that keeps it alive."""

    def __init__(self, request: dict[str, Any], work_dir: Path, limits: WorkerLimits) -> None:
        self.address = f"kernelopt-{secrets.token_hex(16)}"
        secret = secrets.token_hex(16)
        unrunnable = _probe_derived_cases(request, work_dir / "probe", limits) if limits.use_cuda else {}
        self._child: Child = start_job(
            "reference",
            {**request, "address": self.address, "control_secret": secret, "unrunnable": unrunnable},
            work_dir,
            limits,
        )
        self._lock = threading.Lock()
        self._sock = self._connect(work_dir, limits)
        reply = transfer.request(self._sock, {"op": "control", "secret": secret})
        self.cases: list[dict[str, Any]] = reply["cases"]
        self.dropped: list[str] = reply.get("dropped", [])
        self.skipped: list[str] = reply.get("skipped", [])
        self.input_bytes: int = int(reply.get("input_bytes", 0))
        self.output_bytes: int = int(reply.get("output_bytes", 0))
        self.state_bytes: int = int(reply.get("state_bytes", 0))  # the model's parameters and buffers
        self.free_bytes: int | None = reply.get("free_bytes")  # the device's, with the reference built
        self.own_scale: list[str] = reply.get("own_scale", [])  # judged on their outputs' own scale
        self.uninformative: list[str] = reply.get("uninformative", [])  # expected outputs all zero
        self.log_path = str(work_dir / "worker.log")

    def _connect(self, work_dir: Path, limits: WorkerLimits) -> socket.socket:
        """Connect once the expected outputs are computed (it listens only then), or say why it died."""
        deadline = time.monotonic() + limits.phases.import_s + limits.phases.case_s * 4
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect("\0" + self.address)
                return sock
            except (ConnectionRefusedError, FileNotFoundError):
                sock.close()
            if self._child.wait(0.05) is not None or self._child.ended.is_set():
                outcome = watch(self._child, work_dir, limits)
                why = outcome.failure or (outcome.result or {}).get("reason", "unknown error")
                raise InputError(f"the reference problem does not run: {why} (log: {outcome.log_path})")
            if time.monotonic() > deadline:
                self._child.kill()
                raise InputError(f"the reference problem does not run: no answer in {deadline:.0f} s")

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            try:
                answer = transfer.request(self._sock, message)
            except (OSError, EOFError) as err:
                raise ReferenceGone(f"the reference process is gone ({err}); see {self.log_path}") from None
        if "harness_error" in answer:
            raise HarnessError(
                f"kernelopt's reference process failed on {message.get('op')!r} (its own error, not the kernel's): "
                f"{answer['harness_error']}; the traceback is in {self.log_path}"
            )
        return answer

    @property
    def alive(self) -> bool:
        return not self._child.ended.is_set()

    def close(self) -> None:
        """Stop it, and return once it is gone: the next problem's reference must not start beside its memory."""
        self._sock.close()  # it exits when its control connection closes
        if self._child.wait(EXIT_S) is None:
            self._child.kill()
            self._child.wait(KILLED_S)


# How long a reference process may take to exit once its connection closes, before it is killed; then how long its kill
# may take to end it. A reference holds a problem's inputs, outputs and yardsticks on the GPU (tens of GB); one killed
# and left dying while the next started may be what left the next one too little on the H100 (a 3-D pool's reference
# ran out of memory beside a 60.6 GB process, RESULTS (bg)).
EXIT_S, KILLED_S = 5.0, 30.0


PROBES = 7  # at most this many resizes fail on one problem (two derived cases, up to three resizes each)


def _probe_derived_cases(request: dict[str, Any], work_dir: Path, limits: WorkerLimits) -> dict[str, str]:
    """The derived cases the problem cannot run, found in throwaway processes (see reference.probe)."""
    unrunnable: dict[str, str] = {}
    for _ in range(PROBES):
        outcome = watch(start_job("probe", {**request, "unrunnable": unrunnable}, work_dir, limits), work_dir, limits)
        if outcome.result is None:  # the probe itself died: the problem's own cases will say why
            break
        unrunnable.update(outcome.result["unrunnable"])
        if outcome.result["done"]:
            break
    return unrunnable


_KEPT: OrderedDict[tuple[str, ...], ReferenceProcess] = OrderedDict()
_KEPT_LOCK = threading.Lock()


def reference_for(
    key: tuple[str, ...], request: dict[str, Any], work_dir: Path, limits: WorkerLimits
) -> ReferenceProcess:
    """The running reference process for `key`, started when there is none (the oldest kept
    one closed past KEPT_ALIVE)."""
    with _KEPT_LOCK:
        process = _KEPT.pop(key, None)
        if process is not None and not process.alive:
            process = None
        if process is None:
            process = ReferenceProcess(request, work_dir, limits)
        _KEPT[key] = process
        while len(_KEPT) > KEPT_ALIVE:
            _KEPT.popitem(last=False)[1].close()
        return process


def close_references_under(folder: str | Path) -> None:
    """Stop every kept reference process whose harness folder lies under `folder` (a run's directory).
    A run that fails never reaches the report that closes them, and each holds a problem's yardsticks on the GPU:
    the next problem's would meet them there (on an 80 GB H100, KernelBench 34's 21.6 GB left 35's reference too
    little to judge)."""
    root = Path(folder).resolve()
    with _KEPT_LOCK:
        under = [key for key in _KEPT if Path(key[1]).resolve().is_relative_to(root)]
        processes = [_KEPT.pop(key) for key in under]
    failed = []
    for process in processes:  # each on its own: one that cannot be stopped leaves the others to stop
        try:
            process.close()
        except OSError as err:
            failed.append(err)
    if failed:
        raise failed[0]


def close_reference(key: tuple[str, ...]) -> None:
    """Stop the reference process kept for `key`, if one runs: its outputs leave the device now."""
    with _KEPT_LOCK:
        process = _KEPT.pop(key, None)
    if process is not None:
        process.close()
