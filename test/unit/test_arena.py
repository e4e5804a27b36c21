"""The arena without a browser: catalog, SQLite store, pair selection, ranking, the HTTP API
of a real uvicorn server on loopback, and ``realm-ros arena rank``."""

from __future__ import annotations

import contextlib
import json
import pathlib
import random
import shutil
import threading
import time

from arena_rundir import POLICIES, make_run_dir
import httpx
import pytest

from realm_ros.arena import media, server
from realm_ros.arena.catalog import Catalog, key_text
from realm_ros.arena.ranking import attach, preferences
from realm_ros.arena.selection import choose, skipped_before, tally, uncertainty
from realm_ros.arena.store import Store
from realm_ros.cli import main
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.io.video import probe


@pytest.fixture(scope='module')
def run_dir(tmp_path_factory):
    return make_run_dir(tmp_path_factory.mktemp('arena') / 'run', seeds=3,
                        roles=('real', 'sim'), frames=6)


def test_catalog_groups_the_same_start_of_one_world(run_dir, tmp_path):
    catalog = Catalog([run_dir])
    assert len(catalog.matchups) == 2 * 3  # 2 worlds x 3 seeds
    assert len(catalog.slots) == 6 * 6  # 4 policies -> 6 pairs per matchup
    for key, clips in catalog.matchups.items():
        assert set(clips) == set(POLICIES)
        assert {c.role for c in clips.values()} == {key[0].split('|')[0]}
    assert len(Catalog([run_dir], roles=('sim',)).slots) == 18
    # The same episodes in a second folder (--reuse-real) are not counted twice.
    assert len(Catalog([run_dir, run_dir]).slots) == 36
    with pytest.raises(ConfigError, match='no episodes.jsonl'):
        Catalog([tmp_path])
    (tmp_path / 'episodes.jsonl').write_text('')
    with pytest.raises(ConfigError, match='run realm-ros paired-eval with --videos'):
        Catalog([tmp_path])


def _assign(store, catalog, judge, slot):
    key, left, right = slot
    with store.transaction() as db:
        return store.add_assignment(db, judge, key[0].split('|')[0], key_text(key),
                                    catalog.matchups[key][left], catalog.matchups[key][right])


def test_store_requires_a_reason_keeps_everything_and_undoes(run_dir, tmp_path):
    catalog = Catalog([run_dir])
    store = Store(tmp_path / 'a.sqlite')
    first = _assign(store, catalog, 'ann', catalog.slots[0])
    with pytest.raises(DataError, match='reason'):
        store.judge(first['token'], 'ann', 'A', '   ')
    with pytest.raises(DataError, match='not yours to answer'):
        store.judge(first['token'], 'bob', 'A', 'mine')
    with pytest.raises(DataError, match='must be A, B, tie or skip'):
        store.judge(first['token'], 'ann', 'left', 'x')
    store.judge(first['token'], 'ann', 'tie', 'both dropped it')
    with pytest.raises(DataError, match='already answered'):
        store.judge(first['token'], 'ann', 'A', 'again')
    second = _assign(store, catalog, 'ann', catalog.slots[1])
    store.judge(second['token'], 'ann', 'skip', '')
    # A restart is a new Store on the same file: nothing is lost.
    again = Store(tmp_path / 'a.sqlite')
    rows = again.active_judgments()
    assert [(r['choice'], r['a_policy'], r['b_policy']) for r in rows] == [
        ('tie', first['left_policy'], first['right_policy']),
        ('skip', second['left_policy'], second['right_policy'])]
    assert again.organiser_key == store.organiser_key
    undone = again.undo('ann')
    assert undone['choice'] == 'skip'
    with again.connect() as db:
        assert again.pending(db, 'ann')['token'] == second['token']
        kept = db.execute('SELECT COUNT(*) FROM judgments').fetchone()[0]
    assert kept == 2 and len(again.active_judgments()) == 1


def test_several_judges_write_at_once(run_dir, tmp_path):
    catalog = Catalog([run_dir])
    store = Store(tmp_path / 'many.sqlite')
    errors = []

    def judge(name, slots):
        try:
            for slot in slots:
                row = _assign(store, catalog, name, slot)
                store.judge(row['token'], name, 'A', f'{name} says A')
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=judge, args=(f'judge{k}', catalog.slots[k::4]))
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.active_judgments()) == len(catalog.slots)


def test_the_least_certain_pair_comes_first(run_dir):
    catalog = Catalog([run_dir], roles=('sim',))
    role_of = {key: 'sim' for key in catalog.matchups}
    key = next(iter(catalog.matchups))
    settled = [{'judge': 'x', 'role': 'sim', 'matchup': key_text(key), 'choice': 'A',
                'a_policy': 'qxalpha', 'b_policy': other} for other in
               ('qxbravo', 'qxcharlie', 'qxdelta') for _ in range(6)]
    settled += [{'judge': 'x', 'role': 'sim', 'matchup': key_text(key), 'choice': 'A',
                 'a_policy': a, 'b_policy': b} for a, b in
                (('qxbravo', 'qxdelta'), ('qxcharlie', 'qxdelta')) for _ in range(6)]
    ratios = uncertainty(catalog.policies('sim'), settled)
    assert min(ratios, key=ratios.get) == ('qxbravo', 'qxcharlie')  # never compared
    slot = choose(catalog.slots, role_of, settled, 'new judge', random.Random(0))
    assert sorted(slot[1:]) == ['qxbravo', 'qxcharlie']
    # Sides are random.
    sides = {choose(catalog.slots, role_of, settled, 'j', random.Random(s))[1] for s in range(20)}
    assert sides == {'qxbravo', 'qxcharlie'}


@contextlib.contextmanager
def _serving(app):
    import uvicorn
    sock = server.bind('127.0.0.1', 0)
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level='warning'))
    thread = threading.Thread(target=srv.run, kwargs={'sockets': [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f'http://127.0.0.1:{port}'
    finally:
        srv.should_exit = True
        thread.join(10)


#: What a judge's browser may receive in response headers: nothing about a file.
ALLOWED_HEADERS = {'date', 'server', 'content-type', 'content-length', 'accept-ranges',
                   'cache-control', 'content-range'}
#: Matroska's DateUTC element (ID 0x4461, an 8-byte date): a creation time in the container.
DATE_UTC = bytes([0x44, 0x61, 0x88])


def _leaks(text):
    """Policy names, episode ids, file names and the source files' dates found in ``text``."""
    marks = [*POLICIES, 'pick_spoon/', 'pick_spoon__', '.webm', '2026-01-01',
             'Jan 2026', '1767225']
    return [mark for mark in marks if mark in text]


def test_nothing_the_judge_receives_tells_the_clips_apart(run_dir, tmp_path):
    """Each side channel a judge's browser could read, on files that carry all of them
    (arena_rundir: titles naming the policy, dates and mtimes in run order): response headers
    (Last-Modified, ETag, a file name), bodies, URLs, the page, the video container."""
    catalog = Catalog([run_dir])
    store = Store(tmp_path / 'blind.sqlite')
    received = []
    with _serving(server.create_app(catalog, store, seed=1)) as url, httpx.Client(
            base_url=url, timeout=30) as http:

        def fetch(method, path, **kwargs):
            response = http.request(method, path, **kwargs)
            received.append(response)
            return response

        fetch('GET', '/')
        videos = []
        for k in range(3):
            body = fetch('GET', '/api/next', params={'judge': 'ann'}).json()
            for side in ('left', 'right'):
                whole = fetch('GET', body[side])
                part = fetch('GET', body[side], headers={'Range': 'bytes=0-15'})
                assert whole.status_code == 200 and part.status_code == 206
                assert part.content == whole.content[:16]
                assert part.headers['content-range'] == f'bytes 0-15/{len(whole.content)}'
                videos.append((whole.content, store.video_path(body[side].split('/')[-1])))
            choice = {'token': body['token'], 'judge': 'ann', 'choice': 'A', 'reason': 'x'}
            fetch('POST', '/api/skip' if k == 1 else '/api/judge', json=choice)
        fetch('POST', '/api/undo', json={'judge': 'ann'})
    for response in received:
        # Headers: no Last-Modified, ETag or file name; nothing else that names a file.
        assert set(response.headers) <= ALLOWED_HEADERS, (response.url, response.headers)
        assert _leaks(' '.join(f'{k}: {v}' for k, v in response.headers.items()
                               if k != 'date')) == []
        assert _leaks(str(response.url)) == []  # URLs
        if 'video' not in response.headers['content-type']:
            assert _leaks(response.text) == [], response.text  # the page and the API bodies
    for data, source in videos:
        # The container: no title, no date, no muxer or encoder version; the same bytes for the
        # same frames whatever the source file's metadata.
        assert _leaks(data.decode('latin-1')) == []
        assert DATE_UTC not in data and b'Lavf6' not in data and b'Lavc' not in data
        assert DATE_UTC in pathlib.Path(source).read_bytes()  # the source had them all
        assert data == media.blind(source)
        retitled = tmp_path / 'retitled.webm'
        shutil.copyfile(source, retitled)
        assert media.blind(retitled) == data


def test_a_blind_clip_keeps_its_frames(run_dir, tmp_path):
    source = next((run_dir / 'videos' / 'sim').glob('*.webm'))
    (tmp_path / 'clip.webm').write_bytes(media.blind(source))
    assert probe(tmp_path / 'clip.webm') == probe(source)
    with pytest.raises(DataError, match='cannot re-mux'):
        media.blind(tmp_path / 'missing.webm')
    assert media.byte_range('bytes=2-5', 10) == (2, 5)
    assert media.byte_range('bytes=-3', 10) == (7, 9)
    assert media.byte_range('bytes=8-', 10) == (8, 9)
    assert media.byte_range('bytes=0-1,4-5', 10) is None  # answered whole
    with pytest.raises(DataError, match='outside'):
        media.byte_range('bytes=10-12', 10)


def test_the_http_api_refuses_bad_answers_plainly(run_dir, tmp_path):
    catalog = Catalog([run_dir])
    store = Store(tmp_path / 'api.sqlite')
    with _serving(server.create_app(catalog, store, seed=1)) as url, httpx.Client(
            base_url=url, timeout=30) as http:
        assert http.get('/api/next', params={'judge': ' '}).json()['detail'] == \
            'Your name is required (1 to 64 characters).'
        body = http.get('/api/next', params={'judge': 'ann'}).json()
        assert body['instruction'] == 'pick up the spoon' and body['progress'] == {
            'answered': 0, 'skipped': 0, 'total': 36, 'all_judges': 0}
        # The world as the operator configured it, never "real world" for the digital real.
        assert body['world'] in ('digital_real (real side of the pair)',
                                 'mujoco (sim side of the pair)')
        refused = http.post('/api/judge', json={'token': body['token'], 'judge': 'ann',
                                                'choice': 'A', 'reason': ''})
        assert refused.status_code == 400
        assert refused.json() == {'detail': 'Say why: a reason is required for A, B and tie.'}
        garbled = http.post('/api/judge', content=b'choice=A')
        assert garbled.status_code == 400 and garbled.json()['detail'].startswith(
            'The request must be a JSON object')
        assert http.get('/api/next', params={'judge': 'ann'}).json()['token'] == body['token']
        ok = http.post('/api/judge', json={'token': body['token'], 'judge': 'ann',
                                           'choice': 'B', 'reason': 'B lifted the spoon'})
        assert ok.status_code == 200
        after = http.get('/api/next', params={'judge': 'ann'}).json()
        assert after['token'] != body['token'] and after['progress']['answered'] == 1
        assert http.get('/ranking/wrong').status_code == 404
        assert http.get('/video/nope').json() == {'detail': 'This video is not available.'}
        ranking = http.get(f'/api/ranking/{store.organiser_key}').json()
        assert ranking['judgments'] == 1
    row = store.active_judgments()[0]
    assert (row['judge'], row['choice'], row['reason']) == ('ann', 'B', 'B lifted the spoon')
    assert row['b_policy'] in POLICIES and row['created_at'] > 0


def test_a_skipped_pair_comes_back_after_the_others_and_counts_apart(run_dir):
    catalog = Catalog([run_dir], roles=('sim',))
    role_of = {key: 'sim' for key in catalog.matchups}
    slots = catalog.slots[:3]
    judgments = []

    def judge(slot, choice):
        judgments.append({'judge': 'ann', 'role': 'sim', 'matchup': key_text(slot[0]),
                          'choice': choice, 'a_policy': slot[2], 'b_policy': slot[1]})

    rng = random.Random(0)
    skipped = choose(slots, role_of, judgments, 'ann', rng)
    judge(skipped, 'skip')
    assert tally(judgments, 'ann') == {'answered': 0, 'skipped': 1}
    offered = []
    for _ in range(2):
        slot = choose(slots, role_of, judgments, 'ann', rng)
        offered.append(slot[0:1] + tuple(sorted(slot[1:])))
        judge(slot, 'tie')
    assert (skipped[0], *sorted(skipped[1:])) not in offered
    again = choose(slots, role_of, judgments, 'ann', rng)
    assert (again[0], *sorted(again[1:])) == (skipped[0], *sorted(skipped[1:]))
    assert skipped_before(judgments, 'ann', key_text(again[0]), again[1], again[2])
    assert tally(judgments, 'ann') == {'answered': 2, 'skipped': 1}
    judge(again, 'skip')  # skipped twice: left out
    assert choose(slots, role_of, judgments, 'ann', rng) is None
    assert choose(slots, role_of, judgments, 'bob', rng) is not None
    assert tally(judgments, 'ann') == {'answered': 2, 'skipped': 1}


def _scripted_judgments(run_dir, store, n, noise=0.1, seed=0):
    """A judge who prefers the higher rubric progression (the hidden assignment), with noise."""
    catalog = Catalog([run_dir])
    rng = random.Random(seed)
    progression = {(c.key, c.policy): c.progression for c in catalog.clips}
    role_of = {key: key[0].split('|')[0] for key in catalog.matchups}
    for _ in range(n):
        slot = choose(catalog.slots, role_of, store.active_judgments(), 'script', rng)
        row = _assign(store, catalog, 'script', slot)
        diff = progression[(slot[0], slot[1])] - progression[(slot[0], slot[2])] + rng.gauss(
            0, noise)
        choice = 'tie' if abs(diff) < 0.05 else ('A' if diff > 0 else 'B')
        store.judge(row['token'], 'script', choice, f'scripted: {diff:+.2f}')


def test_ranking_recovers_the_ladder_and_agrees_with_the_rubric(run_dir, tmp_path):
    store = Store(tmp_path / 'rank.sqlite')
    _scripted_judgments(run_dir, store, 30, noise=0.3)
    section = preferences(Catalog([run_dir], roles=('sim', 'real')), store, n_bootstrap=100)
    assert section['judgments'] + section['skips'] == 30
    for world in section['worlds'].values():
        assert world['ranking']['rows'][0]['policy'] in ('qxalpha', 'qxbravo')
        agreement = world['agreement']
        assert agreement['policies'] == 4
        low, high = agreement['kendall_tau_ci']
        assert -1.0 <= low <= agreement['kendall_tau'] <= high <= 1.0
    json.dumps(section, allow_nan=False)


@pytest.mark.slow
def test_arena_rank_writes_the_summary_and_report(run_dir, tmp_path, capsys):
    from realm_ros.core.evaluation import EpisodeLog, summarize
    folder = make_run_dir(tmp_path / 'run', seeds=2, roles=('real', 'sim'), frames=4)
    summary = summarize(EpisodeLog(folder / 'episodes.jsonl').records)
    summary['config'] = json.loads((folder / 'summary.json').read_text())['config']
    (folder / 'summary.json').write_text(json.dumps(summary))
    assert main(['arena', 'rank', str(folder), '--bootstrap', '0']) == 2
    assert 'no judgments yet' in capsys.readouterr().err
    store = Store(folder / 'arena.sqlite')
    _scripted_judgments(folder, store, 10)
    assert main(['arena', 'rank', str(folder), '--bootstrap', '20', '--ties', 'half']) == 0
    out = capsys.readouterr().out
    assert 'agreement with the rubric ranking over 4 policies' in out
    written = json.loads((folder / 'summary.json').read_text())
    assert written['preferences']['ties'] == 'half'
    assert written['per_policy'] == summary['per_policy']  # the rest is kept
    assert 'Preference ranking' in (folder / 'report.html').read_text()
    assert main(['arena', 'rank', str(tmp_path / 'missing')]) == 2
    # What the evaluator does when it summarises a run that has judgments.
    resummarised = {}
    assert attach(resummarised, folder, n_bootstrap=0)
    worlds = resummarised['preferences']['worlds'].values()
    assert sum(w['judgments'] for w in worlds) == 10
    assert not attach({}, tmp_path)


def test_a_busy_port_is_one_clear_error():
    sock = server.bind('127.0.0.1', 0)
    try:
        with pytest.raises(ConfigError, match=r'--host/--port: cannot listen on 127\.0\.0\.1:'):
            server.bind('127.0.0.1', sock.getsockname()[1])
    finally:
        sock.close()
