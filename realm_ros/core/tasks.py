"""REALM's ten tasks and their tiered-progression rubric (REALM paper Table III), ROS-free.

A task names a skill, REALM's instruction, the object the stages are about and (for put and
stack) the target object. The rubric is computed every control step from the *privileged state*
that a simulated world returns (``Scene.privileged`` in the MuJoCo twin, the same dict on the
``privileged_state`` topic). Its keys (units m, rad; positions in ``base_link`` = world frame):

``objects``
    ``{name: {'pos': [x, y, z], 'quat': [w, x, y, z]}}``: current pose of each task object.
``initial``
    the same for the poses at reset (the stage thresholds are relative to these).
``fingers``
    ``{'left': [x, y, z], 'right': [x, y, z]}``: finger pad centres.
``tcp``
    ``{'pos': [x, y, z], 'quat': [w, x, y, z]}``: the gripper's tool centre point.
``finger_q``
    ``[left, right]``: finger joint openings, m (``finger_open`` = fully open value).
``contacts``
    ``{name: {'left': bool, 'right': bool, 'robot': bool}}``: left pad/finger, right
    pad/finger, any robot geom touching the object (REALM's ``Touching`` state).
``on_top`` / ``inside``
    ``{name: [other names]}``: resting-on (contact, above) and containment relations.
``joints``
    ``{name: {'q': m, 'lower': m, 'upper': m}}``: articulations (drawer slides).
``initial_joints``
    the same at reset.
``toggled``
    ``{name: bool}``: toggleable objects (the light switch).
``reach_point``
    optional ``{name: [x, y, z]}``: the point REACH measures to, where an object's centre is
    not where a gripper would touch it (the drawer: its handle).

Scoring follows REALM's ``recompute_task_progression``: stages are checked in order every step,
stopping at the first unmet one; a met stage stays met; progression = stages met from the start
/ N; the episode score is the maximum; success is progression 1.0; after success an episode runs
:data:`realm_ros.core.types.STEPS_AFTER_SUCCESS` more steps.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.types import Progress

# REALM's thresholds (realm.md 1.7), m and rad.
REACH_DISTANCE = 0.10
GRASP_OPEN_MARGIN = 1e-3
LIFT_SLIGHT_UP, LIFT_SLIGHT_MOVED = 0.01, 0.05
LIFT_LARGE_UP, LIFT_LARGE_MOVED = 0.075, 0.10
ROTATED_ANGLE = 1.1
MOVE_CLOSE_DISTANCE = 0.125
JOINT_MOVED = 0.025
OPEN_THRESHOLDS = (0.125, 0.65, 0.95)
CLOSE_THRESHOLDS = (0.875, 0.35, 0.05)

SKILL_STAGES: dict[str, tuple[str, ...]] = {
    'pick': ('REACH', 'GRASP', 'LIFT_LARGE'),
    'rotate': ('REACH', 'GRASP', 'ROTATED'),
    'push': ('REACH', 'TOUCH', 'TOGGLED_ON'),
    'put': ('REACH', 'GRASP', 'LIFT_SLIGHT', 'MOVE_CLOSE', 'PLACE_INTO'),
    'stack': ('REACH', 'GRASP', 'LIFT_SLIGHT', 'MOVE_CLOSE', 'PLACE_ONTO'),
    'open_drawer': ('REACH', 'TOUCH_AND_MOVE_JOINT', 'OPEN_JOINT_SMALL', 'OPEN_JOINT_LARGE',
                    'OPEN_JOINT_FULL'),
    'close_drawer': ('REACH', 'TOUCH_AND_MOVE_JOINT', 'CLOSE_JOINT_SMALL', 'CLOSE_JOINT_LARGE',
                     'CLOSE_JOINT_FULL'),
}


@dataclasses.dataclass(frozen=True)
class TaskDef:
    """One REALM task as built in the twin.

    Attributes:
        name: REALM's task name. skill: key of :data:`SKILL_STAGES`.
        instruction: REALM's instruction. obj: the object the stages are about.
        target: the receiving object (put, stack) or the articulation (drawers), else ''.
        realm_id: REALM's task index. differs: what the twin does differently from REALM.
        paraphrases: instruction variants for S-LANG / S-PROP (written for realm_ros).
    """

    name: str
    skill: str
    instruction: str
    obj: str
    target: str = ''
    realm_id: int = 0
    differs: str = ''
    paraphrases: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def stages(self) -> tuple[str, ...]:
        """The skill's ordered stage names."""
        return SKILL_STAGES[self.skill]


TASKS: dict[str, TaskDef] = {t.name: t for t in (
    TaskDef('put_green_block_in_bowl', 'put', 'put the green block in the bowl', 'green_block',
            'bowl', 0,
            'a 4 cm green box and an open square bowl built from five boxes replace the '
            'BEHAVIOR-1K block and bowl; plain table instead of Pomaria_1_int',
            {'S-LANG': ('place the green cube into the bowl', 'drop the green block in the bowl',
                        'move the green block so it ends up in the bowl'),
             'S-PROP': ('put the small green cube in the grey container',
                        'put the green square block in the wide grey bowl')}),
    TaskDef('put_banana_into_box', 'put', 'put the banana in the box', 'banana', 'box', 1,
            'a yellow capsule stands in for the banana and an open box of five slabs for the '
            'box; plain table instead of office_cubicles_left',
            {'S-LANG': ('place the banana inside the box', 'drop the banana into the box',
                        'move the banana into the box'),
             'S-PROP': ('put the long yellow fruit in the brown box',
                        'put the curved yellow object in the cardboard box')}),
    TaskDef('rotate_marker', 'rotate', 'rotate the marker', 'marker', '', 2,
            'a 12 cm bar of square section with a red cap stands in for the marker (a round '
            'one rolls on the table); plain table',
            {'S-LANG': ('turn the marker around', 'spin the marker', 'twist the marker'),
             'S-PROP': ('rotate the thin black pen', 'rotate the long dark cylinder')}),
    TaskDef('rotate_mug', 'rotate', 'rotate the mug', 'mug', '', 3,
            'a cylinder with a box handle stands in for the mug; plain table',
            {'S-LANG': ('turn the mug', 'spin the mug around', 'twist the cup'),
             'S-PROP': ('rotate the white cup with a handle', 'rotate the round white mug')}),
    TaskDef('pick_spoon', 'pick', 'pick up the spoon', 'spoon', '', 4,
            'a 14 cm box handle (2.2 cm square) with an ellipsoid head stands in for the spoon '
            '(thinner ones get wedged under a finger and destabilise the contact); plain table',
            {'S-LANG': ('lift the spoon', 'grab the spoon and lift it', 'take the spoon'),
             'S-PROP': ('pick up the silver utensil', 'pick up the long thin metal spoon')}),
    TaskDef('pick_water_bottle', 'pick', 'pick up the water bottle', 'water_bottle', '', 5,
            'a 20 cm blue cylinder stands in for the bottle; plain table',
            {'S-LANG': ('lift the water bottle', 'grab the bottle of water',
                        'take the water bottle off the table'),
             'S-PROP': ('pick up the tall blue bottle', 'pick up the clear plastic bottle')}),
    TaskDef('stack_cubes', 'stack', 'stack the green block on the yellow block', 'green_block',
            'yellow_block', 6,
            'a 4 cm green box on a 5 cm yellow box; plain table (REALM: Benevolence_1_int)',
            {'S-LANG': ('place the green cube on top of the yellow cube',
                        'put the green block onto the yellow block',
                        'pile the green block on the yellow one'),
             'S-PROP': ('stack the small cube on the bigger cube',
                        'put the green square block on the large yellow block')}),
    TaskDef('push_switch', 'push', 'push the light switch', 'light_switch', '', 7,
            'a push button on a low panel on the table (pressed from above, a latching slide '
            'joint: TOGGLED_ON when pressed 6 mm) stands in for the wall light switch; REACH '
            'measures to the button',
            {'S-LANG': ('press the light switch', 'hit the switch', 'push the switch button'),
             'S-PROP': ('push the red button on the white panel', 'press the small red switch')}),
    TaskDef('open_drawer', 'open_drawer', 'open the top drawer', 'top_drawer', 'top_drawer', 8,
            'a two-drawer cabinet of boxes with a bar handle; the slide joint has Kp = 0 and '
            'damping 20 N s/m (REALM: Kd = 1000 in PhysX) so the gentle DROID impedance can move '
            'it; REACH measures to the handle',
            {'S-LANG': ('pull the top drawer open', 'open the upper drawer',
                        'slide the top drawer out'),
             'S-PROP': ('open the top wooden drawer', 'open the highest drawer of the cabinet')}),
    TaskDef('close_drawer', 'close_drawer', 'close the top drawer', 'top_drawer', 'top_drawer',
            9,
            'as open_drawer, starting fully open (openness 1.0, as in REALM)',
            {'S-LANG': ('push the top drawer closed', 'shut the upper drawer',
                        'slide the top drawer in'),
             'S-PROP': ('close the top wooden drawer',
                        'close the highest drawer of the cabinet')}),
)}


def get_task(name: str) -> TaskDef:
    """Return the task ``name``; an unknown name raises :class:`ConfigError` listing the tasks."""
    task = TASKS.get(name)
    if task is None:
        raise ConfigError(f'unknown task {name!r}; choose one of {sorted(TASKS)}')
    return task


# -- geometry helpers -------------------------------------------------------------------------

def quat_to_matrix(quat: Any) -> np.ndarray:
    """Return the rotation matrix of a (w, x, y, z) quaternion."""
    w, x, y, z = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rotation_angle(q_from: Any, q_to: Any) -> float:
    """Return the rotation-vector magnitude (rad, in [0, pi]) taking ``q_from`` to ``q_to``."""
    a = np.asarray(q_from, dtype=float)
    b = np.asarray(q_to, dtype=float)
    dot = abs(float(np.dot(a / np.linalg.norm(a), b / np.linalg.norm(b))))
    return 2.0 * math.acos(min(1.0, dot))


def openness(joint: Mapping[str, float]) -> float:
    """Return an articulation's openness fraction (q - lower) / (upper - lower)."""
    span = float(joint['upper']) - float(joint['lower'])
    return (float(joint['q']) - float(joint['lower'])) / span if span > 0 else 0.0


# -- stage predicates -------------------------------------------------------------------------

class _Check:
    """Evaluate REALM's stage predicates for one task on one privileged-state dict."""

    def __init__(self, task: TaskDef, state: Mapping[str, Any]) -> None:
        self.task = task
        self.s = state

    def _pos(self, name: str, key: str = 'objects') -> np.ndarray:
        return np.asarray(self.s[key][name]['pos'], dtype=float)

    def _contact(self, name: str) -> Mapping[str, bool]:
        return self.s.get('contacts', {}).get(name, {})

    def touching(self) -> bool:
        return bool(self._contact(self.task.obj).get('robot', False))

    def reach(self) -> bool:
        point = self.s.get('reach_point', {}).get(self.task.obj)
        centre = (np.asarray(point, dtype=float) if point is not None
                  else self._pos(self.task.obj))
        dist = min(float(np.linalg.norm(np.asarray(f, dtype=float) - centre))
                   for f in self.s['fingers'].values())
        return dist < REACH_DISTANCE or self.touching()

    def grasp(self) -> bool:
        contact = self._contact(self.task.obj)
        both = bool(contact.get('left')) and bool(contact.get('right'))
        open_q = float(self.s['finger_open'])
        not_open = any(float(q) < open_q - GRASP_OPEN_MARGIN for q in self.s['finger_q'])
        return both and self.touching() and not_open

    def _lift(self, up: float, moved: float) -> bool:
        pos, init = self._pos(self.task.obj), self._pos(self.task.obj, 'initial')
        return pos[2] - init[2] > up and float(np.linalg.norm(pos - init)) > moved

    def rotated(self) -> bool:
        quat = self.s['objects'][self.task.obj]['quat']
        init = self.s['initial'][self.task.obj]['quat']
        return rotation_angle(init, quat) > ROTATED_ANGLE

    def move_close(self) -> bool:
        dist = np.linalg.norm(self._pos(self.task.obj) - self._pos(self.task.target))
        return float(dist) < MOVE_CLOSE_DISTANCE

    def _related(self, relation: str) -> bool:
        return self.task.target in self.s.get(relation, {}).get(self.task.obj, ())

    def _openness(self, key: str = 'joints') -> float:
        return openness(self.s[key][self.task.target])

    def predicate(self, stage: str) -> bool:
        """Return whether ``stage`` holds in this state (ignoring the order of stages)."""
        if stage == 'REACH':
            return self.reach()
        if stage == 'GRASP':
            return self.grasp()
        if stage == 'TOUCH':
            return self.touching()
        if stage == 'LIFT_SLIGHT':
            return self._lift(LIFT_SLIGHT_UP, LIFT_SLIGHT_MOVED)
        if stage == 'LIFT_LARGE':
            return self._lift(LIFT_LARGE_UP, LIFT_LARGE_MOVED)
        if stage == 'ROTATED':
            return self.rotated()
        if stage == 'MOVE_CLOSE':
            return self.move_close()
        if stage == 'PLACE_INTO':
            return (self._related('on_top') or self._related('inside')) and not self.grasp()
        if stage == 'PLACE_ONTO':
            return self._related('on_top') and not self.grasp()
        if stage == 'TOGGLED_ON':
            return bool(self.s.get('toggled', {}).get(self.task.obj, False))
        if stage == 'TOUCH_AND_MOVE_JOINT':
            change = self._openness() - self._openness('initial_joints')
            if self.task.skill == 'close_drawer':
                change = -change
            return self.touching() and change > JOINT_MOVED
        thresholds: dict[str, Callable[[float], bool]] = {
            'OPEN_JOINT_SMALL': lambda o: o > OPEN_THRESHOLDS[0],
            'OPEN_JOINT_LARGE': lambda o: o > OPEN_THRESHOLDS[1],
            'OPEN_JOINT_FULL': lambda o: o > OPEN_THRESHOLDS[2],
            'CLOSE_JOINT_SMALL': lambda o: o < CLOSE_THRESHOLDS[0],
            'CLOSE_JOINT_LARGE': lambda o: o < CLOSE_THRESHOLDS[1],
            'CLOSE_JOINT_FULL': lambda o: o < CLOSE_THRESHOLDS[2],
        }
        if stage in thresholds:
            return thresholds[stage](self._openness())
        raise ConfigError(f'unknown stage {stage!r}')


def stage_predicates(task: str | TaskDef, state: Mapping[str, Any]) -> dict[str, bool]:
    """Return every stage's predicate on ``state``, independently of order (for debugging)."""
    task = get_task(task) if isinstance(task, str) else task
    check = _Check(task, state)
    return {stage: check.predicate(stage) for stage in task.stages}


class ProgressTracker:
    """Tiered progression of one episode, updated once per control step (REALM's rubric).

    Stages are checked in order, stopping at the first unmet one; a met stage stays met, so an
    object dropped after lifting keeps its lift stage, and a later stage never counts before all
    earlier ones have been met.
    """

    def __init__(self, task: str | TaskDef) -> None:
        self.task = get_task(task) if isinstance(task, str) else task
        self.reset()

    def reset(self) -> None:
        """Forget every stage (new episode)."""
        self._met = [False] * len(self.task.stages)
        self._max = 0.0

    @property
    def stages(self) -> tuple[str, ...]:
        return self.task.stages

    def update(self, state: Mapping[str, Any], step: int = 0) -> Progress:
        """Score ``state`` (a privileged-state dict) and return the progress so far."""
        if state:
            check = _Check(self.task, state)
            for i, stage in enumerate(self.task.stages):
                if self._met[i]:
                    continue
                try:
                    holds = check.predicate(stage)
                except (KeyError, TypeError, IndexError) as err:
                    raise DataError(
                        f'privileged state cannot score {self.task.name} stage {stage}: '
                        f'missing or malformed {err}') from None
                if not holds:
                    break
                self._met[i] = True
        return self.progress(step)

    def progress(self, step: int = 0) -> Progress:
        """Return the current :class:`Progress` without updating."""
        count = 0
        for met in self._met:
            if not met:
                break
            count += 1
        value = count / len(self._met)
        self._max = max(self._max, value)
        return Progress(task=self.task.name, stages=self.task.stages, met=tuple(self._met),
                        progression=value, max_progression=self._max, step=step)


def empty_progress(task: str, step: int = 0) -> Progress:
    """Return the progress of a world without a task (the empty table): no stages, 0."""
    return Progress(task=task, stages=(), met=(), progression=0.0, max_progression=0.0,
                    step=step)


#: Arm pose each task resets to, rad (REALM overrides the default per task; DROID's reset pose
#: with the base joint turned toward the task's objects where that helps the camera view).
RESET_Q: dict[str, tuple[float, ...]] = {name: tuple(robot.RESET_Q) for name in TASKS}
