"""The bridge towards the digital real (node ``digital_real``): the embedded default, never a
real arm.

``franka.digital_real:=true`` selects :class:`DigitalRealBridgeWorld`. It differs from the
robot bridge in four places, all here: it re-publishes the digital real's
``digital_real/privileged_state`` as this world's privileged state; it resets through
the digital real's ``episode_spec`` parameter and ``reset`` service instead of moving the arm; in
lockstep each step also waits for that privileged state; and there is no reflex to watch or
recover from, unless ``franka.digital_real_reflexes`` asks for the digital real's injected ones
(the soak, ``bench/soak_digital_real.py``). Everything else (arm command, gripper adapters,
safety) is the robot bridge's.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

import numpy as np
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from std_msgs.msg import String
from std_srvs.srv import Trigger

from realm_ros.backends.franka.bridge import FrankaBridgeWorld
from realm_ros.backends.franka.robot_state import RobotStateWatch
from realm_ros.core.errors import EpisodeError
from realm_ros.core.types import EpisodeSpec
from realm_ros.ros import convert, qos, topics

#: Node name of the digital real, whose ``episode_spec`` parameter the bridge sets before a reset.
DIGITAL_REAL_NODE = 'digital_real'


class DigitalRealBridgeWorld(FrankaBridgeWorld):
    """The franka bridge with the digital real on the robot side (the world
    :func:`~realm_ros.backends.franka.make_bridge_world` builds for ``franka.digital_real``)."""

    #: ``safety.shape_trajectory:=auto`` sends one point per step here: the twin and the sysid
    #: excitation do not model the shaper's lag (``always`` shapes, as the soak does).
    shapes_by_default = False

    def describe(self) -> str:
        return 'DIGITAL REAL (simulated, node digital_real), not hardware'

    def _make_robot_state_watch(self) -> RobotStateWatch | None:
        # The digital real's reflexes are injected (soak, tests): watched only when asked.
        if not self.bridge_config.digital_real_reflexes:
            return None
        return super()._make_robot_state_watch()

    def _setup(self) -> None:
        self._priv: tuple[float, dict[str, Any]] = (-1.0, {})
        self._scene_instruction = ''
        self.node.create_subscription(String, topics.DIGITAL_REAL_PRIVILEGED_STATE,
                                      self._on_privileged, qos.STATE)

    def _on_privileged(self, msg: String) -> None:
        try:
            stamp, state = convert.privileged_from_json(msg.data)
        except (ValueError, KeyError, TypeError) as err:
            self.log.warning(f'ignoring malformed digital-real privileged state: {err}')
            return
        with self._cond:
            self._priv = (stamp, state)
            self._cond.notify_all()

    def _fresh_extra(self, stamp: float) -> bool:
        return self._priv[0] >= stamp - 1e-9

    def privileged_state(self) -> Mapping[str, Any]:
        with self._cond:
            return dict(self._priv[1])

    def _default_instruction(self) -> str:
        return self._scene_instruction

    def _reset_robot(self, spec: EpisodeSpec) -> np.ndarray:
        """Set the digital real's ``episode_spec``, call its ``reset``; return its reset target."""
        params = self._call(SetParameters, f'{DIGITAL_REAL_NODE}/set_parameters',
                            SetParameters.Request(parameters=[Parameter(
                                name='episode_spec', value=ParameterValue(
                                    type=ParameterType.PARAMETER_STRING,
                                    string_value=spec.to_json()))]))
        if not params.results or not params.results[0].successful:
            raise EpisodeError(f'digital real refused the episode spec: {params.results}')
        with self._cond:
            before = self._arm_state.stamp if self._arm_state is not None else -1.0
        answer = self._call(Trigger, topics.RESET, Trigger.Request())
        if not answer.success:
            raise EpisodeError(f'digital real reset failed: {answer.message}')
        info = json.loads(answer.message)
        # Wait for the state after the reset: stamps only grow, across resets too.
        self._wait_fresh(before, float(info['time']))
        self._scene_instruction = str(info.get('instruction', ''))
        return np.asarray(info['target_q'], dtype=float)

    def recover(self, confirm: Callable[[str], bool] | None = None,
                timeout_s: float = 10.0) -> bool:
        """Without ``franka.digital_real_reflexes``: hold the measured position, return True.
        With it: the robot bridge's confirmed recovery sequence."""
        if self.robot_state is not None:
            return super().recover(confirm, timeout_s)
        del confirm, timeout_s
        self._hold_measured()
        return True
