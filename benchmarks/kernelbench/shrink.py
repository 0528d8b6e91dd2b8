"""Small copies of the KernelBench problems, for checking kernels on a CPU under Triton's interpreter.

    python3 benchmarks/kernelbench/shrink.py /tmp/small            # every problem of both levels
    python3 benchmarks/kernelbench/shrink.py /tmp/small problems/23_Softmax.py

Level-1 copies land in OUT/, level-2 copies in OUT/level2/, under their own file names. Only the
module-level sizes change (the Model, get_inputs and get_init_inputs are untouched): every int, or
int tuple, written as a constant expression (`M = 1024 * 2`, `input_shape = (32768,)`) whose value
is over 64 becomes small. Equal values stay equal (a square matrix stays square, HingeLoss's targets
keep the length of a prediction row); a batch size becomes 3 unless a shape tuple repeats it, the
other values, in order of first appearance, 37, 45, 53, ... (odd, so that no block size divides
them). Other values up to 64 (kernel sizes, strides, group counts, 64 features) are kept, so the
relations a module needs between its arguments hold.
"""

import ast
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEPT_MAX = 64
BATCH_SIZE = 3
SMALL_SIZES = (37, 45, 53, 29, 61, 23, 41)


def _constant(node: ast.expr) -> int | tuple[int, ...] | None:
    """The value of an int or int-tuple constant expression, or None for anything else."""
    if any(isinstance(n, ast.Name | ast.Call | ast.Attribute) for n in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<size>", "eval"), {"__builtins__": {}})
    except Exception:
        return None
    if type(value) is int or (type(value) is tuple and value and all(type(v) is int for v in value)):
        return value
    return None


def _sizes(tree: ast.Module) -> list[tuple[list[str], ast.expr, int | tuple[int, ...]]]:
    """The module-level size assignments: (names, value node, value)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            value = _constant(node.value)
            if value is not None:
                found.append(([t.id for t in node.targets], node.value, value))  # type: ignore[union-attr]
    return found


def small_mapping(sizes: list[tuple[list[str], ast.expr, int | tuple[int, ...]]],
                  small: tuple[int, ...] = SMALL_SIZES) -> dict[int, int]:
    """Each size value over KEPT_MAX that is not a batch size -> its small value (`small`'s, in turn)."""
    other: list[int] = []
    for names, _, value in sizes:
        if isinstance(value, int) and _is_batch(names, value, sizes):
            continue
        for v in value if isinstance(value, tuple) else (value,):
            if v > KEPT_MAX and v not in other:
                other.append(v)
    return {v: small[i % len(small)] for i, v in enumerate(other)}


def _is_batch(names: list[str], value: int, sizes: list[tuple[list[str], ast.expr, int | tuple[int, ...]]]) -> bool:
    """A batch size becomes BATCH_SIZE even where it equals a feature count by chance, but not where
    a shape tuple repeats it (HingeLoss broadcasts its targets along a prediction row)."""
    in_tuples = {v for _, _, t in sizes if isinstance(t, tuple) for v in t}
    return any("batch" in n for n in names) and value > BATCH_SIZE and value not in in_tuples


def shrink_source(source: str, small: tuple[int, ...] = SMALL_SIZES) -> str:
    """The problem's source with its large module-level sizes made small (`small`'s values, in turn)."""
    tree = ast.parse(source)
    sizes = _sizes(tree)
    mapping = small_mapping(sizes, small)
    lines = source.splitlines(keepends=True)
    # Replace from the bottom up so that earlier positions stay valid.
    for names, node, value in sorted(sizes, key=lambda s: (s[1].lineno, s[1].col_offset), reverse=True):
        if isinstance(value, tuple):
            new: int | tuple[int, ...] = tuple(mapping.get(v, v) for v in value)
        else:
            new = BATCH_SIZE if _is_batch(names, value, sizes) else mapping.get(value, value)
        if new == value:
            continue
        assert node.end_lineno == node.lineno and node.end_col_offset is not None, "a size spans lines"
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = line[: node.col_offset] + repr(new) + line[node.end_col_offset :]
    return "# A small copy made by benchmarks/kernelbench/shrink.py.\n" + "".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: shrink.py OUT_DIR [PROBLEM.py ...]  (no problems: every problem of both levels)")
        return 2
    out = Path(argv[0])
    files = [Path(a) for a in argv[1:]] or sorted((HERE / "problems").glob("*.py")) + sorted(
        (HERE / "level2").glob("*.py")
    )
    for path in files:
        target = out / "level2" if path.resolve().parent.name == "level2" else out
        target.mkdir(parents=True, exist_ok=True)
        (target / path.name).write_text(shrink_source(path.read_text()))
    print(f"wrote {len(files)} small problems under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
