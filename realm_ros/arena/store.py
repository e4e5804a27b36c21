"""The arena's answers in SQLite: assignments (what a judge was shown) and judgments.

One file (default ``<first run folder>/arena.sqlite``), WAL journal, every write in one
``BEGIN IMMEDIATE`` transaction, a connection per request: several judges (and server
processes) can write at once, and a restart loses nothing that was answered. Tables:

``assignments``
    ``token`` (the opaque id the page knows), ``judge``, ``created_at`` (Unix s), the matchup
    (``matchup`` JSON: world, task, perturbation, intensity, seed; and ``role``), the hidden
    assignment: ``left_policy``/``right_policy`` (A is left, B is right), their episode ids and
    video paths, and the opaque ``left_video``/``right_video`` ids the videos are served by.
``judgments``
    ``id``, ``token`` (the assignment), ``judge``, ``created_at``, ``choice`` (``A``, ``B``,
    ``tie`` or ``skip``), ``reason`` (required except for a skip), ``a_policy``/``b_policy``
    (copied from the assignment so a row stands alone) and ``undone_at`` (set by undo; an undone
    judgment is kept, never deleted, and no longer counts).
``meta``
    ``organiser_key`` (the secret path of the ranking page) and the schema version.
"""

from __future__ import annotations

import contextlib
import pathlib
import secrets
import sqlite3
import time
from typing import Any, Iterator

from realm_ros.core.errors import ConfigError, DataError

SCHEMA_VERSION = '1'
CHOICES = ('A', 'B', 'tie', 'skip')
MAX_REASON = 2000
MAX_JUDGE = 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS assignments (
    token TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    created_at REAL NOT NULL,
    role TEXT NOT NULL,
    matchup TEXT NOT NULL,
    left_policy TEXT NOT NULL,
    right_policy TEXT NOT NULL,
    left_episode TEXT NOT NULL,
    right_episode TEXT NOT NULL,
    left_path TEXT NOT NULL,
    right_path TEXT NOT NULL,
    left_video TEXT NOT NULL UNIQUE,
    right_video TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS judgments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token TEXT NOT NULL REFERENCES assignments(token),
    judge TEXT NOT NULL,
    created_at REAL NOT NULL,
    choice TEXT NOT NULL CHECK (choice IN ('A', 'B', 'tie', 'skip')),
    reason TEXT NOT NULL,
    a_policy TEXT NOT NULL,
    b_policy TEXT NOT NULL,
    undone_at REAL
);
CREATE INDEX IF NOT EXISTS judgments_judge ON judgments (judge, undone_at);
CREATE INDEX IF NOT EXISTS assignments_judge ON assignments (judge);
"""


def judge_name(text: Any) -> str:
    """Return a valid judge name (stripped, 1..64 characters) or raise DataError."""
    name = str(text or '').strip()
    if not name or len(name) > MAX_JUDGE:
        raise DataError(f'Your name is required (1 to {MAX_JUDGE} characters).')
    return name


class Store:
    """The arena database at ``path`` (created with its tables if missing)."""

    def __init__(self, path: str | pathlib.Path) -> None:
        self.path = pathlib.Path(path).expanduser().resolve()
        if not self.path.parent.is_dir():
            raise ConfigError(f'--db: folder {self.path.parent} does not exist')
        with self.connect() as db:
            db.execute('PRAGMA journal_mode=WAL')
            db.executescript(_SCHEMA)
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('organiser_key', ?)",
                       (secrets.token_urlsafe(18),))

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection (autocommit off, rows as dicts), closed afterwards."""
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute('PRAGMA busy_timeout=30000')
            db.execute('PRAGMA foreign_keys=ON')
            yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken before any read (``BEGIN IMMEDIATE``)."""
        with self.connect() as db:
            db.execute('BEGIN IMMEDIATE')
            try:
                yield db
            except BaseException:
                db.execute('ROLLBACK')
                raise
            db.execute('COMMIT')

    @property
    def organiser_key(self) -> str:
        """The secret of the ranking page (the judges' page never links to it)."""
        with self.connect() as db:
            return db.execute("SELECT value FROM meta WHERE key = 'organiser_key'").fetchone()[0]

    # -- reads --------------------------------------------------------------------------------

    def active_judgments(self, db: sqlite3.Connection | None = None) -> list[dict[str, Any]]:
        """Every judgment that counts (not undone), skips included, oldest first, with its
        assignment's role and matchup."""
        query = ('SELECT j.*, a.role, a.matchup FROM judgments j JOIN assignments a '
                 'USING (token) WHERE j.undone_at IS NULL ORDER BY j.id')
        if db is not None:
            return [dict(r) for r in db.execute(query)]
        with self.connect() as conn:
            return [dict(r) for r in conn.execute(query)]

    def pending(self, db: sqlite3.Connection, judge: str) -> dict[str, Any] | None:
        """The judge's assignment without a judgment that counts (newest first), if any."""
        row = db.execute(
            'SELECT a.* FROM assignments a WHERE a.judge = ? AND NOT EXISTS (SELECT 1 FROM '
            'judgments j WHERE j.token = a.token AND j.undone_at IS NULL) '
            'ORDER BY a.created_at DESC LIMIT 1', (judge,)).fetchone()
        return dict(row) if row else None

    def assignment(self, db: sqlite3.Connection, token: str) -> dict[str, Any] | None:
        """The assignment of ``token``."""
        row = db.execute('SELECT * FROM assignments WHERE token = ?', (token,)).fetchone()
        return dict(row) if row else None

    def video_path(self, video_id: str) -> str | None:
        """The file behind an opaque video id, or None."""
        with self.connect() as db:
            row = db.execute(
                'SELECT left_path AS path FROM assignments WHERE left_video = ? UNION ALL '
                'SELECT right_path FROM assignments WHERE right_video = ?',
                (video_id, video_id)).fetchone()
        return row['path'] if row else None

    # -- writes -------------------------------------------------------------------------------

    def add_assignment(self, db: sqlite3.Connection, judge: str, role: str, matchup: str,
                       left: Any, right: Any) -> dict[str, Any]:
        """Insert an assignment of clips ``left`` (A) and ``right`` (B); return its row."""
        row = {
            'token': secrets.token_urlsafe(16), 'judge': judge, 'created_at': time.time(),
            'role': role, 'matchup': matchup,
            'left_policy': left.policy, 'right_policy': right.policy,
            'left_episode': left.pair_id, 'right_episode': right.pair_id,
            'left_path': str(left.path), 'right_path': str(right.path),
            'left_video': secrets.token_urlsafe(16), 'right_video': secrets.token_urlsafe(16),
        }
        db.execute(f'INSERT INTO assignments ({", ".join(row)}) VALUES '
                   f'({", ".join("?" * len(row))})', tuple(row.values()))
        return row

    def judge(self, token: str, judge: str, choice: str, reason: str) -> dict[str, Any]:
        """Record ``judge``'s answer to assignment ``token``; return the judgment row.

        Raises:
            DataError: unknown token, another judge's assignment, already answered, a choice
                not in A/B/tie/skip, or a missing reason (required except for a skip).
        """
        judge = judge_name(judge)
        if choice not in CHOICES:
            raise DataError(f'The choice must be A, B, tie or skip, not {choice!r}.')
        reason = str(reason or '').strip()
        if choice != 'skip' and not reason:
            raise DataError('Say why: a reason is required for A, B and tie.')
        if len(reason) > MAX_REASON:
            raise DataError(f'The reason is too long: at most {MAX_REASON} characters.')
        with self.transaction() as db:
            assignment = self.assignment(db, token)
            if assignment is None or assignment['judge'] != judge:
                raise DataError("This pair is not yours to answer (another judge's, or gone): "
                                'reload the page.')
            answered = db.execute('SELECT 1 FROM judgments WHERE token = ? AND undone_at IS '
                                  'NULL', (token,)).fetchone()
            if answered:
                raise DataError('This pair is already answered: undo it first to change the '
                                'answer.')
            row = {'token': token, 'judge': judge, 'created_at': time.time(), 'choice': choice,
                   'reason': reason, 'a_policy': assignment['left_policy'],
                   'b_policy': assignment['right_policy'], 'undone_at': None}
            cursor = db.execute(f'INSERT INTO judgments ({", ".join(row)}) VALUES '
                                f'({", ".join("?" * len(row))})', tuple(row.values()))
            return {'id': cursor.lastrowid, **row}

    def undo(self, judge: str) -> dict[str, Any] | None:
        """Undo ``judge``'s last judgment (kept, marked undone); its pair is offered again.

        Offers the judge had not answered yet are dropped, so the undone pair comes next.
        Returns the undone judgment, or None when there is nothing to undo.
        """
        judge = judge_name(judge)
        with self.transaction() as db:
            last = db.execute('SELECT * FROM judgments WHERE judge = ? AND undone_at IS NULL '
                              'ORDER BY id DESC LIMIT 1', (judge,)).fetchone()
            if last is None:
                return None
            db.execute('UPDATE judgments SET undone_at = ? WHERE id = ?', (time.time(),
                                                                         last['id']))
            db.execute(
                'DELETE FROM assignments WHERE judge = ? AND token != ? AND NOT EXISTS '
                '(SELECT 1 FROM judgments j WHERE j.token = assignments.token)',
                (judge, last['token']))
            db.execute('UPDATE assignments SET created_at = ? WHERE token = ?',
                       (time.time(), last['token']))
            return dict(last)
