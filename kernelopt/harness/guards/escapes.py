"""Tables of the ways out of `forward` the guards refuse: attributes that reach frames, modules
or the harness, dunders, hooks, decorators, dynamic lookups and forbidden paths (rules.py
re-exports them, so the checkers read every table as R.NAME)."""

ESCAPE_ATTRS: frozenset[str] = frozenset(
    {"modules", "_C", "ops", "aten", "library", "_dynamo", "_inductor", "_refs", "_prims", "_decomp", "load", "save",
     "hub", "jit_script", "_jit_internal", "overrides", "importlib", "import_module", "operator", "attrgetter",
     "methodcaller", "itemgetter", "serialization", "collect_env", "_version", "_cdata", "storage",
     "untyped_storage", "_python_dispatch", "_get_current_dispatch_mode", "_modules", "_parameters", "_buffers",
     "add_pre_run_hook", "pre_hook", "post_hook", "constexpr_function", "numpy", "apply_", "map_", "map2_",
     "tolist", "data_ptr_hook", "_init_handles"}
)
# Dunder attributes a kernel file may read: everything else (`x.__add__`, `type(x).__mul__`,
# `f.__wrapped__`) reaches an operator or the harness by the back door.
ALLOWED_DUNDERS: frozenset[str] = frozenset({"__init__", "__name__", "__doc__", "__qualname__", "__class__"})
HOOK_ATTRS: frozenset[str] = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
        "register_module_forward_hook",
        "register_module_forward_pre_hook",
        "register_hook",
        "_forward_hooks",
        "_forward_pre_hooks",
        "_forward_hooks_with_kwargs",
        "register_load_state_dict_post_hook",
    }
)
# Decorators a non-kernel function may carry (kernels carry triton's).
ALLOWED_DECORATORS: frozenset[str] = frozenset(
    {
        "staticmethod",
        "classmethod",
        "torch.no_grad",
        "torch.inference_mode",
        "typing.final",
        "typing.overload",
        "torch.amp.custom_fwd",
        "torch.amp.custom_bwd",
        "torch.cuda.amp.custom_fwd",
        "torch.cuda.amp.custom_bwd",
    }
)
# Builtins that compute when handed tensors (`sum((x, y))` adds them).
COMPUTING_BUILTINS: frozenset[str] = frozenset(
    {"sum", "abs", "pow", "max", "min", "round", "divmod", "map", "filter", "sorted", "any", "all", "reversed"}
)

TENSOR_META_ATTRS: frozenset[str] = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"}
)

# Names that look values up by string or run code: nothing a kernel needs.
DYNAMIC_NAMES: frozenset[str] = frozenset(
    {
        "__import__",
        "eval",
        "exec",
        "compile",
        "globals",
        "vars",
        "locals",
        "__builtins__",
        "importlib",
        "__loader__",
        "__spec__",
    }
)
DYNAMIC_ATTRS: frozenset[str] = frozenset(
    {
        "__dict__",
        "__globals__",
        "__code__",
        "__subclasses__",
        "__bases__",
        "__mro__",
        "__getattribute__",
        "__builtins__",
        "__closure__",
        "__func__",
        "__self__",
    }
)
INTROSPECTION_ATTRS: frozenset[str] = frozenset(
    {
        "tb_frame",
        "f_back",
        "f_locals",
        "f_globals",
        "f_code",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "__traceback__",
        "_getframe",
        "currentframe",
        "get_objects",
        "get_referrers",
        "get_referents",
        "_current_frames",
    }
)
# Reaching these through an allowed module (torch.os, triton.sys) is the same as importing them.
FORBIDDEN_ATTRS: frozenset[str] = frozenset(
    {
        "os",
        "sys",
        "subprocess",
        "ctypes",
        "socket",
        "threading",
        "multiprocessing",
        "signal",
        "builtins",
        "environ",
        "getenv",
        "putenv",
        "system",
        "popen",
        "Popen",
        "fork",
        "execv",
        "execve",
        "spawn",
        "shutil",
        "pickle",
        "gc",
        "inspect",
        "time",
        "perf_counter",
        "_thread",
        "asyncio",
        "concurrent",
        "urllib",
        "http",
        "requests",
        "pathlib",
    }
)
# Library entry points that touch files, processes or the driver on the kernel's behalf: the
# runtime audit guard trusts library frames, so these are stopped here.
FORBIDDEN_PATH_PREFIXES: tuple[str, ...] = (
    "torch.save",
    "torch.load",
    "torch.hub",
    "torch.ops.load_library",
    "torch.classes",
    "torch.utils.cpp_extension",
    "torch.utils.data",
    "torch.cuda.cudart",
    "torch.distributed",
    "torch.multiprocessing",
    "torch.compile",
    "torch._dynamo",
    "torch._inductor",
    "torch._C",
    "torch.library",
    "triton.testing",
    "triton.runtime",
    "triton.compiler",
    "triton.knobs",
)
