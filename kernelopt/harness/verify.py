"""The verifier: static checks, a sandboxed run on private seeds, comparison, timing, floor check."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelopt.hardware.roofline import FloorEstimate
from kernelopt.hardware.roofline import floor_time_ms as least_time_ms
from kernelopt.hardware.specs import detect_gpu_spec, get_gpu_spec
from kernelopt.harness import guards
from kernelopt.harness.cases import case_label
from kernelopt.harness.correctness import compare_outputs, magnitude_ratios
from kernelopt.harness.problem import InputError, check_kernel_source, read_source
from kernelopt.harness.runner import WorkerLimits, run_worker
from kernelopt.harness.timing import Timing, TimingConfig

# A GPU time this far under the floor cannot be real: the work was done elsewhere or not at all.
IMPOSSIBLE_SPEED_FRACTION = 0.9


def floor_ms_for(floor: FloorEstimate | None, gpu_key: str | None) -> float | None:
    """The floor time on a GPU's datasheet ceilings (the GPU present when no key is given).

    Datasheet peaks are above what a GPU sustains, so this floor is the lenient one: a time
    under it is impossible, not merely unlikely.
    """
    spec = get_gpu_spec(gpu_key) if gpu_key else detect_gpu_spec()
    if floor is None or spec is None:
        return None
    try:
        peak_tflops = spec.peak_tflops(floor.dtype)
    except ValueError:
        peak_tflops = spec.peak_fp32_tflops
    return least_time_ms(floor, spec.memory_bandwidth_gbs, peak_tflops)


def impossible_speed(timing: Timing | None, floor_time_ms: float | None) -> str | None:
    """Why a GPU time cannot be real (under the floor by more than the margin), or None.

    Interpreter and CPU times say nothing about the GPU, so only GPU times are judged.
    """
    if timing is None or not timing.is_gpu_time or not floor_time_ms:
        return None
    if timing.median_ms >= floor_time_ms * IMPOSSIBLE_SPEED_FRACTION:
        return None
    return (
        f"impossible speed: {timing.median_ms:.4f} ms is under the roofline floor of {floor_time_ms:.4f} ms; "
        "the work is not all being done or not all being timed"
    )


@dataclass(frozen=True)
class HarnessSettings:
    """How candidates are run and judged."""

    use_cuda: bool = False
    seeds: int = 3
    repeats: int = 3  # runs per test case on the same inputs (races show as a wrong run)
    timeout_s: float = 300.0
    mem_limit_gb: float = 16.0
    timing: TimingConfig = field(default_factory=TimingConfig)
    time_compile: bool = True

    @staticmethod
    def detect(**overrides: Any) -> HarnessSettings:
        """Settings for this machine: on a GPU when there is one, else Triton's interpreter.

        The interpreter runs a kernel's programs one after another, so repeat runs cannot show
        a race there and only cost time: one run per case.
        """
        use_cuda = torch.cuda.is_available()
        overrides.setdefault("repeats", 3 if use_cuda else 1)
        return HarnessSettings(use_cuda=use_cuda, **overrides)

    @property
    def device(self) -> str:
        return "cuda" if self.use_cuda else "cpu"

    def limits(self) -> WorkerLimits:
        return WorkerLimits(self.timeout_s, int(self.mem_limit_gb * 2**30), self.use_cuda)


@dataclass(frozen=True)
class Verdict:
    """The verifier's answer for one kernel: accepted, or the one rule it broke and how."""

    accepted: bool
    reason: str
    rule: str | None = None
    timing: Timing | None = None
    launches: int | None = None
    log_path: str | None = None


@dataclass(frozen=True)
class Baselines:
    """Eager and torch.compile times of the reference, and the problem's floor."""

    eager: Timing | None
    compile: Timing | None
    compile_error: str | None = None
    floor: FloorEstimate | None = None


class Verifier:
    """Verifies kernels for one problem; its private seeds and expected outputs live in `work_root`."""

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

    def request(self, mode: str, **extra: Any) -> dict[str, Any]:
        return {
            "mode": mode,
            "problem_path": str(self.problem_path),
            "device": self.settings.device,
            "init_seed": self._init_seed,
            "seeds": self._seeds,
            "timing": self.settings.timing.__dict__,
            **extra,
        }

    def baselines(self) -> Baselines:
        """Times eager and torch.compile with the candidates' protocol; computes the floor."""
        result = self._reference(baselines=True, time_compile=self.settings.time_compile)
        return Baselines(
            eager=Timing(**result["eager"]),
            compile=Timing(**result["compile"]) if result.get("compile") else None,
            compile_error=result.get("compile_error"),
            floor=FloorEstimate(**result["floor"]),
        )

    @property
    def _expected_path(self) -> Path:
        return self._private / "expected.pt"

    def _reference(self, **extra: Any) -> dict[str, Any]:
        """Run the reference (never in a candidate's process); keep its outputs and case list."""
        request = self.request("reference", expected_path=str(self._expected_path), **extra)
        outcome = run_worker(request, self.root / "reference", self.settings.limits())
        if outcome.result is None or not outcome.result.get("ok"):
            why = outcome.failure or (outcome.result or {}).get("reason", "unknown error")
            raise InputError(f"the reference problem does not run: {why} (log: {outcome.log_path})")
        self._cases_path.write_text(json.dumps(outcome.result["cases"]))
        return outcome.result

    @property
    def _cases_path(self) -> Path:
        return self._private / "cases.json"

    def _expected(self) -> tuple[list[dict[str, Any]], list[list[torch.Tensor]]]:
        if not (self._expected_path.exists() and self._cases_path.exists()):
            self._reference()
        cases = json.loads(self._cases_path.read_text())
        return cases, torch.load(self._expected_path, weights_only=True)

    def verify(self, kernel_path: str | Path, *, time: bool = True, floor_time_ms: float | None = None) -> Verdict:
        """Check `kernel_path` against the reference; time it when correct and `time` is set."""
        kernel = Path(kernel_path).resolve()
        try:
            source = read_source(kernel, "kernel")
            check_kernel_source(source, kernel.name)
        except InputError as err:
            return Verdict(False, str(err), rule="bad-input")
        violation = guards.first_violation_line(source, kernel.name)
        if violation:
            rule = violation.split("[", 1)[1].split("]", 1)[0] if "[" in violation else "static-check"
            return Verdict(False, violation, rule=rule)
        cases, expected = self._expected()
        work = self.root / "candidates" / kernel.stem
        actual_path = work / "actual.pt"
        outcome = run_worker(
            self.request(
                "candidate",
                kernel_path=str(kernel),
                actual_path=str(actual_path),
                time=time,
                cases=cases,
                repeats=self.settings.repeats,
                secret_dirs=[str(self._private)],
            ),
            work,
            self.settings.limits(),
        )
        result = outcome.result
        if result is None:
            return Verdict(False, f"candidate {outcome.failure}", rule="crash", log_path=outcome.log_path)
        if not result.get("ok"):
            return Verdict(False, result["reason"], rule=result.get("rule"), log_path=outcome.log_path)
        saved = torch.load(actual_path, weights_only=True)
        actual_path.unlink(missing_ok=True)
        actual = saved["cases"]
        timing_index = next((i for i, c in enumerate(cases) if c.get("timing")), 0)
        checked = [i for i, c in enumerate(cases) if not c.get("timing")]
        timed_expected = expected[timing_index]
        cases, expected = [cases[i] for i in checked], [expected[i] for i in checked]
        labels, scales = [case_label(c) for c in cases], magnitude_ratios(expected)
        for run in range(max((len(runs) for runs in actual), default=0)):
            # A run that repeated the first one exactly stands for itself: judge the first.
            runs_of = [runs[run] if run < len(runs) else runs[0] for runs in actual]
            mismatch = compare_outputs(expected, runs_of, labels, scales)
            if mismatch:
                again = " (a repeat run on the same inputs gave a different result: a race?)" if run else ""
                return Verdict(False, f"incorrect{again}: {mismatch}", rule="incorrect", log_path=outcome.log_path)
        for sample in saved["timed"]:
            mismatch = compare_outputs([timed_expected], [sample])
            if mismatch:
                return Verdict(
                    False,
                    f"incorrect while timed: a timed call's output differs from the reference ({mismatch}); "
                    "every call must compute the whole result",
                    rule="incorrect-when-timed",
                    log_path=outcome.log_path,
                )
        timing = Timing(**result["timing"]) if result.get("timing") else None
        too_fast = impossible_speed(timing, floor_time_ms)
        if too_fast:
            return Verdict(False, too_fast, rule="impossible-speed", timing=timing, log_path=outcome.log_path)
        reason = f"correct on {result['cases']} cases" + (f"; {timing.label()}" if timing else "")
        return Verdict(True, reason, timing=timing, launches=result.get("launches"), log_path=outcome.log_path)
