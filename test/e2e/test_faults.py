"""Faults during a paired run (issue 15): each ends its pair as an infrastructure failure.

The paired-evaluation graph of ``realm_ros/graph.py`` runs here as a lab launches it, one
process per node (params files from the same specs), with a real openpi policy server
(``realm-ros serve``) behind both policy nodes and an unreliable relay
(``test/helpers/fault_relay.py``) on the twin's command link. One fault per pair:

* pair 0: the policy server is killed mid-episode, restarted at once;
* pair 1: the relay drops commands (the lockstep twin then waits; the evaluator sees no
  progress and ends the episode);
* pair 2: the twin's world_node is killed mid-episode and respawned at once (its new episode
  is not the pair's: the evaluator notices);
* pair 3: the twin's recorder is killed mid-episode (its bag is cut; the episode itself is
  unaffected), so pair 4 cannot be recorded; it is restarted for the re-run.

Every affected episode is recorded as ``infra_failure`` with the reason (never as a policy
failure), unaffected ones are scored, the evaluator finishes, and a second evaluator run
re-runs exactly the failed episodes and nothing finished. (A robot reflex is the franka
bridge's to detect, issue 12; see docs/reliability.md.)
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rostest import BIN, call_service, ros_node
import yaml

from realm_ros.core.evaluation import EvalConfig
from realm_ros.graph import evaluator_parameters, paired_eval_graph
from realm_ros.io.repair import find_cut_bags

pytestmark = [pytest.mark.ros, pytest.mark.slow]

HELPERS = pathlib.Path(__file__).resolve().parents[1] / 'helpers'
PAIRS = 5


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class Graph:
    """The processes of one paired-evaluation graph; each can be killed and restarted."""

    def __init__(self, tmp, config, out):
        self.tmp, self.procs, self.argv = tmp, {}, {}
        for spec in paired_eval_graph(config, str(out), record=True):
            params = evaluator_parameters(spec, config)
            if spec.executable in ('world_node', 'digital_real'):
                params.update(camera_width=64, camera_height=48)  # small renders: fast
            if spec.executable == 'evaluator_node':
                params.update(quiet=True, stall_timeout_s=6.0, service_timeout_s=15.0,
                              episode_timeout_s=120.0)
            remaps = list(spec.remappings)
            if spec.executable == 'policy_node' and spec.namespace == '/sim':
                remaps.append(('command', 'command_unreliable'))  # through the relay
            key = f'{spec.namespace.strip("/").replace("/", "_")}_{spec.name}'.strip('_')
            path = tmp / f'{key}.yaml'
            path.write_text(yaml.safe_dump({'/**': {'ros__parameters': params}}))
            argv = [str(BIN / spec.executable), '--ros-args', '-r', f'__node:={spec.name}']
            if spec.namespace:
                argv += ['-r', f'__ns:={spec.namespace}']
            for a, b in remaps:
                argv += ['-r', f'{a}:={b}']
            self.argv[key] = argv + ['--params-file', str(path)]
        self.argv['relay'] = [sys.executable, str(HELPERS / 'fault_relay.py'), '--ros-args',
                              '-r', '__ns:=/sim', '-p', 'delay_s:=0.03', '-p', 'seed:=1']
        self.evaluator = self.argv.pop('evaluator')

    def start(self, key, argv=None):
        env = dict(os.environ, RCUTILS_LOGGING_BUFFERED_STREAM='0', PYTHONUNBUFFERED='1')
        log = open(self.tmp / f'{key}.log', 'a')
        self.procs[key] = subprocess.Popen(argv or self.argv[key], stdout=log,
                                           stderr=subprocess.STDOUT, env=env)
        log.close()
        return self.procs[key]

    def kill(self, key, sig=signal.SIGKILL):
        self.procs[key].send_signal(sig)
        self.procs[key].wait(timeout=30)

    def log(self, key):
        return (self.tmp / f'{key}.log').read_text()

    def wait_log(self, key, marker, timeout=120, count=1):
        deadline = time.monotonic() + timeout
        while self.log(key).count(marker) < count:
            assert self.procs[key].poll() is None or key == 'evaluator', self.log(key)[-3000:]
            assert time.monotonic() < deadline, f'{key}: no {marker!r}\n{self.log(key)[-3000:]}'
            time.sleep(0.05)

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _records(out):
    path = out / 'episodes.jsonl'
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _wait_records(out, n, timeout=120):
    deadline = time.monotonic() + timeout
    while len(_records(out)) < n:
        assert time.monotonic() < deadline, _records(out)
        time.sleep(0.1)


def _set_drop(node, executor, probability):
    client = node.create_client(SetParameters, '/sim/fault_relay/set_parameters')
    request = SetParameters.Request(parameters=[Parameter(
        name='drop_probability', value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE,
                                                      double_value=probability))])
    answer = call_service(executor, client, request, timeout=20, ready_timeout=20)
    assert answer.results[0].successful


def test_faults_end_their_pair_as_infrastructure_failures_and_rerun_resumes(tmp_path):
    port = _free_port()
    out = tmp_path / 'eval'
    # Retries for ~6 s: enough to ride out the server's restart before the next pair.
    remote = f'remote=openpi:port={port},retries=12,backoff_s=0.25,max_backoff_s=0.5'
    # 60 steps (4 s simulated): long enough that each fault, injected 0.3 s after its pair
    # starts, lands mid-episode in both worlds. With 20, a fast lockstep digital real finished
    # pair 0 before the server died, and its episode rightly scored as a timeout.
    config = EvalConfig(tasks=('push_switch',), policies=(remote,),
                        episodes_per_cell=PAIRS, max_steps=60, cameras=True)
    graph = Graph(tmp_path, config, out)
    server = [str(BIN / 'realm-ros'), 'serve', '--policy', 'hold', '--host', '127.0.0.1',
              '--port', str(port)]
    faults = 0
    with contextlib.ExitStack() as stack:
        stack.callback(graph.stop)
        node, executor = stack.enter_context(ros_node('fault_injector'))
        graph.start('server', server)
        for key in graph.argv:
            graph.start(key)
        for key, marker in (('real_world', "world 'franka' up"), ('sim_world', "world 'mujoco'"),
                            ('real_policy', 'policy '), ('sim_policy', 'policy '),
                            ('recorder_sim', 'recording'), ('recorder_real', 'recording'),
                            ('server', 'serving'), ('relay', 'relay up')):
            graph.wait_log(key, marker)
        graph.start('evaluator', graph.evaluator)

        def started(pair):  # the evaluator logs one 'recording to' line per recorder
            graph.wait_log('evaluator', 'recording to', count=2 * pair + 1)
            time.sleep(0.3)  # the episode runs (its policy reset came before the split)

        started(0)  # pair 0: the policy server dies mid-episode
        graph.kill('server')
        faults += 1
        graph.wait_log('real_policy', 'policy failed')
        graph.wait_log('sim_policy', 'policy failed')
        # Pair 1: the relay drops commands (set now: no command flows until the next pair).
        _set_drop(node, executor, 0.3)
        faults += 1
        graph.start('server', server)  # back before the next pair needs it
        _wait_records(out, 4)
        _set_drop(node, executor, 0.0)

        started(2)  # pair 2: the twin's world node dies mid-episode and is respawned
        graph.kill('sim_world')
        faults += 1
        graph.start('sim_world')
        _wait_records(out, 6)

        started(3)  # pair 3: the twin's recorder dies mid-episode; pair 4 cannot be recorded
        graph.kill('recorder_sim')
        faults += 1
        code = graph.procs['evaluator'].wait(timeout=120)

        records = _records(out)
        by = {(r['pair_id'].split('/')[2], r['world']): r for r in records}
        infra = {k for k, r in by.items() if r['outcome'] == 'infra_failure'}
        required = {('0', 'real'), ('0', 'sim'), ('1', 'sim'), ('2', 'sim'), ('4', 'real'),
                    ('4', 'sim')}
        # Right after a respawn, the policy may miss one of the new world's first images (DDS
        # discovery under load): pair 3's twin episode then stalls, also an infra failure.
        assert required <= infra <= required | {('3', 'sim')}, {
            k: by[k]['error'] for k in infra}
        # Pair 3 is the only pair that can finish in both worlds: without it the evaluator has
        # nothing to summarise and says so with exit 2 (everything else is still recorded).
        pair3_lost = ('3', 'sim') in infra
        assert code == (2 if pair3_lost else 0), graph.log('evaluator')[-3000:]
        assert 'policy infrastructure failure' in by[('0', 'sim')]['error']
        assert 'no progress from /sim' in by[('1', 'sim')]['error']
        assert 'dropped message' in graph.log('relay')
        # The respawned world's new episode, or (if it comes up slower than stall_timeout_s)
        # the silence before it, or (killed before it answered the pair's reset) the reset
        # call's timeout: either way an infrastructure failure with its reason.
        assert any(reason in by[('2', 'sim')]['error']
                   for reason in ('started another episode', 'no progress from /sim',
                                  'service /sim/reset did not answer')), by[('2', 'sim')]
        assert 'recording' in by[('4', 'sim')]['error']
        for key, r in by.items():
            if key not in infra:
                assert r['error'] == '' and r['outcome'] in ('success', 'timeout'), r
        if not pair3_lost:
            assert json.loads((out / 'summary.json').read_text())['pairs'] == 1  # pair 3 only
        else:
            assert 'nothing to summarise' in graph.log('evaluator')
        graph.start('recorder_sim')  # back for the re-run; it repairs the bag the kill cut
        graph.wait_log('recorder_sim', 'recording', count=2)
        assert 'repaired a bag cut short' in graph.log('recorder_sim')

        # A second run over the same folder retries exactly the failed episodes.
        graph.start('evaluator', graph.evaluator)
        assert graph.procs['evaluator'].wait(timeout=180) == 0, graph.log('evaluator')[-3000:]
        rerun = _records(out)[len(records):]
        assert sorted((r['pair_id'].split('/')[2], r['world']) for r in rerun) == sorted(infra)
        assert all(r['outcome'] != 'infra_failure' for r in rerun), rerun
        count = collections.Counter((r['pair_id'], r['world']) for r in _records(out)
                                    if r['outcome'] != 'infra_failure')
        assert len(count) == 2 * PAIRS and set(count.values()) == {1}
    # The graph stopped (SIGINT): every bag was closed or repaired, and opens.
    assert find_cut_bags(out / 'bags_sim') == [] and find_cut_bags(out / 'bags_real') == []
    print(f'\nfaults: {faults} injected (policy server, world node, recorder, dropped '
          f'commands): {len(infra)} episodes ended as infrastructure failures, none scored as '
          f'a policy failure; the re-run redid exactly those {len(rerun)} and nothing finished')
