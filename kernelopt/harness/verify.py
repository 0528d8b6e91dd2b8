"""The verifier: static checks, a sandboxed run on private seeds, comparison, timing, floor check."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelopt.hardware import ncu, ncu_runner
from kernelopt.hardware.gpus import cuda_available
from kernelopt.harness import guards
from kernelopt.harness.measure.impossible import impossible_speed
from kernelopt.harness.measure.timing import TimingConfig
from kernelopt.harness.problem import check_kernel_source, read_source
from kernelopt.harness.rule_table import known_rule
from kernelopt.harness.sandbox import precision, warm_profile
from kernelopt.harness.sandbox.audit import host_memory_cap
from kernelopt.harness.sandbox.exits import failure_of
from kernelopt.harness.sandbox.locks import device_lock, lock_path
from kernelopt.harness.sandbox.runner import (
    PhaseLimits,
    Progress,
    WorkerLimits,
    WorkerOutcome,
    run_job,
    worker_env,
)
from kernelopt.harness.sandbox.sweep_client import TIMING_GRACE_S, run_sweep
from kernelopt.records import Baselines, HarnessError, InputError, Measured, Timing, Verdict, config_text

if TYPE_CHECKING:
    from kernelopt.harness.sandbox.reference_client import ReferenceProcess

# How long a sweep times on past its deadline (Verifier.sweep): the offline optimizer's reserve allows for it
SWEEP_TIMING_GRACE_S = TIMING_GRACE_S


@dataclass(frozen=True)
class HarnessSettings:
    """How candidates are run and judged."""

    use_cuda: bool = False
    seeds: int = 3
    repeats: int = 3  # runs per test case on the same inputs (races show as a wrong run)
    timeout_s: float | None = None  # one limit for every phase; None: limits that follow the reference's time
    mem_limit_gb: float = 16.0
    timing: TimingConfig = field(default_factory=TimingConfig)
    time_compile: bool = True
    max_autotune: bool = False  # also time torch.compile(mode="max-autotune"), in a job of its own
    max_autotune_limit_s: float = 600.0  # its compile's limit; past it the baseline is marked and skipped
    compile_cache_dir: str | None = None  # Inductor's caches (None: the user's cache folder; see compile_cache_for)
    sweep_check_processes: int | None = None  # None: chosen by sweep_client.check_processes
    # The one GPU this harness's processes see, as CUDA_VISIBLE_DEVICES names it (a GPU of a
    # candidate spread: nodes/spread.py); None: this process's own (its cuda:0).
    gpu: str | None = None

    @staticmethod
    def detect(**overrides: Any) -> HarnessSettings:
        """Settings for this machine: on a GPU when there is one, else Triton's interpreter.

        The interpreter runs a kernel's programs one after another, so repeat runs cannot show
        a race there and only cost time: one run per case.
        """
        use_cuda = cuda_available()
        overrides.setdefault("repeats", 3 if use_cuda else 1)
        return HarnessSettings(use_cuda=use_cuda, **overrides)

    @property
    def device(self) -> str:
        return "cuda" if self.use_cuda else "cpu"

    def limits(self, phases: PhaseLimits | None = None) -> WorkerLimits:
        if self.timeout_s is not None:
            phases = PhaseLimits.uniform(self.timeout_s)
        mem_limit_bytes = host_memory_cap(int(self.mem_limit_gb * 2**30), say=True)
        return WorkerLimits(phases or PhaseLimits(), mem_limit_bytes, self.use_cuda, not self.use_cuda,
                            self.gpu if self.use_cuda else None)

    @property
    def where(self) -> str:
        """The GPU as said in a verdict ("gpu 1"); "" for this process's own."""
        return f"gpu {self.gpu}" if self.use_cuda and self.gpu is not None else ""

    def candidate_phases(self, cases: list[dict[str, Any]]) -> PhaseLimits:
        """Limits that follow the work: a floor of a few seconds plus a generous multiple of the
        reference's own time per call (Triton's interpreter is thousands of times slower than
        PyTorch on the CPU; a GPU kernel ten times slower than eager stays far inside)."""
        call_s = max((c.get("ref_ms", 0.0) for c in cases), default=0.0) / 1e3
        floor_s, factor = (CUDA_FLOOR_S, CUDA_CALL_FACTOR) if self.use_cuda else (HOST_FLOOR_S, HOST_CALL_FACTOR)
        case_s = floor_s + factor * call_s * max(self.repeats, 1)
        timing_s = 2 * floor_s + factor * call_s * 20 + 3 * self.timing.target_total_ms / 1e3
        return PhaseLimits(import_s=IMPORT_S, compile_s=COMPILE_S, case_s=case_s, timing_s=timing_s)


def _correct_reason(
    ran: int, reference: Any, not_run: list[str] | tuple[str, ...] = (), outliers: list[str] | tuple[str, ...] = ()
) -> str | None:
    """The first words of an accepted verdict: how many cases proved it, out of how many the
    verifier plans; the cases dropped, not run, judged on their own scale or passed on a wide case's
    share of outliers, by name. None when no case could have failed a kernel that writes zeros."""
    counted = ran - len(reference.uninformative)
    if counted <= 0:
        return None
    planned = ran + len(reference.dropped) + len(reference.skipped) + len(not_run)
    reason = f"correct on {counted} cases" if counted == planned else f"correct on {counted} of {planned} cases"
    notes = []
    if reference.uninformative:
        notes.append(f"not counted, its expected outputs all zero: {'; '.join(reference.uninformative)}")
    if reference.own_scale:
        notes.append(
            "judged on the outputs' own scale, every expected value being within the tolerance of zero: "
            + "; ".join(reference.own_scale)
        )
    if reference.dropped:
        notes.append(f"cases the reference itself cannot run, dropped: {'; '.join(reference.dropped)}")
    if reference.skipped:
        notes.append(f"not run: {'; '.join(reference.skipped)}")
    if not_run:
        notes.append(f"not run for this kernel: {'; '.join(not_run)}")
    if outliers:
        notes.append(f"a few elements past the allowance where inputs are wide: {'; '.join(outliers)}")
    return reason + "".join(f" ({note})" for note in notes)


# The derived limits (see HarnessSettings.candidate_phases): a hung kernel on a problem whose
# reference takes milliseconds is judged within 30 s; an honest slow one is never cut off.
IMPORT_S = 20.0
COMPILE_S = 120.0  # each Triton compile (or autotuning compile), on top of its phase's limit
CUDA_FLOOR_S, CUDA_CALL_FACTOR = 8.0, 200.0
HOST_FLOOR_S, HOST_CALL_FACTOR = 15.0, 2000.0
REFERENCE_LIMIT_S = 600.0
PROFILE_LIMIT_S = 300.0


class Verifier:
    """Verifies kernels for one problem; its private seeds live in `work_root`, its expected
    outputs in a reference process (see `reference.py`)."""

    def __init__(self, problem_path: str | Path, work_root: str | Path, settings: HarnessSettings) -> None:
        self.problem_path = Path(problem_path).resolve()
        self.root = Path(work_root).resolve()
        self.settings = settings
        self._private = self.root / "private"
        self._private.mkdir(parents=True, exist_ok=True)
        seeds_file = self._private / "seeds.json"
        if seeds_file.exists():
            seeds = json.loads(seeds_file.read_text())
        else:
            seeds = {
                "init": secrets.randbelow(2**31),
                "inputs": [secrets.randbelow(2**31) for _ in range(settings.seeds)],
            }
            seeds_file.write_text(json.dumps(seeds))
        self._init_seed: int = seeds["init"]
        self._seeds: list[int] = seeds["inputs"]
        self.lock_path = lock_path(settings.device, settings.gpu if settings.use_cuda else None)  # named once
        # a harness on another GPU keeps its reference and candidates' folders apart from this one's
        self._tag = f"-gpu{settings.gpu}" if settings.use_cuda and settings.gpu is not None else ""

    def request(self, mode: str, **extra: Any) -> dict[str, Any]:
        return {
            "mode": mode,
            "problem_path": str(self.problem_path),
            "device": self.settings.device,
            "init_seed": self._init_seed,
            "seeds": self._seeds,
            "timing": self.settings.timing.__dict__,
            "lock_path": self.lock_path,
            **extra,
        }

    def profile_request(self, kernel_path: str | Path, work_dir: str | Path) -> dict[str, Any]:
        """A profile job's request: inputs from a seed of its own, never one of the private ones."""
        request = self.request("profile", kernel_path=str(Path(kernel_path).resolve()), work_dir=str(work_dir))
        return {**request, "seeds": [secrets.randbelow(2**31)], "secret_dirs": [str(self._private)]}

    def profile(
        self,
        kernel_path: str | Path,
        work_dir: str | Path,
        *,
        metrics: Sequence[str] | None = None,
        cache: ncu_runner.NcuCache | None = None,
        cache_key: str | None = None,
    ) -> ncu_runner.NcuProfile:
        """NCU's metrics for one forward call of the kernel, in a sandboxed process started under
        ncu, holding the device lock (replays must not share the GPU). Never raises."""
        if cache is not None and cache_key is not None and (hit := cache.get(cache_key)) is not None:
            return hit
        metrics = tuple(metrics or ncu.DEFAULT_METRICS)
        work = Path(work_dir).resolve()
        work.mkdir(parents=True, exist_ok=True)
        (work / "result.json").unlink(missing_ok=True)
        request = self.profile_request(kernel_path, work)
        limit_s = self.settings.timeout_s or PROFILE_LIMIT_S
        with device_lock(self.settings.device, self.lock_path):
            profile = warm_profile.profile(self._key, request, work, metrics, limit_s)
            if profile is None:  # none waiting, or its job never began: started cold
                request_path = work / "request.json"
                request_path.write_text(json.dumps(request))
                profile = ncu_runner.run_ncu(
                    [sys.executable, "-m", "kernelopt.harness.sandbox.worker", str(request_path)],
                    env=worker_env(self.settings.use_cuda, self.settings.gpu), timeout_s=limit_s, workdir=str(work),
                    metrics=metrics,
                )
        if warm_profile.asked(self._key):  # the next profile's process waits while the next round verifies
            self.prepare_profile(metrics)
        result_path = work / "result.json"
        result = json.loads(result_path.read_text()) if result_path.exists() else None
        if result is not None and not result.get("ok"):  # the program ran, but the kernel failed in it
            return ncu_runner.NcuProfile.failed(f"the profiled run failed: {result.get('reason')}", profile.report_path)
        if profile.ok and cache is not None and cache_key is not None:
            cache.put(cache_key, profile)
        return profile

    def prepare_profile(self, metrics: Sequence[str] | None = None) -> bool:
        """Start the next profile's process now (ncu, Python and torch loading: seconds), to wait
        for its request; each profile then leaves the next one waiting, until `close`. Whether
        one started (not without ncu)."""
        folder = self.root / f"profile-ahead{self._tag}"
        return warm_profile.start(self._key, self.lock_path, folder, tuple(metrics or ncu.DEFAULT_METRICS),
                                  worker_env(self.settings.use_cuda, self.settings.gpu))

    def reference(self) -> ReferenceProcess:
        """The running reference process of this problem (started, and its outputs computed, once)."""
        from kernelopt.harness.sandbox.reference_client import reference_for  # torch, in the parent only when verifying

        limits = self.settings.limits(PhaseLimits.uniform(REFERENCE_LIMIT_S))
        return reference_for(self._key, self.request("reference"), self.root / f"reference{self._tag}", limits)

    @property
    def _key(self) -> tuple[str, ...]:
        return (str(self.problem_path), str(self.root), self.settings.device, repr(self.settings))

    def close(self) -> None:
        """Stop this problem's reference process (a run has ended); the next verification starts one."""
        from kernelopt.harness.sandbox.reference_client import close_reference

        close_reference(self._key)
        warm_profile.stop(self._key)

    @property
    def cases(self) -> list[dict[str, Any]]:
        return self.reference().cases

    def baselines(self) -> Baselines:
        """Eager, torch.compile (default; max-autotune when asked) and, for a short problem, a
        CUDA-graph replay of eager, timed with the candidates' protocol; the floor (baselines.py)."""
        from kernelopt.harness.sandbox.baseline_client import time_baselines

        return time_baselines(self)

    def job_dir(self, name: str) -> Path:
        """The folder of one of this harness's own jobs (kept apart from another GPU's harness)."""
        return self.root / f"{name}{self._tag}"

    def run_candidate(
        self,
        kernel: Path,
        *,
        time: bool = True,
        on_progress: Progress | None = None,
        limits: WorkerLimits | None = None,
        timed: Sequence[str] = (),
    ) -> tuple[WorkerOutcome, dict[str, Any]]:
        """Run the candidate in a fresh sandboxed process: its own outcome, and the reference
        process's verdict on the outputs it sent (no static checks: see `verify`). A timed
        candidate's compiled code is fingerprinted; one that matches `timed` is not timed."""
        from kernelopt.harness.sandbox.reference_client import ReferenceGone

        token = secrets.token_hex(16)
        try:
            reference = self.reference()
            reference.request({"op": "expect", "token": token})
        except ReferenceGone:  # it died since the last candidate (killed, out of memory): start it again
            from kernelopt.harness.sandbox.reference_client import close_reference

            close_reference(self._key)  # only the reference: a profile started ahead stays
            reference = self.reference()
            reference.request({"op": "expect", "token": token})
        request = self.request(
            "candidate",
            kernel_path=str(kernel),
            time=time,
            cases=reference.cases,
            repeats=self.settings.repeats,
            secret_dirs=[str(self._private)],
            reference=reference.address,
            token=token,
            **({"timed_fingerprints": list(timed)} if time else {}),
        )
        limits = limits or self.settings.limits(self.settings.candidate_phases(reference.cases))
        progress = self._private / f"progress-{token}"  # where the candidate cannot write a phase of its own
        try:
            work = self.root / "candidates" / f"{kernel.stem}{self._tag}"
            outcome = run_job("candidate", request, work, limits, on_progress, progress)
        finally:
            progress.unlink(missing_ok=True)
        return outcome, reference.request({"op": "verdict", "token": token})

    def sweep(
        self, variants: Sequence[Path], work_dir: Path, on_progress: Progress | None = None,
        deadline: float | None = None,
    ) -> list[Measured]:
        """Check and time many configurations of one kernel (see sandbox/sweep_client.py): a ranking, not a verdict.
        Past `deadline` (time.time()) no further configuration is checked."""
        return run_sweep(self, variants, work_dir, self._private, on_progress, deadline)

    def verify(
        self,
        kernel_path: str | Path,
        *,
        time: bool = True,
        floor_ms: float | None = None,
        on_progress: Progress | None = None,
        timed: Mapping[str, str] | None = None,
    ) -> Verdict:
        """Check `kernel_path` against the reference; time it when correct and `time` is set.

        `on_progress(phase, seconds)` is called about every 50 ms while the candidate runs.
        `timed`: the fingerprints of kernels already timed this run, each with the kernel's name;
        a correct candidate that compiles to one of them is not timed again (its verdict's
        `duplicate_of`). The verdict's rule is always an id of rule_table.RULES.
        """
        verdict = self._verify(kernel_path, time=time, floor_ms=floor_ms, on_progress=on_progress,
                               timed=timed or {})
        known_rule(verdict.rule)
        return verdict

    def _verify(
        self,
        kernel_path: str | Path,
        *,
        time: bool = True,
        floor_ms: float | None = None,
        on_progress: Progress | None = None,
        timed: Mapping[str, str],
    ) -> Verdict:
        kernel = Path(kernel_path).resolve()
        try:
            source = read_source(kernel, "kernel")
            check_kernel_source(source, kernel.name)
        except InputError as err:
            return Verdict(accepted=False, reason=str(err), rule="bad-input")
        violation = guards.first_violation(source, kernel.name)
        if violation:
            return Verdict(accepted=False, reason=violation[1], rule=violation[0])
        outcome, judged = self.run_candidate(kernel, time=time, on_progress=on_progress, timed=list(timed))
        result, log = outcome.result, outcome.log_path
        if result is None:
            hung = (outcome.failure or "").startswith("timed out")
            why = failure_of("the candidate", outcome.failure or "ended without a result")
            return Verdict(accepted=False, reason=why, rule="timeout" if hung else "crash", log_path=log)
        if result.get("harness_error"):
            raise HarnessError(
                f"kernelopt failed while verifying {kernel.name} (its own error, not the kernel's): "
                f"{result['reason']}; the traceback is in {log}"
            )
        if not result.get("ok"):
            return Verdict(accepted=False, reason=result["reason"], rule=result.get("rule"), log_path=log)
        # the precision first: a one-TF32 product's error, measured, says more than the tolerance it also fails
        products, error_ratio = precision.Products(**(result.get("precision") or {})), judged.get("fp32_error_ratio")
        refused = precision.refusal(products, error_ratio)
        if refused:
            return Verdict(accepted=False, reason=refused, rule=precision.RULE, log_path=log)
        if judged.get("rule"):
            return Verdict(accepted=False, reason=judged["reason"], rule=judged["rule"], log_path=log)
        timing = Timing(**result["timing"]) if result.get("timing") else None
        too_fast = impossible_speed(timing, floor_ms)
        if too_fast:
            return Verdict(accepted=False, reason=too_fast, rule="impossible-speed", timing=timing, log_path=log)
        reference = self.reference()
        reason = _correct_reason(int(result["cases"]), reference, judged.get("not_run") or (),
                                 judged.get("outliers") or ())
        if reason is None:
            return Verdict(
                accepted=False,
                reason="not judged: every case's expected outputs are all zero, so a kernel that writes zeros "
                f"would pass ({'; '.join(reference.uninformative)}); give the problem inputs with non-zero outputs",
                rule="unjudgeable",
                log_path=log,
            )
        if products.measured and error_ratio is not None:
            what = f"{products.tf32} one-TF32" if products.tf32 else "low-precision" if products.low else "unread"
            reason += (f"; {what} products on fp32, their outputs measured at {error_ratio:.2g}x the problem's own "
                       "fp32 error from float64")
        if timing:
            reason += f"; {timing.label()}"
        fingerprint = result.get("fingerprint")
        original = timed.get(fingerprint or "") if time and timing is None else None
        if original:
            reason += f"; compiles to the same kernels as {Path(original).name}: not timed again"
        return Verdict(accepted=True, reason=reason, timing=timing, launches=result.get("launches"), log_path=log,
                       fingerprint=fingerprint, duplicate_of=original, winners=config_text(result.get("winners")))
