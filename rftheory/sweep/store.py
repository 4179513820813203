"""The sweep store: one SQLite file, one writer, a checksummed row per finished cell.

See :mod:`rftheory.sweep` for the design (WAL journal, ``synchronous=FULL``, the writer's
``flock``, row checksums, the integrity check on every open).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..runtime import code_version
from ..errors import InvalidValueError
from .spec import Cell, SweepSpec, canonical_json, sha256_hex, cell_key

__all__ = ["STORE_FILE", "LOCK_FILE", "SCHEMA_VERSION", "LEGACY_V_DEFINITION", "SweepStore",
           "SweepStoreError", "StoredCell", "StoreScan", "record_checksum"]

#: Name of the SQLite store inside a sweep's output directory.
STORE_FILE = "sweep.sqlite"
#: Lock file held (``flock``) by the one process that writes the store.
LOCK_FILE = "sweep.lock"
#: Version of the store's schema; a store with another version is refused.
SCHEMA_VERSION = 1
#: The definition of V assumed for a store that does not record one: stores written before the
#: record existed, whose V was drawn per 1024-row block by numpy's PCG64
#: (``default_rng([seed, block])``), the definition before :data:`rftheory.features.V_DEFINITION`.
LEGACY_V_DEFINITION = "numpy-pcg64-blocks/0"
#: Memory of one row read back by :meth:`SweepStore.scan` (its key, parameters, result and
#: bookkeeping as Python objects), a lower bound: 1.6 KB measured with ``tracemalloc`` for a
#: label_fit cell, more for a reconstruction's ~20 numbers. The collector holds every row of
#: the store at once (the resume check, then the report), so a sweep's memory grows with its
#: cells (checked by :func:`rftheory.sweep.check_sweep_size`).
SCANNED_ROW_BYTES = 1024


class SweepStoreError(InvalidValueError):
    """A sweep store cannot be used: wrong sweep, locked by another writer, damaged or missing."""


def _recover_wal_if_no_writer(directory: Path, path: Path) -> None:
    """Let SQLite replay the WAL of a writer that was killed, before a read-only open.

    A writer killed between making a commit durable in the WAL and updating the shared WAL index
    leaves a commit that read-only connections do not see (they cannot rebuild the index), so a
    report right after a SIGKILL could miss the last finished cell. When no writer holds the lock,
    a short read-write connection rebuilds the index; it writes no rows. SQLite rebuilds it only
    for the first connection a process opens to the file (later ones share the process's stale
    index), so every connection to the store must be closed explicitly: Python's sqlite3 closes
    a connection left to go out of scope only at the next garbage collection (the connection and
    its statement cache form a reference cycle), and ``with connect(...)`` does not close it.
    """
    import fcntl

    if not (directory / LOCK_FILE).is_file() or not Path(f"{path}-wal").is_file():
        return
    with open(directory / LOCK_FILE, "a+") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return  # a writer is running: its index is current
        try:
            with contextlib.closing(sqlite3.connect(path, timeout=60)) as db:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError:
            pass  # open_reader reports an unusable store itself


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS specs (
    id INTEGER PRIMARY KEY, spec TEXT NOT NULL, total_cells INTEGER NOT NULL,
    recorded_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
    executor TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, version TEXT NOT NULL,
    planned INTEGER NOT NULL, computed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS cells (
    cell_key TEXT PRIMARY KEY, kind TEXT NOT NULL, params TEXT NOT NULL, seed INTEGER,
    status TEXT NOT NULL, payload TEXT NOT NULL, version TEXT NOT NULL, checksum TEXT NOT NULL,
    seconds REAL, worker TEXT, run_id INTEGER, finished_at TEXT);
"""


#: The first 16 bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"


def _foreign_file(path: Path) -> str | None:
    """What the file ``path`` is when it cannot be a sweep store — ``"an empty file (0 bytes)"``,
    ``"not an SQLite database (it starts with …)"`` — or None (no file, or an SQLite file whose
    tables are checked once it is open). An empty file whose write-ahead log holds data is a
    store whose writer died before its first checkpoint: None too."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        wal = path.with_name(path.name + "-wal")
        if wal.is_file() and wal.stat().st_size > 0:
            return None
        return "an empty file (0 bytes)"
    with open(path, "rb") as fh:
        head = fh.read(len(_SQLITE_HEADER))
    if head != _SQLITE_HEADER:
        return f"not an SQLite database (it starts with {head!r})"
    return None


def _foreign_tables(db: sqlite3.Connection) -> str | None:
    """What an open SQLite database is when it holds no sweep store: None for a store (its
    ``meta`` table has a schema version)."""
    names = sorted(row[0] for row in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'"))
    if "meta" in names and db.execute(
            "SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None:
        return None
    if not names:
        return "an SQLite database without tables"
    listed = ", ".join(names[:5]) + (f", … ({len(names)} tables)" if len(names) > 5 else "")
    return f"an SQLite database of something else (its tables: {listed})"


def _refuse_foreign(path: Path, what: str) -> None:
    raise SweepStoreError(f"{path} is {what}, not a sweep store; move it aside, or choose "
                          "another --out")


def _current_v_definition() -> str:
    from ..features import V_DEFINITION

    return V_DEFINITION


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def record_checksum(cell_key_: str, kind: str, params: str, seed: Any, status: str, payload: str,
                    version: str) -> str:
    """SHA-256 over the canonical JSON of a row's content (the stored texts, verbatim).

    Parameters
    ----------
    cell_key_ : str
        The row's cell key.
    kind : str
        The cell kind.
    params : str
        The parameters' canonical JSON, as stored.
    seed : int or None
        The cell's seed.
    status : str
        ``"ok"`` or ``"error"``.
    payload : str
        The result's canonical JSON, as stored.
    version : str
        The code version (:func:`rftheory.runtime.code_version`) of the run that stored the
        cell.

    Returns
    -------
    str
        The checksum, 64 hex digits.
    """
    return sha256_hex(canonical_json({"cell_key": cell_key_, "kind": kind, "params": params,
                                   "seed": seed, "status": status, "payload": payload,
                                   "version": version}))


@dataclass(frozen=True)
class StoredCell:
    """A verified row of the store.

    Attributes
    ----------
    key : str
        The cell key (:func:`~rftheory.sweep.cell_key`).
    kind : str
        The cell kind.
    params : dict
        The cell's parameters.
    seed : int or None
        Its seed.
    status : str
        ``"ok"`` or ``"error"``.
    result : dict
        The cell function's result (for an error: the error's message).
    version : str
        The code version (:func:`rftheory.runtime.code_version`) of the run that stored it.
    seconds : float or None
        Wall time of the cell.
    worker : str or None
        Which worker computed it.
    run_id : int or None
        The run that stored it.
    """

    key: str
    kind: str
    params: dict
    seed: int | None
    status: str
    result: dict
    version: str
    seconds: float | None
    worker: str | None
    run_id: int | None


@dataclass(frozen=True)
class StoreScan:
    """Every row of a store, verified: ``cells`` maps key → row; ``corrupt`` lists the SQLite
    rowids of rows that failed verification (their key column itself may be damaged).

    Attributes
    ----------
    cells : dict of str to StoredCell
        The verified rows, by cell key.
    corrupt : tuple of int
        SQLite rowids of the rows that failed verification.
    """

    cells: dict[str, StoredCell]
    corrupt: tuple[int, ...]

    @property
    def ok(self) -> int:
        return sum(c.status == "ok" for c in self.cells.values())

    @property
    def errors(self) -> int:
        return sum(c.status == "error" for c in self.cells.values())


class SweepStore:
    """The SQLite file of one sweep (see the module docstring for the design).

    Open with :meth:`open_writer` (creates the directory and file, takes the writer lock) or
    :meth:`open_reader` (read-only; never creates or changes anything). Use as a context manager.

    Parameters
    ----------
    directory : Path
        The store's directory (the file is ``directory / STORE_FILE``).
    connection : sqlite3 connection
        The open database.
    lock : file, optional
        The open lock file holding the writer's ``flock`` (None for a reader).
    """

    def __init__(self, directory: Path, connection: sqlite3.Connection,
                 lock: Any = None) -> None:
        self.directory = directory
        self.path = directory / STORE_FILE
        self._db = connection
        self._lock = lock

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open_writer(cls, directory: str | Path) -> "SweepStore":
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        lock = open(directory / LOCK_FILE, "a+")
        try:
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # not POSIX: no cross-process guard, documented limitation
            pass
        except OSError:
            lock.close()
            raise SweepStoreError(f"another process is writing the sweep store in {directory} "
                                  "(only one collecting process may write it)") from None
        try:
            path = directory / STORE_FILE
            existed = path.exists()
            foreign = _foreign_file(path)
            if foreign is not None:
                _refuse_foreign(path, foreign)
            db = sqlite3.connect(path, isolation_level=None, timeout=60)
            store = cls(directory, db, lock)
            store._check_integrity()
            if existed:  # never write our tables into someone else's database
                foreign = _foreign_tables(db)
                if foreign is not None:
                    db.close()
                    _refuse_foreign(path, foreign)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a commit is on disk before the next cell
            db.executescript(_SCHEMA)
            version = store.meta("schema_version")
            if version is None:
                store._set_meta({"schema_version": str(SCHEMA_VERSION), "created_at": _now(),
                                 "v_definition": _current_v_definition()})
            elif version != str(SCHEMA_VERSION):
                raise SweepStoreError(f"{store.path}: store schema version {version}, this "
                                      f"rftheory writes version {SCHEMA_VERSION}")
            store._close_dead_runs()
        except sqlite3.DatabaseError as exc:
            lock.close()
            raise SweepStoreError(
                f"{directory / STORE_FILE}: not a usable SQLite store ({exc})") from None
        except BaseException:
            lock.close()
            raise
        return store

    @classmethod
    def open_reader(cls, directory: str | Path) -> "SweepStore":
        directory = Path(directory)
        path = directory / STORE_FILE
        if not path.is_file():
            raise SweepStoreError(f"no sweep store in {directory} (expected {path})")
        foreign = _foreign_file(path)
        if foreign is not None:
            _refuse_foreign(path, foreign)
        _recover_wal_if_no_writer(directory, path)
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                 isolation_level=None, timeout=60)
            store = cls(directory, db)
            store._check_integrity()
            foreign = _foreign_tables(db)
            if foreign is not None:
                db.close()
                _refuse_foreign(path, foreign)
            if store.meta("schema_version") != str(SCHEMA_VERSION):
                raise SweepStoreError(f"{path}: not a sweep store of this rftheory version")
        except sqlite3.DatabaseError as exc:
            raise SweepStoreError(f"{path}: not a usable SQLite store ({exc})") from None
        return store

    def _check_integrity(self) -> None:
        """SQLite's own page-level check; row-level damage is caught by the checksums."""
        problems = [row[0] for row in self._db.execute("PRAGMA integrity_check(5)")]
        if problems != ["ok"]:
            # one line: SQLite's first finding (its messages span several lines)
            first = " ".join(" ".join(problems).split())
            first = first if len(first) <= 160 else first[:157] + "..."
            raise SweepStoreError(f"{self.path}: damaged (SQLite integrity check: {first}); "
                                  "move the file aside and rerun into a new directory")

    def close(self) -> None:
        self._db.close()
        if self._lock is not None:
            self._lock.close()  # releases the flock

    def __enter__(self) -> "SweepStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def writer_alive(self) -> bool:
        """Whether a process holds the writer lock of this store now (this one, or another).

        The lock is an ``flock``, released by the kernel when its holder dies however it dies,
        so a run recorded as ``running`` whose writer lock is free was interrupted.
        """
        if self._lock is not None:
            return True
        import fcntl

        try:
            with open(self.directory / LOCK_FILE, "rb") as lock:
                try:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError:
                    return True
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
                return False
        except OSError:  # no lock file: no writer ever ran here, or it cannot be read
            return False

    def _close_dead_runs(self) -> None:
        """Record runs left ``running`` by a writer that died as ``interrupted`` (the caller
        holds the writer lock, so no other run is alive)."""
        with self._transaction():
            self._db.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")

    # -- metadata -----------------------------------------------------------------------------
    def v_definition(self) -> tuple[str, bool]:
        """(definition of V the store's cells were computed with, whether the store records it);
        a store without the record is taken to be :data:`LEGACY_V_DEFINITION`."""
        value = self.meta("v_definition")
        return (LEGACY_V_DEFINITION, False) if value is None else (value, True)

    def record_v_definition(self) -> None:
        """Record this rftheory's definition of V (for a store that holds no cells yet)."""
        self._set_meta({"v_definition": _current_v_definition()})

    def meta(self, key: str) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # no meta table: an empty or foreign database
            return None
        return None if row is None else row[0]

    def _set_meta(self, values: Mapping[str, str]) -> None:
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                 list(values.items()))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._db.in_transaction:  # an interrupt (SIGTERM) landed between BEGIN and its try:
            self._db.execute("ROLLBACK")  # that transaction wrote nothing; close it
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def spec(self) -> dict | None:
        text = self.meta("spec")
        return None if text is None else json.loads(text)

    def record_spec(self, spec: SweepSpec, total: int) -> None:
        text = canonical_json(spec.to_json())
        if text == self.meta("spec") and self.meta("total_cells") == str(total):
            return
        with self._transaction():
            self._db.execute("INSERT INTO specs (spec, total_cells, recorded_at) VALUES (?, ?, ?)",
                             (text, total, _now()))
            self._db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                 [("spec", text), ("total_cells", str(total))])

    # -- rows ---------------------------------------------------------------------------------
    def scan(self) -> StoreScan:
        """Read and verify every row: JSON parses, key matches the parameters, checksum matches."""
        cells: dict[str, StoredCell] = {}
        corrupt: list[int] = []
        query = ("SELECT rowid, cell_key, kind, params, seed, status, payload, version, checksum, "
                 "seconds, worker, run_id FROM cells")
        for rowid, key, kind, params, seed, status, payload, version, checksum, seconds, worker, \
                run_id in self._db.execute(query):
            try:
                if not all(isinstance(v, str) for v in (key, kind, params, status, payload,
                                                         version, checksum)):
                    raise ValueError("a text column holds another type")
                if checksum != record_checksum(key, kind, params, seed, status, payload, version):
                    raise ValueError("checksum mismatch")
                if key != cell_key(kind, params) or status not in ("ok", "error"):
                    raise ValueError("key or status inconsistent")
                result = json.loads(payload)
                if not isinstance(result, dict):
                    raise ValueError("payload is not an object")
                cells[key] = StoredCell(key, kind, json.loads(params), seed, status, result,
                                        version, seconds, worker, run_id)
            except (ValueError, TypeError):
                corrupt.append(rowid)
        return StoreScan(cells, tuple(corrupt))

    def delete_rows(self, rowids: Iterable[int]) -> None:
        """Remove rows (the corrupt ones a scan found) in one transaction."""
        with self._transaction():
            self._db.executemany("DELETE FROM cells WHERE rowid = ?", [(r,) for r in rowids])

    def put(self, cell: Cell, outcome: Mapping[str, Any], run_id: int) -> None:
        """Store one finished cell in its own transaction (replacing a corrupt row of its key)."""
        params, key, seed = cell.params_json, cell.key, cell.seed
        checksum = record_checksum(key, cell.kind, params, seed, outcome["status"],
                                   outcome["payload"], code_version())
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO cells (cell_key, kind, params, seed, status, payload, "
                "version, checksum, seconds, worker, run_id, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, cell.kind, params, seed, outcome["status"], outcome["payload"], code_version(),
                 checksum, outcome.get("seconds"), outcome.get("worker"), run_id, _now()))
            self._db.execute("UPDATE runs SET computed = computed + 1 WHERE id = ?", (run_id,))

    # -- runs ---------------------------------------------------------------------------------
    def start_run(self, executor: str, planned: int) -> int:
        with self._transaction():
            cursor = self._db.execute(
                "INSERT INTO runs (started_at, status, executor, host, pid, version, planned) "
                "VALUES (?, 'running', ?, ?, ?, ?, ?)",
                (_now(), executor, socket.gethostname(), os.getpid(), code_version(), planned))
        return int(cursor.lastrowid)

    def finish_run(self, run_id: int, status: str) -> None:
        with self._transaction():
            self._db.execute("UPDATE runs SET finished_at = ?, status = ? WHERE id = ?",
                             (_now(), status, run_id))

    def runs(self) -> list[dict]:
        """Every run, oldest first. A run recorded as ``running`` whose writer is gone (the
        writer lock is free: the process was killed) reads as ``interrupted``."""
        columns = ("id", "started_at", "finished_at", "status", "executor", "host", "pid",
                   "version", "planned", "computed")
        rows = self._db.execute(f"SELECT {', '.join(columns)} FROM runs ORDER BY id").fetchall()
        runs = [dict(zip(columns, row)) for row in rows]
        if any(r["status"] == "running" for r in runs) and not self.writer_alive():
            for run in runs:
                if run["status"] == "running":
                    run["status"] = "interrupted"
        return runs
