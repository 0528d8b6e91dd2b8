"""A runtime check that forward computes nothing with PyTorch outside its Triton launches.

The static guards read the source; code can hide torch compute from them in many ways (a
function kept in a dict, a helper reached through an attribute, a descriptor). This guard
watches what actually runs: every ATen operator a checked `forward` call dispatches goes
through a TorchDispatchMode, and outside a Triton launch only allocation, views, metadata and
same-dtype copies may run. Operators that Triton's own code runs (the autotuner's
benchmarking, the interpreter) are allowed: inside a launch, or called from Triton's files.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelopt.harness.sandbox import launches, poison
from kernelopt.harness.sandbox.audit import is_stdlib_file, triton_dirs

# ATen operators (by overload packet) that move or describe data without computing a result.
ALLOWED_OPS = frozenset(
    (
        "empty empty_strided empty_like new_empty new_empty_strided zeros zeros_like new_zeros ones"
        " ones_like new_ones full full_like new_full fill_ zero_ arange resize_ view _unsafe_view"
        " reshape _reshape_alias as_strided as_strided_ t transpose permute expand select slice"
        " unsqueeze squeeze detach detach_ alias lift_fresh lift_fresh_copy split split_with_sizes"
        " chunk unbind narrow unfold diagonal movedim unflatten flatten view_as view_as_real"
        " view_as_complex clone copy_ _to_copy contiguous is_same_size sym_size sym_stride sym_numel"
        " sym_storage_offset dim size stride numel is_contiguous requires_grad_ _local_scalar_dense"
        " promote_types can_cast result_type"
    ).split()
)
_COPIES = frozenset({"clone", "copy_", "_to_copy", "contiguous"})
_ALLOCATIONS = frozenset(
    "empty empty_strided empty_like new_empty new_empty_strided zeros zeros_like new_zeros ones ones_like new_ones"
    " full full_like new_full".split()
)
# the only operators a candidate's code may run inside a launch: memory left uninitialised
_SCRATCH = frozenset({"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"})
MAX_SCALAR_READS = 16  # .item() / float(t) per call: a few for shapes or flags, not a loop over data
MAX_FRESH_ELEMENTS = 256  # torch.tensor(python data) per call: a small index table, not an output



class ComputeOutsideTriton(Exception):
    """forward ran a PyTorch operator that computes, outside a Triton kernel."""


class ComputeGuard(TorchDispatchMode):
    """Records the first operator a checked call must not run; raises it there too.

    The record survives a candidate's own try/except: the caller checks `violation` after the call.
    """

    def __init__(self) -> None:
        super().__init__()
        self.violation: str | None = None
        self.copied: set[int] = set()  # storages torch copied into, outside launches
        self.scalar_reads = 0
        self.fresh_elements = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.violation is None:
            name = func.overloadpacket.__name__
            if launches.IN_LAUNCH.depth:
                # Inside a launch only Triton's own code (the interpreter, the launcher) may run
                # operators: not a grid function, a hook or a kernel body the candidate wrote. Memory
                # left uninitialised carries no result: the allocator a kernel gives triton.set_allocator
                # (scratch for descriptors made on the device) is called by the launcher, and allocates so
                # (the correctness runs' poisoned allocation fills it: the harness's fill, not the candidate's).
                harness_fill = name == "fill_" and poison.filling_now()
                problem = None if name in _SCRATCH or harness_fill or _called_from_triton() else (
                    f"forward ran torch's {name} from its own code during a Triton launch (a grid function, "
                    "a hook or the kernel body); compute must happen in Triton's language"
                )
            else:
                problem = self._judge(name, args, kwargs)
                problem = None if problem is None or _called_from_triton() else problem
            if problem:
                self.violation = problem
                raise ComputeOutsideTriton(problem)
        result = func(*args, **kwargs)
        if (func.overloadpacket.__name__ in _ALLOCATIONS and isinstance(result, torch.Tensor) and result.numel()
                and "out" not in kwargs and not func._schema.is_mutable):
            # a fresh allocation that reuses a freed copy's memory (the caching allocator) is not that copy
            # (one written `out=` into existing memory is no fresh allocation: the copy stays a copy)
            self.copied.discard(result.untyped_storage().data_ptr())
        if func.overloadpacket.__name__ in _COPIES and launches.IN_LAUNCH.depth == 0:
            target = args[0] if func.overloadpacket.__name__ == "copy_" else result
            if isinstance(target, torch.Tensor) and target.numel():
                self.copied.add(target.untyped_storage().data_ptr())
        return result

    def copied_output(self, outputs: list[torch.Tensor]) -> str | None:
        """Why an output is not a Triton kernel's work: torch copied it (a transpose by .contiguous())."""
        for index, out in enumerate(outputs):
            if out.numel() and out.untyped_storage().data_ptr() in self.copied:
                return (
                    f"output {index} was written by a torch copy (clone, contiguous, copy_) outside any "
                    "Triton launch; the result must be written by a @triton.jit kernel"
                )
        return None

    def _judge(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        if name not in ALLOWED_OPS:
            return f"forward ran torch's {name} outside a Triton kernel; compute must happen in a @triton.jit kernel"
        if name == "_local_scalar_dense":
            self.scalar_reads += 1
            if self.scalar_reads > MAX_SCALAR_READS:
                return (
                    f"forward read more than {MAX_SCALAR_READS} tensor elements into Python (.item(), float(t)); "
                    "compute must happen in a @triton.jit kernel"
                )
        elif name in ("lift_fresh", "lift_fresh_copy"):
            self.fresh_elements += args[0].numel() if args and isinstance(args[0], torch.Tensor) else 0
            if self.fresh_elements > MAX_FRESH_ELEMENTS:
                return "forward built a large tensor from Python data (torch.tensor); compute in a @triton.jit kernel"
        elif name in ("_to_copy", "copy_"):
            source = args[1] if name == "copy_" else args[0]
            target_dtype = args[0].dtype if name == "copy_" else kwargs.get("dtype") or source.dtype
            target_device = args[0].device if name == "copy_" else kwargs.get("device") or source.device
            if isinstance(source, torch.Tensor) and source.dtype != target_dtype:
                return (
                    f"forward converted {source.dtype} to {target_dtype} with torch; "
                    "dtype conversion must happen in a @triton.jit kernel"
                )
            if isinstance(source, torch.Tensor) and torch.device(target_device).type != source.device.type:
                return f"forward moved a tensor from {source.device.type} to {torch.device(target_device).type}"
        return None


# torch's own files and the harness's (the poisoning allocators wrap torch's) decide nothing.
_PASS_THROUGH = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep, os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=4096)
def _real(filename: str) -> str:
    return os.path.realpath(filename)


def _called_from_triton() -> bool:
    """Whether Triton's own code (the autotuner timing its configs, say) asked for the operator.

    The nearest caller outside torch and the standard library decides: Triton's files, yes; the
    candidate's (a pre_hook or heuristic it handed to Triton included), no.
    """
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(triton_dirs()):
            return True
        passes = filename.startswith(_PASS_THROUGH) or filename.startswith("<") or is_stdlib_file(_real(filename))
        if not passes:
            return False
        frame = frame.f_back
    return False


