"""Running Nsight Compute: finding ncu, a profile cache keyed by source hash, and a runner that never raises."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from kernelopt.hardware.ncu import (
    DEFAULT_METRICS,
    GPU_TIME,
    KernelMetrics,
    NcuProfile,
    aggregate_kernels,
    parse_ncu_csv,
)


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(kept[-lines:]) or "(no output)"


def _fallback_ncu_paths() -> list[Path]:
    # Nsight Compute ships inside the CUDA toolkit, which often is not on PATH.
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [Path(root) / "bin" / "ncu" for root in roots if root]


def find_ncu(env: Mapping[str, str] | None = None) -> str | None:
    """The path of the `ncu` executable on PATH (or in the CUDA toolkit), or None."""
    path = (env or os.environ).get("PATH", os.environ.get("PATH", ""))
    found = shutil.which("ncu", path=path)
    if found:
        return found
    for candidate in _fallback_ncu_paths():
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def ncu_unavailable_reason() -> str | None:
    """Why ncu cannot profile here (no CUDA device, no ncu), or None when it can."""
    try:
        from kernelopt.hardware.gpus import cuda_available  # torch loads only where a driver is present

        if not cuda_available():
            return "no CUDA device is visible, so there is no NCU profile (the roofline uses the floor alone)"
    except ImportError:
        return "torch is not installed, so no CUDA device can be checked"
    if find_ncu() is None:
        return "ncu (Nsight Compute) is not on PATH; install Nsight Compute or add its bin/ to PATH"
    return None


def ncu_cache_key(kernel_source: str, *, gpu_name: str, metrics: Sequence[str], extra: str = "") -> str:
    """A cache key covering what changes a profile: the code, the GPU, the metrics, the inputs."""
    digest = hashlib.sha256()
    for part in (kernel_source, gpu_name, ",".join(metrics), extra):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


class NcuCache:
    """Profiles stored as JSON by key, so the same kernel is never profiled twice."""

    def __init__(self, cache_dir: str | os.PathLike[str]) -> None:
        self.cache_dir = Path(cache_dir)

    def _path(self, key: str) -> Path:
        return self.cache_dir / f"{key}.json"

    def get(self, key: str) -> NcuProfile | None:
        """The stored profile for key, or None when absent or unreadable."""
        try:
            data = json.loads(self._path(key).read_text())
            kernels = tuple(KernelMetrics(**k) for k in data.pop("kernels"))
            return NcuProfile(kernels=kernels, **data)
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, profile: NcuProfile) -> None:
        """Store profile under key; written whole, then renamed, so readers never see half."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._path(key).with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(profile)))
        os.replace(tmp, self._path(key))


_PERMISSION_HINT = (
    "no permission to read GPU counters (ERR_NVGPUCTRPERM); run as root or load the driver "
    "with NVreg_RestrictProfilingToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


def run_ncu(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout_s: float = 600.0,
    workdir: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    kernel_regex: str | None = None,
    ncu_path: str | None = None,
    report_path: str | None = None,
    cache: NcuCache | None = None,
    cache_key: str | None = None,
) -> NcuProfile:
    """Profile every kernel the program launches between cudaProfilerStart and Stop.

    Never raises: a failure comes back as ok=False with a one-line reason. The raw CSV is
    kept at report_path (default: <workdir>/ncu_raw.csv). A successful profile is stored in
    `cache` under `cache_key` and served from there next time.
    """
    if cache is not None and cache_key is not None:
        hit = cache.get(cache_key)
        if hit is not None:
            return hit
    started = start_ncu(argv, env=env, workdir=workdir, metrics=metrics, kernel_regex=kernel_regex,
                        ncu_path=ncu_path)
    if isinstance(started, NcuProfile):
        return started
    return finish_ncu(started, argv, timeout_s=timeout_s, workdir=workdir, metrics=metrics,
                      kernel_regex=kernel_regex, report_path=report_path, cache=cache, cache_key=cache_key)


def start_ncu(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    workdir: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    kernel_regex: str | None = None,
    ncu_path: str | None = None,
) -> subprocess.Popen[str] | NcuProfile:
    """The program started under ncu (its output to be read by `finish_ncu`), or why it could not start."""
    ncu = shutil.which(ncu_path) if ncu_path else find_ncu(env)
    if ncu is None:
        return NcuProfile.failed(
            f"ncu (Nsight Compute) not found{f' at {ncu_path}' if ncu_path else ' on PATH'}; "
            "install Nsight Compute or put its bin/ directory on PATH"
        )
    # --profile-from-start off: the program brackets exactly one forward call with
    # cudaProfilerStart/Stop after warm-up, so autotuning and warm-up launches stay out.
    command = [
        ncu,
        "--csv",
        "--page",
        "raw",
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",
        "--metrics",
        ",".join(metrics),
    ]
    if kernel_regex:
        command += ["--kernel-name", f"regex:{kernel_regex}"]
    command += list(argv)
    try:
        # A new session lets a timeout kill ncu and the program it launched together.
        return subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        return NcuProfile.failed(f"could not start ncu ({ncu}): {exc}")


def stop_ncu(proc: subprocess.Popen[str]) -> None:
    """Kill ncu and the program it launched (its session), and reap it."""
    try:  # the whole session: ncu may be gone while the program it launched is not
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a process outside the group holds its pipes: leave them
        pass


def finish_ncu(
    proc: subprocess.Popen[str],
    argv: Sequence[str],
    *,
    timeout_s: float = 600.0,
    workdir: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    kernel_regex: str | None = None,
    report_path: str | None = None,
    cache: NcuCache | None = None,
    cache_key: str | None = None,
) -> NcuProfile:
    """Wait (at most `timeout_s`) for a program started by `start_ncu` and read its profile; never raises."""
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_ncu(proc)
        return NcuProfile.failed(f"ncu timed out after {timeout_s:g} s profiling {' '.join(argv)}")

    saved = report_path or str(Path(workdir) / "ncu_raw.csv")
    try:
        Path(saved).write_text(stdout)
    except OSError:
        saved = None
    if "ERR_NVGPUCTRPERM" in stdout or "ERR_NVGPUCTRPERM" in stderr:
        return NcuProfile.failed(_PERMISSION_HINT, saved)
    # `--page raw` adds device attributes and launch settings to what was asked for; keep only
    # the requested metrics so the state and the prompts stay small.
    wanted = {*metrics, GPU_TIME}
    kernels = tuple(
        replace(
            k,
            metrics={m: v for m, v in k.metrics.items() if m in wanted},
            units={m: u for m, u in k.units.items() if m in wanted},
        )
        for k in parse_ncu_csv(stdout)
    )
    if proc.returncode != 0:
        return NcuProfile.failed(
            f"ncu or the profiled program exited with code {proc.returncode}: {_tail(stderr or stdout)}", saved
        )
    if not kernels:
        regex_note = f" and match regex {kernel_regex!r}" if kernel_regex else ""
        return NcuProfile.failed(
            "ncu captured no kernels; the program must launch them between "
            f"torch.cuda.profiler.start() and stop(){regex_note}",
            saved,
        )
    profile = NcuProfile(
        ok=True,
        kernels=kernels,
        metrics=aggregate_kernels(kernels),
        total_time_ns=sum(k.time_ns for k in kernels),
        error=None,
        report_path=saved,
    )
    if cache is not None and cache_key is not None:
        cache.put(cache_key, profile)
    return profile
