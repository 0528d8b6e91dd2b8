"""The reference process: the one trusted owner of a problem's expected outputs for a run.

It is forked from the fork server like a candidate, but never runs candidate code and arms no
sandbox. It builds the inputs of every case from the private seeds on the device, computes the
expected outputs once without reduced-precision shortcuts and keeps them there. Candidates'
processes then send their outputs to it (`transfer`: CUDA IPC handles or raw bytes, one way);
it compares them on the device and tells a candidate nothing but "received". Only the verifier
that started it (the control connection) hears the verdict. It also times the baselines. It
listens on an abstract Unix socket named by a private random address, and exits when the control
connection closes.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelopt.harness.measure.cases import case_choices, case_inputs, case_label, plan_cases
from kernelopt.harness.measure.correctness import Judging, compare_case, judging_for
from kernelopt.harness.measure.parameters import perturbed
from kernelopt.harness.measure.yardstick import WIDE_OUTLIERS, Expected, expected_from, float64_copy
from kernelopt.harness.problem import load_problem
from kernelopt.harness.sandbox import transfer
from kernelopt.harness.sandbox.reference_baselines import log_stage, time_baselines
from kernelopt.harness.sandbox.reference_memory import cache_budget_bytes, float64_room


@dataclass
class _Judged:
    """What one candidate sent, judged as it arrived."""

    mismatches: dict[tuple[int, int], str] = field(default_factory=dict)  # (run, case) -> why
    timed_mismatch: str | None = None
    received: set[int] = field(default_factory=set)
    protocol_error: str | None = None
    harness_error: str | None = None  # kernelopt's own failure judging them (a CUDA OOM twice): not the kernel's
    not_run: list[str] = field(default_factory=list)  # cases this candidate could not take, and why
    # each checked fp32 output's worst distance from its float64 yardstick, and the problem's own (None: no yardstick)
    errors: list[tuple[float, float | None]] = field(default_factory=list)
    outliers: list[str] = field(default_factory=list)  # the wide cases' outputs that passed on their share, named


class Reference:
    """A problem's model, cases and yardsticks, on the device.

    Yardsticks are kept in device memory up to a budget (a quarter of the GPU's memory), the timing
    case's first (every timed call a candidate sends is judged on it); a case past it is recomputed
    when a candidate's outputs for it arrive (milliseconds on a GPU), so a problem of several GB per
    output never holds every case's outputs at once.
    """

    def __init__(self, req: dict[str, Any]) -> None:
        from kernelopt.harness.sandbox.calls import build_model, parameter_digest, state_bytes

        self.req = req
        self.device = torch.device(req["device"])
        self.problem = load_problem(req["problem_path"])
        self.model = build_model(self.problem.Model, self.problem, req["init_seed"], self.device)
        self.model64 = float64_copy(self.model)
        self.budget_bytes = cache_budget_bytes(self.device)
        self.float64_room = float64_room(self.device, self.budget_bytes)
        log_stage(f"model built; parameters: {parameter_digest(self.model)}")
        self.cases: list[dict[str, Any]] = []
        self.kept: dict[int, Expected] = {}
        self.dropped: list[str] = []  # cases the problem itself cannot run
        self.skipped: list[str] = []  # cases not made at this problem's size
        self.input_bytes = self.output_bytes = 0  # the largest case's: how many checks fit on the device at once
        self.state_bytes = state_bytes(self.model)  # each check's model holds as much (a 4 GB Linear: 4 GB a check)
        largest: list[float] = []
        self.judging: dict[int, Judging] = {}
        base: float | None = None
        unrunnable = {str(key): why for key, why in req.get("unrunnable", {}).items()}
        for number, planned in enumerate(plan_cases(self.problem, req["seeds"])):
            if "skip" in planned:
                self.skipped.append(f"{case_label(planned)}: {planned['skip']}")
                continue
            made = self._first_runnable(number, planned, unrunnable)
            if made is None:
                continue
            case, expected, ref_ms = made
            finite = all(bool(t.isfinite().all()) for t in expected.outputs if t.is_floating_point())
            if _wide(case) and not finite:
                self.dropped.append(f"{case_label(case)}: the reference itself is not finite there")
                continue
            self.cases.append({**case, "ref_ms": ref_ms})
            largest.append(_largest(expected))
            if not case.get("timing"):
                base = largest[-1] if base is None else base  # the first checked case: the scale of the rest
            scale = max(1.0, largest[-1] / base) if base and not case.get("timing") else 1.0
            self.judging[len(self.cases) - 1] = judging_for(expected.outputs, scale, expected.slack,
                                                            WIDE_OUTLIERS if _wide(case) else 0.0)
            if case.get("timing") and expected.nbytes <= self.budget_bytes:  # judged by each timed call: kept first
                while sum(e.nbytes for e in self.kept.values()) + expected.nbytes > self.budget_bytes:
                    self.kept.popitem()
            if self.budget_bytes >= sum(e.nbytes for e in self.kept.values()) + expected.nbytes:
                self.kept[len(self.cases) - 1] = expected
            del expected
            log_stage(f"case {case_label(case) or case['seed']}: {self.cases[-1]['ref_ms']:.3f} ms per call")
        self.checked = [i for i, c in enumerate(self.cases) if not c.get("timing")]
        self.timing_index = next((i for i, c in enumerate(self.cases) if c.get("timing")), self.checked[0])
        self.scales = {i: max(1.0, largest[i] / base) if base else 1.0 for i in self.checked}
        self.judged: dict[str, _Judged] = {}
        self.lock = threading.Lock()
        self._release()  # then what the device has free with the reference built: how many sweep checks fit
        self.free_bytes = torch.cuda.mem_get_info(self.device)[0] if self.device.type == "cuda" else None

    def _first_runnable(
        self, number: int, planned: dict[str, Any], unrunnable: dict[str, str]
    ) -> tuple[dict[str, Any], Expected, float] | None:
        """The first of a planned case's choices the problem runs, with its yardstick and time; None
        (the case named as dropped) when the problem refuses every one. A given case must run."""
        refused: list[str] = []
        for choice, case in enumerate(case_choices(planned)):
            why = unrunnable.get(f"{number}.{choice}")
            if why is None:
                try:
                    expected, ref_ms = self._expect(case, timed=True)
                    return case, expected, ref_ms
                except Exception as err:
                    if not _derived(case):
                        raise
                    why = f"the reference raised {type(err).__name__}"
            refused.append(why)
        tried = f" (each of {len(refused)} resizes tried)" if len(refused) > 1 else ""
        self.dropped.append(f"{case_label(planned)}: {refused[-1]}{tried}")
        return None

    def _release(self) -> None:
        """Give the allocator's cached blocks back to the driver, for a candidate's GBs (float64 runs leave some)."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _expect(self, case: dict[str, Any], timed: bool = False) -> tuple[Expected, float]:
        """One case's yardstick, and the reference's time per call (the better of two calls: the
        first may pay for a library's lazy start), which sets the candidate's time limits."""
        from kernelopt.harness.sandbox.calls import exact_math, outputs_of, sync

        inputs = case_inputs(self.problem, case, self.device)
        self.input_bytes = max(self.input_bytes, sum(v.nbytes for v in inputs if isinstance(v, torch.Tensor)))
        times_ms = []
        with torch.no_grad(), exact_math(), perturbed(self.model, case), perturbed(self.model64, case):
            for _ in range(2 if timed else 1):
                began = time.perf_counter()
                returned = self.model(*inputs)
                sync(self.device)
                times_ms.append((time.perf_counter() - began) * 1e3)
            outputs = outputs_of(tuple(returned) if isinstance(returned, tuple) else returned)
            self.output_bytes = max(self.output_bytes, sum(t.nbytes for t in outputs))
            expected = expected_from([t.detach() for t in outputs], self.model64, inputs, self.float64_room,
                                     wide=_wide(case))
        return expected, min(times_ms)

    def expected(self, index: int) -> Expected:
        return self.kept.get(index) or self._expect(self.cases[index])[0]

    def baselines(self, message: dict[str, Any]) -> dict[str, Any]:
        """Eager and torch.compile times, the floor, and the baselines the yardstick refuses."""
        return time_baselines(self, message)

    def judging_notes(self) -> dict[str, list[str]]:
        """The checked cases judged on their outputs' own scale, and those that prove nothing, by name."""
        def named(i: int) -> str:
            position = self.checked.index(i)
            label = case_label(self.cases[i])
            return f"case {position}" + (f" ({label})" if label else "")

        return {
            "own_scale": [named(i) for i in self.checked if self.judging[i].relative and self.judging[i].informative],
            "uninformative": [named(i) for i in self.checked if not self.judging[i].informative],
        }

    def judge(self, token: str, kind: str, index: int, run: int, got: list[torch.Tensor]) -> None:
        judged = self.judged[token]
        if kind == "timed":
            if judged.timed_mismatch is None:
                expected = self.expected(self.timing_index)
                judged.timed_mismatch = compare_case(
                    expected.outputs, got, 1.0, expected.slack, self.judging[self.timing_index]
                )
            return
        if index not in self.scales:
            raise transfer.TransferError(f"no checked case {index}")
        judged.received.add(index)
        expected = self.expected(index)
        notes: list[str] = []
        mismatch = compare_case(expected.outputs, got, self.scales[index], expected.slack, self.judging[index],
                                judged.errors, notes)
        del expected
        self._release()
        label = case_label(self.cases[index])
        named = f"case {self.checked.index(index)}" + (f" ({label})" if label else "")
        if mismatch:
            judged.mismatches[(run, self.checked.index(index))] = named + mismatch
        elif run == 0:
            judged.outliers += [f"{named}, {note}" for note in notes]

    def verdict(self, token: str, partial: bool = False) -> dict[str, Any]:
        """The verdict on what arrived under `token`; `partial` (a sweep's quick check): judged on
        the cases received, not missing the others."""
        judged = self.judged.pop(token, None) or _Judged(protocol_error="no outputs were received")
        return {**self._verdict(judged, partial), "fp32_error_ratio": error_ratio(judged.errors)}

    def _verdict(self, judged: _Judged, partial: bool) -> dict[str, Any]:
        if judged.harness_error:
            return {"harness_error": judged.harness_error}
        if judged.protocol_error:
            return {"rule": "runtime-error", "reason": f"the outputs could not be read: {judged.protocol_error}"}
        if judged.mismatches:
            run, _ = first = min(judged.mismatches)
            again = " (a repeat run on the same inputs gave a different result: a race?)" if run else ""
            return {"rule": "incorrect", "reason": f"incorrect{again}: {judged.mismatches[first]}"}
        missing = 0 if partial and judged.received else len(self.checked) - len(judged.received)
        if missing:
            return {"rule": "incorrect", "reason": f"incorrect: no outputs for {missing} of {len(self.checked)} cases"}
        if judged.timed_mismatch:
            return {
                "rule": "incorrect-when-timed",
                "reason": "incorrect while timed: a timed call's output differs from the reference "
                f"({judged.timed_mismatch.lstrip(', ')}); every call must compute the whole result",
            }
        return {"rule": None, "reason": "correct", "not_run": judged.not_run, "outliers": judged.outliers}


def error_ratio(errors: list[tuple[float, float | None]]) -> float | None:
    """How many times the problem's own fp32 error (against float64) a candidate's worst fp32 output is off;
    None where no fp32 output had a float64 yardstick. An output whose own error is nil is measured
    against its largest slack, never zero (a yardstick's slack has a floor)."""
    measured = [(error, own) for error, own in errors if own is not None]
    if not measured:
        return None
    return max(error / own if own > 0 else (0.0 if error == 0 else float("inf")) for error, own in measured)


def _largest(expected: Expected) -> float:
    floats = [t for t in expected.outputs if t.is_floating_point() and t.numel()]
    return max((float(t.abs().max()) for t in floats), default=0.0)


def _wide(case: dict[str, Any]) -> bool:
    """A case of inputs scaled up or shifted: it checks a kernel's range (yardstick.WIDE_TIMES_MAX)."""
    return "scale" in case or "shift" in case


def _derived(case: dict[str, Any]) -> bool:
    """A case kernelopt made up (other sizes, other numbers): the problem may not allow it."""
    return "overrides" in case or "literal" in case or "numbers" in case


def _answer(ref: Reference, op: str, message: dict[str, Any]) -> dict[str, Any]:
    """The verifier's question answered; a failure of kernelopt's own code is logged with its
    traceback and sent back as such (the verifier raises HarnessError), never lost with the process."""
    try:
        if op == "verdict":
            with ref.lock:
                return ref.verdict(str(message["token"]), bool(message.get("partial")))
        return ref.baselines(message)
    except Exception as err:
        traceback.print_exc()
        sys.stderr.flush()
        return {"harness_error": f"{type(err).__name__}: {str(err).strip()[:300]}"}


def _judge(ref: Reference, token: str, op: str, message: dict[str, Any], got: list[torch.Tensor]) -> None:
    """One message's outputs judged; a CUDA OOM (a candidate's timed outputs mapped beside the kept yardsticks on
    an 80 GB card) once more after the allocator's cache goes back, and a failure of kernelopt's own code logged and
    named in the token's verdict, the connection kept (an H100 run of InstanceNorm at 7.5 GB lost it so)."""
    args = (token, op, int(message.get("case", -1)), int(message.get("run", 0)), got)
    try:
        with ref.lock, torch.no_grad():
            try:
                ref.judge(*args)
            except torch.cuda.OutOfMemoryError:
                ref._release()  # noqa: SLF001 - the reference's own allocator
                ref.judge(*args)
    except transfer.TransferError:  # what the candidate's side sent does not hold together: its error, not ours
        raise
    except Exception as err:  # noqa: BLE001 - any other failure of the judging is kernelopt's, reported as such
        traceback.print_exc()
        sys.stderr.flush()
        ref.judged[token].harness_error = f"judging the {op} outputs: {type(err).__name__}: {str(err).strip()[:300]}"


def _serve_connection(conn: socket.socket, ref: Reference, control: bool) -> None:
    token: str | None = None
    try:
        while True:
            message = transfer.receive(conn)
            op = message.get("op")
            if op == "hello":
                token = str(message.get("token"))
                if token not in ref.judged:
                    return
                transfer.send(conn, {"ok": True})
            elif op in ("case", "timed") and token is not None:
                try:
                    got = transfer.read_tensors(conn, message, ref.device)
                    _judge(ref, token, op, message, got)
                    del got
                except transfer.TransferError as err:
                    ref.judged[token].protocol_error = str(err)
                    return
                transfer.send(conn, {"ok": True})
            elif op == "not-run" and token is not None:  # a case the candidate cannot take (parameters.py)
                with ref.lock:
                    ref.judged[token].received.add(int(message["case"]))
                    ref.judged[token].not_run.append(f"{case_label(ref.cases[int(message['case'])])}: {message['why']}")
                transfer.send(conn, {"ok": True})
            elif control and op == "expect":
                ref.judged[str(message["token"])] = _Judged()
                transfer.send(conn, {"ok": True})
            elif control and op in ("verdict", "baselines"):
                transfer.send(conn, _answer(ref, op, message))
            else:
                return
    except (EOFError, ConnectionError, OSError, ValueError):
        return
    finally:
        conn.close()
        sys.stderr.flush()
        if control:  # its verifier is gone: so is the reason to hold the GPU's memory
            os._exit(0)


def probe(req: dict[str, Any]) -> int:
    """Try the derived cases (other sizes) the problem may not allow, in a process of its own: on
    CUDA a device-side assert poisons the whole context, so the reference process must never meet
    one. Writes {"unrunnable": {index: why}, "done": bool}; it stops at the first failure (the
    context may be unusable after it), and the caller starts another probe for the rest."""
    from kernelopt.harness.sandbox.calls import build_model, exact_math, outputs_of, sync

    device = torch.device(req["device"])
    problem = load_problem(req["problem_path"])
    model = build_model(problem.Model, problem, req["init_seed"], device)
    known = {str(key) for key in req.get("unrunnable", {})}
    found: dict[str, str] = {}
    done = True
    for number, planned in enumerate(plan_cases(problem, req["seeds"])):
        if not _derived(planned) or "skip" in planned:
            continue
        for choice, case in enumerate(case_choices(planned)):  # up to the first the problem runs
            key = f"{number}.{choice}"
            if key in known:
                continue
            try:
                with torch.no_grad(), exact_math():
                    outputs_of(model(*case_inputs(problem, case, device)))
                    sync(device)
                break
            except Exception as err:
                found[key] = f"the reference raised {type(err).__name__}: {str(err).strip()[:200]}"
                done = False
                break
        if not done:
            break
    (Path(req["work_dir"]) / "result.json").write_text(json.dumps({"unrunnable": found, "done": done}))
    return 0


def serve(req: dict[str, Any]) -> int:
    """Compute the expected outputs, report the cases, then answer connections until told to go."""
    work = Path(req["work_dir"])
    try:
        ref = Reference(req)
    except Exception as err:
        traceback.print_exc()
        first = str(err).strip().splitlines()[0][:400] if str(err).strip() else ""
        (work / "result.json").write_text(json.dumps({"ok": False, "reason": f"{type(err).__name__}: {first}"}))
        return 0
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + req["address"])
    listener.listen(16)
    control, _ = listener.accept()
    hello = transfer.receive(control)
    if hello.get("op") != "control" or hello.get("secret") != req["control_secret"]:
        return 2
    transfer.send(control, {"ok": True, "cases": ref.cases, "dropped": ref.dropped, "skipped": ref.skipped,
                            "input_bytes": ref.input_bytes, "state_bytes": ref.state_bytes,
                            "output_bytes": ref.output_bytes, "free_bytes": ref.free_bytes, **ref.judging_notes()})
    threading.Thread(target=_serve_connection, args=(control, ref, True), daemon=True).start()
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve_connection, args=(conn, ref, False), daemon=True).start()
