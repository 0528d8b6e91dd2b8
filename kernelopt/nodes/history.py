"""What the prompts recall of the run: the last attempts, and the lessons of finished rounds.

Shared by the judger and the optimizer, which both put the run's history in their prompts.
"""

from __future__ import annotations

from pathlib import Path

from kernelopt.prompts import AttemptNote
from kernelopt.records import Attempt, one_line

HISTORY_SIZE = 6  # the last attempts the prompts recall
LESSONS_SIZE = 6  # changes listed under each of "avoid" and "prioritise"


def attempt_notes(attempts: list[Attempt], limit: int = HISTORY_SIZE) -> tuple[AttemptNote, ...]:
    """The last attempts as the prompts recall them."""
    known = {"faster", "within_noise", "outpaced", "slower", "duplicate", "incorrect"}
    return tuple(
        AttemptNote(a.round, a.outcome if a.outcome in known else "failed", a.time_ms, a.change,  # type: ignore[arg-type]
                    a.error or _same_code(a))
        for a in attempts[-limit:]
    )


def _same_code(a: Attempt) -> str | None:
    """What a duplicate tells the LLM: its rewrite changed only the wording, not the compiled kernel."""
    if not a.duplicate_of:
        return None
    return (f"compiles to the same Triton IR as {Path(a.duplicate_of).name} (only names, comments or layout "
            "differ): change what the kernel computes or how it is launched")


def _gain(a: Attempt) -> str:
    gain = f"{a.speedup_vs_best:.2f}x faster" if a.speedup_vs_best else "a new best"
    return gain + (f" once repaired ({a.repair} repairs)" if a.repair else "")


def _loss(a: Attempt) -> str:
    if a.error or a.duplicate_of:
        why = one_line(a.error or _same_code(a) or "", 200)
    elif a.time_ms is not None:
        why = f"{a.time_ms:.4g} ms, no faster than the best"
    else:
        why = "no kernel"
    return f"{a.outcome.replace('_', ' ')}: {why}"


def lessons(attempts: list[Attempt], before_round: int | None = None, limit: int = LESSONS_SIZE) -> str:
    """The run's lessons for a prompt: ideas to avoid (and why), ideas to build on; '' when none.

    Drawn from every finished round, not only the last attempts: an idea that failed in round 1
    should not come back in round 5. A round's idea is its first candidate's change; its repairs
    only fix that idea, so the round's verdict is its best outcome and last error.
    """
    rounds: dict[int, list[Attempt]] = {}
    for a in attempts:
        if a.round > 0 and (before_round is None or a.round < before_round):  # round 0: the starting kernel
            rounds.setdefault(a.round, []).append(a)
    avoid: dict[str, str] = {}
    prioritise: dict[str, str] = {}
    for tries in rounds.values():
        idea = one_line(tries[0].change, 200) or "(no change named)"
        won = [a for a in tries if a.new_best]
        if won:
            prioritise.pop(idea, None)
            prioritise[idea] = f"{idea}: {_gain(won[-1])}"
        else:
            avoid.pop(idea, None)
            avoid[idea] = f"{idea}: {_loss(tries[-1])}"
    if not avoid and not prioritise:
        return ""
    lines = ["LESSONS FROM THIS RUN"]
    if avoid:
        lines.append("Avoid these ideas, which failed or were no faster (or fix what went wrong with them first):")
        lines += [f"- {text}" for text in list(avoid.values())[-limit:]]
    if prioritise:
        lines.append("Prioritise ideas like these, which made the kernel faster:")
        lines += [f"- {text}" for text in list(prioritise.values())[-limit:]]
    return "\n".join(lines) + "\n"


def with_lessons(prompt: str, attempts: list[Attempt], before_round: int | None = None) -> str:
    """The prompt with the run's lessons placed before its closing task or output rules."""
    return insert_lessons(prompt, lessons(attempts, before_round))


def insert_lessons(prompt: str, text: str) -> str:
    """The prompt with `text` (lessons) placed before its closing task or output rules."""
    if not text:
        return prompt
    for heading in ("\nOUTPUT RULES\n", "\nTASK\n"):
        at = prompt.rfind(heading)
        if at >= 0:
            return f"{prompt[:at + 1]}{text}\n{prompt[at + 1:]}"
    return f"{prompt}\n{text}"
