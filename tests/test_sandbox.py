"""Runtime sandbox: scrubbed environment, resource limits, RSS watch and the audit guard.

Audit hooks cannot be removed, so every audit-guard test runs in a fresh subprocess.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelopt.harness.sandbox.audit import limit_resources, rss_bytes, scrubbed_env


def test_scrubbed_env_keeps_allow_list_and_drops_secrets() -> None:
    base = {
        "PATH": "/usr/bin",
        "HOME": "/home/k",
        "LC_ALL": "C.UTF-8",
        "CUDA_VISIBLE_DEVICES": "0",
        "TRITON_CACHE_DIR": "/tmp/t",
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/i",
        "OPENAI_API_KEY": "sk-1",
        "TRITON_AUTH_TOKEN": "t",
        "CUDA_SECRET": "s",
        "AWS_SECRET_ACCESS_KEY": "a",
        "HF_TOKEN": "h",
        "DATABASE_PASSWORD": "p",
        "FOO": "bar",
    }
    env = scrubbed_env(base, extra={"TRITON_INTERPRET": "1", "MY_API_KEY": "x"})
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/k",
        "LC_ALL": "C.UTF-8",
        "CUDA_VISIBLE_DEVICES": "0",
        "TRITON_CACHE_DIR": "/tmp/t",
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/i",
        "TRITON_INTERPRET": "1",
    }


def test_scrubbed_env_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    env = scrubbed_env()
    assert "OPENAI_API_KEY" not in env and env.get("PATH") == os.environ["PATH"]


def test_limit_resources_caps_memory_and_disables_cores() -> None:
    code = (
        "import resource\n"
        "print(resource.getrlimit(resource.RLIMIT_CORE)[0], "
        "resource.getrlimit(resource.RLIMIT_CPU)[0])\n"
        "try:\n    bytearray(2 << 30)\nexcept MemoryError:\n    print('MemoryError')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit_resources(1 << 30, 30),
    )
    assert result.stdout.split() == ["0", "30", "MemoryError"]


def test_rss_bytes_reads_resident_memory_and_zero_after_exit() -> None:
    assert rss_bytes(os.getpid()) > 10 << 20
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    assert rss_bytes(child.pid) == 0


def test_runner_kills_a_worker_over_its_resident_memory_cap(tmp_path: Path) -> None:
    """Where no address-space limit applies (CUDA workers), the parent's RSS watch stops it."""
    from kernelopt.harness.sandbox.runner import PhaseLimits, WorkerLimits
    from kernelopt.harness.verify import HarnessSettings, Verifier

    cheats = Path(__file__).parent / "cheats"
    verifier = Verifier(cheats / "problem_add.py", tmp_path / "work", HarnessSettings(seeds=1, time_compile=False))
    # 4 GiB filled with ones: within what the machine can give, four times the cap.
    hungry = tmp_path / "hungry.py"
    hungry.write_text(
        (cheats / "cheat_huge_alloc.py").read_text().replace("1 << 36", "1 << 32").replace("zeros", "ones")
    )
    # No RLIMIT_AS, as for a GPU worker: only the parent's watch on resident memory stops it.
    limits = WorkerLimits(PhaseLimits.uniform(60), mem_limit_bytes=1 << 30, cap_address_space=False)
    outcome, _ = verifier.run_candidate(hungry, time=False, limits=limits)
    assert outcome.result is None
    assert outcome.failure is not None and "more than 1.0 GiB of host memory" in outcome.failure


_CANDIDATE = """
import os
import socket
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def launch():
    x, y = torch.arange(100.0), torch.ones(100)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(100, 64),)](x, y, out, 100, BLOCK=64)
    return bool(torch.equal(out, x + 1))


def write(path):
    with open(path, "w") as f:
        f.write("x")
    return True


def read(path):
    with open(path) as f:
        return len(f.read()) >= 0


def system():
    return os.system("true")


def connect():
    with socket.socket() as s:
        s.connect(("127.0.0.1", 9))


def getframe():
    return sys._getframe(1).f_locals


def traceback_frame():
    try:
        raise ValueError
    except ValueError as err:
        return err.__traceback__.tb_frame.f_back


def ctypes_read():
    import ctypes
    return ctypes.string_at(id(1), 8)


def thread():
    import threading
    threading.Thread(target=print).start()


def run_exec():
    exec("1 + 1")


def putenv():
    os.environ["LEAK"] = "1"


def remove(path):
    os.remove(path)


def library_write(path):
    import numpy
    numpy.save(path, numpy.zeros(1))  # the open() happens in numpy's frame, not this one
    return True


def import_new_module():
    import colorsys
    return colorsys.rgb_to_hsv(1, 0, 0)[2] == 1
"""

_DRIVER = """
import importlib.util, json, sys
from kernelopt.harness.sandbox.audit import install_audit_guard

candidate_path, work_dir, outside = sys.argv[1:4]
install_audit_guard({candidate_path}, work_dir)
spec = importlib.util.spec_from_file_location("candidate", candidate_path)
candidate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(candidate)
calls = {
    "launch": (candidate.launch,),
    "write_inside": (candidate.write, work_dir + "/out.txt"),
    "write_outside": (candidate.write, outside + "/stolen.txt"),
    "read_outside": (candidate.read, outside + "/secret.txt"),
    "read_proc_parent_environ": (candidate.read, "/proc/1/environ"),
    "system": (candidate.system,),
    "connect": (candidate.connect,),
    "getframe": (candidate.getframe,),
    "traceback_frame": (candidate.traceback_frame,),
    "ctypes": (candidate.ctypes_read,),
    "thread": (candidate.thread,),
    "exec": (candidate.run_exec,),
    "putenv": (candidate.putenv,),
    "remove_outside": (candidate.remove, outside + "/secret.txt"),
    "library_write_outside": (candidate.library_write, outside + "/lib.npy"),
    "library_write_inside": (candidate.library_write, work_dir + "/lib.npy"),
    "import_new_module": (candidate.import_new_module,),
}
results = {}
for name, (fn, *args) in calls.items():
    try:
        results[name] = "ok:" + repr(fn(*args))
    except PermissionError as err:
        results[name] = "denied:" + str(err)
    except Exception as err:
        results[name] = "error:" + type(err).__name__
# The harness itself (not candidate code) still writes its results.
with open(work_dir + "/harness.txt", "w") as f:
    f.write("ok")
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def audit_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("audit")
    work_dir, outside = root / "work", root / "outside"
    work_dir.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("expected outputs")
    candidate = root / "candidate.py"
    candidate.write_text(_CANDIDATE)
    driver = root / "driver.py"
    driver.write_text(textwrap.dedent(_DRIVER))
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, str(driver), str(candidate), str(work_dir), str(outside)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=work_dir,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (work_dir / "harness.txt").read_text() == "ok"
    assert (outside / "secret.txt").exists()
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_audit_guard_allows_triton_launch_and_work_dir_writes(
    audit_results: dict[str, str],
) -> None:
    assert audit_results["launch"] == "ok:True"
    assert audit_results["write_inside"] == "ok:True"
    assert audit_results["import_new_module"] == "ok:True"
    assert audit_results["library_write_inside"] == "ok:True"


@pytest.mark.parametrize(
    ("call", "event"),
    [
        ("write_outside", "open"),
        ("read_outside", "open"),
        ("read_proc_parent_environ", "open"),
        ("system", "os.system"),
        ("connect", "socket"),
        ("getframe", "sys._getframe"),
        ("traceback_frame", "object.__getattr__"),
        ("ctypes", "ctypes."),
        ("thread", "_thread.start_new_thread"),
        ("exec", "compile"),
        ("putenv", "os.putenv"),
        ("remove_outside", "os.remove"),
        ("library_write_outside", "open"),
    ],
)
def test_audit_guard_denies_candidate_event(audit_results: dict[str, str], call: str, event: str) -> None:
    outcome = audit_results[call]
    assert outcome.startswith("denied:sandbox: the kernel may not"), outcome
    assert f"(audit event {event}" in outcome


def test_audit_guard_names_the_path(audit_results: dict[str, str], tmp_path: Path) -> None:
    assert "stolen.txt outside its work dir" in audit_results["write_outside"]


def test_measurements_on_one_device_never_overlap(tmp_path: Path) -> None:
    """Two verifications started at once (as parallel candidates are): the checks may overlap,
    the timed phases (under the device lock, held exclusively) never do."""
    import threading

    from kernelopt.harness.verify import HarnessSettings, Verifier

    cheats = Path(__file__).parent / "cheats"
    verifier = Verifier(cheats / "problem_add.py", tmp_path / "work", HarnessSettings(seeds=1, time_compile=False))
    kernels = []
    for index in range(2):  # two files: each candidate has a folder of its own
        kernels.append(tmp_path / f"honest_{index}.py")
        kernels[-1].write_text((cheats / "honest_add.py").read_text())
    outcomes = []

    def verify(kernel: Path) -> None:
        outcomes.append(verifier.run_candidate(kernel, time=True)[0])

    threads = [threading.Thread(target=verify, args=(k,)) for k in kernels]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first, second = sorted((o.result or {} for o in outcomes), key=lambda r: r.get("timing_began_s", 0))
    assert first.get("ok") and second.get("ok"), outcomes
    assert second["timing_began_s"] >= first["timing_ended_s"]


def test_the_fork_server_forks_from_a_single_thread() -> None:
    """fork() copies only the calling thread: the server must have no other (no OpenMP pool, no
    helper thread), or a child could inherit a lock held by a thread it does not have."""
    from kernelopt.harness.sandbox import runner

    assert runner.fork_server_for(False).threads == 1


def test_a_closed_fork_server_leaves_its_log_only_where_it_wrote_one(tmp_path: Path) -> None:
    # ForkServer.close on two servers' stand-ins (`cat`, which leaves when its stdin closes, as the server does): the
    # log of one that wrote nothing goes (every run left an empty one in the temporary folder), a written one stays
    from kernelopt.harness.sandbox import runner

    servers = []
    for name, said in (("quiet", ""), ("loud", "what the server said\n")):
        server = object.__new__(runner.ForkServer)
        server._process = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        server.log_path = str(tmp_path / f"{name}.log")
        Path(server.log_path).write_text(said)
        server.close()
        assert not server.alive
        servers.append(server)
    assert not Path(servers[0].log_path).exists() and Path(servers[1].log_path).read_text() == "what the server said\n"


def test_a_fork_server_whose_owner_left_without_closing_it_removes_its_empty_log(tmp_path: Path) -> None:
    # The server's own exit (its stdin closed: the owner killed, or gone without its exit handlers, as an xdist worker
    # goes): the log it was started with (argv, its stderr) goes where nothing was written, stays where something was,
    # and a file put at the path since is not its log
    code = ("import sys\nfrom kernelopt.harness.sandbox.fork_server import drop_empty_log\n"
            "print(sys.argv[2], end='', file=sys.stderr, flush=True)\ndrop_empty_log(sys.argv[1])")
    for said, other in (("", False), ("a traceback", False), ("", True)):
        log = tmp_path / "server.log"
        with log.open("w") as stderr:
            if other:
                log.unlink()
                log.write_text("")  # another file of the same name, empty too
            subprocess.run([sys.executable, "-c", code, str(log), said], stderr=stderr, check=True, timeout=60)
        assert log.exists() == bool(said or other), (said, other)
        log.unlink(missing_ok=True)


PRELOADED = '''
import sys
from kernelopt.harness.sandbox.fork_server import preload
preload()
before = set(sys.modules)
from kernelopt.harness.sandbox import baseline_jobs, reference, sweep, worker
import torch, first_launch
first_launch.double[(2,)](torch.ones(8), 4)
print(sorted(m for m in set(sys.modules) - before if m.startswith(("kernelopt", "triton"))))
'''


def test_a_forked_job_imports_none_of_its_modules_nor_tritons_at_its_first_launch(tmp_path: Path) -> None:
    # the fork server's preload: what a child imported at each job (the job's modules, Triton's argument specialisation
    # at a kernel's first launch) took a third of a verification's time under the interpreter
    (tmp_path / "first_launch.py").write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit
        def double(x, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x + offs, tl.load(x + offs) * 2)
    '''))
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = subprocess.run([sys.executable, "-c", PRELOADED], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
