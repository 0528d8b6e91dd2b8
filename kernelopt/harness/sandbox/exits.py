"""How a job's end reads: its exit status and last output as a phrase, a phrase as a sentence."""

from __future__ import annotations

import signal
from pathlib import Path


def failure_of(subject: str, failure: str) -> str:
    """A job's failure as one sentence about `subject` ("the candidate"): "the candidate's process
    crashed with SIGSEGV", "the candidate timed out in case 1/7 after 9 s"."""
    process = "the process "
    if failure.startswith(process):
        return f"{subject}'s process {failure[len(process):]}"
    return f"{subject} {failure}"


def describe_exit(returncode: int | None, log_path: Path) -> str:
    """The way a job's process ended, with its log's last line: "the process crashed with SIGSEGV ..."."""
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        text = ""
    tail = [line for line in text.splitlines() if line.strip()][-1:]
    last = f"; last output: {tail[0][:200]}" if tail else ""
    if returncode is None:
        return f"the process vanished with the fork server{last}"
    if returncode < 0:
        name = signal.Signals(-returncode).name
        hint = {"SIGKILL": " (out of memory?)", "SIGSEGV": " (an out-of-bounds access?)"}.get(name, "")
        return f"the process crashed with {name}{hint}{last}"
    if returncode == 137:
        return f"the process was killed (out of memory?){last}"
    return f"the process exited with status {returncode} before reporting{last}"
