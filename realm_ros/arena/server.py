"""The arena's web server (FastAPI on uvicorn): the blind judging page and its small API.

Routes (the judges' side never carries a policy name, an episode id or a file name):

``GET /``                       the page (:mod:`realm_ros.arena.page`)
``GET /api/next?judge=NAME``    the judge's pair: ``{token, left, right, task, instruction,
                                perturbation, world, progress}`` (``left``/``right`` are
                                ``/video/<opaque id>``), or ``{done: true, progress}``
``POST /api/judge``             ``{token, judge, choice: A|B|tie, reason}``; 400 without a reason
``POST /api/skip``              ``{token, judge}``
``POST /api/undo``              ``{judge}``: the last answer is undone, its pair comes next
``GET /video/<id>``             the WebM (Range requests served)
``GET /ranking/<key>``          the organiser's ranking page (the key is printed at start and
                                kept in the database; the judges' page never links to it)
``GET /api/ranking/<key>``      the same as JSON
"""

from __future__ import annotations

import html
import random
import socket
import threading
from typing import Any

from realm_ros.arena import page
from realm_ros.arena.catalog import Catalog, instruction, key_from_text, key_text
from realm_ros.arena.ranking import format_section, preferences
from realm_ros.arena.selection import choose
from realm_ros.arena.store import Store, judge_name
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.io.video import MEDIA_TYPE

WORLD_NAMES = {'real': 'real world', 'sim': 'simulated twin'}


def _require_web() -> None:
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        raise ConfigError(f'the arena needs {err.name}: pip install "realm_ros[arena]" '
                          '(fastapi, uvicorn)') from None


def create_app(catalog: Catalog, store: Store, seed: int | None = None) -> Any:
    """Return the FastAPI application over ``catalog``'s videos and ``store``."""
    _require_web()
    from fastapi import Body, FastAPI, HTTPException
    from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

    app = FastAPI(title='realm_ros arena', docs_url=None, redoc_url=None, openapi_url=None)
    rng = random.Random(seed)
    rng_lock = threading.Lock()
    role_of = {key: key[0].split('|')[0] for key in catalog.matchups}

    def progress(db: Any, judge: str) -> dict[str, int]:
        mine = db.execute('SELECT COUNT(*) FROM judgments WHERE judge = ? AND undone_at IS '
                          'NULL', (judge,)).fetchone()[0]
        every = db.execute("SELECT COUNT(*) FROM judgments WHERE undone_at IS NULL AND "
                           "choice != 'skip'").fetchone()[0]
        return {'answered': int(mine), 'total': len(catalog.slots), 'all_judges': int(every)}

    def offer(assignment: dict[str, Any], prog: dict[str, int]) -> dict[str, Any]:
        world, task, perturbation, intensity, seed_ = key_from_text(assignment['matchup'])
        return {'token': assignment['token'],
                'left': f'/video/{assignment["left_video"]}',
                'right': f'/video/{assignment["right_video"]}',
                'task': task, 'perturbation': perturbation,
                'instruction': instruction(task, perturbation, intensity, seed_),
                'world': WORLD_NAMES.get(assignment['role'], assignment['role']),
                'progress': prog}

    def refuse(err: DataError) -> HTTPException:
        return HTTPException(status_code=400, detail=str(err))

    @app.get('/', response_class=HTMLResponse)
    def index() -> str:
        return page.PAGE

    @app.get('/api/next')
    def next_pair(judge: str = '') -> dict[str, Any]:
        try:
            name = judge_name(judge)
        except DataError as err:
            raise refuse(err) from None
        with store.transaction() as db:
            pending = store.pending(db, name)
            if pending is None:
                judgments = store.active_judgments(db)
                with rng_lock:
                    slot = choose(catalog.slots, role_of, judgments, name, rng)
                if slot is None:
                    return {'done': True, 'progress': progress(db, name)}
                key, left, right = slot
                clips = catalog.matchups[key]
                pending = store.add_assignment(db, name, role_of[key], key_text(key),
                                               clips[left], clips[right])
            return offer(pending, progress(db, name))

    @app.post('/api/judge')
    def judge(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        try:
            choice = str(body.get('choice', ''))
            if choice == 'skip':
                raise DataError('choice: use /api/skip to skip')
            store.judge(str(body.get('token', '')), str(body.get('judge', '')), choice,
                        str(body.get('reason', '') or ''))
        except DataError as err:
            raise refuse(err) from None
        return {'ok': True}

    @app.post('/api/skip')
    def skip(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        try:
            store.judge(str(body.get('token', '')), str(body.get('judge', '')), 'skip',
                        str(body.get('reason', '') or ''))
        except DataError as err:
            raise refuse(err) from None
        return {'ok': True}

    @app.post('/api/undo')
    def undo(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        try:
            undone = store.undo(str(body.get('judge', '')))
        except DataError as err:
            raise refuse(err) from None
        return {'ok': True, 'undone': undone is not None}

    @app.get('/video/{video_id}')
    def video(video_id: str) -> Any:
        path = store.video_path(video_id)
        if path is None:
            raise HTTPException(status_code=404, detail='no such video')
        # No file name in the headers: the judge must not learn the episode id.
        return FileResponse(path, media_type=MEDIA_TYPE,
                            headers={'Cache-Control': 'private, max-age=3600'})

    def organiser(key: str) -> dict[str, Any]:
        if key != store.organiser_key:
            raise HTTPException(status_code=404, detail='not found')
        return preferences(catalog, store, n_bootstrap=200)

    @app.get('/api/ranking/{key}')
    def ranking_json(key: str) -> JSONResponse:
        return JSONResponse(organiser(key))

    @app.get('/ranking/{key}', response_class=HTMLResponse)
    def ranking_page(key: str) -> str:
        section = organiser(key)
        return ('<!doctype html><html><head><meta charset="utf-8"><title>arena ranking</title>'
                '</head><body><h1>Preference ranking</h1><pre id="ranking">'
                + html.escape(format_section(section)) + '</pre></body></html>')

    return app


def bind(host: str, port: int) -> socket.socket:
    """Return a listening socket on ``host:port`` (port 0: any free port)."""
    try:
        sock = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as err:
        raise ConfigError(f'--host/--port: cannot listen on {host}:{port}: {err.strerror}') \
            from None
    sock.listen(64)
    return sock


def serve(app: Any, sock: socket.socket) -> None:
    """Run uvicorn on ``sock`` until interrupted."""
    import uvicorn
    config = uvicorn.Config(app, log_level='warning', access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
