"""Reading LLM replies: bottleneck diagnoses (JSON) and kernels (one ```python block)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelopt.records import BottleneckResult
from kernelopt.syntax import parse

CATEGORIES: tuple[str, ...] = ("memory", "compute", "latency", "occupancy", "other")

# Keyword -> category, checked in order; the first keyword found in the label wins.
_CATEGORY_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("memory", "memory"),
    ("bandwidth", "memory"),
    ("dram", "memory"),
    ("cache", "memory"),
    ("occupancy", "occupancy"),
    ("register", "occupancy"),
    ("parallelism", "occupancy"),
    ("underutiliz", "occupancy"),
    ("compute", "compute"),
    ("math", "compute"),
    ("arithmetic", "compute"),
    ("flop", "compute"),
    ("tensor", "compute"),
    ("latency", "latency"),
    ("stall", "latency"),
    ("launch", "latency"),
    ("sync", "latency"),
)

# Alternative key names LLMs use for each field, preferred name first.
_FIELD_KEYS: Mapping[str, tuple[str, ...]] = {
    "category": ("category", "type", "bottleneck_type", "kind", "bound", "bottleneck"),
    "summary": ("summary", "title", "description", "name"),
    "reasoning": ("reasoning", "analysis", "explanation", "rationale", "evidence"),
    "root_causes": ("root_causes", "causes", "root_cause", "cause"),
    "recommended_fixes": (
        "recommended_fixes",
        "fixes",
        "recommendations",
        "recommended_fix",
        "fix",
        "suggestions",
    ),
}
_FIELD_ALIASES = frozenset(alias for aliases in _FIELD_KEYS.values() for alias in aliases)
_ITEM_MAIN_KEYS = ("cause", "fix", "root_cause", "recommendation", "description", "text", "name")

_QUOTE_CHARS = 120
_CLOSER_AHEAD = re.compile(r"\s*[\]}]")


class ResponseParseError(ValueError):
    """The reply held no JSON that reads as a list of bottlenecks."""


class KernelExtractionError(ValueError):
    """The reply held no single, complete ModelNew kernel; the message is feedback for the LLM."""


def normalize_category(label: str) -> str:
    """Gives the canonical category for an LLM's label ("Memory-Bound" -> "memory")."""
    text = label.strip().lower().replace("_", " ").replace("-", " ")
    for keyword, category in _CATEGORY_KEYWORDS:
        if keyword in text:
            return category
    return "other"


def parse_bottleneck_response(text: str) -> list[BottleneckResult]:
    """Gives the bottlenecks in an LLM reply; raises ResponseParseError when there are none."""
    for data in _json_candidates(text):
        results = _to_bottlenecks(data)
        if results:
            return results
    raise ResponseParseError(
        "expected a JSON array of bottleneck objects (category, summary, reasoning, "
        f"root_causes, recommended_fixes), got a reply starting {_quote(text)}"
    )


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    if not flat:
        return "'' (empty reply)"
    if len(flat) > _QUOTE_CHARS:
        flat = flat[:_QUOTE_CHARS] + "..."
    return repr(flat)


def _json_candidates(text: str) -> Iterator[Any]:
    """Yields every JSON value the reply may mean: fenced blocks first, then the raw text."""
    for block in _fenced_blocks(text):
        value = _loads(block.code)
        if value is not None:
            yield value
    value = _loads(text)
    if value is not None:
        yield value
    cleaned = _strip_trailing_commas(text)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", cleaned):
        try:
            value, _ = decoder.raw_decode(cleaned, match.start())
        except json.JSONDecodeError:
            continue
        yield value


def _loads(text: str) -> Any:
    try:
        return json.loads(_strip_trailing_commas(text))
    except json.JSONDecodeError:
        return None


def _strip_trailing_commas(text: str) -> str:
    """Drops commas that directly precede ] or }, leaving string contents alone."""
    out: list[str] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "," and _CLOSER_AHEAD.match(text, index + 1):
            continue
        out.append(char)
    return "".join(out)


def _to_bottlenecks(data: Any) -> list[BottleneckResult]:
    """Gives the bottlenecks a decoded JSON value holds: a list, one object, or a wrapper."""
    if isinstance(data, list):
        return [r for r in (_to_bottleneck(item) for item in data) if r is not None]
    if not isinstance(data, dict):
        return []
    # A wrapper ({"overview": ..., "bottlenecks": [...]}) first: its own "summary" is no diagnosis.
    for key, value in data.items():
        if str(key).lower() not in _FIELD_ALIASES and (results := _to_bottlenecks(value)):
            return results
    single = _to_bottleneck(data)
    if single is not None:
        return [single]
    # {"bottleneck": {...}} wraps under a field's alias; looked at only when nothing else fits.
    for value in data.values():
        if isinstance(value, dict) and (results := _to_bottlenecks(value)):
            return results
    return []


def _to_bottleneck(item: Any) -> BottleneckResult | None:
    if not isinstance(item, dict):
        return None
    fields = {name: _first_present(item, keys) for name, keys in _FIELD_KEYS.items()}
    category, summary = fields["category"], fields["summary"]
    if not isinstance(category, str) and not isinstance(summary, str):
        return None
    if isinstance(category, dict | list):  # {"bottleneck": {...}} is a wrapper, not a label
        return None
    return BottleneckResult(
        category=normalize_category(category) if isinstance(category, str) else "other",
        summary=_text(summary),
        reasoning=_text(fields["reasoning"]),
        root_causes=_flatten(fields["root_causes"]),
        recommended_fixes=_flatten(fields["recommended_fixes"]),
    )


def _first_present(item: Mapping[str, Any], keys: Sequence[str]) -> Any:
    lowered = {str(key).lower(): value for key, value in item.items()}
    for key in keys:
        if lowered.get(key) is not None:
            return lowered[key]
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return " ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return _flatten_item(value)
    return str(value)


def _flatten(value: Any) -> tuple[str, ...]:
    """Gives one string per cause or fix, whether given as strings or as objects."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple(text for text in map(_text, items) if text)


def _flatten_item(item: Mapping[str, Any]) -> str:
    """{"cause": c, "evidence": e} -> "c (evidence: e)"; keeps every non-empty field."""
    main_key = next((k for k in _ITEM_MAIN_KEYS if _text(item.get(k))), None)
    main = _text(item[main_key]) if main_key else ""
    extras = [f"{key}: {_text(value)}" for key, value in item.items() if key != main_key]
    extras = [extra for extra in extras if not extra.endswith(": ")]
    if not main:
        return "; ".join(extras)
    return f"{main} ({'; '.join(extras)})" if extras else main


# --- kernels --------------------------------------------------------------------------------

_PYTHON_LANGS = frozenset({"python", "py", "python3", "py3", "", "triton"})
_MODEL_NEW = re.compile(r"^[ \t]*class[ \t]+ModelNew\b", re.MULTILINE)
_CLASS_NAME = re.compile(r"^[ \t]*class[ \t]+(\w+)", re.MULTILINE)
_CODE_LINE = re.compile(
    r"^[ \t]*(import \w|from [\w.]+ import |def \w+\(|class \w+|@triton\.)", re.MULTILINE
)
_CODE_START = re.compile(r"^(import \w|from [\w.]+ import |@|class \w|def \w)", re.MULTILINE)
_SEND_ONE = "send the complete kernel as one ```python block defining class ModelNew"


@dataclass(frozen=True)
class _Block:
    lang: str
    code: str
    line: int  # 1-based line of the opening fence in the reply
    closed: bool


def _fenced_blocks(text: str) -> list[_Block]:
    """Gives the reply's fenced blocks in order; a last unclosed one is kept with closed=False."""
    blocks: list[_Block] = []
    lang, start, body = "", 0, list[str]()
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not inside and stripped.startswith("```"):
            inside, lang, start, body = True, stripped[3:].strip().lower(), number, []
        elif inside and stripped.startswith("```"):
            blocks.append(_Block(lang, "\n".join(body), start, closed=True))
            inside = False
        elif inside:
            body.append(line)
    if inside:
        blocks.append(_Block(lang, "\n".join(body), start, closed=False))
    return blocks


def extract_kernel(text: str) -> str:
    """Gives the source of the one ModelNew kernel in a reply; raises KernelExtractionError."""
    blocks = _fenced_blocks(text)
    python = [b for b in blocks if (b.lang.split() or [""])[0] in _PYTHON_LANGS]
    candidates = _distinct([b for b in python if _MODEL_NEW.search(b.code)])
    if len(candidates) > 1:
        lines = ", ".join(str(b.line) for b in candidates)
        raise KernelExtractionError(
            f"reply holds {len(candidates)} candidate kernels (code blocks at lines {lines} "
            "each define class ModelNew); send exactly one"
        )
    if candidates:
        block = candidates[0]
        if not block.closed:
            raise KernelExtractionError(
                f"kernel is truncated: the code block opened at line {block.line} of the reply "
                f"is never closed{_syntax_note(block.code)}; {_SEND_ONE}"
            )
        _check_syntax(block.code)
        return block.code.strip("\n") + "\n"
    if not blocks:
        unfenced = _unfenced_kernel(text)
        if unfenced is not None:
            return unfenced
    code = "\n".join(b.code for b in blocks) if blocks else text
    if not blocks and not _CODE_LINE.search(text):
        raise KernelExtractionError(f"reply contains no code; {_SEND_ONE}")
    classes = list(dict.fromkeys(_CLASS_NAME.findall(code)))
    if classes:
        found = ", ".join(f"class {name}" for name in classes)
        raise KernelExtractionError(
            f"reply defines {found}, not ModelNew; name the optimized module "
            "class ModelNew(nn.Module) and send it as one ```python block"
        )
    raise KernelExtractionError(f"reply has code but no class ModelNew; {_SEND_ONE}")


def _distinct(blocks: list[_Block]) -> list[_Block]:
    seen: dict[str, _Block] = {}
    for block in blocks:
        seen.setdefault(block.code.strip(), block)
    return list(seen.values())


def _unfenced_kernel(text: str) -> str | None:
    """Gives an unfenced reply's code when it is Python defining ModelNew (prose may lead)."""
    if not _MODEL_NEW.search(text):
        return None
    code = text
    if _syntax_note(text):  # maybe prose leads: try again from the first line of code
        start = _CODE_START.search(text)
        code = text[start.start() :] if start else text
    _check_syntax(code)
    return code.strip("\n") + "\n"


def _check_syntax(code: str) -> None:
    note = _syntax_note(code)
    if note:
        raise KernelExtractionError(
            f"kernel does not parse{note} (was the reply cut off?); {_SEND_ONE}"
        )


def _syntax_note(code: str) -> str:
    """Gives ': SyntaxError at line N (...)' for code that does not parse, else ''."""
    try:
        parse(code)
    except SyntaxError as error:
        line = (error.text or "").strip()
        where = f"line {error.lineno} of the kernel" + (f" ({line!r})" if line else "")
        return f": SyntaxError at {where}: {error.msg}"
    return ""
