"""Kernels compiled for an H200 (sm_90) on this host: ptxas is in Triton's wheel, no GPU is needed.

The compiles run in one child process per test process, started at the first and kept: a kernel file's
`@triton.jit` must make a JITFunction, which it does not where TRITON_INTERPRET is set (as in the tests), and a
child per compile paid 3-4 s of imports (torch, Triton) for each. The child loads each kernel file afresh (a
module of its own, so a file rewritten between compiles is read again) and answers one JSON line per job. A job
that fails answers its traceback; a child that dies or hangs is killed and the next compile starts another.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

_SERVER = r"""
import json, os, sys, traceback, warnings
replies = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # what a kernel file prints goes to the log, not into the replies
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from kernelopt.harness.problem import import_file
for count, line in enumerate(sys.stdin):
    job = json.loads(line)
    try:
        module = import_file(job["path"], f"sm90_kernel_{count}")  # from its text: never a stale __pycache__ file
        fixed = {k: getattr(tl, v[3:]) if isinstance(v, str) and v.startswith("tl.") else v
                 for k, v in job["fixed"].items()}
        attrs = None if job["attrs"] is None else {tuple(key): value for key, value in job["attrs"]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = triton.compiler.ASTSource(getattr(module, job["name"]), job["signature"], fixed, attrs)
            kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=job["options"])
        reply = {"asm": {name: kernel.asm[name] for name in job["asm"]}}
    except Exception:
        reply = {"error": traceback.format_exc()}
    replies.write(json.dumps(reply) + "\n")
    replies.flush()
"""

_LOCK = threading.Lock()
_child: subprocess.Popen[str] | None = None
_log: Any = None


def _start() -> subprocess.Popen[str]:
    global _child, _log
    if _child is None or _child.poll() is not None:
        if _log is not None:
            _log.close()  # a dead child's log: read into its failure already
        _log = tempfile.TemporaryFile(mode="w+")
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        _child = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=_log, text=True, env=env)
    return _child


def _stop() -> None:
    global _child
    if _child is not None:
        _child.kill()
        _child.wait()
        _child = None


atexit.register(_stop)


def _log_tail() -> str:
    _log.seek(0)
    return _log.read()[-2000:]


def compile_sm90(path: str | Path, name: str, signature: dict[str, str], fixed: dict[str, Any],
                 asm: tuple[str, ...] = ("ptx",), options: dict[str, Any] | None = None,
                 attrs: dict[tuple[int, ...], Any] | None = None, timeout: float = 300) -> dict[str, str]:
    """Triton's `asm` texts ("ptx", "ttgir", ...) of kernel `name` of the file at `path`, compiled for sm_90 at
    `signature` with `fixed` constexprs ("tl.float32" for a dtype), `options` (num_warps ...) and `attrs`."""
    job = {"path": str(path), "name": name, "signature": signature, "fixed": fixed, "asm": list(asm),
           "options": options or {}, "attrs": None if attrs is None else [[list(k), v] for k, v in attrs.items()]}
    with _LOCK:
        child = _start()
        child.stdin.write(json.dumps(job) + "\n")
        child.stdin.flush()
        ready, _, _ = select.select([child.stdout], [], [], timeout)
        line = child.stdout.readline() if ready else ""
        if not line:
            _stop()
            raise AssertionError(f"the sm_90 compiler {'hung' if not ready else 'died'} on {name}:\n{_log_tail()}")
    reply = json.loads(line)
    assert "error" not in reply, reply.get("error", "")[-2000:]
    return reply["asm"]
