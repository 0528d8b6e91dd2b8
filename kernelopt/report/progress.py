"""Rendering the graph's custom stream events as progress lines for the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def _tokens(event: dict[str, Any]) -> str:
    """The run's token totals so far, as " [tokens: 1,234 in, 567 out]"; '' when the event has none."""
    tokens = event.get("tokens")
    if not tokens:
        return ""
    estimated = " (some estimated)" if tokens.get("estimated") else ""
    return f" [tokens: {tokens.get('input', 0):,} in, {tokens.get('output', 0):,} out{estimated}]"


def render_event(event: dict[str, Any]) -> str | None:
    """One line for a progress event, or None for events not worth a line."""
    kind = event.get("event")
    if kind == "setup":
        return f"run directory {event['run_dir']} (target GPU {event['gpu']})"
    if kind == "baselines":
        error = event.get("compile_error")
        compile_note = f"failed: {error}" if error else _ms(event.get("compile_ms"))
        line = f"baselines: eager {_ms(event.get('eager_ms'))}, torch.compile (default) {compile_note}"
        if event.get("max_autotune_ms") or event.get("max_autotune_error"):
            error = event.get("max_autotune_error")
            line += f", torch.compile (max-autotune) {f'failed: {error}' if error else _ms(event['max_autotune_ms'])}"
        if event.get("cuda_graph_ms"):
            line += f", CUDA graph of eager {_ms(event['cuda_graph_ms'])}"
        return line + (f" ({event['wall_s']:.0f} s)" if event.get("wall_s") else "")
    if kind == "round_started":
        return f"── round {event['round']} ──"
    if kind == "diagnosis":
        note = f" ({event['note']})" if event.get("note") else ""
        diagnosis = f"{event['category']}: {event['root_cause']} -> {event['fix']}"
        parent = f" {Path(event['parent']).name}" if event.get("parent") else ""  # a beam's parent
        return f"  judger [{event['source']}]{parent}: {diagnosis}{note}{_tokens(event)}"
    by = f" [{event['model']}]" if event.get("model") else ""  # several models: which one wrote
    if kind == "candidate" and event.get("error"):
        return f"  optimizer{by}: no usable kernel: {event['error']}{_tokens(event)}"
    if kind == "candidate" and event.get("tokens"):
        path = Path(event.get("path") or "-")
        return f"  optimizer{by}: wrote {path.parent.name}/{path.name}{_tokens(event)}"
    if kind == "model_dropped":
        return f"  model {event['model']} dropped from the run: {event['reason']}"
    if kind == "llm_retry":
        return (f"  {event['node']}: LLM call failed ({event['error']}); "
                f"retry {event['retry']} of {event['retries']} in {event['wait_s']:.1f} s")
    if kind == "verdict":
        label = "repair " + str(event["repair"]) if event.get("repair") else "candidate"
        outcome = outcome_words(event["outcome"], event.get("round", 1))
        if event.get("time_ms") is not None:
            detail = _ms(event["time_ms"])
        else:
            detail = verdict_detail(event.get("error"), event["outcome"], outcome)
        where = f" on {event['where']}" if event.get("where") else ""
        if event.get("duplicate_of"):
            outcome = f"duplicate of {Path(event['duplicate_of']).name}, not timed again"
        return f"  {label} ({event.get('change') or '-'}): {outcome}{where}" + (f": {detail}" if detail else "")
    if kind == "candidate_running":
        phase = f" ({event['phase']})" if event.get("phase") else ""
        name = Path(event.get("path") or "the candidate").name
        return f"  still verifying {name}: {event.get('elapsed_s', 0):.0f} s{phase}"
    if kind == "report":
        return f"report: {event['path']}"
    if kind == "review":
        name = Path(event.get("path") or "-").name
        if event["action"] == "reject":
            return f"  you rejected {name}: {event.get('reason') or 'no reason given'}"
        return f"  you {'edited it into' if event['action'] == 'edit' else 'approved'} {name}"
    if kind == "best_rejected":
        return f"  new best ({_ms(event.get('time_ms'))}) not taken: {event.get('error')}"
    if kind == "new_best":
        return f"  new best: {_ms(event['time_ms'])}"
    if kind == "roofline":
        eff = event.get("efficiency_pct")
        return f"  roofline: {event['bottleneck']}-bound, efficiency {'n/a' if eff is None else f'{eff:.1f}%'}"
    return None


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
