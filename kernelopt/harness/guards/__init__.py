"""The static guards: what a kernel file may contain, checked before anything of it runs.

checker.py walks the file (rules.py holds the tables it reads); forward.py follows what
`ModelNew.forward` reaches; file.py holds the whole-file rules. base.py says what the last two
need of the checker, so that nothing here imports in a circle.
"""

from kernelopt.harness.guards.checker import (
    Violation,
    check_kernel_source,
    first_violation,
    first_violation_line,
    format_violation,
)

__all__ = ["Violation", "check_kernel_source", "first_violation", "first_violation_line", "format_violation"]
