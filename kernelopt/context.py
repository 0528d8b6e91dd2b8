"""Run-scoped settings, given to the graph as its `context_schema`."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelopt.records import InputError


def _doc(text: str) -> dict[str, str]:
    return {"description": text}


@dataclass(kw_only=True)
class Context:
    """Settings for one optimization run. Every field has a default: an empty form runs offline."""

    model: str | None = field(
        default=None,
        metadata=_doc(
            "Chat model name (e.g. gpt-4o, a vLLM or Ollama model), or NAME@URL for one at its own endpoint; "
            "it also judges. Empty: the offline policy (rules + launch-parameter search), no LLM."
        ),
    )
    models: list[str] | None = field(
        default=None,
        metadata=_doc(
            "More chat models beside `model`, each NAME or NAME@URL (else reached at base_url). Each round's "
            "candidates are shared among all of them in turn (branch i of round r: model (i + r) mod M); a "
            "repair stays with the model that wrote the kernel; the report counts each model's candidates."
        ),
    )
    drop_model_after: int = field(
        default=3,
        metadata=_doc(
            "With several models: a model whose last this many candidates all failed (no kernel in the reply, "
            "its endpoint down, a kernel that does not compile or is wrong) is dropped from the run while "
            "another still works; the report says why. 0: never dropped."
        ),
    )
    base_url: str | None = field(
        default=None,
        metadata=_doc("OpenAI-compatible endpoint; falls back to OPENAI_BASE_URL, then OpenAI's."),
    )
    api_key: str | None = field(
        default=None,
        metadata=_doc("API key; falls back to OPENAI_API_KEY. Never passed to candidate kernels."),
    )
    temperature: float = field(default=0.2, metadata=_doc("Sampling temperature of the LLM."))
    llm_timeout_s: float = field(default=300.0, metadata=_doc("Timeout of one LLM call, seconds."))
    llm_max_retries: int = field(
        default=4,
        metadata=_doc(
            "Retries of an LLM call after a connection error, timeout, 429 or 5xx; then the run stops "
            "(llm_unavailable), or with several models the call is that model's failed candidate."
        ),
    )
    llm_backoff_s: float = field(
        default=2.0, metadata=_doc("Wait before the first retry of an LLM call, seconds; doubles each retry."),
    )
    llm_max_backoff_s: float = field(
        default=60.0, metadata=_doc("Longest wait between LLM retries, seconds, a server's Retry-After included."),
    )
    structured_output: bool = field(
        default=True,
        metadata=_doc(
            "Ask the judger's LLM for JSON-schema output "
            "(response_format); plain text where the server refuses it."
        ),
    )
    max_tokens: int | None = field(
        default=None,
        metadata=_doc(
            "Token budget of the whole run (input + output of every LLM "
            "call); the run stops (token_budget) when spent. Empty: none."
        ),
    )
    max_wall_s: float | None = field(
        default=None,
        metadata=_doc(
            "Time budget of the whole run from its start, "
            "seconds; the run stops (time_budget) when spent. Empty: none."
        ),
    )
    max_rounds: int = field(default=5, metadata=_doc("Most judge-optimize-verify rounds before stopping."))
    patience: int = field(default=2, metadata=_doc("Stop after this many rounds in a row without a new best."))
    max_repairs: int = field(
        default=2, metadata=_doc(
            "Repairs of a failed candidate per round "
            "before the judger is asked for the next idea."
        ),
    )
    min_gain_pct: float = field(
        default=1.0, metadata=_doc(
            "A candidate becomes the best only when "
            "faster by more than this and than the timing noise."
        ),
    )
    gpu: str | None = field(
        default=None,
        metadata=_doc(
            "Target GPU key or name (e.g. H200). Empty: the GPU present; without one, H200 is the "
            "prompts' target and the report draws no GPU roof."
        ),
    )
    at_roofline_efficiency_pct: float = field(
        default=85.0, metadata=_doc("Stop when the best kernel reaches this % of the roofline floor's speed."),
    )
    at_roofline_sol_pct: float = field(
        default=80.0, metadata=_doc("Without a floor: stop when NCU shows a unit this busy (% of peak)."),
    )
    seeds: int = field(default=3, metadata=_doc("Fresh random input sets every candidate is checked on."))
    timeout_s: float | None = field(
        default=None,
        metadata=_doc(
            "Time limit of each phase of a candidate's run (import, compile, each case, timing), seconds. "
            "Empty: limits that follow the reference's own time, so a hanging kernel is stopped in seconds."
        ),
    )
    mem_limit_gb: float = field(default=16.0, metadata=_doc("Host memory cap of one candidate's process, GiB."))
    timing_target_ms: float = field(
        default=500.0,
        metadata=_doc("Timed work per measurement, milliseconds: the trial count follows the kernel's length."),
    )
    timing_min_trials: int = field(default=10, metadata=_doc("Fewest timed trials per measurement."))
    timing_max_trials: int = field(default=1000, metadata=_doc("Most timed trials per measurement."))
    time_compile: bool = field(default=True, metadata=_doc("Also time torch.compile of the reference as a baseline."))
    max_autotune_baseline: bool = field(
        default=False,
        metadata=_doc(
            'Also time torch.compile(mode="max-autotune") of the reference, the strongest compiler baseline '
            "(compiled once per problem: Inductor's caches live in the runs folder)."
        ),
    )
    max_autotune_limit_s: float = field(
        default=600.0,
        metadata=_doc("Time limit of the max-autotune compile, seconds; past it that baseline is marked and skipped."),
    )
    profile: bool = field(default=True, metadata=_doc(
        "Profile the best kernel with "
        "Nsight Compute where ncu and a GPU exist."
    ))
    profile_final: bool = field(default=True, metadata=_doc(
        "Profile the best kernel of a run that has already stopped (max_rounds, no_gain), for the "
        "report only; off, it is placed by its time and the floor, one NCU run (about 8 s on an "
        "H200) sooner. Suites turn it off."
    ))
    runs_dir: str | None = field(
        default=None,
        metadata=_doc(
            "Folder that holds one sub-folder per run. Empty: $KERNELOPT_RUNS_DIR, else "
            "~/.cache/kernelopt/runs (never the folder `langgraph dev` watches)."
        ),
    )
    num_bottlenecks: int = field(default=2, metadata=_doc("Bottlenecks the judger asks the LLM for."))
    candidates_per_round: int = field(
        default=1,
        metadata=_doc(
            "Candidates written per round, each from the next of the top bottlenecks (the offline "
            "search: the next untried variants). LLM calls run concurrently; verification runs one "
            "kernel at a time per device."
        ),
    )
    beam: int = field(
        default=1,
        metadata=_doc(
            "Kernels kept alive as parents, the K best distinct ones: each round spreads its candidates "
            "over them (best first, at least one each), each parent diagnosed on its own. 1: a chain from "
            "the best. For LLM runs; the offline search keeps its own few best structures."
        ),
    )
    gpus: list[int] | None = field(
        default=None,
        metadata=_doc(
            "GPUs of this host (CUDA's numbering) that verify a step's candidates side by side, one "
            "per GPU; the first is the run's own (baselines, profiles, the best's time). Empty: "
            "every visible GPU."
        ),
    )
    sweep_configs: int = field(
        default=0,
        metadata=_doc(
            "Configurations the offline optimizer measures per round (block sizes, num_warps, "
            "num_stages) before verifying the best two in full. 0: 48 on a GPU, 6 under the interpreter."
        ),
    )
    compiler_seed: bool = field(
        default=True,
        metadata=_doc(
            "Also start from the compiler seed: the Triton kernels torch.compile writes for the reference, "
            "made a kernel file (a CUDA GPU makes it). No kernel and no model: the run starts from it; with a "
            "kernel, round 0 verifies both and goes on from the faster; with a model, it is the bar to beat."
        ),
    )
    approve: bool = field(
        default=False,
        metadata=_doc(
            "Ask a person before each rewrite is tried (approve, reject with a reason, or edit its "
            "source) and before a new best is accepted. Needs a checkpointer: the run interrupts "
            "and waits for Command(resume=...)."
        ),
    )
    knowledge: bool = field(
        default=True,
        metadata=_doc(
            "Put the curated optimization patterns and earlier runs' gains that fit the round's diagnosis "
            "into the optimizer's prompt, and record each gain of this run in the knowledge store."
        ),
    )
    knowledge_db: str | None = field(
        default=None,
        metadata=_doc(
            "The knowledge store: a SQLite file, or a postgresql:// URL (the CLI's --db). "
            "Empty: knowledge.sqlite in the runs folder (runs_dir), shared by every run that uses it."
        ),
    )

    def __post_init__(self) -> None:
        if self.beam < 1:
            raise InputError(f"beam is {self.beam}: give at least 1 (1 keeps a chain from the best kernel)")
