"""The console of the long commands: one bar per phase, warnings and errors above it, node
lines in log files (``--verbose``: on the console too) (issue 28)."""

import io
import os
import subprocess
import sys
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rostest import BIN

from realm_ros import console
from realm_ros.ros import logs


def test_lines_go_above_a_drawing_bar(monkeypatch):
    err, out = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, 'stderr', err)
    monkeypatch.setattr(sys, 'stdout', out)
    console.set_quiet(False)
    with console.phase('pairs', total=3, unit='pair') as bar:
        bar.update(1)
        console.warn('skipped open_drawer / V-LIGHT')
        console.line('reusing 2 real episodes')
        bar.update(2)
    text = err.getvalue()
    assert 'warning: skipped open_drawer / V-LIGHT\n' in text
    assert 'pairs: 100%' in text and '3/3' in text
    assert out.getvalue() == 'reusing 2 real episodes\n'
    # --quiet, in every command (docs/cli.md): the bar, the results, warnings and errors; no
    # other line.
    console.set_quiet(True)
    try:
        console.line('chatter')
        console.error('shown')
        with console.phase('kept', total=1) as bar:
            bar.update(1)
        console.result('| table |')
    finally:
        console.set_quiet(False)
    assert 'chatter' not in out.getvalue() and out.getvalue().endswith('| table |\n')
    assert 'error: shown\n' in err.getvalue() and 'kept: 100%' in err.getvalue()


def test_rosout_warnings_and_errors_are_echoed_info_is_not(capsys):
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        echo = logs.ConsoleEcho(context=context)
        worker = rclpy.create_node('worker', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(echo)
        worker.get_logger().info('policy reset for task push_switch')
        worker.get_logger().warning('late joint state')
        for value in (0.18, 0.21, 0.19):  # one kind: printed once, the rest counted
            worker.get_logger().warning(f'command rejected: fr3_joint2 moves {value} rad')
        worker.get_logger().error('bridge lost')
        deadline = time.monotonic() + 10
        while len(echo.lines) < 3 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert echo.lines == ['warning: [worker] late joint state',
                              'warning: [worker] command rejected: fr3_joint2 moves 0.18 rad',
                              'error: [worker] bridge lost']
        err = capsys.readouterr().err
        assert 'warning: [worker] late joint state' in err and 'error: [worker] bridge lost' in err
        executor.shutdown()
        worker.destroy_node()
        echo.destroy_node()
        err = capsys.readouterr().err
        assert err.startswith('warning: [worker] 2 more like "command rejected: fr#_joint# moves')
    finally:
        rclpy.try_shutdown(context=context)


def test_init_args(tmp_path, monkeypatch):
    monkeypatch.delenv('ROS_LOG_DIR', raising=False)
    assert logs.init_args(tmp_path, verbose=True) == []
    assert 'ROS_LOG_DIR' not in os.environ
    assert logs.init_args(tmp_path) == ['--ros-args', '--disable-stdout-logs']
    assert os.environ['ROS_LOG_DIR'] == str(tmp_path.resolve() / 'logs')
    assert logs.log_dir() == str(tmp_path.resolve() / 'logs')
    monkeypatch.setenv('ROS_LOG_DIR', '/somewhere')  # the user's choice wins
    logs.init_args(tmp_path / 'other')
    assert os.environ['ROS_LOG_DIR'] == '/somewhere'


@pytest.mark.ros
@pytest.mark.slow
def test_paired_eval_console_is_a_bar_and_a_table(tmp_path):
    """What ``make demo`` showed 260 interleaved lines for: now the bar, the table, no node
    lines; they are in OUT/logs/, and ``--verbose`` brings them back."""
    out = tmp_path / 'eval'
    cmd = [str(BIN / 'realm-ros'), 'paired-eval', '--out', str(out), '--tasks', 'push_switch',
           '--policies', 'scripted:0', '--episodes-per-cell', '1', '--max-steps', '60']
    env = {k: v for k, v in os.environ.items() if k != 'ROS_LOG_DIR'}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    console_text = proc.stdout + proc.stderr
    assert '[INFO]' not in console_text, console_text
    assert 'pairs: 100%' in proc.stderr and 'real prog' in proc.stdout, console_text
    files = list((out / 'logs').glob('*.log'))
    assert files, 'no node log file in OUT/logs'
    text = ''.join(f.read_text() for f in files)
    assert '[INFO]' in text and '[evaluator]' in text and 'pairs planned' in text
    again = subprocess.run([*cmd, '--verbose'], capture_output=True, text=True, timeout=300,
                           env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert '[INFO]' in again.stderr and 'pairs planned' in again.stderr
