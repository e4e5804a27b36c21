"""The arena in a real browser: Debian's Chromium driven by Playwright against
``realm-ros arena serve`` started as a process on loopback.

Opens the page, checks that no policy name, episode id or file date is in the page, its
requests, their URLs or their responses (no Last-Modified or ETag header either), plays both
videos (their currentTime advances) at the recorded resolution and zoomed, submits judgments
by button and by key (a missing reason is refused and nothing is stored; A, a tie, B; a skip;
an undo), restarts the server on the same database, sees every answer kept, signs out and in as
another judge, and reads the organiser's ranking. A second test skips a pair and sees it offered
again after the others.
Skipped only where Chromium (``make setup`` installs Debian's) or Playwright is missing.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import sqlite3
import subprocess
import sys

from arena_rundir import POLICIES, make_run_dir
import pytest

CHROMIUM = os.environ.get('REALM_ROS_CHROMIUM', '/usr/bin/chromium')
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run']
REPO = pathlib.Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                       reason=f"no Chromium at {CHROMIUM} (make setup installs Debian's "
                              'chromium)'),
]


class Server:
    """``realm-ros arena serve`` as a child process; its URLs read from its first lines."""

    def __init__(self, run_dir: pathlib.Path, port: int) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED='1')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'realm_ros.cli', 'arena', 'serve', str(run_dir), '--port',
             str(port), '--seed', '3'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env=env)
        first = self.process.stdout.readline()
        second = self.process.stdout.readline()
        assert first.startswith('arena: http://127.0.0.1:'), first + second
        self.url = first.split()[1]
        self.ranking = second.split()[-1]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _count(db: pathlib.Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute('SELECT choice, undone_at IS NULL FROM judgments ORDER BY id'
                            ).fetchall()


def _port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def _progress_changes(page, action):
    """Run ``action`` and wait until the progress line says something else."""
    before = page.text_content('#progress')
    action()
    page.wait_for_function(f"document.querySelector('#progress').textContent !== {before!r}")


def _sign_in(page, name):
    page.fill('#name', name)
    page.click('#start')
    page.wait_for_selector('#judging', state='visible')
    page.wait_for_function("document.querySelector('#progress').textContent")


def _judges(db: pathlib.Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute('SELECT judge FROM judgments ORDER BY id').fetchall()


def test_blind_judging_in_chromium_survives_a_restart(tmp_path):
    sync_api = pytest.importorskip('playwright.sync_api', reason='pip install playwright')
    run_dir = make_run_dir(tmp_path / 'run', seeds=2, frames=45)
    db = run_dir / 'arena.sqlite'
    seen: list[str] = []
    headers: list[dict] = []
    # The same port after the restart: the page's origin (and the judge's name kept in its
    # localStorage) stays the same, as for a judge whose server was restarted.
    port = _port()
    server = Server(run_dir, port)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()

            def on_response(response):
                seen.append(response.url)
                headers.append(response.headers)
                seen.append(' '.join(f'{k}: {v}' for k, v in response.headers.items()
                                     if k != 'date'))
                kind = response.headers.get('content-type', '')
                if 'json' in kind or 'html' in kind or 'text' in kind:
                    seen.append(response.text())

            page.on('request', lambda request: seen.append(
                request.url + ' ' + (request.post_data or '')))
            page.on('response', on_response)
            page.goto(server.url)
            _sign_in(page, 'tester')
            assert page.text_content('#instruction') == 'pick up the spoon'
            assert page.text_content('#world') == 'mujoco (sim side of the pair)'

            # Both videos play: loaded, and their clocks advance.
            page.click('#play')
            page.wait_for_function(
                "['videoA', 'videoB'].every(id => { const v = document.getElementById(id); "
                "return v.readyState >= 2 && v.currentTime > 0.5 && !v.error; })",
                timeout=20000)
            # At the recorded resolution (64x36), and zoomed alike by the key 2.
            widths = "['videoA', 'videoB'].map(id => document.getElementById(id).clientWidth)"
            sizes = page.evaluate("['videoA', 'videoB'].map(id => "
                                  "document.getElementById(id).videoWidth)")
            assert sizes == [64, 64] and page.evaluate(widths) == [64, 64]
            page.keyboard.press('2')
            assert page.evaluate(widths) == [128, 128]
            page.keyboard.press('1')
            assert page.evaluate(widths) == [64, 64]

            # A missing reason is refused, and nothing is stored.
            page.click('#chooseA')
            page.wait_for_function("document.querySelector('#message').textContent")
            assert page.text_content('#message') == \
                'Say why: a reason is required for A, B and tie.'
            assert _count(db) == []

            def click(button, reason):
                page.fill('#reason', reason)
                _progress_changes(page, lambda: page.click(button))

            def key(name, reason=None):
                if reason is None:
                    _progress_changes(page, lambda: page.keyboard.press(name))
                    return
                # A choice key without a reason moves to the field; Enter sends the choice.
                page.keyboard.press(name)
                assert page.evaluate('document.activeElement.id') == 'reason'
                assert page.text_content('#message').startswith('Why ')
                page.keyboard.type(reason)
                _progress_changes(page, lambda: page.keyboard.press('Enter'))

            click('#chooseA', 'A grasped the spoon, B missed it')
            key('t', 'both lifted it equally well')
            page.fill('#reason', 'B got further')
            page.keyboard.press('Escape')  # out of the reason field: keys act again
            key('b')
            key('s')
            assert '(1 skipped, offered again at the end)' in page.text_content('#progress')
            key('u')  # undoes the skip: that pair is shown again
            assert 'undone' in page.text_content('#message')
            assert _count(db) == [('A', 1), ('tie', 1), ('B', 1), ('skip', 0)]
            assert 'answered 3 of 12 pairs;' in page.text_content('#progress')

            # Restart the server on the same database: every answer is kept.
            server.stop()
            server = Server(run_dir, port)
            page.goto(server.url)
            page.wait_for_selector('#judging', state='visible')
            page.wait_for_function("document.querySelector('#progress').textContent")
            assert 'answered 3 of 12' in page.text_content('#progress')
            click('#chooseA', 'A was quicker')

            # Sign out: the next person judges under their own name.
            assert page.text_content('#judgename') == 'judge: tester'
            page.click('#signout')
            page.wait_for_selector('#login', state='visible')
            assert page.evaluate("localStorage.getItem('arena-judge')") is None
            assert not page.is_visible('#judging')
            _sign_in(page, 'second judge')
            assert 'answered 0 of 12' in page.text_content('#progress')
            key('a', 'A put it down gently')
            assert [j for (j,) in _judges(db)] == ['tester'] * 5 + ['second judge']

            # Blind: no policy name, episode id or file date anywhere the judge's browser
            # went, and no header that dates or fingerprints a file.
            everything = '\n'.join(seen)
            assert [name for name in POLICIES if name in everything] == []
            assert 'pick_spoon/Default' not in everything and '.webm' not in everything
            assert 'pick_spoon__' not in everything and '2026' not in everything
            assert [h for h in headers if {'last-modified', 'etag'} & set(h)] == []

            # The organiser's page ranks the answers.
            page.goto(server.ranking)
            text = page.text_content('#ranking')
            browser.close()
    finally:
        server.stop()
    assert '5 judgments (0 skips) by 2 judge(s)' in text
    assert all(name in text for name in POLICIES)
    assert _count(db)[-1] == ('A', 1)


def test_a_skipped_pair_is_offered_again_in_chromium(tmp_path):
    """Three pairs: skip one by key, answer the two others, the skipped one comes back."""
    sync_api = pytest.importorskip('playwright.sync_api', reason='pip install playwright')
    run_dir = make_run_dir(tmp_path / 'run', seeds=1, frames=8,
                           policies=('qxalpha', 'qxbravo', 'qxcharlie'))
    db = run_dir / 'arena.sqlite'
    server = Server(run_dir, _port())
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()
            page.goto(server.url)
            _sign_in(page, 'ann')
            _progress_changes(page, lambda: page.keyboard.press('s'))
            for reason in ('A reached it', 'A was steadier'):
                assert not page.is_visible('#again')
                page.fill('#reason', reason)
                page.keyboard.press('Escape')
                _progress_changes(page, lambda: page.keyboard.press('a'))
            assert page.is_visible('#again')
            assert 'answered 2 of 3 pairs (1 skipped, offered again at the end)' in \
                page.text_content('#progress')
            page.fill('#reason', 'B did it')
            page.keyboard.press('Escape')
            page.keyboard.press('b')
            page.wait_for_selector('#done', state='visible')
            assert page.text_content('#donetext') == 'You have judged every pair. Thank you.'
            browser.close()
    finally:
        server.stop()
    with sqlite3.connect(db) as conn:
        rows = conn.execute('SELECT choice, a_policy, b_policy FROM judgments ORDER BY id'
                            ).fetchall()
    assert [r[0] for r in rows] == ['skip', 'A', 'A', 'B']
    assert sorted(rows[0][1:]) == sorted(rows[-1][1:])  # the skipped pair, answered last


def test_chromium_plays_the_webm_the_writer_makes():
    """The codec choice (VP9 in WebM) is checked on this Chromium."""
    sync_api = pytest.importorskip('playwright.sync_api', reason='pip install playwright')
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        support = page.evaluate(
            "document.createElement('video').canPlayType('video/webm; codecs=\"vp9\"')")
        browser.close()
    assert support == 'probably'
    assert shutil.which('chromium') or os.access(CHROMIUM, os.X_OK)
