"""Physics of the digital real (backend ``digital_real``): the MuJoCo twin with hidden dynamics
the twin cannot see.

The digital real stands in for the physical arm on machines without one. Its dynamics differ
from the twin's defaults: per-joint friction and armature (what system identification fits),
plus actuation latency, joint-sensor noise and object mass/friction scales (which it cannot fit),
and, when its dynamics file asks for them, structural effects no twin parameter reproduces
(:class:`StructuralEffects`: Gaz et al.'s sigmoid friction, motor-link compliance, an inner
torque loop with a low-pass and a rate limit, encoder quantisation, latency jitter, softer or
stiffer object contacts; docs/digital-real.md gives the model of each and its sources).
Every output names it as the digital real; it is never presented as hardware. The node
``digital_real`` (``nodes/digital_real_node.py``) serves it behind franka_ros2's interface;
``backends/franka/digital_real.py`` is the bridge's side of that link.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from typing import Any, Mapping

import mujoco
import numpy as np

from realm_ros.backends.mujoco.actuation import delay_steps
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core.config import DigitalRealDynamics, WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import JointState

#: The hidden dynamics used when no file is given (REALM's identified values as the prior).
DEFAULT_DYNAMICS_FILE = (pathlib.Path(__file__).resolve().parents[1] / 'data'
                         / 'digital_real_dynamics.yaml')


class DigitalRealWorld(MujocoWorld):
    """A :class:`MujocoWorld` built with :class:`DigitalRealDynamics` from a YAML file, and its
    hidden appearance (``config.appearance_file``, :mod:`realm_ros.core.appearance`) if given."""

    name = 'digital_real'

    def __init__(self, config: WorldConfig, hidden: DigitalRealDynamics | None = None) -> None:
        if hidden is None:
            path = config.dynamics_file or DEFAULT_DYNAMICS_FILE
            hidden = DigitalRealDynamics.from_yaml(path)
        self.hidden = hidden
        self._structure = StructuralEffects(hidden, config.physics_hz)
        look = None
        if config.appearance_file:
            from realm_ros.backends.mujoco.looks import look_for
            look = look_for(appearance_file=config.appearance_file)
        super().__init__(
            config,
            look=look,
            visual_match_dir='',
            dynamics=hidden.joint_params(),
            latency_s=hidden.latency_s,
            joint_noise_std=hidden.joint_noise_std,
            object_mass_scale=hidden.object_mass_scale,
            object_friction_scale=hidden.object_friction_scale)

    # -- structural effects (issue 38): hooks of MujocoWorld's stepping ----------------------

    def _scale_objects(self) -> None:
        """Object mass/friction scales, then the hidden contact softness of object geoms."""
        super()._scale_objects()
        geoms = self.object_geoms()
        if self.hidden.contact_solref:
            self.model.geom_solref[geoms] = self.hidden.contact_solref
        if self.hidden.contact_solimp:
            self.model.geom_solimp[geoms] = self.hidden.contact_solimp

    def _reset_sim(self, reset_q: np.ndarray, state: Mapping[str, Any]) -> None:
        super()._reset_sim(reset_q, state)
        self._structure.reset(self.data.qfrc_actuator[self._arm_dof]
                              + self.data.qfrc_gravcomp[self._arm_dof])

    def _command_delay(self) -> int:
        jitter = self.hidden.latency_jitter_s
        if not jitter:
            return self._delay
        return delay_steps(self.latency_s + self._rng.uniform(0.0, jitter),
                           self._config.physics_hz)

    def _before_physics_step(self) -> None:
        self._structure.before_step(self)

    def joint_state(self) -> JointState:
        """The measured state, its positions quantised by the hidden encoder resolution."""
        state = super().joint_state()
        res = self.hidden.encoder_resolution
        if res:
            state = dataclasses.replace(state, position=np.round(state.position / res) * res)
        return state

    def period_controls(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Refused with structural effects: a batched stepper would skip them."""
        if self.hidden.structural:
            raise ConfigError('the digital real with structural effects steps only through '
                              'step_physics (no batched stepper); use a parameter-only '
                              'dynamics file for batched rollouts')
        return super().period_controls()


class StructuralEffects:
    """The digital real's arm-side effects applied before each physics step.

    With the state of the step about to be taken:

    * **inner torque loop** (``torque_filter_hz``, ``torque_rate_limit``): the DROID law's joint
      torque tau_cmd (MuJoCo's actuators, read by ``mj_forward``) passes a first-order low-pass
      tau <- tau + a (tau_cmd - tau), a = 1 - exp(-2 pi f_c dt), then a rate limit |dtau| <=
      limit dt; ``qfrc_applied`` adds tau - tau_cmd so the joint receives tau. The actuators'
      velocity term stays in MuJoCo's implicit integration, so this is exact to O(dt Kqd / M).
    * **motor-link compliance** (``joint_stiffness`` K): the loop servoes the motor, whose
      position leads the link by the transmitted torque / K (torque = actuator torque + gravity
      compensation, of the previous step); the target written is q_d - tau/K (joint ctrl and the
      Cartesian target frame alike), so the link sags by tau/K. Quasi-static: the motor-link
      resonance (tens of Hz for K of 10^3-10^4 N m/rad) lies above the 15 Hz control and is not
      integrated.
    * **Gaz et al. friction** (``friction_sigmoid_phi1..3``): -tau_f(qd) added to
      ``qfrc_applied`` from the step's joint velocity (explicit; its slope at rest phi1 phi2 / 4
      <= 2 N m s/rad for Gaz et al.'s values is far below the explicit-damping bound
      2 (M + armature) / dt, about 29 N m s/rad with 0.06 kg m^2 at 240 Hz).
    """

    def __init__(self, hidden: DigitalRealDynamics, physics_hz: float) -> None:
        self.hidden = hidden
        self.dt = 1.0 / physics_hz
        self.alpha = (1.0 - math.exp(-2.0 * math.pi * hidden.torque_filter_hz * self.dt)
                      if hidden.torque_filter_hz else 1.0)
        self.loop = bool(hidden.torque_filter_hz or hidden.torque_rate_limit)
        self.stiffness = np.asarray(hidden.joint_stiffness) if hidden.joint_stiffness else None
        self.phi = (np.array([hidden.friction_sigmoid_phi1, hidden.friction_sigmoid_phi2,
                              hidden.friction_sigmoid_phi3])
                    if hidden.friction_sigmoid_phi1 else None)
        self.on = self.loop or self.stiffness is not None or self.phi is not None
        self.tau = np.zeros(len(hidden.friction))  # the loop's output torque, N m
        self.transmitted = np.zeros(len(hidden.friction))  # through the spring, N m
        self._started = False  # the filter starts from the first step's commanded torque

    def reset(self, transmitted: np.ndarray) -> None:
        """Start an episode: the spring carries ``transmitted`` (the reset pose's actuator and
        gravity-compensation torque, so the arm sags over its first steps), and the filter
        starts from the first step's commanded torque."""
        self.transmitted = np.array(transmitted, dtype=float)
        self.tau[:] = 0.0
        self._started = False

    def friction(self, qd: np.ndarray) -> np.ndarray:
        """Return Gaz et al.'s friction torque per joint at joint velocity ``qd``, N m."""
        if self.phi is None:
            return np.zeros_like(qd)
        phi1, phi2, phi3 = self.phi
        return phi1 / (1.0 + np.exp(-phi2 * (qd + phi3))) - phi1 / (1.0 + np.exp(-phi2 * phi3))

    def before_step(self, world: DigitalRealWorld) -> None:
        """Write this step's compliant target and the applied torques into ``world.data``."""
        if not self.on:
            return
        d, dof = world.data, world._arm_dof
        if self.stiffness is not None:
            q_d, g = world.target
            world._act.write_target(d, q_d - self.transmitted / self.stiffness, g)
        extra = -self.friction(d.qvel[dof])
        if self.loop:
            mujoco.mj_forward(world.model, d)
            tau_cmd = d.qfrc_actuator[dof]
            if not self._started:
                self.tau[:], self._started = tau_cmd, True
            step = self.alpha * (tau_cmd - self.tau)
            if self.hidden.torque_rate_limit:
                limit = self.hidden.torque_rate_limit * self.dt
                step = np.clip(step, -limit, limit)
            self.tau = self.tau + step
            extra += self.tau - tau_cmd
            self.transmitted = self.tau + d.qfrc_gravcomp[dof]
        elif self.stiffness is not None:
            # No loop: the torque of the last step (qfrc_actuator of the state before it).
            self.transmitted = d.qfrc_actuator[dof] + d.qfrc_gravcomp[dof]
        d.qfrc_applied[dof] = extra
