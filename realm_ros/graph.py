"""The paired-evaluation node graph, defined once.

``launch/paired_eval.launch.py`` turns these specs into ``launch_ros`` Node actions;
``realm-ros paired-eval`` instantiates the same node classes in one process with the same
parameters. Neither adds a node or a parameter of its own, so the two cannot drift
(``test/unit/test_graph.py`` checks both against this list).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from typing import Any, Callable, Mapping

from realm_ros.core import backends, robot, topics
from realm_ros.core.config import CAMERA_NAMES, RENAMED, renamed, renamed_file
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import EvalConfig
from realm_ros.core.share import share_path  # noqa: F401 - graph.share_path, as it was

#: Executable (console script) -> node class, for in-process bring-up.
NODE_CLASSES: dict[str, str] = {
    'world_node': 'realm_ros.nodes.world_node:WorldNode',
    'policy_node': 'realm_ros.nodes.policy_node:PolicyNode',
    'digital_real': 'realm_ros.nodes.digital_real_node:DigitalRealNode',
    'evaluator_node': 'realm_ros.nodes.evaluator_node:EvaluatorNode',
    'operator_node': 'realm_ros.nodes.operator_node:OperatorNode',
    'monitor_node': 'realm_ros.nodes.monitor_node:MonitorNode',
    'recorder_node': 'realm_ros.nodes.recorder_node:RecorderNode',
}

REAL_NS, SIM_NS = '/real', '/sim'
#: Where the digital real's franka_ros2-shaped interface lives (the bridge's robot side).
ROBOT_NS = '/real/franka'

#: ``arm_id`` launch argument -> franka_ros2 arm id (joint names ``<arm_id>_jointN``), from
#: ``core.robot``'s arms and aliases (``panda`` -> ``fer``).
ARM_IDS = {name: robot.canonical_arm_id(name) for name in robot.ARM_IDS}
#: ``gripper`` launch argument: the Franka Hand (franka_ros2 gripper actions) or a Robotiq
#: 2F-85 (control_msgs GripperCommand, as DROID labs mount it): ``core.robot.HANDS``.
GRIPPERS = robot.HANDS


#: Old spellings of a backend launch arguments still take (``core.config.RENAMED``).
OLD_BACKEND_NAMES = ('fake',)


def backend_choices(keep: Callable[[backends.Backend], bool] = lambda b: True) -> list[str]:
    """Return a launch argument's choices: the registered backends ``keep`` accepts
    (:mod:`realm_ros.core.backends`), then the old spellings of those among them."""
    chosen = list(backends.names(keep))
    return chosen + [old for old in OLD_BACKEND_NAMES if RENAMED.get(old) in chosen]


def backend_help(keep: Callable[[backends.Backend], bool] = lambda b: True) -> str:
    """Return ``name (description), ...`` of the registered backends ``keep`` accepts."""
    return ', '.join(f'{b.name} ({b.description})' for b in backends.BACKENDS.values()
                     if keep(b))


def arm_id(name: str) -> str:
    """Return the franka_ros2 arm id for launch argument ``arm_id`` (``panda`` -> ``fer``)."""
    if name not in ARM_IDS:
        raise ConfigError(f'arm_id must be one of {sorted(ARM_IDS)}, got {name!r}')
    return ARM_IDS[name]


def _check_gripper(gripper: str) -> str:
    if gripper not in GRIPPERS:
        raise ConfigError(f'gripper must be one of {list(GRIPPERS)}, got {gripper!r}')
    return gripper


def bridge_parameters(arm: str, gripper: str, digital_real: bool = False) -> dict[str, Any]:
    """Return world_node's arm and gripper parameters for the franka bridge.

    Args:
        arm: launch argument ``arm_id`` (fr3, fer, panda).
        gripper: launch argument ``gripper`` (franka_hand, robotiq_2f_85).
        digital_real: the robot side is the digital real, which serves the gripper's width topic
            everywhere (franka_msgs' actions exist only in a lab workspace), so it is used.
    """
    arm, gripper = arm_id(arm), _check_gripper(gripper)
    return {'franka.arm_id': arm, 'franka.gripper': 'width_topic' if digital_real else gripper}


def digital_real_parameters(arm: str) -> dict[str, Any]:
    """Return the digital real's arm parameter for launch argument ``arm_id``."""
    return {'arm_id': arm_id(arm)}


def digital_real_params_file(path: str, old_path: str = '') -> str:
    """Return the digital real's parameter YAML for launch arguments
    ``digital_real_params_file`` and its old name ``fake_franka_params_file`` (``old_path``,
    used with a deprecation line when given); a path to the renamed ``config/fake_franka.yaml``
    becomes ``config/digital_real.yaml`` beside it."""
    if old_path:
        renamed('fake_franka_params_file', 'launch argument')
        path = old_path
    return renamed_file(path, 'digital_real_params_file')


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    """One node of the graph: what ``launch_ros.actions.Node`` needs, and nothing more."""

    executable: str
    name: str
    namespace: str = ''
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()

    def node_class(self) -> type:
        """Import and return the node class behind this executable."""
        module_name, class_name = NODE_CLASSES[self.executable].split(':')
        return getattr(importlib.import_module(module_name), class_name)


def clock_remapping(namespace: str) -> tuple[tuple[str, str], ...]:
    """Remap ``/clock`` to ``<namespace>/clock``: each lockstep world has its own sim clock."""
    return ((topics.CLOCK, f'{namespace}{topics.CLOCK}'),)


def paired_eval_graph(config: EvalConfig, out_dir: str, lockstep: bool = True,
                      policy: Mapping[str, Any] | None = None,
                      monitor: bool = False, record: bool = False, operator: bool = True,
                      arm: str = 'fr3', gripper: str = 'franka_hand',
                      videos: str = '') -> list[NodeSpec]:
    """Return the nodes of a paired evaluation.

    Args:
        config: the evaluation; ``config.real`` picks the digital real (``digital_real``,
            behind the franka bridge exactly as a lab's arm) or the real arm (``franka``).
        out_dir: where the evaluator writes episodes.jsonl, summary.json, report.html.
        lockstep: simulated worlds step per command (ignored for a real arm).
        policy: policy_node parameters shared by both worlds (policy name, host, port, ...);
            the evaluator switches the policy per episode through the spec otherwise.
        monitor: add monitor_node (markers and divergence for RViz).
        record: add one recorder_node per world (commands, joint states and the cameras the
            worlds publish, to rosbag2/MCAP under ``out_dir/bags_<world>``, one bag per pair:
            the evaluator splits them and maps each episode to its bag in
            ``out_dir/bags.jsonl``).
        operator: add operator_node for a real arm. ``realm-ros paired-eval`` hosts it and
            reads its keys in its own terminal; ``paired_eval.launch.py`` leaves it out (an
            interactive node cannot read keys inside launch): the operator runs it in a second
            terminal (docs/install-and-launch.md).
        arm: ``arm_id`` of the arm (fr3, fer, panda): joint names on the robot side of the
            bridge, the digital real's too.
        gripper: the gripper on the arm (franka_hand, robotiq_2f_85).
        videos: the cameras (a comma list) whose images the evaluator saves as one video per
            episode, world and camera (docs/arena.md); both worlds then render them. '' = no
            videos.
    """
    entries = config.policy_entries()
    needs = _policy_needs(entries)
    # A policy that reads simulator-only state (PolicyNeeds.privileged: the scripted ladder)
    # cannot face a real arm, which has none.
    privileged = any(n.privileged for n in needs)
    # The real side, as its record says (core.backends): the world_node backend that reaches
    # it (the franka bridge), the node serving the bridge's robot side (the digital real's, in
    # its own namespace as franka_ros2 would be; none for an arm), lockstep, an operator.
    real = backends.get(config.real)
    robot_side = bool(real.robot_node)
    if privileged and not real.privileged:
        raise ConfigError('scripted policies read privileged object state, which a real arm '
                          'does not have; evaluate them against the digital real '
                          '(real: digital_real)')
    # Cameras are on when asked for or when a policy under test declares it needs images;
    # policy_node then subscribes to the cameras its policy declares (Policy.needs). The worlds
    # render only the cameras some policy under test declares (openpi's DROID client: 2 of
    # 3); the whole rig when --cameras is asked for and no policy declares any.
    declared = _policy_cameras(needs)
    camera_names = list(declared or (CAMERA_NAMES if config.cameras else ()))
    if videos:
        from realm_ros.core.config import parse_cameras
        recorded = parse_cameras(videos, '--videos')
        camera_names = [c for c in CAMERA_NAMES if c in {*camera_names, *recorded}]
    cameras = bool(camera_names)
    policy = {'policy': entries[0].policy, 'policy_args': json.dumps(dict(entries[0].args)),
              **dict(policy or {}),
              'use_privileged': privileged, 'start_active': False}
    real_lockstep = lockstep and real.lockstep
    camera_rate = robot.CONTROL_HZ if cameras else 0.0  # 0 = no images rendered or published
    nodes = []
    if robot_side:
        # The robot side of the bridge lives in its own namespace, as franka_ros2 would.
        nodes.append(NodeSpec(real.robot_node, real.robot_node, ROBOT_NS, {
            'dynamics_file': config.real_dynamics_file,
            'appearance_file': config.real_appearance_file,
            'lockstep': real_lockstep,
            **digital_real_parameters(arm),
            **({'cameras': camera_names} if cameras else {}),
        }, clock_remapping(REAL_NS)))
    # Lockstep worlds never step without a command (lockstep_timeout_s 0): a lost command then
    # stalls the episode, which the evaluator ends as an infrastructure failure, instead of
    # silently holding the arm for a step and scoring the policy for it (issue 15).
    nodes.append(NodeSpec('world_node', 'world', REAL_NS, {
        'backend': real.pair_backend,
        'lockstep': real_lockstep,
        **({'lockstep_timeout_s': 0.0} if real_lockstep else {}),
        **bridge_parameters(arm, gripper, digital_real=robot_side),
        'franka.namespace': ROBOT_NS if robot_side else '/',
        'franka.digital_real': robot_side,
        'camera_rate_hz': camera_rate,
        **({'cameras': camera_names} if cameras else {}),
    }, clock_remapping(REAL_NS)))
    if real.operator_scored and operator:
        # The operator's timestamped annotations go with the run's records.
        nodes.append(NodeSpec('operator_node', 'operator', REAL_NS, {
            'record_file': f'{out_dir}/operator_annotations.jsonl'}, ()))
    nodes.append(NodeSpec('world_node', 'world', SIM_NS, {
        'backend': config.sim,
        'lockstep': lockstep,
        **({'lockstep_timeout_s': 0.0} if lockstep else {}),
        'sim_params_file': config.sim_params_file,
        'visual_match_dir': config.visual_match_dir,
        # The real side's safety rules on the twin's commands too (the bridge's defaults and
        # arm): both worlds refuse the same commands and hold the same targets (issue 37).
        'safety.filter_commands': True,
        'safety.arm_id': arm_id(arm),
        'camera_rate_hz': camera_rate,
        **({'cameras': camera_names} if cameras else {}),
    }, clock_remapping(SIM_NS)))
    for ns, sim_time in ((REAL_NS, real_lockstep), (SIM_NS, lockstep)):
        nodes.append(NodeSpec('policy_node', 'policy', ns, {
            **policy, 'lockstep': sim_time, 'use_sim_time': sim_time}, clock_remapping(ns)))
    recorders = []
    if record:
        for ns in (REAL_NS, SIM_NS):
            world = ns.strip('/')
            recorders.append(f'/recorder_{world}')
            # The cameras the policies use, as the world publishes them (raw, by default).
            nodes.append(NodeSpec('recorder_node', f'recorder_{world}', '', {
                'out_dir': f'{out_dir}/bags_{world}', 'namespace': ns, 'bag_prefix': 'pair',
                **({'cameras': camera_names} if cameras else {})}))
    nodes.append(NodeSpec('evaluator_node', 'evaluator', '', {
        'out_dir': out_dir,
        'real_ns': REAL_NS,
        'sim_ns': SIM_NS,
        'operator_scored_real': real.operator_scored,
        'recorders': ','.join(recorders),
        **({'videos': videos} if videos else {}),
        # Recorded with each episode (made_by): what the policy nodes were given.
        'execute_horizon': int(policy.get('execute_horizon', 0)),
    }))
    if monitor:
        # The two lockstep clocks differ (the digital real's keeps growing across resets):
        # pair real and sim samples by arrival.
        nodes.append(NodeSpec('monitor_node', 'monitor', '', {
            'real_namespace': REAL_NS, 'sim_namespace': SIM_NS, 'match_by': 'arrival'}))
    return nodes


def _policy_needs(entries: list) -> list[Any]:
    """Return the :class:`~realm_ros.core.policy.PolicyNeeds` of the policy entries that can be
    built here (built without connecting)."""
    from realm_ros.core.errors import RealmError
    from realm_ros.core.policy import policy_needs
    needs = []
    for entry in entries:
        try:
            needs.append(policy_needs(entry.policy, **dict(entry.args)))
        except (RealmError, OSError):
            # The policy cannot be built here (a missing file, a missing package):
            # policy_node reports that when it builds it; it does not decide the graph.
            continue
    return needs


def _policy_cameras(needs: list[Any]) -> tuple[str, ...]:
    """Return the cameras the policies' needs declare, in rig order."""
    wanted: set[str] = {name for n in needs for name in n.cameras}
    return tuple(name for name in CAMERA_NAMES if name in wanted)


def evaluator_parameters(spec: NodeSpec, config: EvalConfig) -> dict[str, Any]:
    """Return ``spec``'s parameters; the evaluator also gets every field of ``config``.

    Empty lists are dropped: ROS cannot type an empty array parameter from its value.
    """
    params = dict(spec.parameters)
    if spec.executable == 'evaluator_node':
        for f in dataclasses.fields(config):
            value = getattr(config, f.name)
            params[f.name] = list(value) if isinstance(value, tuple) else value
    return {k: v for k, v in params.items() if not (isinstance(v, list) and not v)}
