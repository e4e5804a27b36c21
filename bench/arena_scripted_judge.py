"""A scripted judge in the arena: N judgments through the real server, then the ranking.

Starts ``realm-ros arena serve`` on loopback, asks it for pairs over HTTP exactly as the page
does, and answers each by the rubric progression of the two episodes it was shown (read from
the hidden assignment in the database: the script stands for a person who sees how far each
robot got) plus Gaussian noise: ``d = progression(A) - progression(B) + N(0, noise)``, a tie when
``|d| < tie``, else the larger side, with a reason. Then runs ``realm-ros arena rank`` and prints
it (docs/arena.md, "The scripted ladder").

    python bench/arena_scripted_judge.py RUN_DIR --judgments 40 --noise 0.15 --world real
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import socket
import sqlite3
import subprocess
import sys
import time

import httpx

REPO = pathlib.Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('run_dirs', nargs='+', type=pathlib.Path)
    parser.add_argument('--judgments', type=int, default=40)
    parser.add_argument('--noise', type=float, default=0.15,
                        help='std of the Gaussian noise on the progression difference')
    parser.add_argument('--tie', type=float, default=0.1, help='|d| below this is a tie')
    parser.add_argument('--world', default='all', choices=('all', 'real', 'sim'))
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--db', type=pathlib.Path, default=None,
                        help='judgments database (default: a fresh one in RUN_DIR)')
    parser.add_argument('--screenshot', type=pathlib.Path, default=None,
                        help='also save a PNG of the page (Chromium, both videos at 2.5 s)')
    args = parser.parse_args()
    db = args.db or args.run_dirs[0] / 'arena_scripted.sqlite'
    progression = {}
    for run_dir in args.run_dirs:
        for line in (run_dir / 'episodes.jsonl').read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                progression[(r.get('role') or r.get('world'), r['pair_id'])] = r['progression']
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED='1')
    cli = [sys.executable, '-m', 'realm_ros.cli', 'arena']
    dirs = [str(d) for d in args.run_dirs]
    server = subprocess.Popen(cli + ['serve', *dirs, '--db', str(db), '--port', str(port),
                                     '--world', args.world, '--seed', str(args.seed)],
                              stdout=subprocess.PIPE, text=True, env=env)
    rng = random.Random(args.seed)
    started = time.monotonic()
    try:
        print(server.stdout.readline().strip(), flush=True)
        url = f'http://127.0.0.1:{port}'
        with httpx.Client(base_url=url, timeout=60) as http:
            for k in range(args.judgments):
                offer = http.get('/api/next', params={'judge': 'scripted'}).json()
                if offer.get('done'):
                    print(f'every pair judged after {k} judgments')
                    break
                with sqlite3.connect(db) as conn:
                    role, left, right = conn.execute(
                        'SELECT role, left_episode, right_episode FROM assignments WHERE '
                        'token = ?', (offer['token'],)).fetchone()
                d = (progression[(role, left)] - progression[(role, right)]
                     + rng.gauss(0.0, args.noise))
                choice = 'tie' if abs(d) < args.tie else ('A' if d > 0 else 'B')
                reason = {'A': 'A got further', 'B': 'B got further',
                          'tie': 'about as far'}[choice] + f' (scripted, d = {d:+.2f})'
                answer = http.post('/api/judge', json={'token': offer['token'],
                                                       'judge': 'scripted', 'choice': choice,
                                                       'reason': reason})
                answer.raise_for_status()
        if args.screenshot is not None:
            screenshot(url, args.screenshot)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f'{args.judgments} judgments in {time.monotonic() - started:.1f} s', flush=True)
    return subprocess.call(cli + ['rank', *dirs, '--db', str(db), '--world', args.world,
                                  '--no-write'], env=env)


def screenshot(url: str, path: pathlib.Path) -> None:
    """Open the page as a judge in Debian's Chromium, play both videos, save a PNG."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path='/usr/bin/chromium', args=[
            '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
            '--disable-component-update', '--disable-sync', '--no-first-run'])
        page = browser.new_page(viewport={'width': 1100, 'height': 760})
        page.goto(url)
        page.fill('#name', 'screenshot')
        page.click('#start')
        page.wait_for_selector('#judging', state='visible')
        page.click('#play')
        page.wait_for_function("['videoA', 'videoB'].every(id => "
                               "document.getElementById(id).currentTime > 2.5)", timeout=30000)
        page.evaluate("['videoA', 'videoB'].forEach(id => document.getElementById(id).pause())")
        page.fill('#reason', 'A got the object further; B stalled before grasping')
        page.screenshot(path=str(path), full_page=True)
        browser.close()
    print(f'screenshot: {path}')


if __name__ == '__main__':
    sys.exit(main())
