"""Rendering the graph's custom stream events as progress lines for the terminal."""

from __future__ import annotations

from typing import Any


OUTCOME_WORDS = {"within_noise": "no gain beyond the noise", "rejected": "rejected", "failed": "failed"}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f} ms"


def render_event(event: dict[str, Any]) -> str | None:
    """One line for a progress event, or None for events not worth a line."""
    kind = event.get("event")
    if kind == "setup":
        return f"run directory {event['run_dir']} (target GPU {event['gpu']})"
    if kind == "baselines":
        compile_note = _ms(event.get("compile_ms")) if not event.get("compile_error") else f"failed: {event['compile_error']}"
        return f"baselines: eager {_ms(event.get('eager_ms'))}, torch.compile {compile_note}"
    if kind == "round_started":
        return f"── round {event['round']} ──"
    if kind == "diagnosis":
        note = f" ({event['note']})" if event.get("note") else ""
        return f"  judger [{event['source']}]: {event['category']}: {event['root_cause']} -> {event['fix']}{note}"
    if kind == "candidate" and event.get("error"):
        return f"  optimizer: no usable kernel: {event['error']}"
    if kind == "verdict":
        label = "repair " + str(event["repair"]) if event.get("repair") else "candidate"
        detail = _ms(event.get("time_ms")) if event.get("time_ms") is not None else (event.get("error") or "")
        outcome = OUTCOME_WORDS.get(event["outcome"], event["outcome"])
        return f"  {label} ({event.get('change') or '-'}): {outcome}: {detail}"
    if kind == "new_best":
        return f"  new best: {_ms(event['time_ms'])}"
    if kind == "roofline":
        eff = event.get("efficiency_pct")
        return f"  roofline: {event['bottleneck']}-bound, efficiency {'n/a' if eff is None else f'{eff:.1f}%'}"
    return None
