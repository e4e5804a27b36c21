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

from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.rotations import quat_mul
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
#: TOUCH_AND_MOVE_JOINT on open_drawer: 'realm_code' scores it as REALM's code does (touching
#: the drawer; ``initial - current < 0.025`` holds from the start), 'strict' also asks the
#: openness to have grown by more than 0.025 (what the paper's stage name says).
DRAWER_RULES = ('realm_code', 'strict')
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
        paraphrases: instruction variants per semantic perturbation (S-LANG, S-PROP, S-MO,
            S-AFF, S-INT), written for realm_ros (REALM caches its own in the task YAMLs).
        noun / target_noun / verb: the phrases SB-NOUN, SB-VRB and VSB-NOBJ replace (REALM's
            ``instruction_obj_to_replace``, ``..._target_...``, ``..._verb_...``).
    """

    name: str
    skill: str
    instruction: str
    obj: str
    target: str = ''
    realm_id: int = 0
    differs: str = ''
    paraphrases: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    noun: str = ''
    target_noun: str = ''
    verb: str = ''

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


# Spatial (S-MO), purpose (S-AFF) and world-knowledge (S-INT) phrasings, written for realm_ros:
# the spatial ones refer only to what the twin's scene has (table, robot, bowl, cabinet...).
_MORE_PARAPHRASES: dict[str, dict[str, tuple[str, ...]]] = {
    'put_green_block_in_bowl': {
        'S-MO': ('put the block that is closest to the robot in the bowl',
                 'put the green block next to the bowl into it',
                 'move the small block on the table into the container beside it',
                 'put the block that is not the bowl into the bowl'),
        'S-AFF': ('tidy the green block away into the bowl',
                  'put the green block where it will not roll off the table',
                  'store the green toy block in the bowl so it is not lost',
                  'clear the table by putting the green block in the bowl'),
        'S-INT': ('put the green cuboid toy into the open-topped dish',
                  'place the small green building block in the serving bowl',
                  'put the green wooden cube inside the round kitchen vessel',
                  'drop the green six-faced block into the bowl used for food')},
    'put_banana_into_box': {
        'S-MO': ('put the fruit beside the box into the box',
                 'put the yellow object nearest the robot into the box',
                 'move the banana that lies on the table into the open box next to it',
                 'put the item that is outside the box inside it'),
        'S-AFF': ('pack the banana into the box for later',
                  'put the banana away in the box so it is ready to carry',
                  'store the snack in the box',
                  'put the banana in the box to keep the table clear'),
        'S-INT': ('put the tropical fruit from the Musa plant in the box',
                  'place the potassium-rich fruit into the cardboard container',
                  'put the curved fruit that monkeys are said to love in the box',
                  'put the elongated yellow berry into the carton')},
    'rotate_marker': {
        'S-MO': ('rotate the marker lying in front of the robot',
                 'turn the only pen-like object on the table',
                 'rotate the marker that is closest to the gripper',
                 'spin the thin object on the table in place'),
        'S-AFF': ('turn the marker so it is ready to be picked up by its middle',
                  'rotate the marker so its cap points another way',
                  'turn the pen so someone can grab it easily',
                  'rotate the marker to line it up differently on the desk'),
        'S-INT': ('rotate the felt-tip pen',
                  'turn the permanent ink writing tool',
                  'rotate the stationery item used for whiteboards',
                  'spin the capped writing instrument')},
    'rotate_mug': {
        'S-MO': ('rotate the mug standing on the table in front of the robot',
                 'turn the cup that is closest to the gripper',
                 'rotate the only mug on the table',
                 'turn the mug so its handle points away from where it is now'),
        'S-AFF': ('turn the mug so its handle is easy to grab',
                  'rotate the cup so someone can drink from it',
                  'turn the mug around before pouring coffee into it',
                  'rotate the mug to present its handle'),
        'S-INT': ('rotate the ceramic vessel for hot drinks',
                  'turn the handled cup used for coffee or tea',
                  'rotate the piece of drinkware with an ear-shaped handle',
                  'spin the stoneware beverage cup')},
    'pick_spoon': {
        'S-MO': ('pick up the spoon lying on the table in front of the robot',
                 'lift the utensil that is closest to the gripper',
                 'pick up the only piece of cutlery on the table',
                 'lift the long object on the table'),
        'S-AFF': ('pick up the spoon so it can be used for soup',
                  'lift the utensil you would stir tea with',
                  'take the spoon to set the table',
                  'pick up the thing you eat cereal with'),
        'S-INT': ('pick up the concave-headed eating utensil',
                  'lift the stainless steel tableware',
                  'pick up the teaspoon',
                  'lift the cutlery item that is not a fork or a knife')},
    'pick_water_bottle': {
        'S-MO': ('pick up the bottle standing on the table in front of the robot',
                 'lift the tallest object on the table',
                 'pick up the bottle closest to the gripper',
                 'lift the only container of water on the table'),
        'S-AFF': ('pick up the bottle so someone can have a drink',
                  'lift the water bottle to hand it to a thirsty person',
                  'pick up the thing you would take on a hike to stay hydrated',
                  'lift the drink off the table'),
        'S-INT': ('pick up the PET plastic bottle of H2O',
                  'lift the bottled mineral water',
                  'pick up the screw-capped drinking bottle',
                  'lift the container of still water')},
    'stack_cubes': {
        'S-MO': ('put the smaller block on top of the larger block',
                 'stack the block closest to the robot on the other block',
                 'place the green block on the block next to it',
                 'stack the cube on the left on the cube on the right'),
        'S-AFF': ('build a small tower with the green block on top',
                  'stack the blocks so they take less space on the table',
                  'make a two-block tower, green on yellow',
                  'tidy the blocks by stacking the green one on the yellow one'),
        'S-INT': ('stack the green toy brick on the yellow toy brick',
                  'put the green hexahedron on the yellow hexahedron',
                  'place the green building block on the yellow building block',
                  'stack the green cube from a toddler set on the yellow one')},
    'push_switch': {
        'S-MO': ('push the button on the panel in front of the robot',
                 'press the switch on the table',
                 'push the red button on top of the panel',
                 'press the only button within reach'),
        'S-AFF': ('turn the light on',
                  'push the switch so the room is lit',
                  'press the switch to power the lamp',
                  'switch on the lights'),
        'S-INT': ('push the electrical toggle',
                  'press the mains light switch',
                  'push the push-button switch that closes the circuit',
                  'press the wall-plate switch')},
    'open_drawer': {
        'S-MO': ('open the drawer above the middle drawer',
                 'open the drawer of the cabinet in front of the robot',
                 'open the upper of the two drawers',
                 'pull out the drawer nearest the cabinet top'),
        'S-AFF': ('open the top drawer to take something out of it',
                  'open the top drawer so something can be put inside',
                  'pull the top drawer open to look inside',
                  'open the upper drawer to reach its contents'),
        'S-INT': ('open the top sliding compartment of the chest of drawers',
                  'pull out the uppermost drawer on its runners',
                  'open the highest storage tray of the cabinet',
                  'extend the top drawer of the dresser')},
    'close_drawer': {
        'S-MO': ('close the drawer above the middle drawer',
                 'close the drawer sticking out of the cabinet in front of the robot',
                 'push in the upper of the two drawers',
                 'close the drawer nearest the cabinet top'),
        'S-AFF': ('close the top drawer so nobody bumps into it',
                  'shut the top drawer to keep dust out',
                  'close the open drawer to tidy up',
                  'push the top drawer in so the cabinet is closed'),
        'S-INT': ('close the top sliding compartment of the chest of drawers',
                  'push the uppermost drawer back along its runners',
                  'shut the highest storage tray of the cabinet',
                  'retract the top drawer of the dresser')},
}

# REALM's instruction_obj_to_replace / instruction_target_to_replace / instruction_verb_to_replace
# (close_drawer's is "close drawer" in REALM, which is not in its instruction; here "top drawer").
_PHRASES: dict[str, tuple[str, str, str]] = {
    'put_green_block_in_bowl': ('green block', 'bowl', 'put'),
    'put_banana_into_box': ('banana', 'box', 'put'),
    'rotate_marker': ('marker', '', 'rotate'),
    'rotate_mug': ('mug', '', 'rotate'),
    'pick_spoon': ('spoon', '', 'pick up'),
    'pick_water_bottle': ('water bottle', '', 'pick up'),
    'stack_cubes': ('green block', 'yellow block', 'stack'),
    'push_switch': ('light switch', '', 'push'),
    'open_drawer': ('top drawer', '', 'open'),
    'close_drawer': ('top drawer', '', 'close'),
}

TASKS = {name: dataclasses.replace(
    t, paraphrases={**t.paraphrases, **_MORE_PARAPHRASES[name]},
    noun=_PHRASES[name][0], target_noun=_PHRASES[name][1], verb=_PHRASES[name][2])
    for name, t in TASKS.items()}

def get_task(name: str) -> TaskDef:
    """Return the task ``name``; an unknown name raises :class:`ConfigError` listing the tasks."""
    task = TASKS.get(name)
    if task is None:
        raise ConfigError(f'unknown task {name!r}; choose one of {sorted(TASKS)}')
    return task


# -- geometry helpers -------------------------------------------------------------------------

def relative_rotvec(q_from: Any, q_to: Any) -> np.ndarray:
    """Return the rotation vector (rad, world frame) of ``R(q_to) * R(q_from)^-1``.

    REALM's ``compute_rot_diff_magnitude`` (``realm/helpers.py``): scipy's
    ``(Rotation.from_quat(final) * Rotation.from_quat(initial).inv()).as_rotvec()``; the angle
    is in [0, pi] (the quaternion is taken with w >= 0, as scipy does). Quaternions (w, x, y, z).
    """
    a = np.asarray(q_from, dtype=float)
    b = np.asarray(q_to, dtype=float)
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    d = quat_mul(b, np.array([a[0], -a[1], -a[2], -a[3]]))
    if d[0] < 0:
        d = -d
    sin_half = float(np.linalg.norm(d[1:]))
    if sin_half < 1e-12:
        return np.zeros(3)
    angle = 2.0 * math.atan2(sin_half, float(d[0]))
    return d[1:] / sin_half * angle


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

    def __init__(self, task: TaskDef, state: Mapping[str, Any],
                 drawer_rule: str = 'realm_code') -> None:
        self.task = task
        self.s = state
        self.drawer_rule = _drawer_rule(drawer_rule)

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
        # REALM's code: |z component| of the relative rotation vector, not its magnitude
        # ("switched to checking Z axis rotation only"); a tilt about x or y does not count.
        quat = self.s['objects'][self.task.obj]['quat']
        init = self.s['initial'][self.task.obj]['quat']
        return abs(float(relative_rotvec(init, quat)[2])) > ROTATED_ANGLE

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
            # REALM: delta = initial - current openness; close_drawer needs delta > 0.025,
            # open_drawer delta < 0.025, which a closed drawer meets from the start, so in
            # REALM's code the open stage is "touching". 'strict' asks 2.5 % of opening.
            delta = self._openness('initial_joints') - self._openness()
            if self.task.skill == 'close_drawer':
                return self.touching() and delta > JOINT_MOVED
            if self.drawer_rule == 'strict':
                return self.touching() and -delta > JOINT_MOVED
            return self.touching() and delta < JOINT_MOVED
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


def _drawer_rule(rule: str) -> str:
    if rule not in DRAWER_RULES:
        raise ConfigError(f'drawer_rule must be one of {list(DRAWER_RULES)}, got {rule!r}')
    return rule


def stage_predicates(task: str | TaskDef, state: Mapping[str, Any],
                     drawer_rule: str = 'realm_code') -> dict[str, bool]:
    """Return every stage's predicate on ``state``, independently of order (for debugging)."""
    task = get_task(task) if isinstance(task, str) else task
    check = _Check(task, state, drawer_rule)
    return {stage: check.predicate(stage) for stage in task.stages}


class ProgressTracker:
    """Tiered progression of one episode, updated once per control step (REALM's rubric).

    Stages are checked in order, stopping at the first unmet one; a met stage stays met, so an
    object dropped after lifting keeps its lift stage, and a later stage never counts before all
    earlier ones have been met.
    """

    def __init__(self, task: str | TaskDef, drawer_rule: str = 'realm_code') -> None:
        self.task = get_task(task) if isinstance(task, str) else task
        self.drawer_rule = _drawer_rule(drawer_rule)
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
            check = _Check(self.task, state, self.drawer_rule)
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


#: REALM's fallback reset pose where neither the task YAML nor the scene sets one
#: (``construct_environment_config``: [0, -pi/5, 0, -4pi/5, 0, 3pi/5, 0]).
REALM_FALLBACK_RESET_Q = (0.0, -math.pi / 5, 0.0, -4 * math.pi / 5, 0.0, 3 * math.pi / 5, 0.0)

#: Arm pose each task resets to, rad: ``reset_joint_pos`` of REALM's task YAMLs
#: (``realm/config/tasks/<task>.yaml``). ``pick_water_bottle``'s is commented out there and the
#: Wainscott_0_int scene sets none, so REALM falls back to :data:`REALM_FALLBACK_RESET_Q`.
RESET_Q: dict[str, tuple[float, ...]] = {
    'put_green_block_in_bowl': (0.0055956, -0.46229482, -0.10837201, -2.22445, -0.02223617,
                                1.6368663, -0.28468588),
    'put_banana_into_box': (-7.7723307e-03, -6.0262549e-01, -1.6363382e-03, -2.5171406,
                            -1.3347155e-02, 1.9000646, -2.2239132e-02),
    'rotate_marker': (-0.01373833, -0.5032997, -0.11150811, -2.2225301, 0.15665062, 1.4554586,
                      -0.08681711),
    'rotate_mug': (-0.12872958, -0.3024, -0.1587609, -1.9855824, -0.01000371, 1.4275427,
                   -0.02166059),
    'pick_spoon': (-0.11952213, -0.5059374, -0.28497612, -2.4112132, -0.18034634, 1.9153982,
                   -0.43432593),
    'pick_water_bottle': REALM_FALLBACK_RESET_Q,
    'stack_cubes': (-0.03046161, -0.83144855, -0.02833514, -2.5433972, 0.12348143, 2.0132568,
                    0.11008344),
    'push_switch': (-0.04819933, -0.51226175, 0.05805873, -2.5092928, -0.21693854, 2.1945348,
                    0.02541593),
    'open_drawer': (0.0, -0.628, 0.0, -2.512, -0.75, 1.884, 0.0),
    'close_drawer': (0.0, -0.628, 0.0, -2.512, -0.75, 1.884, 0.0),
}
