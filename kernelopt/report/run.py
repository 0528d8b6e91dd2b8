"""The end of a run: its summary (terminal, --json, report.json) and report.md beside roofline.png."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kernelopt.hardware.roofline import datasheet_floor_ms
from kernelopt.hardware.specs import GPUSpec, UnknownGPUError, get_gpu_spec
from kernelopt.records import FULL, FloorEstimate
from kernelopt.report.figures import figures, launch_note, method_lines, refused_note, share_words, times
from kernelopt.report.models import model_rows, models_markdown
from kernelopt.report.pinned import pinned_rows, pinned_section
from kernelopt.report.progress import outcome_words, verdict_detail
from kernelopt.report.story import (
    DIFF_FILE,
    NOT_GPU_NOTE,
    best_vs_start_diff,
    diff_section,
    headline,
    phase_times,
    phases_words,
    round_diagnoses,
    start_time_ms,
)
from kernelopt.report.summary import REPORT_JSON, RunSummary
from kernelopt.report.sweep import SWEEP_PNG, sweep_markdown, sweep_tables
from kernelopt.report.tree import search_tree, tree_section

REPORT_MD = "report.md"
ROOFLINE_PNG = "roofline.png"
ROOFLINE_SOURCES = {
    "ncu": "NCU speed-of-light", "floor": "the measured time against the floor",
    "ncu+floor": "NCU speed-of-light and the floor", "none": "the floor's intensity against the ridge point",
}


def summarize_run(state: dict[str, Any], gpu_named: bool = False) -> RunSummary:
    """The figures a person asks for at the end of a run (what RUN_DIR/report.json holds).

    `gpu_named`: the person named the target GPU (Context.gpu): on interpreter times its roof
    is still drawn; else the default target stays out of the picture.
    """
    best, baselines, roofline = state.get("best"), state.get("baselines"), state.get("roofline")
    floor = baselines.floor if baselines else None
    run_dir = state.get("run_dir") or ""
    gpu = state.get("gpu_key")
    clock = best.timing.clock if best else (baselines.eager.clock if baselines and baselines.eager else None)
    attempts = [dataclasses.asdict(a) for a in state.get("attempts", [])]
    found = duplicates(attempts)
    beam = [record.path for record in state["beam"]] if state.get("beam") else None  # a beam run's parents
    eager, compiled = (baselines.eager, baselines.compile) if baselines else (None, None)
    return RunSummary(
        stop_reason=state.get("stop_reason"),
        run_dir=run_dir,
        problem=state.get("problem_path") or state.get("problem_file"),
        rounds=state.get("round", 0),
        gpu=gpu,
        gpu_named=gpu_named,
        best_kernel_path=str(Path(run_dir) / "best_kernel.py") if best and run_dir else None,
        best_round=best.round if best else None,
        best_time_ms=best.time_ms if best else None,
        best_timing=dataclasses.asdict(best.timing) if best else None,
        clock=clock,
        is_gpu_time=clock == "cuda_events",
        eager_ms=eager.median_ms if eager else None,
        compile_ms=compiled.median_ms if compiled else None,
        speedup_vs_eager=eager.median_ms / best.time_ms if eager and best else None,
        speedup_vs_compile=compiled.median_ms / best.time_ms if compiled and best else None,
        compile_error=baselines.compile_error if baselines else None,
        floor=dataclasses.asdict(floor) if floor else None,
        roofline=dataclasses.asdict(roofline) if roofline else None,
        attempts=attempts,
        duplicates=found,
        duplicates_removed=len(found),
        sweeps=sweep_tables(run_dir, attempts),
        start_time_ms=start_time_ms(attempts),
        diagnoses=round_diagnoses(run_dir),
        phases_s=phase_times(run_dir),
        models=model_rows(state),
        pinned=pinned_rows(attempts),
        beam=beam,
        tree=search_tree(attempts, beam) if beam is not None else None,  # the tree the beam grew
        **figures(baselines, best.time_ms if best else None, _floor_ms(floor, gpu), clock == "cuda_events"),
    )


def duplicates(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates not timed because their compiled kernels had been: each with the one it duplicated."""
    return [{"round": a["round"], "repair": a["repair"], "kernel_path": a["kernel_path"],
             "duplicate_of": a["duplicate_of"]} for a in attempts if a.get("duplicate_of")]


def _floor_ms(floor: FloorEstimate | None, gpu_key: str | None) -> float | None:
    """The floor on the GPU's datasheet ceilings (the lenient floor the verifier judges by)."""
    try:
        spec = get_gpu_spec(gpu_key) if gpu_key else None
    except UnknownGPUError:
        spec = None
    return datasheet_floor_ms(floor, spec) if floor is not None and spec is not None else None


def write_reports(summary: RunSummary, run_dir: str | Path) -> list[Path]:
    """Write report.json, report.md and roofline.png into the run directory; returns the files written."""
    from kernelopt.report.plot import draw_picture  # matplotlib loads only when a picture is drawn
    from kernelopt.report.sweep import draw_sweep

    run_dir = Path(run_dir)
    (run_dir / REPORT_JSON).write_text(json.dumps(summary.to_json(), indent=2, default=str))
    written = [run_dir / REPORT_JSON, run_dir / REPORT_MD]
    plot_path = run_dir / ROOFLINE_PNG
    has_plot = draw_picture(summary, plot_path)
    if has_plot:
        written.append(plot_path)
    else:
        plot_path.unlink(missing_ok=True)  # a stale picture would contradict the report
    sweep_path = run_dir / SWEEP_PNG
    has_sweep_plot = draw_sweep(summary, sweep_path)
    written += [sweep_path] if has_sweep_plot else []
    diff = best_vs_start_diff(run_dir, summary)
    diff_path = run_dir / DIFF_FILE
    if diff:
        diff_path.write_text(diff)
        written.append(diff_path)
    else:
        diff_path.unlink(missing_ok=True)
    written[1].write_text(render_markdown(summary, has_plot=has_plot, has_sweep_plot=has_sweep_plot, diff=diff))
    return written


def roofline_notes(summary: RunSummary) -> list[str]:
    """The roofline's warnings as the summary says them: on interpreter times one line on why
    there is no efficiency, instead of notes that seem to say the best kernel has no time."""
    roof = summary.roofline or {}
    notes = list(roof.get("warnings", []))
    if summary.is_gpu_time or not summary.best_time_ms:
        return notes
    about_time = ("no measured time", "times are triton-interpreter")
    return [INTERPRETER_EFFICIENCY] + [n for n in notes if not n.lower().startswith(about_time)]


INTERPRETER_EFFICIENCY = (
    "efficiency against the floor is not computed: the times are Triton-interpreter times on the CPU, not GPU times"
)


def target_gpu(summary: RunSummary, spec: GPUSpec | None) -> str:
    """The target GPU in words, saying when it is only the default aim of the prompts."""
    name = f"{spec.key} ({spec.name})" if spec else (summary.gpu or "unknown")
    if summary.is_gpu_time or summary.gpu_named or not summary.clock:
        return name
    return f"no GPU; prompts aim at {name} (name one with --gpu / Context.gpu)"


def _spec(summary: RunSummary) -> GPUSpec | None:
    try:
        return get_gpu_spec(summary.gpu) if summary.gpu else None
    except UnknownGPUError:
        return None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _num(value: float | None, unit: str = "", digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}{unit}"


def render_markdown(
    summary: RunSummary, has_plot: bool = True, has_sweep_plot: bool = False, diff: str | None = None
) -> str:
    """report.md: what was optimized, how it ended, the roofline, and every attempt."""
    spec = _spec(summary)
    top = headline(summary)
    lines = [
        "# kernelopt run report", "",
        *([f"**{top}**", ""] if top else []),
        f"- Problem: `{summary.problem or '-'}`",
        f"- Target GPU: {target_gpu(summary, spec)}",
        f"- Stop reason: {summary.stop_reason or 'none yet (the run has not finished)'}",
        f"- Rounds: {summary.rounds}",
        *([f"- Wall time: {phases_words(summary.phases_s)}"] if summary.phases_s else []),
        f"- Best kernel: `{summary.best_kernel_path}` (round {summary.best_round})"
        if summary.best_kernel_path else "- Best kernel: none (no candidate was correct)",
        "",
    ]
    lines += _result_section(summary)
    lines += _roofline_section(summary, spec, has_plot)
    lines += _attempts_section(summary)
    lines += models_markdown(summary)
    lines += pinned_section(summary)
    lines += tree_section(summary)
    lines += diff_section(diff)
    lines += sweep_markdown(summary, has_sweep_plot)
    lines += ["## Method", "", *method_lines(summary.method, summary.max_autotune_limit_s), ""]
    return "\n".join(lines) + "\n"


BASELINE_ROWS = (  # (row name: the name Baselines.every() gives it, RunSummary's field of its time, of its error)
    ("PyTorch eager", "eager_ms", None),
    ("torch.compile (default)", "compile_ms", "compile_error"),
    ("torch.compile (max-autotune)", "max_autotune_ms", "max_autotune_error"),
    ("CUDA graph of eager", "cuda_graph_ms", "cuda_graph_error"),
    (f"PyTorch eager {FULL}", "eager_full_ms", None),
    (f"torch.compile (default) {FULL}", "compile_full_ms", None),
)


def _result_section(summary: RunSummary) -> list[str]:
    lines = ["## Best vs the baselines", ""]
    on_gpu = summary.is_gpu_time
    if not on_gpu and summary.clock:
        lines += [
            f"> **{NOT_GPU_NOTE}.** The kernels ran in Triton's interpreter on the CPU ({summary.clock} clock) "
            "and PyTorch ran on the CPU: these times show the run worked, not how fast the kernel is on a GPU, "
            "and best vs PyTorch is not a speedup.", "",
        ]
    lines += ["| | median (ms) | IQR (ms) | n | best is faster by |", "|---|---:|---:|---:|---:|"]
    timing = summary.best_timing
    if timing:
        lines.append(f"| best kernel | {_ms(timing['median_ms'])} | {_ms(timing['p75_ms'] - timing['p25_ms'])} "
                     f"| {timing['trials']} | |")
    timings = summary.baseline_timings or {}
    best_ms = summary.best_time_ms
    for name, time_field, error_field in BASELINE_ROWS:
        median, error = getattr(summary, time_field), getattr(summary, error_field) if error_field else None
        if median is not None:
            ratio = _num(median / best_ms, "x", 3) if on_gpu and best_ms else "not comparable" if best_ms else ""
            spread = timings.get(name)
            iqr = _ms(spread["p75_ms"] - spread["p25_ms"]) if spread else ""
            lines.append(f"| {name} | {_ms(median)} | {iqr} | {spread['trials'] if spread else ''} | {ratio} |")
        elif error:
            lines.append(f"| {name} | failed: {_cell(error)} | | | |")
        elif time_field == "compile_ms":
            lines.append(f"| {name} | not timed | | | |")
    return [*lines, "", *_claims(summary, on_gpu), ""]


def _claims(summary: RunSummary, on_gpu: bool) -> list[str]:
    """The headline figures, each naming what it is against, and what the baselines cost."""
    lines = []
    if on_gpu and summary.best_time_ms:
        if summary.strongest_compile:
            modes = "the faster of the modes timed" if summary.max_autotune_ms else "the only mode timed"
            against = f"torch.compile ({summary.strongest_compile})"
            lines.append(f"- Against the strongest torch.compile ({modes}): "
                         f"{times(summary.speedup_vs_strongest_compile, against)}")
        if summary.best_baseline:
            lines.append(f"- Against the best baseline of all: "
                         f"{times(summary.speedup_vs_best_baseline, summary.best_baseline)}")
        floor = summary.floor_ms
        lines.append(
            f"- Gap closed: {share_words(summary.gap_closed, summary.gap_closed_note or '')} of the "
            f"distance from the best baseline ({_num(summary.best_baseline_ms, ' ms')}) to the floor "
            f"({_num(floor, ' ms')}): (t_baseline - t_kernel) / (t_baseline - t_floor), the floor at the datasheet's "
            "bandwidth and peak"
        )
    keys = ("refused_baselines", "refused_at_full_precision", "eager_full_ms", "compile_full_ms", "full_error")
    if refused := refused_note({key: getattr(summary, key) for key in keys}):
        lines.append(f"- Precision: {refused}")
        if on_gpu and summary.speedup_vs_compile_full:
            lines.append(f"- Against torch.compile at the verifier's precision: "
                         f"{times(summary.speedup_vs_compile_full, summary.compile_at_precision or '')}")
    if summary.full_error and summary.refused_baselines:
        lines.append(f"- Not timed at full precision: {_cell(summary.full_error)}")
    if summary.judge_error:
        lines.append(f"- The baselines' outputs could not be judged: {_cell(summary.judge_error)}")
    note = summary.launch_note or (launch_note(summary.eager_ms, summary.cuda_graph_ms, None) if on_gpu else None)
    if note:
        lines.append(f"- Launch overhead: {note}")
    lines += _cost(summary)
    return lines


def _cost(summary: RunSummary) -> list[str]:
    if summary.baselines_wall_s is None:
        return []
    parts = []
    if summary.compile_s is not None:
        parts.append(f"torch.compile (default) compiled in {summary.compile_s:.1f} s")
    if summary.max_autotune_compile_s is not None:
        cached = "taken from Inductor's cache" if summary.max_autotune_cache_hit else "compiled afresh"
        parts.append(f"max-autotune in {summary.max_autotune_compile_s:.1f} s ({cached})")
    detail = f" ({'; '.join(parts)})" if parts else ""
    return [f"- Setup cost: the baselines took {summary.baselines_wall_s:.1f} s of wall time{detail}"]


def _roofline_section(summary: RunSummary, spec: GPUSpec | None, has_plot: bool) -> list[str]:
    lines = ["## Roofline", ""]
    floor, roof = summary.floor, summary.roofline
    on_gpu = summary.is_gpu_time
    if not on_gpu and not summary.gpu_named:
        spec = None  # the default target of the prompts is no GPU this run ran on or was aimed at
    if floor:
        intensity = floor["flops"] / floor["min_bytes"] if floor["min_bytes"] else None
        lines.append(
            f"- Floor ({floor['dtype']}): {floor['min_bytes']:,} bytes moved at least, {floor['flops']:,.0f} FLOPs; "
            f"arithmetic intensity {_num(intensity, ' FLOP/byte')}"
        )
        if spec:
            try:
                ridge = spec.ridge_point_flops_per_byte(floor["dtype"])
                compute_roof = spec.roof_tflops(floor["dtype"])
                peak = f"{compute_roof:g} TFLOP/s"
                if compute_roof != spec.peak_tflops(floor["dtype"]):
                    peak += (f" (three split products: a third of fp16's {spec.peak_fp16_tflops:g} or TF32's "
                             f"{spec.peak_tf32_tflops:g}; FMA {spec.peak_fp32_tflops:g})")
            except ValueError:
                ridge, peak = None, "unknown"
            lines.append(
                f"- {spec.key}: {spec.memory_bandwidth_gbs:g} GB/s, {floor['dtype']} peak {peak}, "
                f"ridge point {_num(ridge, ' FLOP/byte')}"
            )
    if roof:
        at_size = "" if on_gpu else " at the interpreter's size"
        lines.append(
            f"- Bottleneck: {roof['bottleneck']}-bound{at_size} "
            f"(judged from {ROOFLINE_SOURCES.get(roof['source'], roof['source'])})"
        )
        if on_gpu:
            lines += [
                f"- Efficiency: {_num(roof.get('efficiency_pct'), '%')}; compute SOL "
                f"{_num(roof.get('compute_sol_pct'), '%')}, memory SOL {_num(roof.get('memory_sol_pct'), '%')}",
                f"- Floor time: {_num(roof.get('floor_time_ms'), ' ms')}; "
                f"achieved {_num(roof.get('achieved_gbs'), ' GB/s')}, {_num(roof.get('achieved_tflops'), ' TFLOP/s')}",
            ]
        lines += [f"- Warning: {w}" for w in roofline_notes(summary)]
    if not floor and not roof:
        lines.append("No roofline: the run ended before the problem's floor was measured.")
    if has_plot:
        caption = "roofline" if on_gpu else "time per attempt"
        lines += ["", f"![{caption}]({ROOFLINE_PNG})"]
    return [*lines, ""]


def _cell(text: str | None, limit: int = 120) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _attempts_section(summary: RunSummary) -> list[str]:
    attempts = summary.attempts
    lines = [f"## Attempts ({len(attempts)})", ""]
    if not attempts:
        return [*lines, "None.", ""]
    lines += [
        "| round | repair | diagnosis | change | outcome | time (ms) | vs best before | kernel | error |",
        "|---:|---:|---|---|---|---:|---:|---|---|",
    ]
    diagnoses = summary.diagnoses
    for a in attempts:
        words = outcome_words(a["outcome"], a["round"])
        outcome = f"**{words}** (new best)" if a.get("new_best") and a["round"] else words
        outcome += f" (on {a['where']})" if a.get("where") else ""
        outcome = f"duplicate of `{Path(a['duplicate_of']).name}`" if a.get("duplicate_of") else outcome
        kernel = f"`{Path(a['kernel_path']).name}`" if a.get("kernel_path") else "-"
        detail = verdict_detail(a.get("error"), a.get("rule"), a["outcome"])
        error = f"[{a['rule']}] {detail}" if a.get("rule") else detail
        speedup = _num(a["speedup_vs_best"], "x", 3) if a.get("speedup_vs_best") else "-"
        lines.append(
            f"| {a['round']} | {a['repair']} | {_cell(diagnoses.get(str(a['round'])), 60) or '-'} "
            f"| {_cell(a.get('change'), 60)} | {outcome} | {_ms(a.get('time_ms'))} "
            f"| {speedup} | {kernel} | {_cell(error)} |"
        )
    return [*lines, "", *_duplicates_note(summary)]


def _duplicates_note(summary: RunSummary) -> list[str]:
    """The line on duplicates removed: candidates whose compiled kernels had already been timed."""
    found = summary.duplicates or duplicates(summary.attempts)
    if not found:
        return []
    pairs = ", ".join(f"`{Path(d['kernel_path']).name}` = `{Path(d['duplicate_of']).name}`" for d in found)
    return [f"Duplicates removed: {len(found)} (the same Triton IR and launch configuration as a kernel already "
            f"timed: checked for correctness, not timed again; the time shown is the original's): {pairs}", ""]
