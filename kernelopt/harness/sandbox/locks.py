"""The device lock: measurements on one device never overlap, and nothing runs beside them.

One lock file per device, shared by every process on the machine (parallel candidates, several
runs). A GPU's lock is named by the physical GPU, not by what this process calls it: a harness
started with CUDA_VISIBLE_DEVICES=1 (a pool worker, a Ray task) sees that GPU as cuda:0, and its
lock must be the one `kernelopt` on GPU 1 takes, not GPU 0's.

Checking a candidate takes it shared: several candidates may be checked at once. Timing, NCU
profiles and ceiling measurements take it exclusive: they wait for the checks to finish, and no
check starts while they run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from kernelopt.hardware.gpus import device_key


def lock_path(device: str, visible: str | None = None) -> str:
    """The lock file of the physical device behind `device` (see `device_key`; `visible`: the
    CUDA_VISIBLE_DEVICES of the process that uses it, default this one's), under the user's cache dir."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "kernelopt" / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / f"{device_key(device, visible)}.lock")


class DeviceLock:
    """flock on the device's lock file, opened once (before a sandbox forbids opening it)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)

    @contextlib.contextmanager
    def _held(self, mode: int) -> Iterator[None]:
        fcntl.flock(self._fd, mode)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def shared(self) -> contextlib.AbstractContextManager[None]:
        return self._held(fcntl.LOCK_SH)

    def exclusive(self) -> contextlib.AbstractContextManager[None]:
        return self._held(fcntl.LOCK_EX)

    def close(self) -> None:
        os.close(self._fd)


@contextlib.contextmanager
def device_lock(device: str, path: str | None = None) -> Iterator[None]:
    """Hold `device` exclusively for one measurement (a profile, the ceilings); `path`: its lock
    file as the verifier named it (a child process names it the same way, whatever it can see)."""
    lock = DeviceLock(path or lock_path(device))
    try:
        with lock.exclusive():
            yield
    finally:
        lock.close()
