"""Clean shutdown (issue 15): every node executable exits on SIGINT and SIGTERM within ~2 s.

Each console script is started as a lab would start it (its own process, its own namespace),
given time to come up, then sent the signal. It must exit within :data:`LIMIT_S` seconds, with
no traceback, and flush what it holds: the recorder's bag opens with ``rosbags`` (its
``metadata.yaml`` is written at close), the operator's record file exists.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from rostest import BIN

from realm_ros.io.repair import bag_opens

pytestmark = [pytest.mark.ros, pytest.mark.slow]

#: Seconds from the signal to the exit that count as a hang. Issue 15 asks for "a second or
#: two"; speed goals are checked by scripts, not timed tests (this machine's load varies by
#: 10x), so the test fails on a hang and prints each time; docs/reliability.md lists them.
HANG_S = 10.0

EXECUTABLES = ('world_node', 'policy_node', 'digital_real', 'evaluator_node', 'operator_node',
               'monitor_node', 'recorder_node', 'policy_server')



def _cases(tmp_path):
    """Return executable -> (argv, readiness marker in its log, check after exit)."""
    bag_dir = tmp_path / 'bags'
    record_file = tmp_path / 'operator.jsonl'

    def recorder_flushed():
        bags = sorted(bag_dir.iterdir())
        assert bags and bag_opens(bags[-1]) == '', bags

    def ros(exe, ns, *params):
        args = [exe, '--ros-args', '-r', f'__ns:={ns}']
        for p in params:
            args += ['-p', p]
        return args

    return {
        'world_node': (ros('world_node', '/sd_w', 'camera_rate_hz:=0.0'), "world 'mujoco' up",
                       None),
        'policy_node': (ros('policy_node', '/sd_p'), 'policy ', None),
        'digital_real': (ros('digital_real', '/sd_f'), 'up', None),
        'evaluator_node': (ros('evaluator_node', '/sd_e', f'out_dir:={tmp_path / "eval"}',
                               'real_ns:=/sd_none_real', 'sim_ns:=/sd_none_sim',
                               'tasks:=[push_switch]', 'policies:=[hold]'),
                           'pairs planned', None),
        'operator_node': (ros('operator_node', '/sd_o', f'record_file:={record_file}'),
                          'operator', None),
        'monitor_node': (ros('monitor_node', '/sd_m', 'real_namespace:=/sd_m/real',
                             'sim_namespace:=/sd_m/sim'), 'monitor', None),
        'recorder_node': (ros('recorder_node', '/sd_r', f'out_dir:={bag_dir}',
                              'namespace:=/sd_r'), 'recording', recorder_flushed),
        'policy_server': (['policy_server', '--port', '0', '--host', '127.0.0.1'], 'serving',
                          None),
    }


def _start(argv, log_path):
    env = dict(os.environ, RCUTILS_LOGGING_BUFFERED_STREAM='0', PYTHONUNBUFFERED='1')
    log = open(log_path, 'w')
    proc = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=log,
                            stderr=subprocess.STDOUT, env=env)
    log.close()
    return proc


@pytest.fixture(scope='module')
def shutdown_results(request, tmp_path_factory):
    """Start every executable at once, then signal them one at a time; return the outcomes."""
    sig = signal.Signals[request.param]
    tmp_path = tmp_path_factory.mktemp(sig.name)
    cases = _cases(tmp_path)
    procs = {}
    results = {}
    try:
        for exe, (argv, _, _) in cases.items():  # start all at once: one start-up wait
            procs[exe] = _start(argv, tmp_path / f'{exe}.log')
        deadline = time.monotonic() + 120
        for exe, (_, marker, _) in cases.items():
            log = tmp_path / f'{exe}.log'
            while marker not in log.read_text() and procs[exe].poll() is None:
                assert time.monotonic() < deadline, f'{exe} never up:\n{log.read_text()}'
                time.sleep(0.1)
        time.sleep(1.0)  # let every node settle (discovery, first messages, timers)
        for exe, proc in procs.items():  # one at a time: each gets the CPU to shut down
            start = time.monotonic()
            if proc.poll() is None:
                proc.send_signal(sig)
            try:
                code = proc.wait(timeout=HANG_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = 'hung'
            results[exe] = (time.monotonic() - start, code)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    print('\n' + '\n'.join(f'shutdown {exe} {sig.name}: exit {code} after {elapsed:.2f} s'
                           for exe, (elapsed, code) in results.items()))
    return sig, tmp_path, cases, results


@pytest.mark.parametrize('shutdown_results', ['SIGINT', 'SIGTERM'], indirect=True)
@pytest.mark.parametrize('exe', EXECUTABLES)
def test_node_exits_cleanly_on_signal(shutdown_results, exe):
    sig, tmp_path, cases, results = shutdown_results
    elapsed, code = results[exe]
    log = (tmp_path / f'{exe}.log').read_text()
    assert code != 'hung', f'{exe} did not exit within {HANG_S} s of {sig.name}'
    assert 'Traceback' not in log, log[log.index('Traceback'):][:3000]
    # 0, or death by the signal itself (a process with no handler for it), or 130 for Ctrl-C.
    assert code in (0, -sig, 130), f'exit code {code}\n{log[-2000:]}'
    check = cases[exe][2]
    if check is not None:
        check()


def test_policy_server_stops_on_sigint_even_when_started_with_it_ignored(tmp_path):
    """A background start (``cmd &`` in a script, nohup, some CI runners) inherits SIGINT
    ignored; asyncio alone would keep ignoring it and ros2 launch's Ctrl-C would never stop
    the server. The rclpy nodes install their own handlers; the server takes SIGINT back."""
    log_path = tmp_path / 'policy_server.log'
    with open(log_path, 'w') as log:
        proc = subprocess.Popen(
            [str(BIN / 'policy_server'), '--port', '0', '--host', '127.0.0.1'], stdout=log,
            stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED='1'),
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 60
        while 'serving' not in log_path.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
        time.sleep(0.5)  # inside the event loop
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            code = 'hung'
        assert code == 130, f'exit {code}\n{log_path.read_text()}'
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
