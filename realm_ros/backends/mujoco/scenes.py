"""The twin's scenes: the empty table (:class:`Scene`) and REALM's tasks built from primitives.

:func:`load_scene` returns a task's scene (``''`` = the empty table). A task scene is built from
the task's record (:class:`~realm_ros.core.tasks.TaskDef`): its movable objects
(:data:`FREE_OBJECTS`, named by ``TaskDef.objects``) and its skill's fixtures (:data:`FIXTURES`,
named by ``Skill.fixtures``). Each scene adds its objects to the twin's table (robot base at
the origin on the table top, z = 0; table x in [-0.15, 1.05] m, y in [-0.8, 0.8] m), samples a
seeded initial state and reports the privileged state the rubric (:mod:`realm_ros.core.tasks`)
scores; its keys are documented there. Object body names never start with ``panda_``,
``gripper``, ``left_`` or ``right_``, so the digital real's hidden object mass/friction scales
apply to them.

Differences from REALM (BEHAVIOR-1K assets in OmniGibson scenes) are listed per task in
``TaskDef.differs`` and in the README.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping

import numpy as np

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.core import robot, skills, tasks
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.rotations import yaw_quat

try:
    import mujoco
except ImportError as err:  # pragma: no cover - test_mujoco_missing runs it without mujoco
    raise BackendUnavailable('the MuJoCo twin needs the "mujoco" package') from err

#: Button depression (m) beyond which the light switch counts as toggled on.
SWITCH_TOGGLE_DEPTH = 0.006
#: Travel of the drawer slides, m (openness 1.0 = pulled out this far).
DRAWER_TRAVEL = 0.25


def place(rng: np.random.Generator, obj: FreeObject, placed: list[tuple[float, float, float]],
          tries: int = 500, context: str = '') -> tuple[float, float]:
    """Return a centre (x, y) for ``obj`` drawn in its region, clear of every
    (x, y, radius) in ``placed``; ConfigError after ``tries`` draws."""
    for _ in range(tries):
        x = rng.uniform(obj.region[0], obj.region[1])
        y = rng.uniform(obj.region[2], obj.region[3])
        if all(math.hypot(x - px, y - py) > obj.radius + pr for px, py, pr in placed):
            return x, y
    raise ConfigError(f'{context}cannot place {obj.name} collision-free')


class Scene:
    """What a task adds to the twin: bodies, assets, a sampler and privileged state.

    The base class is the empty table. Tasks (:class:`TaskScene`) override these hooks; the
    world calls them and never looks inside.
    """

    name = ''
    instruction = ''

    def mjcf(self) -> tuple[str, str]:
        """Return ``(worldbody_xml, asset_xml)`` for the task's objects."""
        return '', ''

    def reset_q(self) -> np.ndarray:
        """Return the arm's reset pose for this task, rad."""
        return robot.RESET_Q.copy()

    def apply_initial_state(self, model: Any, data: Any, state: Mapping[str, Any]) -> None:
        """Write ``state`` (from :meth:`sample_initial_state`) into the simulation."""

    def sample_initial_state(self, rng: np.random.Generator) -> dict[str, Any]:
        """Return a JSON-ready initial state (object poses, ...) drawn from ``rng``."""
        return {}

    def privileged(self, model: Any, data: Any) -> dict[str, Any]:
        """Return simulator-only state (object poses, contacts) for scoring and scripting.

        ``data``: an ``MjData``, or a batched stepper's ``derived.DerivedView``: read only
        ``qpos``, ``contact.geom`` and the derived fields in ``derived.FIELDS``."""
        return {}


def _f(values: Any) -> str:
    return ' '.join(f'{v:.6g}' for v in values)


@dataclasses.dataclass(frozen=True)
class FreeObject:
    """A movable object: a free body placed on the table at height ``z`` (its resting centre).

    ``region`` is (x_min, x_max, y_min, y_max) of the sampled centre, m; ``radius`` the keep-out
    radius against other objects, m; ``yaw_range`` the sampled yaw interval, rad.
    ``interior`` (containers) is the (hx, hy, height) of the inside box in the body frame.
    """

    name: str
    geoms: str
    z: float
    region: tuple[float, float, float, float]
    radius: float
    yaw_range: tuple[float, float] = (-math.pi / 2, math.pi / 2)
    interior: tuple[float, float, float] | None = None


def _box_container(name: str, half: tuple[float, float], height: float, mass: float,
                   rgba: str) -> str:
    """Return geoms of an open box (base + four walls), the body frame at the base centre."""
    hx, hy = half
    t = 0.005
    wall_z = height / 2.0
    per = mass / 5.0
    return '\n'.join([
        f'<geom class="object" type="box" size="{hx} {hy} {t}" pos="0 0 {t}" rgba="{rgba}" '
        f'mass="{per}" name="{name}_base"/>',
        f'<geom class="object" type="box" size="{t} {hy} {wall_z}" pos="{hx - t} 0 {wall_z}" '
        f'rgba="{rgba}" mass="{per}"/>',
        f'<geom class="object" type="box" size="{t} {hy} {wall_z}" pos="{-hx + t} 0 {wall_z}" '
        f'rgba="{rgba}" mass="{per}"/>',
        f'<geom class="object" type="box" size="{hx} {t} {wall_z}" pos="0 {hy - t} {wall_z}" '
        f'rgba="{rgba}" mass="{per}"/>',
        f'<geom class="object" type="box" size="{hx} {t} {wall_z}" pos="0 {-hy + t} {wall_z}" '
        f'rgba="{rgba}" mass="{per}"/>',
    ])


# Object catalogue (sizes m, masses kg). Resting centre heights are exact for the shapes.
GREEN_BLOCK = FreeObject(
    'green_block',
    '<geom class="object" type="box" size="0.02 0.02 0.02" rgba="0.1 0.75 0.2 1" mass="0.05"/>',
    0.02, (0.42, 0.6, -0.2, 0.2), 0.05)
YELLOW_BLOCK = FreeObject(
    'yellow_block',
    '<geom class="object" type="box" size="0.025 0.025 0.025" rgba="0.95 0.85 0.1 1" '
    'mass="0.08"/>',
    0.025, (0.45, 0.62, -0.2, 0.2), 0.06)
BOWL = FreeObject(
    'bowl', _box_container('bowl', (0.07, 0.07), 0.045, 0.3, '0.6 0.6 0.65 1'),
    0.0, (0.45, 0.62, -0.22, 0.22), 0.11, interior=(0.065, 0.065, 0.06))
BOX = FreeObject(
    'box', _box_container('box', (0.09, 0.075), 0.06, 0.4, '0.6 0.45 0.3 1'),
    0.0, (0.47, 0.62, -0.22, 0.22), 0.12, interior=(0.085, 0.07, 0.075))
BANANA = FreeObject(
    'banana',
    '<geom class="object" type="capsule" size="0.018 0.055" quat="0.7071068 0 0.7071068 0" '
    'rgba="0.95 0.85 0.2 1" mass="0.12"/>',
    0.018, (0.42, 0.6, -0.2, 0.2), 0.08)
MARKER = FreeObject(
    'marker',
    '<geom class="object" type="box" size="0.06 0.01 0.01" rgba="0.1 0.1 0.12 1" '
    'mass="0.03"/>'
    '<geom class="object" type="box" size="0.015 0.0105 0.0105" pos="0.07 0 0.0005" '
    'rgba="0.85 0.1 0.1 1" mass="0.005"/>',
    0.01, (0.42, 0.6, -0.18, 0.18), 0.08)
MUG = FreeObject(
    'mug',
    '<geom class="object" type="cylinder" size="0.035 0.045" pos="0 0 0.045" '
    'rgba="0.92 0.92 0.88 1" mass="0.2"/>'
    '<geom class="object" type="box" size="0.012 0.006 0.028" pos="0.047 0 0.05" '
    'rgba="0.92 0.92 0.88 1" mass="0.02"/>',
    0.0, (0.42, 0.6, -0.18, 0.18), 0.07, yaw_range=(-math.pi, math.pi))
SPOON = FreeObject(
    'spoon',
    '<geom class="object" type="box" size="0.07 0.011 0.011" rgba="0.75 0.75 0.8 1" '
    'mass="0.08"/>'
    '<geom class="object" type="ellipsoid" size="0.03 0.022 0.011" pos="0.097 0 0" '
    'rgba="0.75 0.75 0.8 1" mass="0.02"/>',
    0.011, (0.42, 0.6, -0.18, 0.18), 0.1)
WATER_BOTTLE = FreeObject(
    'water_bottle',
    '<geom class="object" type="cylinder" size="0.03 0.09" pos="0 0 0.09" '
    'rgba="0.3 0.55 0.95 0.9" mass="0.3"/>'
    '<geom class="object" type="cylinder" size="0.013 0.01" pos="0 0 0.19" '
    'rgba="0.9 0.9 0.95 1" mass="0.01"/>',
    0.0, (0.42, 0.6, -0.18, 0.18), 0.06, yaw_range=(-math.pi, math.pi))

#: The movable objects tasks place, by body name (``TaskDef.objects`` names them).
FREE_OBJECTS: dict[str, FreeObject] = {o.name: o for o in (
    GREEN_BLOCK, YELLOW_BLOCK, BOWL, BOX, BANANA, MARKER, MUG, SPOON, WATER_BOTTLE)}

# Collision bits: the cabinet and its drawers collide with the robot (contype 2) but not with
# each other, so the drawers slide without a hollow carcass; the table's own bits (1/3) do not
# meet them either (the cabinet is fixed).
_CABINET_BITS = 'contype="4" conaffinity="2"'


def _cabinet_xml(pos: tuple[float, float], yaw: float) -> str:
    """Return a two-drawer cabinet whose front faces the robot (-x), drawers on x slides."""
    drawers = []
    for name, z in (('top_drawer', 0.235), ('middle_drawer', 0.1)):
        drawers.append(
            f'<body name="{name}" pos="-0.16 0 {z}">'
            f'<joint name="{name}_slide" type="slide" axis="-1 0 0" range="0 {DRAWER_TRAVEL}" '
            'damping="20" frictionloss="0.5" armature="0.5"/>'
            f'<geom {_CABINET_BITS} type="box" size="0.01 0.18 0.055" rgba="0.7 0.55 0.35 1" '
            f'mass="0.6" name="{name}_front"/>'
            f'<geom {_CABINET_BITS} type="box" size="0.14 0.17 0.005" pos="0.145 0 -0.05" '
            'rgba="0.6 0.48 0.3 1" mass="0.6"/>'
            f'<geom {_CABINET_BITS} type="box" size="0.012 0.065 0.01" pos="-0.075 0 0" '
            f'rgba="0.25 0.25 0.28 1" mass="0.05" name="{name}_handle"/>'
            f'<geom {_CABINET_BITS} type="box" size="0.03 0.006 0.008" pos="-0.04 0.055 0" '
            'rgba="0.25 0.25 0.28 1" mass="0.02"/>'
            f'<geom {_CABINET_BITS} type="box" size="0.03 0.006 0.008" pos="-0.04 -0.055 0" '
            'rgba="0.25 0.25 0.28 1" mass="0.02"/>'
            f'<site name="{name}_handle_site" pos="-0.075 0 0" size="0.005" group="5"/>'
            '</body>')
    return (
        f'<body name="cabinet" pos="{pos[0]} {pos[1]} 0" quat="{_f(yaw_quat(yaw))}">'
        f'<geom {_CABINET_BITS} type="box" size="0.15 0.2 0.005" pos="0 0 0.315" '
        'rgba="0.55 0.42 0.28 1"/>'
        f'<geom {_CABINET_BITS} type="box" size="0.15 0.01 0.16" pos="0 0.19 0.16" '
        'rgba="0.55 0.42 0.28 1"/>'
        f'<geom {_CABINET_BITS} type="box" size="0.15 0.01 0.16" pos="0 -0.19 0.16" '
        'rgba="0.55 0.42 0.28 1"/>'
        f'<geom {_CABINET_BITS} type="box" size="0.01 0.2 0.16" pos="0.14 0 0.16" '
        'rgba="0.55 0.42 0.28 1"/>'
        + ''.join(drawers) + '</body>')


def _switch_xml(pos: tuple[float, float]) -> str:
    """Return a low panel with a latching push button on top (pressed down = toggled on)."""
    return (
        f'<body name="light_switch" pos="{pos[0]} {pos[1]} 0">'
        '<geom class="object" type="box" size="0.04 0.05 0.02" pos="0 0 0.02" '
        'rgba="0.95 0.95 0.95 1" mass="1.0"/>'
        '<body name="switch_button" pos="0 0 0.04" gravcomp="1">'
        # Latching: dry friction holds the button where it is pushed (no spring back).
        '<joint name="switch_press" type="slide" axis="0 0 1" range="-0.011 0" '
        'frictionloss="1.5" damping="5" armature="0.01"/>'
        f'<geom {_CABINET_BITS} type="cylinder" size="0.015 0.01" pos="0 0 0.01" '
        'rgba="0.85 0.1 0.1 1" mass="0.01" name="switch_button_cap"/>'
        '</body></body>')

@dataclasses.dataclass(frozen=True)
class Fixture:
    """A fixed, articulated part of a skill's scene (the cabinet, the switch panel).

    ``xml`` builds its MJCF at the default pose (the seeded pose moves the fixed body at
    reset); ``region`` (x_min, x_max, y_min, y_max) is where its position is drawn, m;
    ``bodies`` are what the privileged state reports under ``objects``; ``parts`` maps each
    articulated part to its joint (the scored part starts at its skill's
    ``start_openness``, the others closed; ``joints`` are further joints, starting at 0);
    ``added_region`` is where a perturbation adds objects beside it (None: the default);
    ``repose`` moves its pose for VB-POSE: ``(rng, pose, shift, realm) -> None``;
    ``reach_sites`` maps a reported body to the site REACH measures to (a handle);
    ``toggle`` is (body, joint, button body, depth): the body counts as toggled on when the
    joint is pressed more than ``depth`` m, and REACH measures to the button.
    """

    name: str
    xml: Callable[[], str]
    region: tuple[float, float, float, float]
    bodies: tuple[str, ...]
    parts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    joints: tuple[str, ...] = ()
    travel: float = 0.0
    added_region: tuple[float, float, float, float] | None = None
    repose: Callable[[np.random.Generator, list, float, Mapping[str, Any]], None] | None = None
    reach_sites: Mapping[str, str] = dataclasses.field(default_factory=dict)
    toggle: tuple[str, str, str, float] | None = None

    def sample(self, rng: np.random.Generator) -> list[float]:
        """Return a pose ``[x, y, yaw]`` drawn in :attr:`region`."""
        return [rng.uniform(self.region[0], self.region[1]),
                rng.uniform(self.region[2], self.region[3]), 0.0]

    def initial_joints(self, scored: str, skill: skills.Skill) -> dict[str, float]:
        """Return the joints at reset: part ``scored`` at the skill's start, the rest closed."""
        out = {joint: (skill.start_openness * self.travel if part == scored else 0.0)
               for part, joint in self.parts.items()}
        out.update({joint: 0.0 for joint in self.joints})
        return out


def _repose_cabinet(rng: np.random.Generator, pose: list, shift: float,
                    realm: Mapping[str, Any]) -> None:
    """VB-POSE on the cabinet: re-placed in its region, yaw ~ N(mean, std) clipped."""
    region = FIXTURES['cabinet'].region
    pose[0] += shift * (rng.uniform(region[0], region[1]) - pose[0])
    pose[1] += shift * (rng.uniform(region[2], region[3]) - pose[1])
    pose[2] = shift * float(np.clip(rng.normal(realm['drawer_yaw_mean'], realm['drawer_yaw_std']),
                                    *realm['drawer_yaw']))


def _repose_switch(rng: np.random.Generator, pose: list, shift: float,
                   realm: Mapping[str, Any]) -> None:
    """VB-POSE on the switch panel: REALM's wall z maps to the table's x (the panel lies flat,
    so the wall's vertical is the table's depth) and its x to y."""
    pose[0] += shift * rng.uniform(-realm['switch_z'], realm['switch_z'])
    pose[1] += shift * rng.uniform(-realm['switch_x'], realm['switch_x'])


#: Fixtures by name (``Skill.fixtures`` names them).
FIXTURES: dict[str, Fixture] = {f.name: f for f in (
    Fixture('cabinet', lambda: _cabinet_xml((0.78, 0.0), 0.0), (0.76, 0.8, -0.08, 0.08),
            ('top_drawer', 'middle_drawer'),
            parts={'top_drawer': 'top_drawer_slide', 'middle_drawer': 'middle_drawer_slide'},
            travel=DRAWER_TRAVEL, added_region=(0.45, 0.7, 0.27, 0.4),
            repose=_repose_cabinet, reach_sites={'top_drawer': 'top_drawer_handle_site'}),
    Fixture('light_switch', lambda: _switch_xml((0.55, 0.0)), (0.45, 0.6, -0.15, 0.15),
            ('light_switch',), joints=('switch_press',), repose=_repose_switch,
            toggle=('light_switch', 'switch_press', 'switch_button', SWITCH_TOGGLE_DEPTH)),
)}


class TaskScene(Scene):
    """A REALM task in the twin: objects, seeded sampler, privileged state for the rubric."""

    def __init__(self, task: str) -> None:
        self.task = tasks.get_task(task)
        self.name = task
        self.instruction = self.task.instruction
        self.skill = skills.get(self.task.skill)
        self.free = tuple(FREE_OBJECTS[name] for name in self.task.objects)
        self.fixtures = tuple(FIXTURES[name] for name in self.skill.fixtures)
        self._initial: dict[str, dict[str, list[float]]] = {}
        self._initial_joints: dict[str, dict[str, float]] = {}
        self._ids: dict[str, Any] | None = None
        self._model_key = None
        self._layout = self.sample_initial_state(np.random.default_rng(0))

    # -- MJCF -------------------------------------------------------------------------------

    def mjcf(self) -> tuple[str, str]:
        parts = []
        for obj in self.free:
            parts.append(f'<body name="{obj.name}" pos="0.5 0 {obj.z + 0.3}">'
                         f'<freejoint name="{obj.name}_free"/>{obj.geoms}</body>')
        # Articulated fixtures are placed when the scene is built; their seeded placement is
        # applied by moving the fixed body (model.body_pos) at reset.
        parts += [fixture.xml() for fixture in self.fixtures]
        return '\n'.join(parts), ''

    def reset_q(self) -> np.ndarray:
        return np.asarray(self.task.reset_q, dtype=float)

    # -- initial state ----------------------------------------------------------------------

    def sample_initial_state(self, rng: np.random.Generator) -> dict[str, Any]:
        """Return ``{'objects': {name: [x, y, z, qw, qx, qy, qz]}, 'joints': {...},
        'fixtures': {name: [x, y, yaw]}, 'reset_q': [...]}`` drawn from ``rng``."""
        objects: dict[str, list[float]] = {}
        placed: list[tuple[float, float, float]] = []
        for obj in self.free:
            x, y = place(rng, obj, placed, tries=200, context=f'task {self.name}: ')
            yaw = rng.uniform(*obj.yaw_range)
            placed.append((x, y, obj.radius))
            objects[obj.name] = [x, y, obj.z] + yaw_quat(yaw)
        fixtures: dict[str, list[float]] = {}
        joints: dict[str, float] = {}
        for fixture in self.fixtures:
            fixtures[fixture.name] = fixture.sample(rng)
            joints.update(fixture.initial_joints(self.task.target, self.skill))
        return {'objects': objects, 'fixtures': fixtures, 'joints': joints,
                'reset_q': [float(v) for v in self.reset_q()]}

    def apply_initial_state(self, model: Any, data: Any, state: Mapping[str, Any]) -> None:
        state = state or self._layout
        for name, fixture in state.get('fixtures', {}).items():
            body = model.body(name).id
            model.body_pos[body, :2] = fixture[:2]
            model.body_quat[body] = yaw_quat(float(fixture[2]))
        for name, pose in state.get('objects', {}).items():
            adr = model.joint(f'{name}_free').qposadr[0]
            data.qpos[adr:adr + 7] = pose
        for name, q in state.get('joints', {}).items():
            data.qpos[model.joint(name).qposadr[0]] = q
        mujoco.mj_kinematics(model, data)
        ids = self._index(model)
        self._initial = {name: self._pose(data, body) for name, body in ids['objects'].items()}
        self._initial_joints = self._joints(model, data)

    # -- privileged state -------------------------------------------------------------------

    def _index(self, model: Any) -> dict[str, Any]:
        """Cache ids of the bodies and joints the privileged state reads (per model)."""
        if self._ids is not None and self._model_key is model:
            return self._ids
        names = [o.name for o in self.free] + [b for f in self.fixtures for b in f.bodies]
        objects = {n: model.body(n).id for n in names}
        robot_root = model.body('panda_link0').id
        owner = {}
        for b in range(model.nbody):
            walk = b
            while walk > 0 and model.body(walk).name not in objects:
                walk = model.body_parentid[walk]
            owner[b] = model.body(walk).name if walk > 0 else ''
        self._ids = {
            'objects': objects,
            'owner': owner,
            'robot': {b for b in range(model.nbody) if model.body_rootid[b] == robot_root},
            'left': {model.body('left_finger').id},
            'right': {model.body('right_finger').id},
            'pads': (model.geom('left_finger_pad').id, model.geom('right_finger_pad').id),
            'fingers': (model.joint('left_finger_joint').qposadr[0],
                        model.joint('right_finger_joint').qposadr[0]),
            'tcp': model.site('tcp').id,
            'joints': {n: model.joint(n).id for f in self.fixtures
                       for n in (*f.parts.values(), *f.joints)},
            'handles': {n: model.site(site).id for f in self.fixtures
                        for n, site in f.reach_sites.items()},
            'toggles': [(f.toggle[0], f.toggle[1], model.body(f.toggle[2]).id, f.toggle[3])
                        for f in self.fixtures if f.toggle is not None],
        }
        self._model_key = model
        return self._ids

    @staticmethod
    def _pose(data: Any, body: int) -> dict[str, list[float]]:
        return {'pos': data.xpos[body].tolist(), 'quat': data.xquat[body].tolist()}

    def _joints(self, model: Any, data: Any) -> dict[str, dict[str, float]]:
        out = {}
        for name, jid in self._index(model)['joints'].items():
            key = name.replace('_slide', '')
            out[key] = {'q': float(data.qpos[model.jnt_qposadr[jid]]),
                        'lower': float(model.jnt_range[jid, 0]),
                        'upper': float(model.jnt_range[jid, 1])}
        return out

    def privileged(self, model: Any, data: Any) -> dict[str, Any]:
        ids = self._index(model)
        objects = {name: self._pose(data, body) for name, body in ids['objects'].items()}
        contacts = {name: {'left': False, 'right': False, 'robot': False} for name in objects}
        touching: dict[str, set[str]] = {name: set() for name in objects}
        owner = ids['owner']
        for b1, b2 in model.geom_bodyid[data.contact.geom].tolist():
            for a, b in ((b1, b2), (b2, b1)):
                obj = owner.get(a, '')
                if not obj:
                    continue
                if b in ids['robot']:
                    contacts[obj]['robot'] = True
                    if b in ids['left']:
                        contacts[obj]['left'] = True
                    if b in ids['right']:
                        contacts[obj]['right'] = True
                elif owner.get(b, '') and owner[b] != obj:
                    touching[obj].add(owner[b])
        on_top = {name: sorted(other for other in touching[name]
                               if objects[name]['pos'][2] > objects[other]['pos'][2] + 1e-3)
                  for name in objects}
        inside: dict[str, list[str]] = {name: [] for name in objects}
        for obj in self.free:
            if obj.interior is None:
                continue
            body = ids['objects'][obj.name]
            rot = data.xmat[body].reshape(3, 3)
            for name, pose in objects.items():
                if name == obj.name:
                    continue
                local = rot.T @ (np.asarray(pose['pos']) - data.xpos[body])
                hx, hy, height = obj.interior
                if abs(local[0]) < hx and abs(local[1]) < hy and 0.0 < local[2] < height:
                    inside[name].append(obj.name)
        joints = self._joints(model, data)
        state: dict[str, Any] = {
            'task': self.name,
            'objects': objects,
            'initial': self._initial,
            'fingers': {'left': data.geom_xpos[ids['pads'][0]].tolist(),
                        'right': data.geom_xpos[ids['pads'][1]].tolist()},
            'tcp': {'pos': data.site_xpos[ids['tcp']].tolist(),
                    'quat': _mat_to_quat(data.site_xmat[ids['tcp']])},
            'finger_q': [float(data.qpos[a]) for a in ids['fingers']],
            'finger_open': mjcf.FINGER_TRAVEL,
            'contacts': contacts,
            'on_top': on_top,
            'inside': inside,
            'joints': joints,
            'initial_joints': self._initial_joints,
            'toggled': {},
            'reach_point': {n: data.site_xpos[s].tolist() for n, s in ids['handles'].items()},
        }
        for name, joint, button, depth in ids['toggles']:
            state['toggled'][name] = joints[joint]['q'] < -depth
            state['reach_point'][name] = data.xpos[button].tolist()
        return state


def _mat_to_quat(mat: np.ndarray) -> list[float]:
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.asarray(mat, dtype=float).reshape(9))
    return quat.tolist()


def make_scene(task: str) -> Scene:
    """Return the scene of REALM task ``task``; unknown names raise ConfigError listing tasks."""
    tasks.get_task(task)
    return TaskScene(task)


def load_scene(task: str) -> Scene:
    """Return the :class:`Scene` of ``task`` ('' = the empty table)."""
    return make_scene(task) if task else Scene()


def sample_initial_state(task: str, seed: int) -> dict[str, Any]:
    """Return ``task``'s initial state drawn from ``seed`` (``Backend.scene_sampler`` in
    ``core.backends``)."""
    return load_scene(task).sample_initial_state(np.random.default_rng(seed))
