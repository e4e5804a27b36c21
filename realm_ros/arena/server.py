"""The arena's web server (FastAPI on uvicorn): the blind judging page and its small API.

Routes (the judges' side never carries a policy name, an episode id or a file name):

``GET /``                       the page (:mod:`realm_ros.arena.page`)
``GET /api/next?judge=NAME``    the judge's pair: ``{token, left, right, task, instruction,
                                perturbation, world, skipped_before, progress}``
                                (``left``/``right`` are ``/video/<opaque id>``), or ``{done:
                                true, progress}``; ``progress``: ``{answered, skipped, total,
                                all_judges}``
``POST /api/judge``             ``{token, judge, choice: A|B|tie, reason}``; 400 without a reason
``POST /api/skip``              ``{token, judge}``
``POST /api/undo``              ``{judge}``: the last answer is undone, its pair comes next
``GET /video/<id>``             the WebM, re-muxed without metadata (:mod:`.media`), Range
                                requests served, no Last-Modified or ETag
``GET /ranking/<key>``          the organiser's ranking page (the key is printed at start and
                                kept in the database; the judges' page never links to it)
``GET /api/ranking/<key>``      the same as JSON

A refusal is HTTP 400 (404 for an unknown video or page) with one plain sentence in ``detail``,
which the page shows as it is.
"""

from __future__ import annotations

import html
import random
import socket
import threading
from typing import Any

from realm_ros.arena import media, page
from realm_ros.arena.catalog import Catalog, instruction, key_from_text, key_text
from realm_ros.arena.ranking import format_section, preferences
from realm_ros.arena.selection import choose, skipped_before, tally
from realm_ros.arena.store import Store, judge_name
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.io.video import MEDIA_TYPE


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
    from fastapi import Body, FastAPI, Header, HTTPException
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, Response

    app = FastAPI(title='realm_ros arena', docs_url=None, redoc_url=None, openapi_url=None)
    rng = random.Random(seed)
    rng_lock = threading.Lock()
    role_of = {key: key[0].split('|')[0] for key in catalog.matchups}
    clips = media.BlindClips()

    @app.exception_handler(RequestValidationError)
    def malformed(request: Any, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({'detail': 'The request must be a JSON object (as the page sends '
                                       'it).'}, status_code=400)

    def progress(judgments: list[dict[str, Any]], judge: str) -> dict[str, int]:
        every = sum(1 for j in judgments if j['choice'] != 'skip')
        return {**tally(judgments, judge), 'total': len(catalog.slots), 'all_judges': every}

    def offer(assignment: dict[str, Any], judgments: list[dict[str, Any]]) -> dict[str, Any]:
        world, task, perturbation, intensity, seed_ = key_from_text(assignment['matchup'])
        # Both clips re-muxed before the page asks for either: the two answer alike.
        for side in ('left_path', 'right_path'):
            try:
                clips.get(assignment[side])
            except DataError:
                pass  # the video request answers 404
        judge = assignment['judge']
        return {'token': assignment['token'],
                'left': f'/video/{assignment["left_video"]}',
                'right': f'/video/{assignment["right_video"]}',
                'task': task, 'perturbation': perturbation,
                'instruction': instruction(task, perturbation, intensity, seed_),
                'world': catalog.labels.get(world, assignment['role']),
                'skipped_before': skipped_before(
                    judgments, judge, assignment['matchup'], assignment['left_policy'],
                    assignment['right_policy']),
                'progress': progress(judgments, judge)}

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
            judgments = store.active_judgments(db)
            if pending is None:
                with rng_lock:
                    slot = choose(catalog.slots, role_of, judgments, name, rng)
                if slot is None:
                    return {'done': True, 'progress': progress(judgments, name)}
                key, left, right = slot
                both = catalog.matchups[key]
                pending = store.add_assignment(db, name, role_of[key], key_text(key),
                                               both[left], both[right])
        return offer(pending, judgments)

    @app.post('/api/judge')
    def judge(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        try:
            choice = str(body.get('choice', ''))
            if choice == 'skip':
                raise DataError('To skip a pair, use the Skip button.')
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
    def video(video_id: str, range_: str | None = Header(default=None, alias='range')
              ) -> Response:
        path = store.video_path(video_id)
        try:
            if path is None:
                raise DataError('no such video')
            data = clips.get(path)
        except DataError:
            raise HTTPException(status_code=404, detail='This video is not available.') \
                from None
        # The headers say type, length and range only: no file name (the episode id), no
        # Last-Modified or ETag (the file's time marks the run order), see media.py.
        headers = {'Accept-Ranges': 'bytes', 'Cache-Control': 'private, max-age=3600'}
        try:
            span = media.byte_range(range_, len(data))
        except DataError:
            return Response(status_code=416, media_type=MEDIA_TYPE,
                            headers={**headers, 'Content-Range': f'bytes */{len(data)}'})
        if span is None:
            return Response(data, media_type=MEDIA_TYPE, headers=headers)
        first, last = span
        return Response(data[first:last + 1], status_code=206, media_type=MEDIA_TYPE,
                        headers={**headers, 'Content-Range': f'bytes {first}-{last}/{len(data)}'})

    def organiser(key: str) -> dict[str, Any]:
        if key != store.organiser_key:
            raise HTTPException(status_code=404, detail='Not found.')
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
