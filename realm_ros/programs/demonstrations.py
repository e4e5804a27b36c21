"""Where demonstrations are recorded: the twin, the digital real, or a lab's arm.

``realm-ros dataset --world NAME`` records the scripted expert's demonstrations in one of
:data:`WORLDS`; the dataset's layout (LeRobot, :mod:`realm_ros.io.lerobot`) is the same for all.

* ``twin``: the MuJoCo twin with its default look and parameters (what the shipped
  ``checkpoints/learned`` ladder was trained on).
* ``digital_real``: the digital real, as a lab records: its hidden dynamics
  (``--dynamics``, default ``realm_ros/data/digital_real_dynamics.yaml``) and its hidden
  appearance (``--appearance``, default ``config/appearance/lab_demo.yaml``): the cameras stand
  where the lab's tripods are, with the lab's materials, light, clutter and sensor. A policy
  trained here was trained "on the real robot", the way VLAs are.
* ``franka``: a lab's arm through the franka bridge (franka_ros2 running; imported only here).
  The arm has no privileged object state, so the scripted expert cannot drive it: the
  demonstrator is a registered policy (``--demonstrator``, e.g. a teleoperation server reached
  as ``openpi`` or a ``replay`` of recorded actions), no noise is injected into a real arm's
  targets, and the operator sets up each episode's scene and confirms it.

Each world is one :class:`DemoWorld` object; the command asks it for its world config and its
rules instead of branching on the name.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from realm_ros.core import robot
from realm_ros.core.config import WorldConfig, given_path
from realm_ros.core.errors import ConfigError

#: The digital real's default hidden appearance for demonstrations (and the vision demo).
DEFAULT_APPEARANCE = 'config/appearance/lab_demo.yaml'


@dataclasses.dataclass(frozen=True)
class DemoSite:
    """What the user chose: cameras, image size and the digital real's hidden files."""

    cameras: tuple[str, ...]
    width: int
    height: int
    appearance_file: str = ''
    dynamics_file: str = ''


@dataclasses.dataclass(frozen=True)
class DemoWorld:
    """One place demonstrations are recorded in.

    Attributes:
        name: the ``--world`` value.
        backend: the world backend (:data:`realm_ros.core.backends.BACKENDS`).
        privileged: whether the world gives object state (the scripted expert needs it).
        hidden: whether it takes the digital real's hidden appearance and dynamics.
        lab: a physical arm: no injected noise, the operator sets up every scene.
    """

    name: str
    backend: str
    privileged: bool
    hidden: bool
    lab: bool
    describe: str

    def world_config(self, task: str, site: DemoSite) -> WorldConfig:
        """Return the world's config for ``task`` (rendering ``site.cameras`` every step)."""
        extra: dict[str, Any] = {}
        if self.hidden:
            extra = {'appearance_file': site.appearance_file,
                     'dynamics_file': site.dynamics_file}
        if self.lab:
            return WorldConfig(backend=self.backend, cameras=site.cameras,
                               camera_rate_hz=robot.CONTROL_HZ, camera_width=site.width,
                               camera_height=site.height)
        return WorldConfig(backend=self.backend, task=task, cameras=site.cameras,
                           camera_rate_hz=robot.CONTROL_HZ, camera_width=site.width,
                           camera_height=site.height, **extra)

    def check(self, demonstrator: str, noise: float, appearance: str, dynamics: str) -> None:
        """Refuse settings this world cannot take, with one line naming the flag."""
        if not self.hidden and (appearance or dynamics):
            raise ConfigError(f"--appearance and --dynamics are the digital real's; --world "
                              f'{self.name} has {"its own" if self.lab else "none"}')
        if self.lab and demonstrator == 'scripted':
            raise ConfigError('--world franka: the scripted expert needs privileged object state, '
                              'which a lab arm does not have; name a --demonstrator (e.g. a '
                              'teleoperation server as openpi, or replay)')
        if self.lab and noise > 0:
            raise ConfigError(f'--world franka: --noise must be 0 on a lab arm (got {noise}); '
                              "realm_ros never perturbs a real arm's targets")


WORLDS: dict[str, DemoWorld] = {w.name: w for w in (
    DemoWorld('twin', 'mujoco', privileged=True, hidden=False, lab=False,
              describe='the MuJoCo twin, default look and parameters'),
    DemoWorld('digital_real', 'digital_real', privileged=True, hidden=True, lab=False,
              describe='the digital real: hidden dynamics and appearance'),
    DemoWorld('franka', 'franka', privileged=False, hidden=False, lab=True,
              describe="a lab's arm through the franka bridge (franka_ros2)"),
)}


def demo_world(name: str) -> DemoWorld:
    """Return the :class:`DemoWorld` called ``name`` (ConfigError listing the names)."""
    world = WORLDS.get(name)
    if world is None:
        raise ConfigError(f'--world: unknown {name!r}; choose one of {sorted(WORLDS)}')
    return world


def resolve_hidden(world: DemoWorld, appearance: str, dynamics: str) -> tuple[str, str]:
    """Return absolute paths of the digital real's appearance and dynamics files.

    The appearance defaults to :data:`DEFAULT_APPEARANCE` for a world with hidden files;
    ``'none'`` keeps the twin's look (the digital real's dynamics only).
    """
    if not world.hidden:
        return '', ''
    from realm_ros.core.share import share_path

    if appearance == 'none':
        appearance_file = ''
    else:
        appearance_file = given_path(appearance or str(share_path(DEFAULT_APPEARANCE)),
                                    '--appearance')
    return appearance_file, given_path(dynamics, '--dynamics') if dynamics else ''


def demonstrator_factory(name: str, args: dict[str, Any]) -> Callable[[], Any]:
    """Return a function building a fresh demonstrator each episode.

    ``scripted`` is the expert rung (skill 0, one action per step, so the dataset holds the
    action of every step); any other name is a registered policy built with ``args``.
    """
    if name == 'scripted':
        from realm_ros.policies.scripted import ScriptedPolicy

        if args:
            raise ConfigError('--demonstrator-args: the scripted expert takes none')
        return lambda: ScriptedPolicy(skill=0, horizon=1)
    from realm_ros.core.policy import make_policy, policy_class

    policy_class(name)  # an unknown name fails now, before any world starts
    return lambda: make_policy(name, **args)


def confirm_scene(task: str, seed: int, instruction: str, ask: Callable[[str], str]) -> bool:
    """Ask the lab's operator to set up ``task``'s scene for ``seed``; True when confirmed."""
    answer = ask(f'Set up {task} (seed {seed}: "{instruction}") with the table clear of '
                 'anything else, then press Enter (q to stop): ')
    return answer.strip().lower() not in ('q', 'quit', 'n', 'no')
