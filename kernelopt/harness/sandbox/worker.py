"""The worker process: runs a reference or an untrusted candidate, away from the graph.

`python -m kernelopt.harness.sandbox.worker REQUEST.json` reads a request, does one job and writes RESULT.json beside
it. Reference jobs compute expected outputs (and baselines and the floor); candidate jobs never see the reference's
outputs: the parent compares. The candidate's process is set up before its code is imported: allocations are
poisoned, Triton launches are counted, the timers are remembered so that a patch is noticed, and an audit hook denies
process, network and file-system escapes.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from kernelopt.harness.measure import parameters
from kernelopt.harness.measure.cases import case_inputs
from kernelopt.harness.measure.timing import TimingConfig, measure
from kernelopt.harness.problem import import_file, load_problem
from kernelopt.harness.sandbox import autotune, calls, fingerprint, interpreter, launches, poison, precision
from kernelopt.harness.sandbox.calls import Rejected, build_model, give_back, outputs_of, refilled, sync
from kernelopt.harness.sandbox.compute_guard import ComputeGuard, ComputeOutsideTriton
from kernelopt.harness.sandbox.locks import DeviceLock
from kernelopt.harness.sandbox.transfer import ReferenceLink
from kernelopt.harness.sandbox.warm_profile import WAIT_FLAG, wait_for
from kernelopt.records import Timing


class Progress:
    """The job's phase, a line per change, for the parent's watchdog (a file opened before the sandbox is armed)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._born = time.monotonic()

    def mark(self, phase: str) -> None:
        os.write(self._fd, f"{phase}\n".encode())
        print(f"[{time.monotonic() - self._born:8.3f} s] {phase}", flush=True)  # the log says where time went


def run_candidate(req: dict[str, Any]) -> dict[str, Any]:
    """Check the candidate on every case (outputs go to the reference process) and, if asked, time it."""
    device = torch.device(req["device"])
    progress = Progress(Path(req["progress_path"]))
    link = ReferenceLink(req["reference"], req["token"])
    lock = DeviceLock(req["lock_path"])
    problem = load_problem(req["problem_path"])
    source = Path(req["kernel_path"]).read_text()  # for the precision rule, read before the sandbox is armed
    drawn = parameters.reference_norm_parameters(problem) if any("params" in c for c in req["cases"]) else {}
    precision.emulate_tf32_in_interpreter()  # an interpreted tl.dot rounds a TF32 operand as the GPU does
    guards = _arm(req)
    launches.COMPILES.notify = progress.mark
    recorder = fingerprint.start()  # the checked calls' launches: is this kernel one already timed?
    progress.mark("import")
    module = import_file(req["kernel_path"], "kernelopt_candidate")
    guards.check_untouched()
    if not isinstance(getattr(module, "ModelNew", None), type):
        raise Rejected("no-model-new", "the kernel file defines no class ModelNew")
    try:
        model = build_model(module.ModelNew, problem, req["init_seed"], device)
    except Exception as err:  # a constructor that does not take Model's arguments is the kernel's fault
        raise Rejected("runtime-error", f"ModelNew could not be built: {type(err).__name__}: {err}") from err
    print(f"parameters: {calls.parameter_digest(model)}", flush=True)  # the reference's log has its own
    cases = req["cases"]
    checked = [i for i, case in enumerate(cases) if not case.get("timing")]
    timing_case = next((case for case in cases if case.get("timing")), cases[checked[0]])
    buffers = None
    fp32_outputs = low_data = False  # low_data: 16- or 8-bit inputs, the problem's own (not the candidate's)
    not_run = 0
    progress.mark("lock")
    with lock.shared(), torch.no_grad():
        for number, index in enumerate(checked, 1):
            progress.mark(f"case {number}/{len(checked)}")
            case = cases[index]
            unfit = parameters.mismatch(model, drawn) if "params" in case else None
            if unfit:
                link.not_run(index, unfit)
                not_run += 1
                continue
            with parameters.perturbed(model, case, drawn):  # a parameters case's draw, restored after
                same_shape = set(case) - {"ref_ms"} == {"seed"}
                # The same input storage refilled for every seed: a cache keyed by address fails (seeds first).
                buffers = buffers if same_shape else None
                if buffers is not None:
                    fresh = refilled(buffers, case_inputs(problem, case, device))
                else:
                    fresh = case_inputs(problem, case, device)
                    buffers = fresh if same_shape else None
                before = [v.clone() if isinstance(v, torch.Tensor) else v for v in fresh]
                low_data = low_data or precision.low_data(fresh)
                # Several runs on the same input, each judged on its own by the reference process: a
                # race shows as a run that is wrong; reordered float atomics stay within tolerance.
                # Only runs that differ from the first are sent again (most kernels are deterministic).
                first = _checked_call(model, fresh, device)
                _check_inputs_unchanged(before, fresh)
                _check_no_aliasing(fresh, first)
                link.send("case", index, 0, first)
                fp32_outputs = fp32_outputs or any(t.dtype == torch.float32 for t in first)
                for run in range(1, req.get("repeats", 2)):
                    outputs = _checked_call(model, fresh, device)
                    _check_inputs_unchanged(before, fresh)
                    if not all(torch.equal(a, b) for a, b in zip(first, outputs, strict=True)):
                        link.send("case", index, run, outputs)
                    del outputs
                del first, before, fresh
            give_back(device)
    guards.check_untouched()
    result: dict[str, Any] = {"ok": True, "cases": len(checked) - not_run, "launches": guards.launches.total}
    result["precision"] = asdict(precision.products_found(recorder, fp32_outputs, source, low_data))  # parent judges
    result |= fingerprint.verdict(recorder, req.get("timed_fingerprints"))
    if req.get("time") and not result.get("duplicate"):  # a duplicate's time is the original's
        progress.mark("lock")
        with lock.exclusive():
            progress.mark("timing")
            result["timing_began_s"] = time.monotonic()
            result["timing"] = asdict(_time(model, problem, timing_case, device, req, guards, link))
            result["timing_ended_s"] = time.monotonic()
    result["winners"] = autotune.winners(module)  # what its autotuner picked, at the size timed last
    progress.mark("done")
    return result


def _time(
    model: Any, problem: Any, case: dict[str, Any], device: torch.device, req: dict[str, Any], guards: _Guards,
    link: ReferenceLink,
) -> Timing:
    """Time the candidate on inputs no checked call has seen (the timing case). A few timed
    calls' outputs go to the reference process, judged against that case (no less work while
    timed, no answer remembered from the checks); every timed call must launch."""
    poison.pause()
    inputs = case_inputs(problem, case, device)
    samples: list[object] = []
    counter, silent = launches.COUNTER, []

    def timed_call() -> object:
        start = counter.total
        out = model(*inputs)
        if counter.total == start:
            silent.append(1)
        return out

    def sampled_call() -> object:  # the sampled trials, picked at random: watched like the checks
        return _checked_call(model, inputs, device)

    with torch.no_grad():
        timing = measure(
            timed_call, device, TimingConfig(**req.get("timing", {})), samples=samples, sample_fn=sampled_call
        )
    guards.check_untouched()
    if silent:
        raise Rejected(
            "no-triton-launch",
            f"{len(silent)} timed call(s) launched no Triton kernel; every call must compute its output",
        )
    held = [outputs_of(returned) for returned, _ in samples]  # type: ignore[misc]
    # one call may return views of one buffer (q, k, v); different calls may not share memory
    places = [p for outputs in held for p in {t.untyped_storage().data_ptr() for t in outputs if t.numel()}]
    if len(places) != len(set(places)):  # held references: an honest allocation cannot reuse them
        raise Rejected("cache-across-calls", "timed calls returned the same memory; every call must write a new output")
    snapshots = [snapshot for _, snapshot in samples]  # type: ignore[misc]
    del held, inputs[:], samples[:]  # the reference judges beside what this process still holds: the snapshots
    calls.send_timed(link, snapshots, device)
    return timing


def _checked_call(model: Any, inputs: list[Any], device: torch.device) -> list[torch.Tensor]:
    counter = launches.COUNTER
    start = counter.total
    guard = ComputeGuard()
    try:
        with guard:
            result = model(*inputs)
    except ComputeOutsideTriton:
        result = None
    if guard.violation:  # recorded even if the candidate caught the exception itself
        raise Rejected("torch-compute-at-runtime", guard.violation)
    outputs = outputs_of(result)
    copied = guard.copied_output(outputs)
    if copied:
        raise Rejected("torch-compute-at-runtime", copied)
    sync(device)
    if counter.total == start:
        raise Rejected("no-triton-launch", "forward launched no Triton kernel; do the work in @triton.jit kernels")
    return outputs


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as integers: NaN payloads, -0.0 and infinities compare exactly."""
    integer = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(tensor.element_size())
    return tensor.contiguous().view(integer) if tensor.is_floating_point() and integer else tensor


def _check_inputs_unchanged(before: list[Any], after: list[Any]) -> None:
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        if isinstance(old, torch.Tensor) and not torch.equal(_bits(old), _bits(new)):
            raise Rejected("input-mutation", f"forward modified input {index}; inputs are read-only")


def _check_no_aliasing(inputs: list[Any], outputs: list[torch.Tensor]) -> None:
    """An output in an input's storage is the input itself, or written over it."""
    storages = {v.untyped_storage().data_ptr() for v in inputs if isinstance(v, torch.Tensor) and v.numel()}
    for index, out in enumerate(outputs):
        if out.numel() and out.untyped_storage().data_ptr() in storages:
            raise Rejected(
                "output-aliases-input",
                f"output {index} lives in an input's memory; write each result into a new tensor",
            )


class _Guards:
    """Set up before the candidate is imported: the launch counter and the timers as they were."""

    def __init__(self) -> None:
        self.launches = launches.install()
        autotune.install()  # before the timers are noted: the interpreter's benchmark is the harness's own
        interpreter.quick_interpreter()
        self.timers = _timer_identities()

    def check_untouched(self) -> None:
        now = _timer_identities()
        changed = [name for name, obj in self.timers.items() if now.get(name) is not obj]
        if changed:
            raise Rejected("harness-patch", f"the kernel replaced {', '.join(changed)}; leave the harness alone")


def _timer_identities() -> dict[str, Any]:
    import triton.testing

    from kernelopt.harness.measure import timing

    found: dict[str, Any] = {
        "time.perf_counter": time.perf_counter,
        "time.time": time.time,
        "torch.cuda.Event": torch.cuda.Event,
        **{f"torch.cuda.Event.{m}": getattr(torch.cuda.Event, m) for m in ("record", "elapsed_time", "synchronize")},
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "triton.testing.do_bench": triton.testing.do_bench,
        "kernelopt.harness.measure.timing.measure": timing.measure,
        "kernelopt.harness.measure.timing.summarize": timing.summarize,
        "torch.equal": torch.equal,
        "torch.Tensor.clone": torch.Tensor.clone,
        "torch.save": torch.save,
    }
    found.update(launches.identities())
    # The worker's own names (it runs as __main__), and the modules it judges with.
    from kernelopt.harness.measure import cases
    from kernelopt.harness.sandbox import compute_guard

    for module, label in ((sys.modules[__name__], "worker"), (calls, "calls"), (timing, "timing"), (cases, "cases"),
                          (compute_guard, "compute_guard"), (poison, "poison"), (launches, "launches"),
                          (fingerprint, "fingerprint")):
        for name, value in vars(module).items():
            if callable(value) and not name.startswith("__"):
                found[f"{label}.{name}"] = value
    found["ComputeGuard.__torch_dispatch__"] = compute_guard.ComputeGuard.__torch_dispatch__
    found["ComputeGuard._judge"] = compute_guard.ComputeGuard._judge
    return found


def _arm(req: dict[str, Any], poisoned: bool = True) -> _Guards:
    from kernelopt.harness.sandbox.audit import install_audit_guard

    device = torch.device(req["device"])
    if poisoned:  # not for a profile: NCU would count the fills as the kernel's
        poison.arm(device)
    guards = _Guards()
    install_audit_guard({str(Path(req["kernel_path"]).resolve())}, req["work_dir"], tuple(req.get("secret_dirs", ())))
    return guards


def run_profile(req: dict[str, Any]) -> dict[str, Any]:
    """Warm up, then run one forward call between cudaProfilerStart/Stop for NCU (sandboxed like
    a candidate: its inputs come from a seed of their own, never a private one). Its log says
    where the seconds under ncu went."""
    began = time.monotonic()

    def stage(name: str) -> None:
        print(f"[{time.monotonic() - began:8.3f} s] {name}", flush=True)

    device = torch.device(req["device"])
    problem = load_problem(req["problem_path"])
    _arm(req, poisoned=False)
    module = import_file(req["kernel_path"], "kernelopt_candidate")
    model = build_model(module.ModelNew, problem, req["init_seed"], device)
    inputs = case_inputs(problem, {"seed": req["seeds"][0]}, device)
    stage("model built, inputs made")
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        sync(device)
        stage("warmed up (compiled)")
        on_gpu = device.type == "cuda"  # on the host there is no profiler range: the forward runs alone
        if on_gpu:
            torch.cuda.cudart().cudaProfilerStart()
        model(*inputs)
        sync(device)
        if on_gpu:
            torch.cuda.cudart().cudaProfilerStop()
        stage("profiled")
    return {"ok": True}


def _die_with_parent() -> None:
    """Exit when the parent goes (kill -9 of a run): a resumed run must not meet an orphan
    still writing into the folder it re-verifies in."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="kernelopt-parent-watch", daemon=True).start()


def run_job(job: str, req: dict[str, Any], jobs: dict[str, Any] | None = None) -> int:
    """Run one job (of `jobs`, default JOBS) in this (fresh, single-use) process; its result goes
    to result.json in the work dir. The exit status is 0 whenever a result was written."""
    _die_with_parent()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the watchdog's "where are you stuck?"
    if job in ("reference", "probe"):
        from kernelopt.harness.sandbox import reference

        return reference.serve(req) if job == "reference" else reference.probe(req)
    if job in ("max-autotune", "cuda-graph"):  # the baselines timed away from the reference process
        from kernelopt.harness.sandbox.baseline_jobs import JOBS as jobs
    out = Path(req["work_dir"]) / "result.json"
    try:
        result = (jobs or JOBS)[job](req)
    except Rejected as err:
        result = {"ok": False, "rule": err.rule, "reason": str(err)}
    except Exception as err:  # the candidate's crash is a verdict; kernelopt's own is not
        frames = traceback.extract_tb(err.__traceback__)
        where = next(
            (f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames) if f.filename == req.get("kernel_path")),
            "",
        )
        message = str(err).strip().splitlines()[0][:400] if str(err).strip() else ""
        reason = f"{type(err).__name__}{' at ' + where if where else ''}: {message}"
        if candidates_fault(err, (req.get("kernel_path"), req.get("problem_path"))):
            result = {"ok": False, "rule": "runtime-error", "reason": reason}
        else:
            result = {"ok": False, "harness_error": True, "reason": reason}
        traceback.print_exc()
    out.write_text(json.dumps(result))
    return 0


JOBS = {"candidate": run_candidate, "profile": run_profile}


def candidates_fault(err: BaseException, user_files: tuple[str | None, ...]) -> bool:
    """Whether an error in a candidate's job is the kernel's doing (a verdict) rather than
    kernelopt's own (a bug to report, never repair feedback for the LLM).

    kernelopt's: raised in kernelopt's own code (the innermost frame is in the package), no frame of the kernel
    (or the problem) file on the way, and neither the GPU nor the host's memory failed: an illegal address, or
    under the interpreter a store past a tensor into the heap, surfaces later in whatever harness code touches
    the device or allocates next. Anything raised in torch or Triton on the kernel's behalf is the kernel's.
    """
    frames = traceback.extract_tb(err.__traceback__)
    files = {f for f in user_files if f}
    if not frames or any(frame.filename in files for frame in frames):
        return True
    failed = isinstance(err, torch.OutOfMemoryError | MemoryError) or type(err).__name__ == "AcceleratorError"
    if failed or any(sign in str(err) for sign in ("CUDA", "device-side", "bad_alloc")):
        return True
    return not os.path.realpath(frames[-1].filename).startswith(_PACKAGE_DIR)


_PACKAGE_DIR = str(Path(__file__).resolve().parents[2]) + os.sep  # kernelopt/


def main(argv: list[str]) -> int:
    """`python -m kernelopt.harness.sandbox.worker REQUEST.json`: one job in a process of its own (the
    NCU profile, which must start under ncu; `--wait-for REQUEST.json OWNER_PID`: started ahead, it
    waits for the request). The request is deleted before the kernel is imported."""
    ahead = argv[1] == WAIT_FLAG  # started ahead under ncu: `--wait-for REQUEST OWNER_PID`
    request_path = Path(argv[2] if ahead else argv[1])
    if ahead:
        wait_for(request_path, int(argv[3]))
    req = json.loads(request_path.read_text())
    request_path.unlink()
    if ahead:  # where a profile started cold runs: its work dir
        os.chdir(req["work_dir"])
    return run_job(req["mode"], req)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
