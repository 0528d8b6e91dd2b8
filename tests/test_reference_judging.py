"""The reference process judging a candidate's outputs as they arrive: a CUDA OOM while judging is retried once with
the allocator's cache returned, and any other failure of kernelopt's own judging is named in the verdict as
kernelopt's error, the connection kept (an H100 run of InstanceNorm at 7.5 GB once lost its connection so, and the
problem ended on "the other side closed the connection")."""

from __future__ import annotations

import threading
from typing import Any

import torch

from kernelopt.harness.sandbox import reference, transfer
from kernelopt.harness.sandbox.reference import Reference, _judge, _Judged


class _Reference:
    """The part of a Reference that `_judge` uses; `failures` are raised by the first judge calls, in order."""

    def __init__(self, failures: list[BaseException]) -> None:
        self.failures, self.calls, self.released = failures, [], 0
        self.lock = threading.Lock()
        self.judged = {"t": _Judged()}

    def judge(self, token: str, kind: str, index: int, run: int, got: list[torch.Tensor]) -> None:
        self.calls.append((token, kind, index, run, len(got)))
        if self.failures:
            raise self.failures.pop(0)
        self.judged[token].received.add(index)

    def _release(self) -> None:
        self.released += 1


def _message(case: int) -> dict[str, Any]:
    return {"op": "case", "case": case, "run": 0}


def test_an_out_of_memory_while_judging_is_judged_again_after_the_cache_goes_back() -> None:
    ref = _Reference([torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 7.00 GiB")])
    _judge(ref, "t", "case", _message(2), [torch.zeros(3)])  # type: ignore[arg-type]
    assert ref.released == 1 and len(ref.calls) == 2
    assert ref.judged["t"].received == {2} and ref.judged["t"].harness_error is None


def test_a_failure_of_the_judging_itself_is_named_in_the_verdict_as_kernelopt_s() -> None:
    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 7.00 GiB")
    ref = _Reference([oom, torch.cuda.OutOfMemoryError("again")])
    _judge(ref, "t", "timed", _message(-1), [torch.zeros(3)])  # type: ignore[arg-type]
    assert ref.released == 1 and len(ref.calls) == 2
    assert ref.judged["t"].harness_error == "judging the timed outputs: OutOfMemoryError: again"
    other = _Reference([KeyError("scales")])
    _judge(other, "t", "case", _message(0), [])  # type: ignore[arg-type]
    assert other.released == 0 and "judging the case outputs: KeyError" in str(other.judged["t"].harness_error)
    # the verdict says so, ahead of anything else the outputs showed: the verifier raises it as kernelopt's error
    judged = other.judged["t"]
    judged.mismatches[(0, 0)] = "case 0, output 0: 3 of 3 elements outside"
    verdict = Reference._verdict(object.__new__(Reference), judged, partial=False)  # noqa: SLF001
    assert verdict == {"harness_error": judged.harness_error}


def test_the_connection_answers_after_a_failed_judging_and_serves_the_next_message(monkeypatch) -> None:
    ref = _Reference([RuntimeError("judging broke")])
    client, thread = _served(ref)
    for case in (0, 1):
        answer = transfer.send_tensors(client, {"op": "case", "case": case, "run": 0}, [torch.ones(4)])
        assert answer == {"ok": True}, answer
    client.close()
    thread.join(10)
    assert [c[2] for c in ref.calls] == [0, 1]  # the second message still judged
    assert "RuntimeError: judging broke" in str(ref.judged["t"].harness_error)


def _served(ref: _Reference):  # noqa: ANN202 - a connected socket and the thread serving its other end
    """The reference's connection server on one end of a socket pair, its token greeted from the other."""
    import socket

    ref.device = torch.device("cpu")  # type: ignore[attr-defined]
    served, client = socket.socketpair()
    thread = threading.Thread(target=reference._serve_connection, args=(served, ref, False), daemon=True)
    thread.start()
    transfer.send(client, {"op": "hello", "token": "t"})
    assert transfer.receive(client) == {"ok": True}
    return client, thread


def test_a_case_the_reference_does_not_check_stays_the_candidate_s_protocol_error() -> None:
    # judge raises TransferError for a case index it never asked for: what arrived does not hold together, which
    # is the candidate side's error (its verdict: the outputs could not be read), not kernelopt's
    ref = _Reference([transfer.TransferError("no checked case 7")])
    client, thread = _served(ref)
    try:
        transfer.send_tensors(client, {"op": "case", "case": 7, "run": 0}, [torch.ones(4)])
        answered = True
    except (EOFError, ConnectionError):
        answered = False
    thread.join(10)
    assert not answered
    assert ref.judged["t"].protocol_error == "no checked case 7" and ref.judged["t"].harness_error is None



def test_the_timing_cases_yardstick_is_kept_first(tmp_path, monkeypatch) -> None:
    """Each timed call a candidate sends is judged on the timing case, so its yardstick is kept before the checked
    cases' where the budget holds only some: an H100 recomputed KernelBench 34's (7.5 GB) beside a candidate's
    timed outputs, and ran out of memory."""
    from pathlib import Path

    from kernelopt.harness.verify import HarnessSettings, Verifier

    problem = Path(__file__).parent / "cheats" / "problem_add.py"
    req = Verifier(problem, tmp_path, HarnessSettings.detect(seeds=3, time_compile=False)).request("reference")
    whole = Reference(req)
    sizes = {i: e.nbytes for i, e in whole.kept.items()}
    assert len(whole.cases) >= 4 and set(sizes) == set(range(len(whole.cases)))  # the default budget holds them all
    monkeypatch.setattr(reference, "cache_budget_bytes", lambda device: sizes[0] + sizes[whole.timing_index])
    ref = Reference(req)
    assert ref.timing_index == whole.timing_index
    assert sorted(ref.kept) == [0, ref.timing_index]  # the first checked case, the timing case in the second's room
    expected = ref.expected(1)  # a checked case past the budget: recomputed, the same yardstick
    assert torch.equal(expected.outputs[0], whole.kept[1].outputs[0])
    # a timing yardstick past the whole budget makes no room: the smaller case kept stays
    smaller = min(sizes, key=sizes.get)
    assert sizes[smaller] < sizes[whole.timing_index]
    monkeypatch.setattr(reference, "cache_budget_bytes", lambda device: sizes[whole.timing_index] - 1)
    assert sorted(Reference(req).kept) == [smaller]
