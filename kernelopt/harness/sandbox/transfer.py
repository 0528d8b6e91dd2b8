"""Tensors from a candidate's process to the reference process, one way, without pickle.

A message is a 4-byte length and a JSON header, then the raw bytes the header announces. A CUDA
tensor travels as its CUDA IPC handle (the reference process maps the candidate's memory and
compares in place: nothing is copied, nothing touches the host); a CPU tensor travels as its
bytes. The receiving side trusts nothing it is sent: dtypes come from a fixed table, shapes and
sizes are checked, and no code is ever unpickled.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


@lru_cache(maxsize=1)
def dtypes() -> Mapping[str, torch.dtype]:
    """torch's dtypes by name ("float32"): torch loads when a tensor is first read, not with this module (the run's
    own process talks to the reference through it and never handles a tensor)."""
    import torch

    return MappingProxyType({
        str(dtype).removeprefix("torch."): dtype
        for dtype in (
            torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
            torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
            *(getattr(torch, name) for name in ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2")
              if hasattr(torch, name)),
        )
    })


_HEADER = struct.Struct("!I")
MAX_HEADER_BYTES = 1 << 20
MAX_TENSORS = 64


class TransferError(ValueError):
    """A message that does not follow the protocol (a broken or hostile sender)."""


def send(sock: socket.socket, header: dict[str, Any], payload: bytes | memoryview = b"") -> None:
    data = json.dumps(header).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)
    if payload:
        sock.sendall(payload)


def _recv_exact(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        count = sock.recv_into(view[got:], size - got)
        if count == 0:
            raise EOFError("the other side closed the connection")
        got += count
    return buffer


def receive(sock: socket.socket) -> dict[str, Any]:
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if size > MAX_HEADER_BYTES:
        raise TransferError(f"a header of {size} bytes")
    header = json.loads(_recv_exact(sock, size))
    if not isinstance(header, dict):
        raise TransferError("a header that is not an object")
    return header


def request(sock: socket.socket, header: dict[str, Any]) -> dict[str, Any]:
    """Send one message and wait for the answer."""
    send(sock, header)
    return receive(sock)


def describe(tensors: list[torch.Tensor]) -> tuple[list[dict[str, Any]], list[memoryview]]:
    """Headers for `tensors` and the raw payloads that follow them (CPU tensors only).

    The tensors must stay alive until the receiver has answered: a CUDA handle points at them.
    """
    import torch
    from torch.multiprocessing.reductions import reduce_tensor

    headers, payloads = [], []
    for tensor in tensors:
        entry: dict[str, Any] = {"dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape)}
        if tensor.is_cuda and tensor.numel():
            args = reduce_tensor(tensor)[1]
            # (cls, size, stride, offset, storage cls, dtype, device, handle, storage bytes, storage
            # offset, requires_grad, ref counter handle, ref counter offset, event handle, event sync)
            entry["cuda"] = {
                "stride": list(args[2]), "offset": int(args[3]), "device": int(args[6]), "handle": args[7].hex(),
                "storage_bytes": int(args[8]), "storage_offset": int(args[9]), "ref_handle": args[11].hex(),
                "ref_offset": int(args[12]), "event": args[13].hex() if args[13] else None, "sync": bool(args[14]),
            }
        else:
            data = tensor.detach().cpu().contiguous().view(-1)
            raw = data.view(torch.uint8) if data.element_size() and data.dtype != torch.bool else data
            payload = memoryview(raw.numpy()).cast("B") if raw.numel() else memoryview(b"")
            entry["nbytes"] = len(payload)
            payloads.append(payload)
        headers.append(entry)
    return headers, payloads


def send_tensors(sock: socket.socket, header: dict[str, Any], tensors: list[torch.Tensor]) -> dict[str, Any]:
    """Send `tensors` with `header` and wait for the receiver's answer."""
    described, payloads = describe(tensors)
    send(sock, {**header, "tensors": described})
    for payload in payloads:
        if len(payload):
            sock.sendall(payload)
    return receive(sock)


def _ints(values: Any, what: str) -> list[int]:
    if not isinstance(values, list) or not all(type(v) is int and v >= 0 for v in values):
        raise TransferError(f"{what} must be a list of non-negative ints")
    return values


def read_tensors(sock: socket.socket, header: dict[str, Any], device: torch.device) -> list[torch.Tensor]:
    """The tensors a `send_tensors` message announces: CUDA ones mapped, CPU ones read off the socket."""
    import torch

    entries = header.get("tensors")
    if not isinstance(entries, list) or len(entries) > MAX_TENSORS:
        raise TransferError("a message without a list of tensors")
    tensors = []
    for entry in entries:
        dtype = dtypes().get(entry.get("dtype")) if isinstance(entry, dict) else None
        if dtype is None:
            raise TransferError(f"an unknown dtype in {str(entry)[:80]}")
        shape = _ints(entry.get("shape"), "shape")
        numel = 1
        for size in shape:
            numel *= size
        if "cuda" in entry:
            tensors.append(_map_cuda(entry["cuda"], dtype, shape))
            continue
        nbytes = entry.get("nbytes")
        element = torch.empty((), dtype=dtype).element_size()
        if type(nbytes) is not int or nbytes != numel * element:
            raise TransferError(f"{nbytes} bytes announced for {numel} elements of {dtype}")
        raw = _recv_exact(sock, nbytes)
        flat = torch.frombuffer(raw, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        value = flat.view(dtype) if dtype != torch.bool else flat.view(torch.bool)
        tensors.append(value.reshape(shape).to(device))
    return tensors


def _map_cuda(spec: Any, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
    import torch
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    if not isinstance(spec, dict):
        raise TransferError("a CUDA tensor without its handle")
    try:
        return rebuild_cuda_tensor(
            torch.Tensor, tuple(shape), tuple(_ints(spec["stride"], "stride")), int(spec["offset"]),
            torch.UntypedStorage, dtype, int(spec["device"]), bytes.fromhex(spec["handle"]),
            int(spec["storage_bytes"]), int(spec["storage_offset"]), False, bytes.fromhex(spec["ref_handle"]),
            int(spec["ref_offset"]), bytes.fromhex(spec["event"]) if spec["event"] else None, bool(spec["sync"]),
        )
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise TransferError(f"a CUDA handle that cannot be mapped: {err}") from None


class ReferenceLink:
    """The candidate's one-way line to the reference process: outputs go, only "received" comes back."""

    def __init__(self, address: str, token: str) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect("\0" + address)
        if not request(self._sock, {"op": "hello", "token": token}).get("ok"):
            raise RuntimeError("the reference process refused this candidate")

    def send(self, kind: str, case: int, run: int, outputs: list[torch.Tensor]) -> None:
        header = {"op": kind, "case": case, "run": run}
        if not send_tensors(self._sock, header, outputs).get("ok"):
            raise RuntimeError("the reference process did not take the outputs")

    def not_run(self, case: int, why: str) -> None:
        """Say that this candidate cannot take a case (measure/parameters.py), and why."""
        if not request(self._sock, {"op": "not-run", "case": case, "why": why}).get("ok"):
            raise RuntimeError("the reference process did not take the note")
