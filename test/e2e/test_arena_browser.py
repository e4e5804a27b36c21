"""The arena in a real browser: Debian's Chromium driven by Playwright against
``realm-ros arena serve`` started as a process on loopback.

Opens the page, checks that no policy name or episode id is in the page, its requests, their
URLs or their responses, plays both videos (their currentTime advances), submits judgments
(a missing reason is refused and nothing is stored; A, a tie, B; a skip; an undo), restarts the
server on the same database, sees every answer kept, and reads the organiser's ranking.
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


def test_blind_judging_in_chromium_survives_a_restart(tmp_path):
    sync_api = pytest.importorskip('playwright.sync_api', reason='pip install playwright')
    run_dir = make_run_dir(tmp_path / 'run', seeds=2, frames=45)
    db = run_dir / 'arena.sqlite'
    seen: list[str] = []
    # The same port after the restart: the page's origin (and the judge's name kept in its
    # localStorage) stays the same, as for a judge whose server was restarted.
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    server = Server(run_dir, port)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()

            def on_response(response):
                seen.append(response.url)
                seen.append(' '.join(f'{k}: {v}' for k, v in response.headers.items()))
                kind = response.headers.get('content-type', '')
                if 'json' in kind or 'html' in kind or 'text' in kind:
                    seen.append(response.text())

            page.on('request', lambda request: seen.append(
                request.url + ' ' + (request.post_data or '')))
            page.on('response', on_response)
            page.goto(server.url)
            page.fill('#name', 'tester')
            page.click('#start')
            page.wait_for_selector('#judging', state='visible')
            page.wait_for_function("document.querySelector('#instruction').textContent")
            assert page.text_content('#instruction') == 'pick up the spoon'

            # Both videos play: loaded, and their clocks advance.
            page.click('#play')
            page.wait_for_function(
                "['videoA', 'videoB'].every(id => { const v = document.getElementById(id); "
                "return v.readyState >= 2 && v.currentTime > 0.5 && !v.error; })",
                timeout=20000)
            sizes = page.evaluate("['videoA', 'videoB'].map(id => "
                                  "document.getElementById(id).videoWidth)")
            assert sizes == [64, 64]

            # A missing reason is refused, and nothing is stored.
            page.click('#chooseA')
            page.wait_for_function("document.querySelector('#message').textContent")
            assert 'reason' in page.text_content('#message')
            assert _count(db) == []

            def answer(button, reason):
                before = page.text_content('#progress')
                page.fill('#reason', reason)
                page.click(button)
                page.wait_for_function(
                    f"document.querySelector('#progress').textContent !== {before!r}")

            answer('#chooseA', 'A grasped the spoon, B missed it')
            answer('#chooseTie', 'both lifted it equally well')
            answer('#chooseB', 'B got further')
            answer('#skip', '')
            answer('#undo', '')  # undoes the skip: that pair is shown again
            assert 'undone' in page.text_content('#message')
            assert _count(db) == [('A', 1), ('tie', 1), ('B', 1), ('skip', 0)]
            assert 'answered 3 of 12' in page.text_content('#progress')

            # Restart the server on the same database: every answer is kept.
            server.stop()
            server = Server(run_dir, port)
            page.goto(server.url)
            page.wait_for_selector('#judging', state='visible')
            page.wait_for_function("document.querySelector('#progress').textContent")
            assert 'answered 3 of 12' in page.text_content('#progress')
            answer('#chooseA', 'A was quicker')

            # Blind: no policy name or episode id anywhere the judge's browser went.
            everything = '\n'.join(seen)
            assert [name for name in POLICIES if name in everything] == []
            assert 'pick_spoon/Default' not in everything and '.webm' not in everything
            assert 'pick_spoon__' not in everything

            # The organiser's page ranks the answers.
            page.goto(server.ranking)
            text = page.text_content('#ranking')
            browser.close()
    finally:
        server.stop()
    assert '4 judgments (0 skips) by 1 judge(s)' in text
    assert all(name in text for name in POLICIES)
    assert _count(db)[-1] == ('A', 1)


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
