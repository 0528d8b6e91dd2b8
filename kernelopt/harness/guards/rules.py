"""Read-only tables behind the static kernel guards (guards.py refers to these, never to literals).

A candidate kernel is LLM-written and untrusted: these tables say which imports, torch names and
tensor methods a `ModelNew.forward` may touch. Everything the tables do not allow in forward is
treated as compute that escaped the Triton kernel.
"""

from types import MappingProxyType

from kernelopt.harness.guards.escapes import (  # noqa: F401  (read as R.NAME by the checkers)
    ALLOWED_DECORATORS,
    ALLOWED_DUNDERS,
    COMPUTING_BUILTINS,
    DYNAMIC_ATTRS,
    DYNAMIC_NAMES,
    ESCAPE_ATTRS,
    FORBIDDEN_ATTRS,
    FORBIDDEN_PATH_PREFIXES,
    HOOK_ATTRS,
    INTROSPECTION_ATTRS,
    TENSOR_META_ATTRS,
)

# Rule id -> what the rule protects against (the id is what feedback and tests refer to).
RULES: MappingProxyType[str, str] = MappingProxyType(
    {
        "syntax-error": "the kernel file does not parse",
        "no-model-new": "the kernel file must define class ModelNew(nn.Module)",
        "no-triton-kernel": "the kernel file must define a @triton.jit function",
        "no-kernel-launch": "ModelNew.forward must launch a @triton.jit kernel: kernel[grid](...)",
        "torch-compute-in-forward": "PyTorch compute in forward instead of a Triton kernel",
        "tensor-method-in-forward": "a computing tensor method (.softmax, .sum, casts) in forward",
        "operator-in-forward": "tensor arithmetic (@, +, *, ...) in forward",
        "nn-module-in-forward": "an nn layer applied in forward instead of a Triton kernel",
        "dynamic-access": "getattr on modules, eval/exec/compile, __import__, globals()/vars()",
        "reference-model": "uses the reference Model (import, instantiate, subclass, call)",
        "try-except-in-forward": "try/except in forward hides a failing kernel behind a fallback",
        "forbidden-import": "imports outside the allow-list (torch, triton, math, typing, ...)",
        "forbidden-attribute": "reaches os/sys/subprocess/... through an allowed module",
        "cuda-stream": "side streams, CUDA graphs or events let work escape the timer",
        "monkey-patch": "assigning attributes of modules or classes the file does not define",
        "tensor-subclass": "tensor subclasses / __torch_function__ compute lazily, outside timing",
        "deferred-output": "properties / __getattr__ can compute an output on access",
        "cache-across-calls": "caching outputs across calls (lru_cache, dicts keyed by inputs)",
        "global-write": "forward writes module globals",
        "introspection": "frame/gc introspection can read the verifier's reference outputs",
        "file-write": "the kernel opens a file for writing",
        "forward-override": "hooks, __call__, rebinding forward or foreign decorators change what a call returns",
        "torch-as-value": "a torch function kept as a value (alias, self attribute, partial) to call later",
    }
)

# Modules a kernel file may import (a prefix match on dotted names for the triton.language tree).
ALLOWED_IMPORTS: frozenset[str] = frozenset(
    {
        "__future__",
        "torch",
        "torch.nn",
        "torch.nn.functional",
        "torch.nn.init",
        "triton",
        "triton.language",
        "math",
        "typing",
        "functools",
        "dataclasses",
    }
)
ALLOWED_IMPORT_TREES: tuple[str, ...] = ("triton.language.",)

# Decorators that make a function a Triton kernel (after alias resolution).
TRITON_DECORATORS: frozenset[str] = frozenset(
    {"triton.jit", "triton.autotune", "triton.heuristics", "triton.runtime.jit.jit"}
)

# torch names forward may use: allocation, metadata, dtypes and device queries.
# torch functions that answer questions about types, shapes and devices: no tensor comes back.
TORCH_METADATA_CALLS: frozenset[str] = frozenset(
    {
        "torch.finfo",
        "torch.iinfo",
        "torch.Size",
        "torch.device",
        "torch.dtype",
        "torch.is_tensor",
        "torch.is_floating_point",
        "torch.get_default_dtype",
        "torch.broadcast_shapes",
        "torch.promote_types",
        "torch.result_type",
        "torch.can_cast",
        "torch.is_grad_enabled",
    }
)
TORCH_ALLOWED_IN_FORWARD: frozenset[str] = frozenset(
    {
        "torch",
        "torch.empty",
        "torch.empty_like",
        "torch.empty_strided",
        "torch.zeros",
        "torch.zeros_like",
        "torch.ones",
        "torch.ones_like",
        "torch.full",
        "torch.full_like",
        "torch.arange",
        "torch.tensor",
        "torch.as_strided",
        "torch.Size",
        "torch.Tensor",
        "torch.device",
        "torch.dtype",
        "torch.is_tensor",
        "torch.is_floating_point",
        "torch.get_default_dtype",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.finfo",
        "torch.iinfo",
        "torch.cuda",
        "torch.cuda.current_device",
        "torch.cuda.device",
        "torch.cuda.is_available",
        "torch.cuda.device_count",
        "torch.cuda.get_device_properties",
        "torch.cuda.get_device_capability",
        "torch.cuda.synchronize",
        "torch.nn",
        "torch.nn.Parameter",
        "torch.nn.Module",
        *TORCH_METADATA_CALLS,
        "torch.flatten",
        "torch.reshape",
        "torch.broadcast_to",
        "torch.transpose",
        "torch.swapaxes",
        "torch.permute",
        "torch.movedim",
        "torch.squeeze",
        "torch.unsqueeze",
        "torch.narrow",
        "torch.split",
        "torch.chunk",
        "torch.unbind",
        "torch.contiguous_format",
        "torch.preserve_format",
        "torch.channels_last",
        "torch.strided",
    }
)
TORCH_DTYPES: frozenset[str] = frozenset(
    {
        "float",
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "half",
        "double",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "long",
        "uint8",
        "bool",
        "float8_e4m3fn",
        "float8_e5m2",
        "complex64",
    }
)

# Streams, graphs and events: work on another stream or a replayed graph escapes the timer.
STREAM_PATHS: frozenset[str] = frozenset(
    {
        "torch.cuda.Stream",
        "torch.cuda.stream",
        "torch.cuda.ExternalStream",
        "torch.cuda.set_stream",
        "torch.cuda.current_stream",
        "torch.cuda.default_stream",
        "torch.cuda.graph",
        "torch.cuda.CUDAGraph",
        "torch.cuda.make_graphed_callables",
        "torch.cuda.Event",
        "torch.Stream",
        "torch.Event",
    }
)

# Tensor methods that compute; anything not listed (views, metadata, .contiguous) is allowed.
TENSOR_COMPUTE_METHODS: frozenset[str] = frozenset(
    {
        *(
            "add sub mul div true_divide floor_divide remainder fmod pow matmul mm bmm addmm"
            " baddbmm addmv addcmul addcdiv mv dot outer einsum softmax log_softmax sum mean"
            " max min amax amin argmax argmin prod std var norm exp exp2 expm1 log log2 log10"
            " log1p sqrt rsqrt sigmoid tanh relu gelu silu abs neg clamp clip clamp_min"
            " clamp_max cumsum cumprod sort argsort topk kthvalue median where masked_fill"
            " masked_scatter index_select gather scatter scatter_add maximum minimum square sin"
            " cos erf reciprocal floor ceil round trunc sign lerp logsumexp all any eq ne lt gt"
            " le ge conv1d conv2d linear tril triu flip roll diff nansum nanmean mode unique"
            " sub_ mul_ div_ add_ pow_ exp_ relu_ sigmoid_ tanh_ clamp_ neg_ abs_ sqrt_ log_"
            " masked_fill_ scatter_ scatter_add_ index_add_ addmm_ baddbmm_ copysign hardtanh"
            " softplus leaky_relu elu mish logit cross det inverse svd qr"
        ).split()
    }
)
# Casts are compute too: a kernel that downcasts in forward changes the precision it is judged at.
TENSOR_CAST_METHODS: frozenset[str] = frozenset(
    {"float", "half", "double", "bfloat16", "int", "long", "short", "bool", "type", "type_as"}
)
# Methods that return metadata, not tensors (their results may take part in int arithmetic).
TENSOR_META_METHODS: frozenset[str] = frozenset(
    {
        "size",
        "stride",
        "numel",
        "dim",
        "data_ptr",
        "element_size",
        "is_contiguous",
        "item",
        "storage_offset",
        "nelement",
        "ndimension",
        "get_device",
        "tolist",
    }
)
# In forward, a method called on a tensor must be one of these (metadata, views, allocation);
# anything else is compute outside the Triton kernel, whatever its name.
TENSOR_ALLOWED_METHODS: frozenset[str] = frozenset(
    (TENSOR_META_METHODS - {"tolist"})
    | {
        *(
            "contiguous view view_as reshape reshape_as flatten unflatten t transpose permute movedim"
            " unsqueeze squeeze expand expand_as narrow select unbind chunk split as_strided detach"
            " requires_grad_ new_empty new_zeros new_ones new_full new_empty_strided zero_ fill_"
            " is_floating_point is_complex is_pinned to cuda unfold swapaxes swapdims new_tensor broadcast_to"
        ).split()
    }
)
# Attribute names that reach the interpreter, the harness or PyTorch's operator tables whether or
# not the checker can resolve the object they hang on (`t = torch; t.sys.modules`).
CACHE_DECORATORS: frozenset[str] = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})
# Keys built from these identify an input across calls: a dict keyed by them is a result cache.
INPUT_IDENTITY_CALLS: frozenset[str] = frozenset({"data_ptr", "id", "hash", "tolist", "item"})
LAZY_DUNDERS: frozenset[str] = frozenset({"__torch_function__", "__torch_dispatch__"})
# Classes whose subclasses are tensors (a Parameter or a Buffer is one): such a class can carry the hooks above.
TENSOR_BASES: frozenset[str] = frozenset(
    {
        "torch.Tensor",
        "torch._C.TensorBase",
        "torch._C._TensorBase",
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
        "torch.nn.Buffer",
        "torch.nn.parameter.Buffer",
        "torch.nn.UninitializedParameter",
        "torch.nn.parameter.UninitializedParameter",
        "torch.nn.UninitializedBuffer",
        "torch.nn.parameter.UninitializedBuffer",
    }
)
DEFERRED_DUNDERS: frozenset[str] = frozenset(
    {
        "__getattr__",
        "__getattribute__",
        "__array__",
        "__iter__",
        "__get__",
        "__set__",
        "__delete__",
        "__set_name__",
        "__init_subclass__",
        "__class_getitem__",
        "__del__",
        "__new__",
    }
)
NON_TENSOR_ANNOTATIONS: frozenset[str] = frozenset({"int", "float", "bool", "str"})
