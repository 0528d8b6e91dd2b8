"""The compiler seed's process (`python -m kernelopt.seed PROBLEM OUT [--wait]`), seen from the run.

It runs in a session (process group) of its own, so that stopping it stops what it started: the
compiler's worker processes, which it leaves behind when it ends with `os._exit`. Its output goes
to files, not pipes: a worker that inherited a pipe and lives on would keep the run waiting for an
end of file after the seed itself was done. The run waits for the process itself, without reaping
it, then stops its group (whose id cannot be another's while the exited leader is not reaped), then
reaps it. Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from kernelopt.harness import scrubbed_env
from kernelopt.seed.errors import GO, WHAT_TO_DO, SeedError

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
_POLL_S = 0.02


class SeedChild:
    """One seed process. With `wait`, it loads torch and the compiler, then waits for GO on its stdin."""

    module = "kernelopt.seed"  # what it runs (`python -m`)

    def __init__(self, problem: Path, out: Path, gpu: str | None, wait: bool = False) -> None:
        extra = {"PYTHONPATH": os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)}
        if gpu is not None:
            extra["CUDA_VISIBLE_DEVICES"] = gpu
        env = scrubbed_env(extra=extra)
        env.pop("TRITON_INTERPRET", None)  # the compiler must build its kernels for the GPU, not emulate them
        self._out, self._err = tempfile.TemporaryFile(mode="w+"), tempfile.TemporaryFile(mode="w+")
        self.began = time.time()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", self.module, str(problem), str(out), *(["--wait"] if wait else [])],
                stdin=subprocess.PIPE if wait else subprocess.DEVNULL,
                stdout=self._out,
                stderr=self._err,
                text=True,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            self._out.close()
            self._err.close()
            raise

    def finish(self, timeout_s: float) -> dict[str, object]:
        """The facts the process reports (a waiting one is told GO first), within `timeout_s` of now."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):  # it has already ended: what it said is read below
                self.process.stdin.write(GO + "\n")
                self.process.stdin.close()
        if not self._exited(timeout_s):
            self.stop()
            raise SeedError(f"making the compiler seed took over {timeout_s:.0f} s and was stopped; {WHAT_TO_DO}")
        ended = time.time()
        self.stop()  # the workers it left go with it
        stdout, stderr = self._read(self._out), self._read(self._err)
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        if not lines:
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            raise SeedError(
                f"the compiler seed's process failed (exit {self.process.returncode}): {last[:300]}; {WHAT_TO_DO}"
            )
        facts = dict(json.loads(lines[-1]))
        # the process's start (Python, kernelopt's imports) before its stages, and its exit (the seed
        # file written, its report printed) after its report; the stages themselves are its own
        began_at, reported_at = facts.pop("began_at", None), facts.pop("reported_at", None)
        stages = dict(facts.get("stages_s") or {})
        if isinstance(began_at, float) and isinstance(reported_at, float):
            stages = {"start": round(began_at - self.began, 2), **stages, "exit": round(ended - reported_at, 2)}
        facts["stages_s"] = stages
        return facts

    def stop(self) -> None:
        """Stop the process's group (the process, if it still runs, and whatever it left) and reap it;
        again, nothing."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):  # a process stuck in the driver is let go
                self.process.wait(timeout=30)
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(OSError):
                self.process.stdin.close()

    def close(self) -> None:
        """`stop`, and its output thrown away."""
        self.stop()
        self._out.close()
        self._err.close()

    def _exited(self, timeout_s: float) -> bool:
        """Whether the process ended within `timeout_s`; it is left unreaped, so its group id stays its own."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
            except ChildProcessError:  # reaped by someone else: its pid may be another's now, so no kill
                self.process.wait()
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(_POLL_S)

    @staticmethod
    def _read(file: IO[str]) -> str:
        """What the process wrote to `file`, which is closed."""
        with file:
            file.seek(0)
            return file.read()
