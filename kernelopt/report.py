"""The summary of a finished run, for the terminal, --json and report.json."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any


def summarize_run(state: dict[str, Any]) -> dict[str, Any]:
    """The figures a person asks for at the end of a run; also written to RUN_DIR/report.json."""
    best, baselines, roofline = state.get("best"), state.get("baselines"), state.get("roofline")
    run_dir = state.get("run_dir") or ""
    summary: dict[str, Any] = {
        "stop_reason": state.get("stop_reason"),
        "run_dir": run_dir,
        "rounds": state.get("round", 0),
        "gpu": state.get("gpu_key"),
        "best_kernel_path": str(Path(run_dir) / "best_kernel.py") if best and run_dir else None,
        "best_time_ms": best.time_ms if best else None,
        "best_timing": dataclasses.asdict(best.timing) if best else None,
        "is_gpu_time": bool(best and best.timing.is_gpu_time),
        "eager_ms": None, "compile_ms": None, "speedup_vs_eager": None, "speedup_vs_compile": None,
        "compile_error": baselines.compile_error if baselines else None,
        "roofline": dataclasses.asdict(roofline) if roofline else None,
        "attempts": [dataclasses.asdict(a) for a in state.get("attempts", [])],
    }
    for name in ("eager", "compile"):
        timing = getattr(baselines, name, None) if baselines else None
        if timing is not None:
            summary[f"{name}_ms"] = timing.median_ms
            if best:
                summary[f"speedup_vs_{name}"] = timing.median_ms / best.time_ms
    if run_dir and Path(run_dir).is_dir():
        Path(run_dir, "report.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary
