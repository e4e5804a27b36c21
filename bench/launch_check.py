"""Run realm_ros's launch files the way ``ros2 launch`` does, from an install, and check them.

    # a lab machine (ROS 2 sourced: launch, launch_ros, ros2launch, robot_state_publisher)
    python3 bench/launch_check.py paired interrupt sysid world
    # a machine without a ROS install (rclpy from PyPI): the launch sources from git
    .venv/bin/python bench/launch_check.py --launch-src /tmp/launch_src paired interrupt

Each check installs this checkout colcon-style (``setup.py install --prefix P
--single-version-externally-managed``, what ``colcon build`` runs for an ament_python package)
into a temporary prefix, puts it on ``AMENT_PREFIX_PATH`` and ``PYTHONPATH``, and calls
``ros2launch.api.launch_a_launch_file`` (what ``ros2 launch`` calls) in a child process of its
own process group:

- ``paired``: ``paired_eval.launch.py`` with a short evaluation (1 task, 1 policy, 1 episode)
  must exit by itself with code 0 and write summary.json; no traceback in any output.
- ``interrupt``: the same with 2 pairs; SIGINT to the process group (a terminal's Ctrl-C) once
  the first pair is recorded; the launch must end within a few seconds, keep that pair and
  print no traceback.
- ``sysid``: ``sysid_record.launch.py`` (digital real) and ``realm-ros sysid record --backend
  franka --namespace /real`` next to it (2 short excitations), then Ctrl-C.
- ``world``: ``world.launch.py backend:=digital_real`` comes up and stops on Ctrl-C.

``--launch-src DIR``: a folder with the ``launch`` and ``launch_ros`` repositories (github
ros2/launch and ros2/launch_ros, jazzy or rolling) for a machine without them; their
``composition_interfaces`` import (not on PyPI, unused by realm_ros) gets an empty stand-in.
Where ``robot_state_publisher`` or ``tf2_ros`` are not installed, a stand-in of each is put
on the path: it takes the same parameters and arguments, publishes ``robot_description``
(transient local) and checks that the world's ``joint_states`` names are joints of that URDF;
it publishes no TF. Every stand-in says so in its output. Exit code: 0 if every check passed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PY = f'python{sys.version_info.major}.{sys.version_info.minor}'

SHORT_EVAL = """\
/**:
  ros__parameters:
    tasks: [pick_spoon]
    policies: [{policies}]
    perturbations: [Default]
    episodes_per_cell: {episodes}
    max_steps: {max_steps}
    seed: 0
    real: digital_real
    sim: mujoco
    cameras: false
    concurrent: true
"""

RSP_STANDIN = '''\
#!{python}
"""STAND-IN for robot_state_publisher (bench/launch_check.py; not the real one, no TF)."""
import sys
import xml.etree.ElementTree as ET

from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from realm_ros.ros.runner import spin_node


def make():
    from rclpy.node import Node
    node = Node('robot_state_publisher')
    urdf = node.declare_parameter('robot_description', '').value
    prefix = node.declare_parameter('frame_prefix', '').value
    movable = {{j.get('name') for j in ET.fromstring(urdf).iter('joint')
               if j.get('type') != 'fixed'}}
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_publisher(String, 'robot_description', latched).publish(String(data=urdf))
    seen = []

    def on_joints(msg):
        if seen:
            return
        seen.append(1)
        missing = sorted(set(msg.name) - movable)
        if missing:
            node.get_logger().error(f'joint_states names not in the URDF: {{missing}}')
        else:
            node.get_logger().info(
                f'stand-in: joint_states match the URDF ({{len(msg.name)}} joints), '
                f'frame_prefix {{prefix!r}}')

    node.create_subscription(JointState, 'joint_states', on_joints, 10)
    node.get_logger().info(f'STAND-IN robot_state_publisher: {{len(movable)}} movable joints, '
                           f'frame_prefix {{prefix!r}}')
    return node


sys.exit(spin_node('robot_state_publisher', make))
'''

STATIC_TF_STANDIN = '''\
#!{python}
"""STAND-IN for tf2_ros static_transform_publisher (bench/launch_check.py): checks its args."""
import argparse
import sys

from realm_ros.ros.runner import spin_node

parser = argparse.ArgumentParser()
parser.add_argument('--frame-id', required=True)
parser.add_argument('--child-frame-id', required=True)
args, ros_args = parser.parse_known_args()


def make():
    from rclpy.node import Node
    node = Node('static_transform_publisher')
    node.get_logger().info(f'STAND-IN static_transform_publisher {{args.frame_id}} -> '
                           f'{{args.child_frame_id}} (identity)')
    return node


sys.exit(spin_node('static_transform_publisher', make, [sys.argv[0], *ros_args]))
'''

COMPOSITION_SHIM = '''\
"""Empty stand-in for composition_interfaces (not on PyPI); realm_ros loads no components."""


class _Missing:
    class Request:
        pass

    class Response:
        pass


LoadNode = UnloadNode = ListNodes = _Missing
'''


def install(prefix: pathlib.Path, work: pathlib.Path) -> None:
    """Install this checkout as colcon's ament_python build does."""
    build = work / 'build'
    build.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, 'setup.py', '-q', 'egg_info', '--egg-base', str(build),
         'build', '--build-base', str(build / 'build'), 'install', '--prefix', str(prefix),
         '--record', str(build / 'install.log'), '--single-version-externally-managed'],
        cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def install_launch(src: pathlib.Path, prefix: pathlib.Path, work: pathlib.Path) -> None:
    """Install launch, launch_xml, launch_yaml, launch_ros and ros2launch from their sources
    colcon-style (``launch`` finds its grammar through the ament index)."""
    for package in ('launch/launch', 'launch/launch_xml', 'launch/launch_yaml',
                    'launch_ros/launch_ros', 'launch_ros/ros2launch'):
        build = work / 'build_launch' / package
        build.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, 'setup.py', '-q', 'egg_info', '--egg-base', str(build), 'build',
             '--build-base', str(build / 'build'), 'install', '--prefix', str(prefix),
             '--record', str(build / 'install.log'), '--single-version-externally-managed'],
            cwd=src / package, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _package_found(name: str) -> bool:
    for base in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        if (pathlib.Path(base) / 'share/ament_index/resource_index/packages' / name).exists():
            return True
    return False


def standins(prefix: pathlib.Path) -> list[str]:
    """Create stand-ins for the C++ packages that are missing; return their names."""
    made = []
    for package, exe, text in (('robot_state_publisher', 'robot_state_publisher', RSP_STANDIN),
                               ('tf2_ros', 'static_transform_publisher', STATIC_TF_STANDIN)):
        if _package_found(package):
            continue
        marker = prefix / 'share/ament_index/resource_index/packages' / package
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text('')
        path = prefix / 'lib' / package / exe
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(python=sys.executable))
        path.chmod(0o755)
        made.append(package)
    return made


def environment(prefix: pathlib.Path, standin: pathlib.Path, work: pathlib.Path,
                launch_src: pathlib.Path | None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(prefix / 'lib' / PY / 'site-packages')]
    prefixes = [str(prefix), str(standin)]
    if launch_src is not None:
        ros = work / 'launch_install'
        install_launch(launch_src, ros, work)
        shim = work / 'shim' / 'composition_interfaces'
        shim.mkdir(parents=True, exist_ok=True)
        (shim / '__init__.py').write_text('')
        (shim / 'srv.py').write_text(COMPOSITION_SHIM)
        paths += [str(ros / 'lib' / PY / 'site-packages'), str(work / 'shim')]
        prefixes.append(str(ros))
    env['PYTHONPATH'] = os.pathsep.join(paths + [env.get('PYTHONPATH', '')]).rstrip(os.pathsep)
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(
        prefixes + [env.get('AMENT_PREFIX_PATH', '')]).rstrip(os.pathsep)
    env['PATH'] = os.pathsep.join([str(pathlib.Path(sys.executable).parent), env['PATH']])
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env.setdefault('MUJOCO_GL', 'egl')
    env['RCUTILS_COLORIZED_OUTPUT'] = '0'
    env['PYTHONUNBUFFERED'] = '1'
    return env


#: Launch file -> extra ``name:=value`` arguments from ``--arg`` (those the file declares).
EXTRA_ARGS: dict[str, list[str]] = {}


class Launch:
    """``ros2 launch realm_ros FILE ARGS`` in its own process group, output to a file."""

    def __init__(self, env: dict[str, str], prefix: pathlib.Path, name: str, args: list[str],
                 log: pathlib.Path) -> None:
        self.log = log
        self.ros_log = log.with_suffix('.ros_log')  # this launch's own ROS log folder
        env = dict(env, ROS_LOG_DIR=str(self.ros_log))
        self._out = open(log, 'w')  # noqa: SIM115 - closed in wait()
        code = ('import sys\nfrom ros2launch.api import launch_a_launch_file\n'
                'sys.exit(launch_a_launch_file(launch_file_path=sys.argv[1], '
                'launch_file_arguments=sys.argv[2:]))')
        path = prefix / 'share/realm_ros/launch' / name
        args = [*args, *EXTRA_ARGS.get(name, [])]
        self.start = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, '-c', code, str(path), *args], env=env,
                                     stdout=self._out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors='replace')

    def ctrl_c(self) -> float:
        """SIGINT to the whole process group, as a terminal's Ctrl-C; return the time (a
        launch that already exited has no group left to signal: its exit code tells)."""
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        return time.monotonic()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None
        finally:
            self._out.close()


#: The evaluator stopped by Ctrl-C exits 130; launch reports it, and exits 1.
STOPPED_EVALUATOR = (r'\[evaluator_node-\d+\]: process has died \[pid \d+, exit code 130,',
                     r'/evaluator exited with code 130 ')


def _problems(text: str, log_dir: pathlib.Path, allowed: tuple[str, ...] = ()) -> list[str]:
    found = []
    for source, body in [('launch output', text)] + [
            (str(p), p.read_text(errors='replace')) for p in log_dir.rglob('*') if p.is_file()]:
        lines = [line for line in body.splitlines()
                 if not any(re.search(a, line) for a in allowed)]
        body = '\n'.join(lines)
        for pattern in ('Traceback', 'context is invalid', 'escalating to', 'exited with code',
                        r'process has died'):
            if re.search(pattern, body):
                found.append(f'{pattern!r} in {source}')
    return found


def _records(out: pathlib.Path) -> list[dict]:
    path = out / 'episodes.jsonl'
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_paired(ctx: dict) -> list[str]:
    out = ctx['work'] / 'paired_out'
    config = ctx['work'] / 'paired.yaml'
    config.write_text(SHORT_EVAL.format(
        policies="'good=scripted:skill=1,horizon=15,action_space=joint_velocity'",
        episodes=1, max_steps=300))
    launch = Launch(ctx['env'], ctx['prefix'], 'paired_eval.launch.py',
                    [f'config_file:={config}', f'out_dir:={out}'], ctx['work'] / 'paired.log')
    code = launch.wait(timeout=600)
    took = time.monotonic() - launch.start
    text = launch.output()
    errors = _problems(text, launch.ros_log)
    if code != 0:
        errors.append(f'exit code {code} (expected 0)')
    if not (out / 'summary.json').exists():
        errors.append('no summary.json')
    if 'real prog' not in text:
        errors.append('no summary table in the output')
    cleanly = len(re.findall(r'process has finished cleanly', text))
    started = len(re.findall(r'process started with pid', text))
    if cleanly != started:
        errors.append(f'{started} processes started, {cleanly} finished cleanly')
    if ctx['standins'] and text.count('stand-in: joint_states match the URDF') < 2:
        errors.append("robot_state_publisher (stand-in) did not see both worlds' joint_states")
    print(f'paired: exit {code} after {took:.1f} s, {started} processes, {cleanly} finished '
          f'cleanly, {len(_records(out))} records')
    return errors


def check_interrupt(ctx: dict) -> list[str]:
    out = ctx['work'] / 'interrupt_out'
    config = ctx['work'] / 'interrupt.yaml'
    config.write_text(SHORT_EVAL.format(
        policies="'good=scripted:skill=1,horizon=15,action_space=joint_velocity', "
                 "'poor=scripted:skill=3,horizon=15,action_space=joint_velocity'",
        episodes=1, max_steps=300))
    launch = Launch(ctx['env'], ctx['prefix'], 'paired_eval.launch.py',
                    [f'config_file:={config}', f'out_dir:={out}'], ctx['work'] / 'interrupt.log')
    errors = []
    deadline = time.monotonic() + 400
    while len(_records(out)) < 2 and time.monotonic() < deadline and launch.proc.poll() is None:
        time.sleep(0.2)
    before = len(_records(out))
    if before < 2 or launch.proc.poll() is not None:
        errors.append(f'the first pair was not recorded in time ({before} records)')
    time.sleep(2.0)  # well into the second pair
    sent = launch.ctrl_c()
    code = launch.wait(timeout=30)
    took = time.monotonic() - sent
    after = _records(out)
    text = launch.output()
    errors += _problems(text, launch.ros_log, STOPPED_EVALUATOR)
    if code != 1 or took > 6.0:
        errors.append(f'launch took {took:.1f} s to end after Ctrl-C, exit code {code} '
                      '(expected 1: the evaluation is unfinished)')
    if len(after) < before or len(after) % 2:
        errors.append(f'{before} records before Ctrl-C, {len(after)} after')
    print(f'interrupt: Ctrl-C -> exit {code} in {took:.1f} s; {len(after)} records kept '
          f'({before} before the signal)')
    return errors


def check_sysid(ctx: dict) -> list[str]:
    bags = ctx['work'] / 'sysid_bags'
    launch = Launch(ctx['env'], ctx['prefix'], 'sysid_record.launch.py', [],
                    ctx['work'] / 'sysid.log')
    errors = []
    deadline = time.monotonic() + 120
    while "world 'franka' up" not in launch.output() and time.monotonic() < deadline:
        time.sleep(0.2)
    cli = subprocess.run(
        [str(ctx['prefix'] / 'lib/realm_ros/realm-ros'), 'sysid', 'record', '--backend',
         'franka', '--namespace', '/real', '--trajectories', '2', '--duration', '4',
         '--out', str(bags)], env=ctx['env'], capture_output=True, text=True, timeout=300)
    sent = launch.ctrl_c()
    code = launch.wait(timeout=30)
    took = time.monotonic() - sent
    text = launch.output()
    (ctx['work'] / 'sysid_cli.log').write_text(cli.stdout + cli.stderr)
    errors += _problems(text + cli.stderr, launch.ros_log)
    if cli.returncode != 0:
        errors.append(f'realm-ros sysid record exited {cli.returncode}: '
                      f'{cli.stderr.strip().splitlines()[-1:]}')
    nodes = re.findall(r'\[([\w.]+)\]: ', text)
    if code != 0 or took > 6.0:
        errors.append(f'sysid launch: exit {code} {took:.1f} s after Ctrl-C')
    print(f'sysid: realm-ros sysid record exit {cli.returncode} '
          f'({len(list(bags.glob("traj_*")))} bags); launch exit {code} {took:.1f} s after '
          f'Ctrl-C; nodes {sorted(set(nodes))}')
    return errors


def check_world(ctx: dict) -> list[str]:
    launch = Launch(ctx['env'], ctx['prefix'], 'world.launch.py',
                    ['backend:=digital_real', 'namespace:=real', 'frame_prefix:=real/'],
                    ctx['work'] / 'world.log')
    deadline = time.monotonic() + 120
    while "world 'digital_real' up" not in launch.output() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    sent = launch.ctrl_c()
    code = launch.wait(timeout=30)
    took = time.monotonic() - sent
    errors = _problems(launch.output(), launch.ros_log)
    if "world 'digital_real' up" not in launch.output():
        errors.append('world_node did not come up')
    if code != 0 or took > 6.0:
        errors.append(f'world launch: exit {code} {took:.1f} s after Ctrl-C')
    print(f'world: exit {code} {took:.1f} s after Ctrl-C')
    return errors


def check_monitor(ctx: dict) -> list[str]:
    launch = Launch(ctx['env'], ctx['prefix'], 'monitor.launch.py', ['rviz:=false'],
                    ctx['work'] / 'monitor.log')
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
            'monitoring real=' in launch.output()
            and len(re.findall(r'\[(real|sim)\.robot_state_publisher\]', launch.output())) >= 2):
        time.sleep(0.2)
    time.sleep(1.0)
    sent = launch.ctrl_c()
    code = launch.wait(timeout=30)
    took = time.monotonic() - sent
    text = launch.output()
    errors = _problems(text, launch.ros_log)
    for name in ('/monitor', '/real/robot_state_publisher', '/sim/robot_state_publisher',
                 '/real/mount', '/sim/mount'):
        node = name.strip('/').replace('/', '.')
        if f'[{node}]' not in text and ctx['standins']:
            errors.append(f'{name} did not start')
    if code != 0 or took > 6.0:
        errors.append(f'monitor launch: exit {code} {took:.1f} s after Ctrl-C')
    print(f'monitor: exit {code} {took:.1f} s after Ctrl-C')
    return errors


CHECKS = {'paired': check_paired, 'interrupt': check_interrupt, 'sysid': check_sysid,
          'world': check_world, 'monitor': check_monitor}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('checks', nargs='*', default=['paired', 'interrupt'],
                        choices=[*CHECKS, []], help='checks to run (default: paired interrupt)')
    parser.add_argument('--launch-src', type=pathlib.Path, default=None,
                        help='folder holding the launch and launch_ros repositories')
    parser.add_argument('--arg', action='append', default=[], metavar='NAME:=VALUE',
                        help='extra launch argument for every launch file that declares it, '
                             'e.g. --arg arm_id:=panda')
    parser.add_argument('--work', type=pathlib.Path, default=None,
                        help='working folder (default: a new temporary one, kept)')
    args = parser.parse_args()
    if args.launch_src is not None and importlib.util.find_spec('osrf_pycommon') is None:
        # launch's FindExecutable imports it; without it every launch dies at import.
        print('launch (from --launch-src) needs osrf_pycommon, which realm_ros does not '
              f'depend on: {sys.executable} -m pip install osrf-pycommon', file=sys.stderr)
        return 2
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix='realm_launch_check_'))
    prefix, standin = work / 'install', work / 'standins'
    shutil.rmtree(prefix, ignore_errors=True)
    for old in work.glob('*.ros_log'):
        shutil.rmtree(old, ignore_errors=True)
    install(prefix, work)
    for path in (prefix / 'share/realm_ros/launch').glob('*.launch.py'):
        text = path.read_text()
        EXTRA_ARGS[path.name] = [a for a in args.arg
                                 if f"DeclareLaunchArgument(\n            '{a.split(':=')[0]}'"
                                 in text or f"'{a.split(':=')[0]}', default_value" in text]
    made = standins(standin)
    env = environment(prefix, standin, work, args.launch_src)
    print(f'installed into {prefix}; stand-ins: {made or "none"}; logs in {work}')
    ctx = {'work': work, 'prefix': prefix, 'env': env, 'standins': made}
    failed = 0
    for name in args.checks:
        errors = CHECKS[name](ctx)
        for error in errors:
            print(f'  FAIL {name}: {error}')
        failed += bool(errors)
    print(f'{len(args.checks) - failed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
