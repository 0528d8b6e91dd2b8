"""Durable runs: the checkpointer a run writes to, and RUN_DIR/run.json that says how to resume it.

By default every run keeps its checkpoints in RUN_DIR/checkpoints.sqlite (LangGraph's SQLite
saver), so a run directory is all `kernelopt resume` needs. `--db postgresql://...` puts them
in PostgreSQL instead; run.json then records the URL without its password (libpq finds that
in PGPASSWORD or ~/.pgpass, or `resume --db` gives the URL again).

Checkpoints revive kernelopt's own records (and langgraph's safe types) and nothing else:
`serializer()` for the savers made here, `knowing_records()` for one lent by a server (the
compiled graph `langgraph dev` serves applies it to the saver the server attaches).

Light to import (no langgraph, no torch): the CLI reads run.json and checks --db with it
before anything heavy loads.
"""

from __future__ import annotations

import copy
import dataclasses
import fcntl
import json
import os
import sqlite3
import time
import typing
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from kernelopt.context import Context
from kernelopt.records import InputError

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

RUN_FILE = "run.json"
LOCK_FILE = "run.lock"
SQLITE_FILE = "checkpoints.sqlite"
POSTGRES_SCHEMES = ("postgresql", "postgres")


def state_record_types() -> frozenset[type]:
    """Every dataclass the state can carry, found by walking the state's type hints."""
    from kernelopt.state import KernelOptState

    found: set[type] = set()

    def visit(hint: Any) -> None:
        for arg in typing.get_args(hint):
            visit(arg)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint) and hint not in found:
            found.add(hint)
            for field_hint in typing.get_type_hints(hint).values():
                visit(field_hint)

    for hint in typing.get_type_hints(KernelOptState, include_extras=True).values():
        visit(hint)
    return frozenset(found)


def serializer() -> JsonPlusSerializer:
    """LangGraph's serializer, strict: only the state's own record types are revived from a checkpoint."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    import kernelopt.state

    allowed = {(t.__module__, t.__name__) for t in state_record_types()}
    # Runs checkpointed before the records moved to records.py name them under kernelopt.state,
    # which still holds those names: they resume.
    allowed |= {("kernelopt.state", name) for _, name in allowed if hasattr(kernelopt.state, name)}
    return JsonPlusSerializer(allowed_msgpack_modules=sorted(allowed))


class RecordSerializer:
    """A saver's own serializer, except that msgpack values are revived by `serializer()`.

    Writes stay the saver's (its format, its pickle fallback), so a server reads back what it
    wrote; reading knows kernelopt's records instead of warning about each as unregistered.
    """

    def __init__(self, inner: SerializerProtocol) -> None:
        self.inner = inner
        self.records = serializer()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.records.loads_typed(data) if data[0] == "msgpack" else self.inner.loads_typed(data)


def knowing_records(saver: BaseCheckpointSaver) -> BaseCheckpointSaver:
    """A shallow copy of `saver` (same storage) whose checkpoints revive kernelopt's records."""
    if isinstance(saver.serde, RecordSerializer):
        return saver
    clone = copy.copy(saver)
    clone.serde = RecordSerializer(saver.serde)  # type: ignore[assignment]
    return clone


@dataclass(frozen=True)
class RunRecord:
    """What RUN_DIR/run.json holds: the thread, where its checkpoints are, the inputs and settings."""

    thread_id: str
    db: str | None  # a PostgreSQL URL without password; None: RUN_DIR/checkpoints.sqlite
    inputs: dict[str, Any]
    context: dict[str, Any]
    started_at: float

    def config(self) -> dict[str, Any]:
        """The graph config that addresses this run's checkpoints."""
        return {"configurable": {"thread_id": self.thread_id}}

    def run_context(self) -> Context:
        """The run's Context as recorded; fields this version does not know are dropped."""
        known = {f.name for f in dataclasses.fields(Context)}
        return Context(**{k: v for k, v in self.context.items() if k in known})


def check_db_url(db: str | None) -> str | None:
    """The --db value if it is a PostgreSQL URL (or None); bad input otherwise."""
    if db is not None and urlsplit(db).scheme not in POSTGRES_SCHEMES:
        raise InputError(
            f"--db {db!r} is not a postgresql:// URL; without --db the checkpoints go to RUN_DIR/{SQLITE_FILE}"
        )
    return db


def without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def new_run_record(run_dir: Path, inputs: dict[str, Any], ctx: Context, db: str | None) -> RunRecord:
    """Write RUN_DIR/run.json for a new run (keys and passwords are never written) and return its record."""
    context = dataclasses.asdict(ctx) | {"api_key": None}
    if ctx.knowledge_db and urlsplit(ctx.knowledge_db).scheme in POSTGRES_SCHEMES:
        context["knowledge_db"] = without_password(ctx.knowledge_db)
    record = RunRecord(uuid.uuid4().hex, without_password(db) if db else None, inputs, context, time.time())
    write_run_record(run_dir, record)
    return record


def write_run_record(run_dir: Path, record: RunRecord) -> None:
    """RUN_DIR/run.json for `record` (a resume that changes a setting writes it again)."""
    (run_dir / RUN_FILE).write_text(json.dumps(dataclasses.asdict(record), indent=2))


def read_run_record(run_dir: Path) -> RunRecord:
    """The record of the run in `run_dir`; bad input when the folder holds no run."""
    path = run_dir / RUN_FILE
    if not path.is_file():
        raise InputError(f"{run_dir} holds no {RUN_FILE}; pass the run directory that `kernelopt optimize` printed")
    try:
        return RunRecord(**json.loads(path.read_text()))
    except (json.JSONDecodeError, TypeError) as err:
        raise InputError(f"{path} is not a kernelopt run record ({err}); was it edited by hand?") from err


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run for this process: two processes driving one run would interleave its steps.

    The kernel drops the lock when the process ends, however it ends (kill -9 included).
    """
    with (run_dir / LOCK_FILE).open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise InputError(
                f"the run in {run_dir} is being run by process {holder}; wait for it or stop it, then resume"
            ) from None
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        yield


@contextmanager
def open_checkpointer(run_dir: Path, db: str | None) -> Iterator[BaseCheckpointSaver]:
    """The saver for a run: SQLite in the run directory, or PostgreSQL at `db`; closed on exit."""
    if db is None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        # The graph runs nodes in worker threads; the saver serializes access with its own lock.
        conn = sqlite3.connect(run_dir / SQLITE_FILE, check_same_thread=False)
        try:
            yield SqliteSaver(conn, serde=serializer())
        finally:
            conn.close()
        return
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection, OperationalError
        from psycopg.rows import dict_row
    except ImportError as err:
        raise InputError(
            f"--db needs langgraph-checkpoint-postgres and psycopg ({err}); "
            "pip install langgraph-checkpoint-postgres 'psycopg[binary]'"
        ) from err
    try:
        conn = Connection.connect(db, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    except OperationalError as err:
        raise InputError(f"cannot connect to {without_password(db)}: {str(err).strip()}") from err
    with conn:
        saver = PostgresSaver(conn, serde=serializer())
        saver.setup()
        yield saver

