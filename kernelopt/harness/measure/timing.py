"""The one timing protocol used for eager, torch.compile and every candidate.

On a CUDA device: CUDA events around each trial, an L2 flush (a write of at least twice the
L2 size, then a read) before each trial and outside the timed region, warm-up excluded, the
trial count adapted to the kernel's length, and the cost of an empty event pair subtracted.
Without CUDA the same protocol runs on the host clock, and the result is labelled
"interpreter" (a Triton kernel emulated with NumPy) or "cpu" (PyTorch on the CPU): neither
says anything about GPU performance.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kernelopt.records import Clock, Timing

if TYPE_CHECKING:  # torch is imported where it is used: the graph's records load without it
    import torch

@dataclass(frozen=True)
class TimingConfig:
    """How long and how often to measure."""

    warmup_ms: float = 25.0  # run at least this long before timing (JIT, caches, clocks)
    min_warmup_runs: int = 2
    target_total_ms: float = 500.0  # aim for this much timed work in total
    min_trials: int = 10
    max_trials: int = 1000
    flush_l2_bytes: int = 256 * 1024 * 1024  # >= 2x the largest L2 in the spec database (see for_gpu)
    # Interpreter runs take seconds; a few trials are enough for a label-only time. A run whose warm-up took less
    # than interpreter_budget_ms / interpreter_trials gets more trials, up to interpreter_max_trials in that budget:
    # with 3, one trial slowed by a loaded machine widens the IQR past a 4x gain (`beats` saw no gain); with 5 or
    # more, the quartiles step over it.
    interpreter_trials: int = 3
    interpreter_max_trials: int = 9
    interpreter_budget_ms: float = 60.0
    # A warm run slower than this ends the measurement there, its time the median (a sweep's
    # hopeless configuration: its trials would cost seconds and rank it no differently).
    give_up_ms: float | None = None


def timing_config_for(
    l2_cache_mb: float | None, target_total_ms: float = 500.0, min_trials: int = 10, max_trials: int = 1000
) -> TimingConfig:
    """The protocol's settings for one GPU: the L2 flush writes twice its L2 (64 MiB at least; the
    default 256 MiB without a known L2), and the run's own trial settings."""
    flush = max(int(2 * l2_cache_mb * 2**20), 64 * 2**20) if l2_cache_mb else TimingConfig.flush_l2_bytes
    return TimingConfig(
        target_total_ms=target_total_ms, min_trials=min_trials, max_trials=max_trials, flush_l2_bytes=flush
    )


def _quantile(sorted_values: list[float], q: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def summarize(times_ms: list[float], clock: Clock) -> Timing:
    """Median, quartiles and extremes of raw trial times."""
    if not times_ms:
        raise ValueError("no trial times to summarize")
    ordered = sorted(times_ms)
    return Timing(
        median_ms=statistics.median(ordered),
        p25_ms=_quantile(ordered, 0.25),
        p75_ms=_quantile(ordered, 0.75),
        min_ms=ordered[0],
        max_ms=ordered[-1],
        trials=len(ordered),
        clock=clock,
    )


def measure(
    fn: Callable[[], object],
    device: torch.device,
    config: TimingConfig | None = None,
    host_clock: Clock = "interpreter",
    samples: list[object] | None = None,
    sample_fn: Callable[[], object] | None = None,
) -> Timing:
    """Time `fn` with the protocol for `device`: CUDA events on a GPU, else the host clock,
    labelled `host_clock` ("interpreter" for Triton kernels, "cpu" for PyTorch).

    With `samples`, what `fn` returned in a few timed trials (picked at random, and the last) is
    appended to it, outside the timed region: the verifier checks that the timed calls computed
    the same answer as the checked ones, so a kernel cannot do less work while it is timed.
    """
    config = config or TimingConfig()
    sampler = _Sampler(samples, sample_fn or fn)
    if device.type == "cuda":
        return _measure_cuda(fn, device, config, sampler)
    return _measure_host(fn, config, host_clock, sampler)


SAMPLED_TRIALS = 3


class _Sampler:
    """Which trials are sampled (a few at random, and the last), and what they returned.

    A sampled trial calls `sample_fn` (the same work, watched); its result is kept as it was
    right after that trial, and the tensors it holds are kept alive, so later trials cannot
    reuse or rewrite them unnoticed.
    """

    def __init__(self, samples: list[object] | None, sample_fn: Callable[[], object]) -> None:
        self.samples, self.sample_fn, self.picks = samples, sample_fn, set[int]()

    def plan(self, trials: int) -> None:
        if self.samples is not None:
            chosen = random.SystemRandom().sample(range(trials), min(SAMPLED_TRIALS - 1, trials))
            self.picks = {*chosen, trials - 1}

    def call(self, i: int, fn: Callable[[], object]) -> object:
        return self.sample_fn() if i in self.picks else fn()

    def keep(self, i: int, result: object) -> None:
        if i in self.picks and self.samples is not None:
            self.samples.append((result, _snapshot(result)))


def _snapshot(result: object) -> object:
    import torch

    if isinstance(result, torch.Tensor):
        return result.detach().clone()
    if type(result) in (tuple, list):
        return [_snapshot(r) for r in result]  # type: ignore[union-attr]
    return result


class _L2Flush:
    """Empties L2 between trials: a write of flush_l2_bytes, then a read of as many other bytes.

    The write evicts whatever the last trial left; the read then replaces the dirty lines the
    write left behind with clean ones, so the timed kernel does not pay for their write-back.
    """

    def __init__(self, size_bytes: int, device: torch.device) -> None:
        import torch

        self.written = torch.empty(size_bytes, dtype=torch.uint8, device=device)
        self.read = torch.zeros(size_bytes // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.written.zero_()
        self.read.max()


def _measure_cuda(fn: Callable[[], object], device: torch.device, config: TimingConfig, sampler: _Sampler) -> Timing:
    import torch

    flush = _L2Flush(config.flush_l2_bytes, device)
    # Warm-up: until warmup_ms of work has run, and at least min_warmup_runs times.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs, elapsed_ms, first_ms = 0, 0.0, 0.0
    while runs < config.min_warmup_runs or elapsed_ms < config.warmup_ms:
        flush()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize(device)
        elapsed_ms += start.elapsed_time(end)
        first_ms = first_ms or elapsed_ms
        runs += 1
        if runs >= 1000:
            break
    # The first call may pay for lazy loading (a module, a cuBLAS handle): it says nothing of the
    # kernel's length, and would leave a microsecond kernel with a handful of trials.
    estimate_ms = max((elapsed_ms - first_ms) / (runs - 1) if runs > 1 else elapsed_ms, 1e-4)
    if _gives_up(config, sampler, estimate_ms):
        return summarize([estimate_ms], "cuda_events")
    trials = int(min(config.max_trials, max(config.min_trials, config.target_total_ms / estimate_ms)))
    overhead_ms = _event_pair_ms(flush, device, config.min_trials)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(trials)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(trials)]
    sampler.plan(trials)
    for i in range(trials):
        flush()  # evict the previous trial's data from L2; not timed
        starts[i].record()
        result = sampler.call(i, fn)
        ends[i].record()
        sampler.keep(i, result)  # after the end event: not timed
    torch.cuda.synchronize(device)
    times_ms = [max(s.elapsed_time(e) - overhead_ms, 0.0) for s, e in zip(starts, ends, strict=True)]
    return replace(summarize(times_ms, "cuda_events"), overhead_ms=overhead_ms)


def _event_pair_ms(flush: _L2Flush, device: torch.device, trials: int) -> float:
    """The median time of an empty event pair recorded right after a flush.

    It is what a trial would report for a kernel that takes no time at all (the GPU's front
    end between the two records); subtracting it makes a trial measure the work itself.
    """
    import torch

    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(trials)]
    for start, end in pairs:
        flush()
        start.record()
        end.record()
    torch.cuda.synchronize(device)
    return statistics.median(start.elapsed_time(end) for start, end in pairs)


def host_trials(config: TimingConfig, warm_ms: float) -> int:
    """How many timed runs a host-clock measurement makes after a warm-up of `warm_ms`."""
    least = max(1, config.interpreter_trials)
    affordable = int(config.interpreter_budget_ms / max(warm_ms, 1e-3))
    return max(least, min(config.interpreter_max_trials, affordable))


def _measure_host(
    fn: Callable[[], object], config: TimingConfig, clock: Clock, sampler: _Sampler | None = None
) -> Timing:
    sampler = sampler or _Sampler(None, fn)
    begin = time.perf_counter()
    fn()  # warm-up: the interpreter and torch lazily initialise on first use
    warm_ms = (time.perf_counter() - begin) * 1e3
    times_ms = []
    trials = host_trials(config, warm_ms)
    sampler.plan(trials)
    for i in range(trials):
        begin = time.perf_counter()
        result = sampler.call(i, fn)
        times_ms.append((time.perf_counter() - begin) * 1e3)
        sampler.keep(i, result)
        if _gives_up(config, sampler, times_ms[-1]):
            break
    return summarize(times_ms, clock)


def _gives_up(config: TimingConfig, sampler: _Sampler, run_ms: float) -> bool:
    """A run past `give_up_ms` ends the measurement, unless its timed calls are being sampled
    (the verifier's check that timed calls compute the checked answer needs every pick)."""
    return config.give_up_ms is not None and sampler.samples is None and run_ms > config.give_up_ms


def beats(candidate: Timing, best: Timing, min_gain_pct: float) -> bool:
    """True when `candidate` is faster than `best` by more than the noise and the margin.

    The gain (best median - candidate median) must exceed both `min_gain_pct` of the best
    time and the two measurements' mean interquartile range. A faster median inside the noise
    is no evidence of a faster kernel.
    """
    gain_ms = best.median_ms - candidate.median_ms
    noise_ms = (best.iqr_ms + candidate.iqr_ms) / 2
    return gain_ms > max(best.median_ms * min_gain_pct / 100, noise_ms)
