"""One home per record: every record class of kernelopt/records.py is imported from there, never
through a module that happens to import it (the package root's lazy public names excepted)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = {n.name for n in ast.parse((ROOT / "kernelopt" / "records.py").read_text()).body
           if isinstance(n, ast.ClassDef)}


def _imports_elsewhere(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kernelopt"):
            if node.module == "kernelopt.records" or node.module == "kernelopt":  # the public API's lazy names
                continue
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {a.name} from {node.module}"
                      for a in node.names if a.name in RECORDS]
    return found


def test_records_are_imported_from_records_only() -> None:
    assert {"Attempt", "Timing", "Roofline", "FloorEstimate", "BottleneckResult", "Verdict"} <= RECORDS
    files = [p for folder in ("kernelopt", "tests", "benchmarks", "examples") for p in (ROOT / folder).rglob("*.py")
             if p.name != "kernel_syntax.py"]
    wrong = [line for path in files for line in _imports_elsewhere(path)]
    assert not wrong, "import these from kernelopt.records:\n" + "\n".join(wrong)


def test_the_public_names_of_records_load_from_records() -> None:
    import kernelopt
    from kernelopt import records

    for name in kernelopt.__all__:
        if name in RECORDS:
            assert getattr(kernelopt, name) is getattr(records, name)


def test_every_record_of_many_fields_is_keyword_only() -> None:
    import dataclasses

    from kernelopt import records

    big = [cls for cls in vars(records).values()
           if dataclasses.is_dataclass(cls) and isinstance(cls, type) and len(dataclasses.fields(cls)) > 8]
    assert {cls.__name__ for cls in big} >= {"Attempt", "Roofline", "Baselines", "Verdict"}
    assert [cls.__name__ for cls in big if not all(f.kw_only for f in dataclasses.fields(cls))] == []
