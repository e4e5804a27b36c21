"""Render what the monitor shows into one PNG: an "RViz screenshot" for machines without RViz.

Run: ``.venv/bin/python bench/monitor_snapshot.py --out docs/monitor.png`` (about 20 s).

It runs the digital real and the MuJoCo twin side by side in this process, both commanded with
the same joint-position trajectory, publishes their joint states and progress over DDS under
``/real`` and ``/sim`` exactly as ``world_node`` would, starts a real ``monitor_node`` process,
and draws what that node publishes (``/monitor/markers``, ``/monitor/divergence``) next to the
twin's ``exterior_1`` camera image. No task scene is loaded here, so the objects come from the
episode spec's ``initial_state`` (markers only, not in the physics) and the stage marks are
scripted stand-ins for the operator (real) and the task's progress publisher (sim); the arm
motions and the divergence are the physics of the two worlds.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

os.environ.setdefault('MUJOCO_GL', 'egl')
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(60 + os.getpid() % 30))

import matplotlib  # noqa: E402

matplotlib.use('Agg')
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from realm_ros.backends.digital_real import DigitalRealWorld  # noqa: E402
from realm_ros.backends.mujoco.world import MujocoWorld  # noqa: E402
from realm_ros.core import annotation, robot  # noqa: E402
from realm_ros.core.config import WorldConfig  # noqa: E402
from realm_ros.core.types import Action, EpisodeSpec  # noqa: E402
from realm_ros.ros import convert, qos  # noqa: E402

BIN = pathlib.Path(sys.executable).parent
SPEC = EpisodeSpec(
    task='put_green_block_in_bowl', instruction='put the green block in the bowl',
    initial_state={'objects': {
        'green_block': {'pos': [0.55, 0.15, 0.025], 'size': [0.05, 0.05, 0.05]},
        'bowl': {'pos': [0.5, -0.18, 0.03], 'size': [0.16, 0.16, 0.06]}}})
STEPS = 60
REAL_MARKS = {12: 'mark', 25: 'mark', 40: 'mark'}   # control step -> scripted operator mark
SIM_MARKS = {10: 'mark', 22: 'mark', 34: 'mark', 50: 'mark'}


def _target(k: int) -> np.ndarray:
    """A reach-like joint motion from the reset pose toward the table."""
    s = min(1.0, k / 40.0)
    goal = robot.RESET_Q + np.array([0.35, 0.35, 0.0, 0.25, 0.0, -0.1, 0.4])
    return robot.RESET_Q + (goal - robot.RESET_Q) * (3 * s * s - 2 * s ** 3)


def _arm_points(q: np.ndarray) -> np.ndarray:
    poses = robot.forward_kinematics(q)
    points = [np.zeros(3)] + [p[:3, 3] for p in poses]
    points.append((poses[-1] @ np.array([0.0, 0.0, robot.TCP_OFFSET, 1.0]))[:3])
    return np.array(points)


def run(out: pathlib.Path) -> None:
    """Drive both worlds, collect the monitor's output, draw the PNG."""
    real = DigitalRealWorld(WorldConfig(camera_rate_hz=0))
    sim = MujocoWorld(WorldConfig(cameras=('exterior_1',), camera_width=480, camera_height=270))
    real.reset(EpisodeSpec())  # empty table: the task's objects exist only as markers here
    sim.reset(EpisodeSpec())
    monitor_log = tempfile.NamedTemporaryFile('w', prefix='monitor_node_', suffix='.log',
                                              delete=False)
    proc = subprocess.Popen(
        [str(BIN / 'monitor_node'), '--ros-args', '-p', 'rate_hz:=10.0',
         '-p', f"episode_spec:='{SPEC.to_json()}'"],
        stdout=monitor_log, stderr=subprocess.STDOUT)
    rclpy.init()
    node = rclpy.create_node('monitor_snapshot')
    got: dict[str, list] = {'markers': [], 'div': []}
    node.create_subscription(MarkerArray, '/monitor/markers', got['markers'].append, 10)
    node.create_subscription(Float64MultiArray, '/monitor/divergence', got['div'].append, 100)
    js = {w: node.create_publisher(JointState, f'/{w}/joint_states', qos.STATE)
          for w in ('real', 'sim')}
    prog = {w: node.create_publisher(DiagnosticStatus, f'/{w}/progress', qos.STATE)
            for w in ('real', 'sim')}
    try:
        deadline = time.monotonic() + 30
        while not got['markers'] or js['real'].get_subscription_count() == 0:
            rclpy.spin_once(node, timeout_sec=0.1)
            if time.monotonic() > deadline:
                raise RuntimeError(f'monitor_node did not come up; see {monitor_log.name}')
        ops = {w: annotation.EpisodeAnnotator(world=w) for w in ('real', 'sim')}
        for a in ops.values():
            a.confirm_reset(0.0, SPEC)
        history = []
        for k in range(STEPS):
            action = Action(_target(k), 0.0)
            for world in (real, sim):
                world.apply(action)
            obs = {'real': real.step(), 'sim': sim.step()}
            for w, marks in (('real', REAL_MARKS), ('sim', SIM_MARKS)):
                if k in marks:
                    ops[w].mark_stage(obs[w].joints.stamp)
                js[w].publish(convert.joint_state_to_msg(obs[w].joints))
                p = ops[w].progress(step=k + 1)
                if w == 'sim':
                    p = dataclasses.replace(p, source='scripted')
                prog[w].publish(convert.progress_to_msg(p, w))
            history.append((obs['real'].joints.position, obs['sim'].joints.position))
            for _ in range(3):
                rclpy.spin_once(node, timeout_sec=0.02)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        image = sim.render()['exterior_1']
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        monitor_log.close()
        node.destroy_node()
        rclpy.try_shutdown()
        real.close()
        sim.close()
    _draw(out, image, got['markers'][-1], got['div'], history)


def _draw(out, image, markers: MarkerArray, divs, history) -> None:
    fig = plt.figure(figsize=(11, 6.6), dpi=72)
    fig.suptitle('realm_ros monitor: digital real (solid) vs MuJoCo twin (ghost), drawn from '
                 'what monitor_node published', fontsize=10, y=0.99)
    ax_img = fig.add_axes([0.01, 0.40, 0.42, 0.50])
    ax_img.imshow(image)
    ax_img.set_title('twin camera exterior_1 (/sim/cameras/exterior_1/image)', fontsize=9)
    ax_img.axis('off')
    ax3 = fig.add_axes([0.44, 0.34, 0.56, 0.60], projection='3d')
    q_real, q_sim = history[-1]
    for q, colour, alpha, label in ((q_real, 'tab:orange', 1.0, 'real (digital real)'),
                                    (q_sim, 'tab:blue', 0.4, 'sim twin (ghost)')):
        pts = _arm_points(q)
        ax3.plot(pts[:, 0], pts[:, 1], pts[:, 2], '-o', color=colour, alpha=alpha, lw=3,
                 ms=3, label=label)
    for m in markers.markers:
        p = m.pose.position
        if m.type in (Marker.CUBE, Marker.SPHERE):
            ax3.scatter([p.x], [p.y], [p.z], s=2e4 * m.scale.x, marker='s' if m.type ==
                        Marker.CUBE else 'o', color=(m.color.r, m.color.g, m.color.b),
                        alpha=max(m.color.a, 0.3))
        elif m.type == Marker.TEXT_VIEW_FACING and m.ns.endswith('labels'):
            ax3.text(p.x, p.y, p.z, m.text, fontsize=8, ha='center')
    ax3.set_xlim(-0.1, 0.8)
    ax3.set_ylim(-0.45, 0.45)
    ax3.set_zlim(0.0, 0.9)
    ax3.set_xlabel('x (m)')
    ax3.set_ylabel('y (m)')
    ax3.set_zlabel('z (m)')
    ax3.view_init(elev=25, azim=-60)
    ax3.legend(loc='lower left', fontsize=8)
    ax3.set_title('base_link: arms (FK of joint states), /monitor/markers', fontsize=9, y=1.0)
    ax_div = fig.add_axes([0.06, 0.07, 0.36, 0.27])
    values = np.array([d.data for d in divs]) * 1e3
    for j in range(values.shape[1] if values.size else 0):
        ax_div.plot(values[:, j], lw=1.2, label=robot.JOINT_NAMES[j].replace('panda_', ''))
    ax_div.set_xlabel('matched sample (15 Hz control step)')
    ax_div.set_ylabel('|q_real - q_sim| (mrad)')
    ax_div.set_title('/monitor/divergence', fontsize=9)
    ax_div.legend(fontsize=6, ncol=4)
    ax_div.grid(alpha=0.3)
    texts = [m.text for m in markers.markers
             if m.type == Marker.TEXT_VIEW_FACING and m.ns in ('progress', 'divergence')]
    lines = '\n'.join(texts).replace(', step', ',\n    step').replace(' (dt', '\n    (dt')
    fig.text(0.47, 0.03, lines, fontsize=7.5, family='monospace', va='bottom')
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=72)
    print(f'wrote {out} ({out.stat().st_size / 1024:.0f} KB) from {len(divs)} divergence '
          f'messages and {len(markers.markers)} markers')


def main() -> int:
    """Parse arguments and render."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', type=pathlib.Path, default=pathlib.Path('docs/monitor.png'))
    run(parser.parse_args().out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
