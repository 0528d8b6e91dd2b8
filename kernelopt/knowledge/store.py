"""The store of accepted gains that outlives a run: SQLite by default, PostgreSQL at a URL.

Each row is one new best that beat an existing best: which problem (and family), which
bottleneck the round worked on, the change in its own words, how much faster, on which GPU.
Later runs read it back into their prompts; `kernelopt knowledge` lets a person read it.
A connection is opened per operation and closed at once: runs of a suite write side by side.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kernelopt.checkpoint import POSTGRES_SCHEMES, without_password
from kernelopt.records import InputError

STORE_FILE = "knowledge.sqlite"  # in the runs folder, unless a location is named
TABLE = "kernelopt_gains"
_SQLITE_WAIT_S = 10.0  # another run writing at the same moment holds the file this long at most


@dataclass(frozen=True)
class Gain:
    """One accepted gain: a new best that beat the run's previous best."""

    problem: str  # the problem file's name, without .py
    problem_hash: str  # harness.problem.source_hash of the reference
    family: str  # offline.moves.family names: "softmax", "matmul", ..., "other"
    bottleneck: str  # the category the round worked on ("memory", "compute", ...)
    change: str  # what the candidate changed, in its own words
    speedup: float  # previous best time / new best time
    before_ms: float
    after_ms: float
    gpu: str  # the GPU key (hardware.specs)
    gpu_time: bool  # False: interpreter or CPU times, which rank kernels but say little of a GPU
    run_dir: str
    round: int
    recorded_at: str  # ISO 8601, UTC
    id: int | None = None  # the store's number, once stored


_COLUMNS = tuple(f.name for f in dataclasses.fields(Gain) if f.name != "id")
_TYPES = {"speedup": "REAL", "before_ms": "REAL", "after_ms": "REAL", "gpu_time": "INTEGER", "round": "INTEGER"}


def is_postgres(location: str) -> bool:
    """Whether `location` is a PostgreSQL URL (else a SQLite file)."""
    return urlsplit(location).scheme in POSTGRES_SCHEMES


def _create_sql(postgres: bool) -> str:
    key = "id BIGSERIAL PRIMARY KEY" if postgres else "id INTEGER PRIMARY KEY AUTOINCREMENT"
    columns = ", ".join(f"{name} {_TYPES.get(name, 'TEXT')} NOT NULL" for name in _COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS {TABLE} ({key}, {columns})"


class GainStore:
    """The gains at one location: a SQLite file (made on first write) or a PostgreSQL database."""

    def __init__(self, location: str | Path) -> None:
        self.location = str(location)
        self.postgres = is_postgres(self.location)
        self.shown = without_password(self.location) if self.postgres else self.location  # for people to read

    @contextmanager
    def _cursor(self, write: bool) -> Iterator[Any]:
        """A cursor on a fresh connection whose table exists; committed and closed on exit."""
        if self.postgres:
            try:
                import psycopg
            except ImportError as err:
                raise InputError(f"a PostgreSQL knowledge store needs psycopg ({err}); "
                                 "pip install 'psycopg[binary]'") from err
            conn: Any = psycopg.connect(self.location, autocommit=True)
        else:
            if write:
                Path(self.location).parent.mkdir(parents=True, exist_ok=True)
            elif not Path(self.location).is_file():  # reading an absent store finds nothing, makes nothing
                yield None
                return
            conn = sqlite3.connect(self.location, timeout=_SQLITE_WAIT_S)
        try:
            cursor = conn.cursor()
            cursor.execute(_create_sql(self.postgres))
            yield cursor
            conn.commit()
        finally:
            conn.close()

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.postgres else text

    def add(self, gain: Gain) -> int:
        """Store `gain`; returns its number."""
        values = [getattr(gain, name) for name in _COLUMNS]
        values[_COLUMNS.index("gpu_time")] = int(gain.gpu_time)
        marks = ", ".join("?" for _ in _COLUMNS)
        sql = self._sql(f"INSERT INTO {TABLE} ({', '.join(_COLUMNS)}) VALUES ({marks})")
        with self._cursor(write=True) as cursor:
            if self.postgres:
                cursor.execute(sql + " RETURNING id", values)
                return int(cursor.fetchone()[0])
            cursor.execute(sql, values)
            return int(cursor.lastrowid)

    def gains(self, family: str | None = None, bottleneck: str | None = None, limit: int | None = None) -> list[Gain]:
        """The stored gains, newest first; only `family`'s and `bottleneck`'s where named."""
        where, values = [], []
        for name, value in (("family", family), ("bottleneck", bottleneck)):
            if value:
                where.append(f"{name} = ?")
                values.append(value)
        sql = f"SELECT id, {', '.join(_COLUMNS)} FROM {TABLE}"
        sql += (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._cursor(write=False) as cursor:
            if cursor is None:
                return []
            cursor.execute(self._sql(sql), values)
            return [_gain(row) for row in cursor.fetchall()]

    def get(self, number: int) -> Gain | None:
        """The gain stored as `number`, or None."""
        with self._cursor(write=False) as cursor:
            if cursor is None:
                return None
            cursor.execute(self._sql(f"SELECT id, {', '.join(_COLUMNS)} FROM {TABLE} WHERE id = ?"), [number])
            row = cursor.fetchone()
        return _gain(row) if row else None


def _gain(row: Any) -> Gain:
    fields = dict(zip(("id", *_COLUMNS), row, strict=True))
    return Gain(**{**fields, "gpu_time": bool(fields["gpu_time"])})
