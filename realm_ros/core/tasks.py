"""REALM's ten tasks and their tiered-progression rubric (REALM paper Table III), ROS-free.

A task is one record (:class:`TaskDef`): its skill (:mod:`realm_ros.core.skills`, which holds
the stages, their predicates and REALM's thresholds), REALM's instruction and paraphrases, the
object the stages are about and (for put and stack) the target, the objects the twin places, and
the arm's reset pose. Adding a task for an existing skill is one :func:`register` call.

The rubric is computed every control step from the *privileged state* that a simulated world
returns (``Scene.privileged`` in the MuJoCo twin, the same dict on the
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
from typing import Any, Iterator, Mapping

from realm_ros.core import skills
from realm_ros.core.errors import DataError
from realm_ros.core.registry import Registry
from realm_ros.core.skills import DRAWER_RULES
from realm_ros.core.types import Progress

__all__ = ['DRAWER_RULES', 'EMPTY', 'SKILL_STAGES', 'TASKS', 'ProgressTracker', 'TaskDef',
           'empty_progress', 'get_task', 'is_empty', 'register', 'stage_measures',
           'stage_predicates']

#: REALM's fallback reset pose where neither the task YAML nor the scene sets one
#: (``construct_environment_config``: [0, -pi/5, 0, -4pi/5, 0, 3pi/5, 0]). ``pick_water_bottle``'s
#: is commented out in its YAML and the Wainscott_0_int scene sets none, so it resets here.
REALM_FALLBACK_RESET_Q = (0.0, -math.pi / 5, 0.0, -4 * math.pi / 5, 0.0, 3 * math.pi / 5, 0.0)


@dataclasses.dataclass(frozen=True)
class TaskDef:
    """One REALM task as built in the twin: every fact of the task, in one record.

    Attributes:
        name: REALM's task name. skill: key of :data:`realm_ros.core.skills.SKILLS`.
        instruction: REALM's instruction. obj: the object the stages are about.
        target: the receiving object (put, stack) or the articulation (drawers), else ''.
        realm_id: REALM's task index. differs: what the twin does differently from REALM.
        objects: the movable objects the twin places (``backends/mujoco/scenes.OBJECTS``);
            the skill's fixtures (cabinet, switch) come with the skill.
        theme: REALM's category theme of the main object (V-SC draws distractors of others).
        reset_q: the arm's reset pose, rad: ``reset_joint_pos`` of REALM's task YAML.
        paraphrases: instruction variants per semantic perturbation (S-LANG, S-PROP, S-MO,
            S-AFF, S-INT), written for realm_ros (REALM caches its own in the task YAMLs; the
            spatial ones refer only to what the twin's scene has).
        noun / target_noun / verb: the phrases SB-NOUN, SB-VRB and VSB-NOBJ replace (REALM's
            ``instruction_obj_to_replace``, ``..._target_...``, ``..._verb_...``;
            close_drawer's is "close drawer" in REALM, which is not in its instruction).
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
    objects: tuple[str, ...] = ()
    theme: str = ''
    reset_q: tuple[float, ...] = REALM_FALLBACK_RESET_Q

    @property
    def stages(self) -> tuple[str, ...]:
        """The skill's ordered stage names."""
        return skills.get(self.skill).stages


TASKS: Registry[TaskDef] = Registry('task', replace=True)


def register(task: TaskDef) -> TaskDef:
    """Add ``task`` to :data:`TASKS` (its skill must be registered) and return it."""
    skills.get(task.skill)
    return TASKS.add(task.name, task)


for _task in (
    TaskDef(
        'put_green_block_in_bowl', 'put', 'put the green block in the bowl', 'green_block',
        target='bowl', realm_id=0, objects=('green_block', 'bowl'),
        theme='toys', noun='green block', target_noun='bowl', verb='put',
        reset_q=(0.0055956, -0.46229482, -0.10837201, -2.22445,
                 -0.02223617, 1.6368663, -0.28468588),
        differs=('a 4 cm green box and an open square bowl built from five boxes replace the '
                 'BEHAVIOR-1K block and bowl; plain table instead of Pomaria_1_int'),
        paraphrases={
            'S-LANG': ('place the green cube into the bowl',
                       'drop the green block in the bowl',
                       'move the green block so it ends up in the bowl'),
            'S-PROP': ('put the small green cube in the grey container',
                       'put the green square block in the wide grey bowl'),
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
                      'drop the green six-faced block into the bowl used for food'),
        }),
    TaskDef(
        'put_banana_into_box', 'put', 'put the banana in the box', 'banana',
        target='box', realm_id=1, objects=('banana', 'box'),
        theme='food', noun='banana', target_noun='box', verb='put',
        reset_q=(-0.0077723307, -0.60262549, -0.0016363382, -2.5171406,
                 -0.013347155, 1.9000646, -0.022239132),
        differs=('a yellow capsule stands in for the banana and an open box of five slabs for '
                 'the box; plain table instead of office_cubicles_left'),
        paraphrases={
            'S-LANG': ('place the banana inside the box',
                       'drop the banana into the box',
                       'move the banana into the box'),
            'S-PROP': ('put the long yellow fruit in the brown box',
                       'put the curved yellow object in the cardboard box'),
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
                      'put the elongated yellow berry into the carton'),
        }),
    TaskDef(
        'rotate_marker', 'rotate', 'rotate the marker', 'marker',
        target='', realm_id=2, objects=('marker',),
        theme='stationery', noun='marker', target_noun='', verb='rotate',
        reset_q=(-0.01373833, -0.5032997, -0.11150811, -2.2225301,
                 0.15665062, 1.4554586, -0.08681711),
        differs=('a 12 cm bar of square section with a red cap stands in for the marker (a '
                 'round one rolls on the table); plain table'),
        paraphrases={
            'S-LANG': ('turn the marker around', 'spin the marker', 'twist the marker'),
            'S-PROP': ('rotate the thin black pen', 'rotate the long dark cylinder'),
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
                      'spin the capped writing instrument'),
        }),
    TaskDef(
        'rotate_mug', 'rotate', 'rotate the mug', 'mug',
        target='', realm_id=3, objects=('mug',),
        theme='containers', noun='mug', target_noun='', verb='rotate',
        reset_q=(-0.12872958, -0.3024, -0.1587609, -1.9855824,
                 -0.01000371, 1.4275427, -0.02166059),
        differs='a cylinder with a box handle stands in for the mug; plain table',
        paraphrases={
            'S-LANG': ('turn the mug', 'spin the mug around', 'twist the cup'),
            'S-PROP': ('rotate the white cup with a handle', 'rotate the round white mug'),
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
                      'spin the stoneware beverage cup'),
        }),
    TaskDef(
        'pick_spoon', 'pick', 'pick up the spoon', 'spoon',
        target='', realm_id=4, objects=('spoon',),
        theme='kitchen', noun='spoon', target_noun='', verb='pick up',
        reset_q=(-0.11952213, -0.5059374, -0.28497612, -2.4112132,
                 -0.18034634, 1.9153982, -0.43432593),
        differs=('a 14 cm box handle (2.2 cm square) with an ellipsoid head stands in for the '
                 'spoon (thinner ones get wedged under a finger and destabilise the contact); '
                 'plain table'),
        paraphrases={
            'S-LANG': ('lift the spoon', 'grab the spoon and lift it', 'take the spoon'),
            'S-PROP': ('pick up the silver utensil', 'pick up the long thin metal spoon'),
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
                      'lift the cutlery item that is not a fork or a knife'),
        }),
    TaskDef(
        'pick_water_bottle', 'pick', 'pick up the water bottle', 'water_bottle',
        target='', realm_id=5, objects=('water_bottle',),
        theme='containers', noun='water bottle', target_noun='', verb='pick up',
        reset_q=REALM_FALLBACK_RESET_Q,
        differs='a 20 cm blue cylinder stands in for the bottle; plain table',
        paraphrases={
            'S-LANG': ('lift the water bottle',
                       'grab the bottle of water',
                       'take the water bottle off the table'),
            'S-PROP': ('pick up the tall blue bottle', 'pick up the clear plastic bottle'),
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
                      'lift the container of still water'),
        }),
    TaskDef(
        'stack_cubes', 'stack', 'stack the green block on the yellow block', 'green_block',
        target='yellow_block', realm_id=6, objects=('green_block', 'yellow_block'),
        theme='toys', noun='green block', target_noun='yellow block', verb='stack',
        reset_q=(-0.03046161, -0.83144855, -0.02833514, -2.5433972,
                 0.12348143, 2.0132568, 0.11008344),
        differs='a 4 cm green box on a 5 cm yellow box; plain table (REALM: Benevolence_1_int)',
        paraphrases={
            'S-LANG': ('place the green cube on top of the yellow cube',
                       'put the green block onto the yellow block',
                       'pile the green block on the yellow one'),
            'S-PROP': ('stack the small cube on the bigger cube',
                       'put the green square block on the large yellow block'),
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
                      'stack the green cube from a toddler set on the yellow one'),
        }),
    TaskDef(
        'push_switch', 'push', 'push the light switch', 'light_switch',
        target='', realm_id=7, objects=(),
        theme='', noun='light switch', target_noun='', verb='push',
        reset_q=(-0.04819933, -0.51226175, 0.05805873, -2.5092928,
                 -0.21693854, 2.1945348, 0.02541593),
        differs=('a push button on a low panel on the table (pressed from above, a latching '
                 'slide joint: TOGGLED_ON when pressed 6 mm) stands in for the wall light '
                 'switch; REACH measures to the button'),
        paraphrases={
            'S-LANG': ('press the light switch', 'hit the switch', 'push the switch button'),
            'S-PROP': ('push the red button on the white panel', 'press the small red switch'),
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
                      'press the wall-plate switch'),
        }),
    TaskDef(
        'open_drawer', 'open_drawer', 'open the top drawer', 'top_drawer',
        target='top_drawer', realm_id=8, objects=(),
        theme='', noun='top drawer', target_noun='', verb='open',
        reset_q=(0.0, -0.628, 0.0, -2.512,
                 -0.75, 1.884, 0.0),
        differs=('a two-drawer cabinet of boxes with a bar handle; the slide joint has Kp = 0 '
                 'and damping 20 N s/m (REALM: Kd = 1000 in PhysX) so the gentle DROID '
                 'impedance can move it; REACH measures to the handle'),
        paraphrases={
            'S-LANG': ('pull the top drawer open',
                       'open the upper drawer',
                       'slide the top drawer out'),
            'S-PROP': ('open the top wooden drawer', 'open the highest drawer of the cabinet'),
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
                      'extend the top drawer of the dresser'),
        }),
    TaskDef(
        'close_drawer', 'close_drawer', 'close the top drawer', 'top_drawer',
        target='top_drawer', realm_id=9, objects=(),
        theme='', noun='top drawer', target_noun='', verb='close',
        reset_q=(0.0, -0.628, 0.0, -2.512,
                 -0.75, 1.884, 0.0),
        differs='as open_drawer, starting fully open (openness 1.0, as in REALM)',
        paraphrases={
            'S-LANG': ('push the top drawer closed',
                       'shut the upper drawer',
                       'slide the top drawer in'),
            'S-PROP': ('close the top wooden drawer',
                       'close the highest drawer of the cabinet'),
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
                      'retract the top drawer of the dresser'),
        }),

):
    register(_task)

class _SkillStages(Mapping[str, tuple[str, ...]]):
    """Skill name -> its stages: a live view of :data:`realm_ros.core.skills.SKILLS`."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return skills.SKILLS[name].stages

    def __iter__(self) -> Iterator[str]:
        return iter(skills.SKILLS)

    def __len__(self) -> int:
        return len(skills.SKILLS)


#: Skill -> its stages (a live view of :data:`realm_ros.core.skills.SKILLS`).
SKILL_STAGES: Mapping[str, tuple[str, ...]] = _SkillStages()


def get_task(name: str) -> TaskDef:
    """Return the task ``name``; an unknown name raises :class:`ConfigError` listing the tasks."""
    return TASKS.lookup(name)


def stage_predicates(task: str | TaskDef, state: Mapping[str, Any],
                     drawer_rule: str = 'realm_code') -> dict[str, bool]:
    """Return every stage's predicate on ``state``, independently of order (for debugging)."""
    task = get_task(task) if isinstance(task, str) else task
    check = skills.StageCheck(task, state, drawer_rule)
    return {stage: check.predicate(stage) for stage in task.stages}


def stage_measures(task: str | TaskDef, state: Mapping[str, Any],
                   drawer_rule: str = 'realm_code') -> dict[str, float]:
    """Return every stage's measure on ``state`` (``skills.STAGE_MEASURES``: the distance its
    predicate thresholds; NaN for a stage that has none)."""
    task = get_task(task) if isinstance(task, str) else task
    check = skills.StageCheck(task, state, drawer_rule)
    return {stage: check.measure(stage) for stage in task.stages}


class ProgressTracker:
    """Tiered progression of one episode, updated once per control step (REALM's rubric).

    Stages are checked in order, stopping at the first unmet one; a met stage stays met, so an
    object dropped after lifting keeps its lift stage, and a later stage never counts before all
    earlier ones have been met.
    """

    def __init__(self, task: str | TaskDef, drawer_rule: str = 'realm_code') -> None:
        self.task = get_task(task) if isinstance(task, str) else task
        self.drawer_rule = skills.drawer_rule(drawer_rule)
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
            check = skills.StageCheck(self.task, state, self.drawer_rule)
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


#: The task name of the empty table (no objects, nothing scored); '' means the same.
EMPTY = 'empty'


def is_empty(task: str) -> bool:
    """The empty-task rule, once: ``task`` names the empty table (:data:`EMPTY` or '')."""
    return task in ('', EMPTY)


def empty_progress(task: str, step: int = 0) -> Progress:
    """Return the progress of a world without a task (the empty table): no stages, 0."""
    return Progress(task=task, stages=(), met=(), progression=0.0, max_progression=0.0,
                    step=step)
