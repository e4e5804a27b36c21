"""Test helpers shared by the twins' tests: an import that skips, a world cache per task.

The PhysX backend needs ``ovphysx`` (the ``physx`` extra, installed by ``make setup``); a machine
without it (no AVX, glibc < 2.35) skips those tests with the import error as the reason.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest


def import_or_skip(name: str) -> Any:
    """Import module ``name``; skip the test (with the error) if it cannot be imported here."""
    try:
        return pytest.importorskip(name)
    except pytest.skip.Exception:
        raise
    except Exception as err:  # noqa: BLE001 - a broken binary install is a skip with reason
        pytest.skip(f'{name} cannot be imported here: {err}')


def world_per_task(make: Callable[[str], Any]) -> Iterator[Callable[[str], Any]]:
    """Yield ``get(task)``: the world ``make(task)`` built once per task; all closed after.

    For a module-scoped fixture: ``yield from world_per_task(lambda task: SomeWorld(...))``.
    """
    cache: dict[str, Any] = {}

    def get(task: str) -> Any:
        if task not in cache:
            cache[task] = make(task)
        return cache[task]

    yield get
    for world in cache.values():
        world.close()


def write_trajectory_bags(folder: Any, trajs: Any) -> Any:
    """Write each sysid ``Trajectory`` as a rosbag2/MCAP bag ``folder/bags/traj_NNN`` (commands
    at 15 Hz from t = 1 s, the state before each command); return ``folder/bags``."""
    import numpy as np

    from realm_ros.io.bags import RunData, write_run

    for i, traj in enumerate(trajs):
        k = traj.steps
        run = RunData(path=folder / 'bags' / f'traj_{i:03d}',
                      command_t=1 + traj.dt * np.arange(k), command_q=traj.targets,
                      command_gripper=traj.gripper, state_t=1 + traj.dt * np.arange(k + 1),
                      state_q=np.vstack([traj.q0[None], traj.measured]),
                      state_dq=np.vstack([traj.dq0[None], traj.measured_dq]),
                      state_effort=np.zeros((k + 1, 7)),
                      state_gripper=np.r_[traj.gripper0, traj.gripper])
        write_run(run.path, run)
    return folder / 'bags'


def arm_run(params: Any, targets: Any, latency_s: float = 0.0) -> tuple[Any, Any]:
    """Step ``MujocoWorld`` (dynamics ``params``, actuation latency ``latency_s``) through the
    (K, 7) joint ``targets`` from the reset pose of the empty scene, as the "real" arm of the
    sysid tests; return the measured joint positions and velocities after each step, (K, 7)
    each."""
    import numpy as np

    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import Action, ActionMode, EpisodeSpec

    world = MujocoWorld(WorldConfig(cameras=(), camera_rate_hz=0.0), dynamics=params,
                        latency_s=latency_s)
    world.reset(EpisodeSpec(task='empty'))
    q, dq = [], []
    for row in targets:
        world.apply(Action(arm=row, gripper=0.0, mode=ActionMode.POSITION))
        world.step()
        q.append(world.data.qpos[world._arm_qpos].copy())
        dq.append(world.data.qvel[world._arm_dof].copy())
    return np.array(q), np.array(dq)
