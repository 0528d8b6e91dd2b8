"""Rendering the graph's custom stream events as progress lines for the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelopt.events import (
    BaselinesTimed,
    BestRejected,
    CandidateRunning,
    CandidateWritten,
    DiagnosisMade,
    LlmRetry,
    ModelDropped,
    NewBest,
    ReportWritten,
    Reviewed,
    RooflineFound,
    RoundStarted,
    SetupDone,
    VerdictGiven,
    read,
)

OUTCOME_WORDS = {"within_noise": "no gain beyond the noise", "rejected": "rejected", "failed": "failed",
                 "outpaced": "faster than the best, not the step's fastest",
                 "duplicate": "a duplicate (its compiled kernels were timed before)"}
BASELINE = "the baseline"  # the first correct kernel of a run: nothing before it to be faster than


def outcome_words(outcome: str, round_: int) -> str:
    """A verdict in words; round 0's correct kernel (the starting one, or the first written) is the baseline."""
    if outcome == "faster" and round_ == 0:
        return BASELINE
    return OUTCOME_WORDS.get(outcome, outcome)


def verdict_detail(error: str | None, *words: str | None) -> str:
    """The verifier's reason without a leading word the line already says ("incorrect: incorrect: ...")."""
    text = (error or "").strip()
    for word in words:
        if word and text.lower().startswith(f"{word.lower()}:"):
            text = text[len(word) + 1:].strip()
    return text


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f} ms"


def _tokens(tokens: dict[str, Any] | None) -> str:
    """The run's token totals so far, as " [tokens: 1,234 in, 567 out]"; '' when there are none."""
    if not tokens:
        return ""
    estimated = " (some estimated)" if tokens.get("estimated") else ""
    return f" [tokens: {tokens.get('input', 0):,} in, {tokens.get('output', 0):,} out{estimated}]"


def _failed_or(ms: float | None, error: str | None) -> str:
    return f"failed: {error}" if error else _ms(ms)


def render_event(payload: dict[str, Any]) -> str | None:
    """One line for a progress event (as it came over the stream), or None for events not worth a line."""
    match read(payload):
        case SetupDone(run_dir=run_dir, gpu=gpu):
            return f"run directory {run_dir} (target GPU {gpu})"
        case BaselinesTimed() as e:
            compiled = _failed_or(e.compile_ms, e.compile_error)
            line = f"baselines: eager {_ms(e.eager_ms)}, torch.compile (default) {compiled}"
            if e.max_autotune_ms or e.max_autotune_error:
                line += f", torch.compile (max-autotune) {_failed_or(e.max_autotune_ms, e.max_autotune_error)}"
            if e.cuda_graph_ms:
                line += f", CUDA graph of eager {_ms(e.cuda_graph_ms)}"
            return line + (f" ({e.wall_s:.0f} s)" if e.wall_s else "")
        case RoundStarted(round=round_):
            return f"── round {round_} ──"
        case DiagnosisMade() as e:
            note = f" ({e.note})" if e.note else ""
            parent = f" {Path(e.parent).name}" if e.parent else ""  # a beam's parent
            return f"  judger [{e.source}]{parent}: {e.category}: {e.root_cause} -> {e.fix}{note}{_tokens(e.tokens)}"
        case CandidateWritten() as e if e.error:
            return f"  optimizer{_by(e.model)}: no usable kernel: {e.error}{_tokens(e.tokens)}"
        case CandidateWritten() as e if e.tokens:
            path = Path(e.path or "-")
            return f"  optimizer{_by(e.model)}: wrote {path.parent.name}/{path.name}{_tokens(e.tokens)}"
        case ModelDropped(model=model, reason=reason):
            return f"  model {model} dropped from the run: {reason}"
        case LlmRetry() as e:
            return f"  {e.node}: LLM call failed ({e.error}); retry {e.retry} of {e.retries} in {e.wait_s:.1f} s"
        case VerdictGiven() as e:
            return _verdict_line(e)
        case CandidateRunning() as e:
            phase = f" ({e.phase})" if e.phase else ""
            return f"  still verifying {Path(e.path or 'the candidate').name}: {e.elapsed_s or 0:.0f} s{phase}"
        case ReportWritten(path=path):
            return f"report: {path}"
        case Reviewed() as e:
            name = Path(e.path or "-").name
            if e.action == "reject":
                return f"  you rejected {name}: {e.reason or 'no reason given'}"
            return f"  you {'edited it into' if e.action == 'edit' else 'approved'} {name}"
        case BestRejected() as e:
            return f"  new best ({_ms(e.time_ms)}) not taken: {e.error}"
        case NewBest(time_ms=time_ms):
            return f"  new best: {_ms(time_ms)}"
        case RooflineFound() as e:
            eff = "n/a" if e.efficiency_pct is None else f"{e.efficiency_pct:.1f}%"
            return f"  roofline: {e.bottleneck}-bound, efficiency {eff}"
    return None


def _by(model: str | None) -> str:
    return f" [{model}]" if model else ""  # several models: which one wrote


def _verdict_line(e: VerdictGiven) -> str:
    label = f"repair {e.repair}" if e.repair else "candidate"
    outcome = outcome_words(e.outcome, e.round if e.round is not None else 1)
    detail = _ms(e.time_ms) if e.time_ms is not None else verdict_detail(e.error, e.outcome, outcome)
    where = f" on {e.where}" if e.where else ""
    if e.duplicate_of:
        outcome = f"duplicate of {Path(e.duplicate_of).name}, not timed again"
    return f"  {label} ({e.change or '-'}): {outcome}{where}" + (f": {detail}" if detail else "")


def render_question(payload: dict[str, Any]) -> str:
    """An approval question (Context.approve) as the terminal shows it."""
    where = f"round {payload.get('round')}, branch {payload.get('branch', 0)}"
    lines = []
    if payload.get("error"):
        lines.append(f"(the last reply was not understood: {payload['error']})")
    if payload.get("question") == "accept":
        speedup = payload.get("speedup")
        gain = f" ({speedup:.2f}x)" if speedup else ""
        clock = "" if payload.get("is_gpu_time") else " [Triton interpreter on CPU, not GPU times]"
        lines += [
            f"── accept a new best? ({where}: {payload.get('change') or '-'})",
            f"   {payload.get('kernel_path')}",
            f"   {_ms(payload.get('old_ms'))} -> {_ms(payload.get('new_ms'))}{gain}{clock}",
        ]
        return "\n".join(lines)
    lines += [f"── try this candidate? ({where}, repair {payload.get('repair', 0)}: {payload.get('change') or '-'})",
              f"   {payload.get('kernel_path')}"]
    if payload.get("best_path"):
        lines.append(f"   against the best {Path(payload['best_path']).name} ({_ms(payload.get('best_ms'))}):")
    lines.append((payload.get("diff") or payload.get("source") or "").rstrip("\n"))
    return "\n".join(lines)
