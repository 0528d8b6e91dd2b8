"""The curated optimization patterns that ship with kernelopt (patterns/*.md), and which fit a diagnosis.

A pattern file opens with TOML front matter between `+++` lines (id, title, the judger's
bottleneck categories it answers, the kernel families and GPU architectures it applies to,
when it applies, words a diagnosis may use for it); its body has `## Change`, `## Before` and
`## After` sections, the last two a small Triton example each.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PATTERNS_DIR = Path(__file__).parent / "patterns"
ANY = "any"  # a pattern for every family (or every architecture)

# The families of offline/moves/family.py, by the class of kernel a pattern is written for.
KERNEL_CLASSES = {
    "softmax": "rows", "log_softmax": "rows", "row_l1_norm": "rows", "row_l2_norm": "rows",
    "row_rms_norm": "rows", "standardize": "rows", "matmul": "matmul", "pooling": "pooling",
    "elementwise": "elementwise",
}
# hardware/specs.py architectures, by the generation whose features (TMA, wgmma, tcgen05) they have
ARCHITECTURES = {"Ampere": "Ampere", "Ada Lovelace": "Ampere", "Hopper": "Hopper", "Blackwell": "Blackwell"}
GENERATIONS = ("Ampere", "Hopper", "Blackwell")


@dataclass(frozen=True)
class Pattern:
    """One curated optimization pattern."""

    id: str
    title: str
    bottlenecks: tuple[str, ...]  # the judger's categories it answers
    families: tuple[str, ...]  # family names, kernel classes ("rows", "matmul", ...) or "any"
    architectures: tuple[str, ...]  # "Ampere", "Hopper", "Blackwell"
    when: str
    keywords: tuple[str, ...]
    change: str
    before: str  # Triton source, without its fence
    after: str
    path: str

    def fits_family(self, family: str) -> bool:
        """Whether the pattern is written for `family` (or its class, or every family)."""
        return bool({ANY, family, KERNEL_CLASSES.get(family, "other")} & set(self.families))

    def fits_architecture(self, architecture: str) -> bool:
        """Whether the pattern applies on `architecture` (an unknown one: every pattern may)."""
        generation = ARCHITECTURES.get(architecture)
        return generation is None or ANY in self.architectures or generation in self.architectures


def _section(body: str, heading: str) -> str:
    match = re.search(rf"^## {heading}\n(.*?)(?=^## |\Z)", body, re.MULTILINE | re.DOTALL)
    return match.group(1).strip() if match else ""


def _code(section: str) -> str:
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    return match.group(1).rstrip() if match else ""


def parse_pattern(text: str, path: str) -> Pattern:
    """The pattern a file's text holds; ValueError saying what is missing."""
    parts = text.split("+++\n", 2)
    if len(parts) != 3 or parts[0].strip():
        raise ValueError(f"{path}: a pattern file opens with TOML front matter between +++ lines")
    meta = tomllib.loads(parts[1])
    body = parts[2]
    missing = [k for k in ("id", "title", "bottlenecks", "families", "architectures", "when") if k not in meta]
    sections = {name: _section(body, name) for name in ("Change", "Before", "After")}
    missing += [f"## {name}" for name, text_ in sections.items() if not text_]
    if missing:
        raise ValueError(f"{path}: the pattern lacks {', '.join(missing)}; see another file of {PATTERNS_DIR}")
    return Pattern(
        id=meta["id"], title=meta["title"], bottlenecks=tuple(meta["bottlenecks"]),
        families=tuple(meta["families"]), architectures=tuple(meta["architectures"]),
        when=" ".join(meta["when"].split()), keywords=tuple(meta.get("keywords", ())),
        change=sections["Change"], before=_code(sections["Before"]), after=_code(sections["After"]), path=path,
    )


@lru_cache(maxsize=1)
def load_patterns() -> tuple[Pattern, ...]:
    """Every pattern that ships with kernelopt, in file-name order."""
    return tuple(parse_pattern(p.read_text(), str(p)) for p in sorted(PATTERNS_DIR.glob("*.md")))


def find_pattern(pattern_id: str) -> Pattern | None:
    """The pattern named `pattern_id`, or None."""
    return next((p for p in load_patterns() if p.id == pattern_id), None)


def _score(pattern: Pattern, category: str, words: str, family: str) -> float:
    """How well a pattern fits, 0 when it does not: its category (or, lacking that, its own family
    and one of its words), then its family (exact before class), a pattern written for this GPU
    generation before one for all, and its words in the diagnosis."""
    hits = min(sum(1 for word in pattern.keywords if word.lower() in words), 3)
    if family in pattern.families:
        fit = 3.0
    elif KERNEL_CLASSES.get(family, "other") in pattern.families:
        fit = 2.0
    else:
        fit = 0.0
    if category not in pattern.bottlenecks and not (fit and hits):
        return 0.0
    specific = 0.0 if ANY in pattern.architectures or set(GENERATIONS) <= set(pattern.architectures) else 1.0
    return (3.0 if category in pattern.bottlenecks else 0.0) + fit + specific + hits


def select_patterns(
    category: str, text: str, family: str, architecture: str, limit: int = 3,
    patterns: Iterable[Pattern] | None = None,
) -> list[Pattern]:
    """The `limit` patterns that fit a diagnosis best: its category and words (`text`), the problem's
    family and the GPU's architecture; a pattern for another family or architecture never."""
    words = text.lower()
    fitting = [p for p in (patterns or load_patterns()) if p.fits_family(family) and p.fits_architecture(architecture)]
    scored = [(_score(p, category, words, family), i, p) for i, p in enumerate(fitting)]
    return [p for s, _, p in sorted(scored, key=lambda t: (-t[0], t[1])) if s > 0][:limit]
