"""Runtime defences for the worker process that runs an untrusted candidate kernel.

Three layers, each for what the static guards cannot see:
- the parent starts the worker with `scrubbed_env()` (no API keys to read: Python raises no
  audit event when `os.environ` is read, so the environment itself must hold nothing secret)
  and `limit_resources()` as its preexec_fn, and polls `rss_bytes()`;
- the worker calls `install_audit_guard()` before importing the candidate: a permanent
  `sys.addaudithook` hook that refuses process, network, ctypes, frame-introspection and
  out-of-work-dir file events whenever the code asking is the candidate's.

"The candidate's" means: walking the stack from the innermost frame outwards, past the standard
library and generated code (`<string>`), the first frame reached belongs to a candidate file or
to a file under the work dir. Libraries (torch, triton compiling with ptxas, ...) keep working
because their own frame is reached first. The price: a candidate that asks a library to do the
forbidden thing for it is not stopped here; the static guards forbid those entry points
(torch.save, torch.hub, triton.testing, ...).
"""

import _thread
import functools
import os
import resource
import sys
import sysconfig
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

_ALLOWED_ENV_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "TMPDIR",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "LD_LIBRARY_PATH",
        "XDG_CACHE_HOME",
        "USER",
        "TZ",
    }
)
_ALLOWED_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH", "OMP_", "MKL_")
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")

# Refused whenever the candidate asks, whatever the arguments.
_DENIED_EVENTS = frozenset(
    {
        "os.system",
        "subprocess.Popen",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "os.putenv",
        "os.unsetenv",
        "os.chdir",
        "socket.__new__",
        "socket.connect",
        "socket.bind",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sendto",
        "socket.sendmsg",
        "urllib.Request",
        "http.client.connect",
        "_thread.start_new_thread",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "exec",
        "compile",
        "code.__new__",
        "function.__new__",
        "builtins.input",
        "webbrowser.open",
    }
)
# Refused when a path argument lies outside the work dir.
_PATH_EVENTS = frozenset(
    {
        "open",
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.mkdir",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.link",
        "os.symlink",
        "os.utime",
        "os.listdir",
        "os.scandir",
        "glob.glob",
        "shutil.copyfile",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.copytree",
        "shutil.rmtree",
        "shutil.move",
        "shutil.chown",
        "shutil.make_archive",
        "shutil.unpack_archive",
    }
)
# Attributes that hand out frames: from a frame, f_back and f_locals reach the verifier's data.
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
# Standard-library modules that fetch frames on their caller's behalf and hand them over.
_FRAME_LEAKING_STDLIB = ("inspect.py", "traceback.py")
_IMPORT_MACHINERY = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
_STDLIB_DIRS = tuple({os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
_THIS_FILE = os.path.realpath(__file__)
def is_stdlib_file(path: str) -> bool:
    """Whether `path` (links resolved) is a standard-library file, not an installed package's."""
    return path.startswith(_STDLIB_DIRS) and "-packages" + os.sep not in path


@functools.cache
def triton_dirs() -> tuple[str, ...]:
    """Triton's package folder, as its files name it and with links resolved (imported on first
    use: the parent that only starts workers needs no Triton)."""
    import triton

    return tuple({os.path.dirname(fix(triton.__file__)) + os.sep for fix in (os.path.realpath, os.path.abspath)})


_KERNELOPT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(_THIS_FILE))) + os.sep  # kernelopt/
_WRITE_EVENTS = frozenset(
    {"open", "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown", "os.link",
     "os.symlink", "os.utime", "shutil.copyfile", "shutil.copytree", "shutil.rmtree", "shutil.move"}
)
_PROCESS_EVENTS = frozenset(
    {"os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"}
)
# Installed code (stdlib, site-packages) may be read: linecache does so for warnings.
_READABLE_DIRS = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix)})


def scrubbed_env(base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the worker's environment: allow-listed names of `base` (default os.environ) and
    `extra`, minus any whose name looks secret (KEY, TOKEN, SECRET, PASSWORD, ...)."""
    source = dict(os.environ if base is None else base)
    source.update(extra or {})
    return {
        name: value
        for name, value in source.items()
        if (name in _ALLOWED_ENV_NAMES or name.startswith(_ALLOWED_ENV_PREFIXES))
        and not any(marker in name.upper() for marker in _SECRET_MARKERS)
    }


def limit_resources(mem_bytes: int | None, cpu_seconds: int | None) -> Callable[[], None]:
    """Return a subprocess preexec_fn that caps address space and CPU time and disables cores.

    Pass `mem_bytes=None` when the worker will use CUDA: the driver reserves address ranges far
    larger than any real use (tens of GiB of virtual memory at init), so RLIMIT_AS would kill
    every honest GPU run. The parent then enforces the cap on resident memory (`rss_bytes`).
    """

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if mem_bytes is not None:
            capped = host_memory_cap(mem_bytes)  # never above a hard limit the shell set: raising it is refused
            resource.setrlimit(resource.RLIMIT_AS, (capped, capped))
        if cpu_seconds is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))

    return apply


def host_memory_cap(requested_bytes: int, say: bool = False) -> int:
    """The lower of `requested_bytes` and this process's hard address-space limit (a shell's
    `ulimit -v`, common on shared and HPC nodes), which no child may raise; with `say`, a lower
    cap is said once on stderr."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = requested_bytes if hard == resource.RLIM_INFINITY else min(requested_bytes, hard)
    if say and cap < requested_bytes and cap not in _SAID_CAPS:
        _SAID_CAPS.add(cap)
        print(
            f"kernelopt: candidates get {cap / 2**30:.1f} GiB of host memory, not the {requested_bytes / 2**30:.1f} "
            "GiB asked for: this shell's hard limit (ulimit -v) is lower and cannot be raised",
            file=sys.stderr,
            flush=True,
        )
    return cap


_SAID_CAPS: set[int] = set()


def rss_bytes(pid: int) -> int:
    """Return the resident memory of process `pid` in bytes (0 once it has exited)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


class _AuditGuard:
    """The state behind the audit hook: which files are the candidate's, and the work dir."""

    def __init__(self, candidate_files: set[str], work_dir: str, secret_dirs: tuple[str, ...] = ()) -> None:
        self.candidate_files = frozenset(os.path.realpath(f) for f in candidate_files)
        self.work_dir = os.path.realpath(work_dir)
        self.secret_dirs = tuple(os.path.realpath(d) + os.sep for d in secret_dirs)
        self.busy = threading.local()
        self.kinds: dict[str, str] = {}

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.watches(event, args) or getattr(self.busy, "active", False):
            return
        self.busy.active = True  # the walk itself raises audit events (frame attribute reads)
        try:
            reason = self.refusal(event, args, sys._getframe(1))
        finally:
            self.busy.active = False
        if reason:
            raise PermissionError(f"sandbox: the kernel may not {reason} (audit event {event})")

    def watches(self, event: str, args: tuple[Any, ...]) -> bool:
        if event in _DENIED_EVENTS or event in _PATH_EVENTS or event.startswith("ctypes."):
            return True
        if event == "object.__getattr__":
            return len(args) > 1 and args[1] in _FRAME_ATTRS
        return event in ("sys._getframe", "object.__setattr__")

    def is_candidate(self, filename: str) -> bool:
        return filename in self.candidate_files or filename.startswith(self.work_dir + os.sep)

    def kind(self, filename: str) -> str:
        """Return candidate, stdlib (skipped when walking the stack) or library for a file."""
        kind = self.kinds.get(filename)
        if kind is None:
            real = os.path.realpath(filename)
            if self.is_candidate(real):
                kind = "candidate"
            elif real == _THIS_FILE or is_stdlib_file(real):
                kind = "stdlib"
            else:
                kind = "library"
            self.kinds[filename] = kind
        return kind

    def owner(self, frame: FrameType | None) -> tuple[str, str]:
        """Return who asked (candidate, library or import) and the direct caller's file."""
        direct = frame.f_code.co_filename if frame else ""
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename in _IMPORT_MACHINERY:
                return "import", direct
            # Generated code (<string>, dataclass methods) acts for whoever called it.
            kind = "stdlib" if filename.startswith("<") else self.kind(filename)
            if kind != "stdlib":
                return kind, direct
            frame = frame.f_back
        return "library", direct

    def refusal(self, event: str, args: tuple[Any, ...], frame: FrameType) -> str | None:
        """Return what the candidate tried to do when the event must be refused, else None."""
        if event in _PATH_EVENTS and self.secret_dirs:
            # The verifier's seeds and expected outputs: nobody in this process reads them, so an
            # open from any frame (torch.load called by the kernel, say) is the kernel's doing.
            for arg in args[:1] if event == "open" else args:
                if isinstance(arg, str | bytes | os.PathLike):
                    path = os.path.realpath(os.fsdecode(arg))
                    if (path + os.sep).startswith(self.secret_dirs):
                        return f"open {path}: the verifier's private files are not the kernel's to read"
        who, direct = self.owner(frame)
        if who == "library" and self.library_file(frame).startswith((*triton_dirs(), _KERNELOPT_DIR)):
            return None  # Triton compiling (ptxas) and caching its kernels; the harness itself
        # A library the candidate drove (torch's helpers, say) may not start processes or write
        # outside the work dir either: nothing in the candidate's process needs to.
        if who == "library" and event in _PROCESS_EVENTS:
            return "start a process through a library"
        if who == "library" and event in _WRITE_EVENTS and self.writes_outside(event, args):
            return "write outside its work dir through a library"
        if who != "candidate":
            return None
        if event == "sys._getframe":
            leaks = self.kind(direct) == "candidate" or direct.endswith(_FRAME_LEAKING_STDLIB)
            return "inspect stack frames" if leaks else None
        if event == "object.__getattr__":
            return f"read .{args[1]} (stack frames)"
        if event == "object.__setattr__":
            return self.patch_refusal(args)
        if event in _PATH_EVENTS:
            return self.path_refusal(event, args)
        if event.startswith("ctypes."):
            return "use ctypes"
        return f"call {event}"

    def library_file(self, frame: FrameType | None) -> str:
        """The file of the nearest caller outside the standard library (and this file)."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith("<") and self.kind(filename) != "stdlib":
                return os.path.realpath(filename)
            frame = frame.f_back
        return ""

    def writes_outside(self, event: str, args: tuple[Any, ...]) -> bool:
        if event == "open" and not _opens_for_writing(args):
            return False
        for arg in args[:1] if event == "open" else args:
            if isinstance(arg, str | bytes | os.PathLike):
                path = os.path.realpath(os.fsdecode(arg))
                if not (path == self.work_dir or path.startswith(self.work_dir + os.sep)):
                    return True
        return False

    def patch_refusal(self, args: tuple[Any, ...]) -> str | None:
        target, name = args[0], args[1]
        if name == "__code__":
            return "replace a function's __code__"
        if isinstance(target, type):
            module = sys.modules.get(getattr(target, "__module__", ""), None)
            if not self.is_candidate(os.path.realpath(getattr(module, "__file__", "") or "")):
                return f"patch {target.__module__}.{target.__qualname__}.{name}"
        return None

    def path_refusal(self, event: str, args: tuple[Any, ...]) -> str | None:
        reading = event == "open" and not _opens_for_writing(args)
        for arg in args[:1] if event == "open" else args:
            if not isinstance(arg, str | bytes | os.PathLike):
                continue
            path = os.path.realpath(os.fsdecode(arg))
            if path == self.work_dir or path.startswith(self.work_dir + os.sep):
                continue
            if reading and (path in self.candidate_files or path.startswith(_READABLE_DIRS)):
                continue
            verb = "write" if event == "open" and not reading else event.split(".")[-1]
            return f"{verb} {path} outside its work dir {self.work_dir}"
        return None


def _opens_for_writing(args: tuple[Any, ...]) -> bool:
    """Return whether an `open` audit event (path, mode, flags) asks for write access."""
    mode, flags = (args + (None, None))[1:3]
    if isinstance(mode, str):
        return bool(set(mode) & set("wax+"))
    writing = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    return isinstance(flags, int) and bool(flags & writing)


def install_audit_guard(candidate_files: set[str], work_dir: str, secret_dirs: tuple[str, ...] = ()) -> None:
    """Install, for the rest of this process, a hook refusing dangerous events the candidate
    raises (PermissionError naming the event), and every access under `secret_dirs`, whoever
    asks. Call it before importing the candidate."""
    guard = _AuditGuard(candidate_files, work_dir, secret_dirs)
    sys.addaudithook(guard)
    _guard_thread_start(guard)


def _guard_thread_start(guard: _AuditGuard) -> None:
    """Refuse thread starts from the candidate: CPython raises no audit event for them before
    3.13, so the starter itself is wrapped (threading keeps its own reference to it)."""
    original = _thread.start_new_thread

    def start_new_thread(
        function: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
    ) -> int:
        guard("_thread.start_new_thread", (function, args, kwargs))
        return original(function, args, kwargs or {})

    _thread.start_new_thread = start_new_thread  # type: ignore[assignment]
    if hasattr(threading, "_start_new_thread"):
        threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]
