"""Tensors from a candidate's process to the reference process: exact, and nothing else gets through."""

from __future__ import annotations

import json
import socket
import struct

import pytest
import torch

from kernelopt.harness.sandbox import transfer


def _pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool])
def test_cpu_tensors_arrive_bit_for_bit(dtype: torch.dtype) -> None:
    sender, receiver = _pair()
    values = [(torch.randn(3, 5) * 10).to(dtype), torch.arange(7).to(dtype)[::2], torch.empty(0, 4, dtype=dtype)]
    described, payloads = transfer.describe(values)
    transfer.send(sender, {"op": "case", "tensors": described})
    for payload in payloads:
        sender.sendall(payload)
    header = transfer.receive(receiver)
    got = transfer.read_tensors(receiver, header, torch.device("cpu"))
    assert [g.shape for g in got] == [v.shape for v in values]
    assert all(g.dtype == dtype and torch.equal(g, v) for g, v in zip(got, values, strict=True))


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"dtype": "object", "shape": [2], "nbytes": 8}, "unknown dtype"),
        ({"dtype": "float32", "shape": [2], "nbytes": 4}, "bytes announced"),
        ({"dtype": "float32", "shape": [-2], "nbytes": 0}, "non-negative"),
        ({"dtype": "float32", "shape": "2", "nbytes": 8}, "list"),
        ({"dtype": "float32", "shape": [2], "cuda": "x"}, "handle"),
    ],
)
def test_a_message_off_the_protocol_is_refused(entry: dict[str, object], why: str) -> None:
    sender, receiver = _pair()
    transfer.send(sender, {"op": "case", "tensors": [entry]}, b"\0" * 8)
    header = transfer.receive(receiver)
    with pytest.raises(transfer.TransferError, match=why):
        transfer.read_tensors(receiver, header, torch.device("cpu"))


def test_headers_are_json_of_bounded_size_never_pickles() -> None:
    sender, receiver = _pair()
    sender.sendall(struct.pack("!I", transfer.MAX_HEADER_BYTES + 1))
    with pytest.raises(transfer.TransferError, match="header"):
        transfer.receive(receiver)
    sender.sendall(struct.pack("!I", 4) + b"[1] ")
    with pytest.raises(transfer.TransferError, match="not an object"):
        transfer.receive(receiver)
    pickled = b"\x80\x04K\x01."  # a pickle stream is no JSON: it fails to parse, it is never loaded
    sender.sendall(struct.pack("!I", len(pickled)) + pickled)
    with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)):
        transfer.receive(receiver)
