"""Vision policies over ROS: an openpi server that checks DROID's contract gets lit images.

Both paths a lab takes: ``realm-ros paired-eval --cameras`` (the digital real behind the franka
bridge and the twin, rendering in one process on several threads) and the node graph as
separate processes (``world_node`` + ``policy_node`` with no ``cameras:=``: the node subscribes
to the cameras its policy declares).
"""

import json
import os
import subprocess
import time

from droid_openpi_server import DroidOpenpiServer
import pytest
from rostest import BIN, run_process

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def _lit(summary):
    # 224x224 padded from 16:9: the picture is the middle 126 rows (56 %), the bands are black.
    return (summary['wrist_mean'] > 40 and summary['wrist_lit'] > 0.5
            and summary['exterior_mean'] > 40 and summary['exterior_lit'] > 0.5)


def test_paired_eval_with_cameras_sends_both_worlds_images(tmp_path):
    out = tmp_path / 'eval'
    with DroidOpenpiServer() as server:
        proc = subprocess.run(
            [str(BIN / 'realm-ros'), 'paired-eval', '--out', str(out), '--cameras',
             '--tasks', 'pick_spoon', '--policies',
             f'pi0=openpi:host=127.0.0.1,port={server.port},retries=0',
             '--episodes-per-cell', '1', '--max-steps', '16', '--quiet'],
            capture_output=True, text=True, timeout=420, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'EGL' not in proc.stderr
    assert not server.errors, server.errors[0]
    records = [json.loads(line) for line in (out / 'episodes.jsonl').read_text().splitlines()]
    assert sorted(r['world'] for r in records) == ['real', 'sim']
    assert all(r['outcome'] != 'infra_failure' for r in records), records
    # 16 steps, 8 per chunk: two queries per world (and possibly one more for the
    # observation that ends an episode, answered before the evaluator stops the policy).
    assert 4 <= len(server.requests) <= 6
    assert all(_lit(s) for s in server.requests), server.requests


def test_node_graph_subscribes_to_the_cameras_its_policy_declares(tmp_path):
    with DroidOpenpiServer() as server:
        world = ['world_node', '--ros-args', '-r', '__ns:=/sim', '-p', 'lockstep:=true',
                 '-p', 'task:=pick_spoon']
        policy = ['policy_node', '--ros-args', '-r', '__ns:=/sim', '-p', 'policy:=openpi',
                  '-p', 'host:=127.0.0.1', '-p', f'port:={server.port}',
                  '-p', 'use_sim_time:=true']
        with run_process(world, tmp_path / 'world.log'), \
                run_process(policy, tmp_path / 'policy.log'):
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(server.requests) < 3:
                time.sleep(0.2)
    log = (tmp_path / 'policy.log').read_text()
    assert len(server.requests) >= 3, log[-3000:]
    assert not server.errors, server.errors[0]
    assert "cameras ['exterior_1', 'wrist']" in log
    assert all(_lit(s) for s in server.requests), server.requests
