"""The one error the compiler seed raises (a sentence a person reads, saying what to do), and the
word that starts its waiting child."""

from __future__ import annotations

GO = "go"  # the line a seed's child started with --wait reads on its stdin before it uses the GPU
WHAT_TO_DO = "give a starting kernel with --kernel, or a model with --model so the LLM writes one"


class SeedError(Exception):
    """The compiler seed could not be made; the message says why, in one line. `stages_s`: where the
    failed making took its time, when a child process reported it (obtain.CompilerSeed.stages_s)."""

    def __init__(self, message: str, stages_s: dict[str, float] | None = None) -> None:
        super().__init__(message)
        self.stages_s = stages_s
