"""The derived quantities a twin's observation reads, handed back by a batched stepper.

After ``mj_step`` a world's data holds qpos/qvel/time of the new state and the derived
quantities (``mj_forward``'s outputs) of the state before the step. A batched stepper that
steps with each world's own model already has those in its stepping data, so the world need
not rebuild them with a host ``mj_forward`` (:meth:`MujocoWorld.load_step`). The observation
reads exactly these of them:

* :meth:`MujocoWorld.joint_state`: ``qfrc_actuator`` (the arm joints' effort);
* :meth:`TaskScene.privileged <realm_ros.backends.mujoco.scenes.TaskScene.privileged>` (what
  the progress tracker, the referee, the scripted experts and the text scorers read):
  ``xpos`` and ``xquat`` (object poses, the buttons' reach points), ``xmat`` (a container's
  frame, for ``inside``), ``geom_xpos`` (the finger pads), ``site_xpos`` and ``site_xmat``
  (the TCP, the handles' reach points) and the contacts' geom pairs (``contact.geom``, one
  row per contact: which object touches a finger, the robot, another object);

and qpos of the state after (the fingers' and the fixtures' joints), which the world's own
data holds. :class:`Derived` carries :data:`FIELDS` of every world of a batch as (W, ...)
arrays and each world's contact pairs; :meth:`Derived.world` is one world's read-only view
with ``MjData``'s attribute names, which ``Scene.privileged`` reads as it reads an ``MjData``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

#: The derived fields of ``MjData`` the observation reads (the module docstring says who).
FIELDS = ('xpos', 'xquat', 'xmat', 'geom_xpos', 'site_xpos', 'site_xmat', 'qfrc_actuator')


class Contacts(NamedTuple):
    """One world's contacts as ``MjData.contact`` gives the field read: ``geom`` (ncon, 2)."""

    geom: np.ndarray


class DerivedView:
    """One world's derived quantities (views into :class:`Derived`'s arrays) and its qpos
    after the step, under ``MjData``'s names: ``xpos``, ..., ``contact.geom``, ``ncon``."""

    __slots__ = (*FIELDS, 'qpos', 'contact', 'ncon')

    def __init__(self, arrays: dict[str, Any], index: int, contacts: np.ndarray,
                 qpos: np.ndarray) -> None:
        for name in FIELDS:
            setattr(self, name, arrays[name][index])
        self.contact = Contacts(contacts)
        self.ncon = len(contacts)
        self.qpos = qpos


@dataclasses.dataclass(frozen=True)
class Derived:
    """:data:`FIELDS` of W worlds, each indexed by world as in ``MjData`` (``xmat`` (nbody, 9)
    per world): a (W, ...) array (a device batch: same model sizes) or a list of W arrays (a
    CPU batch, whose worlds may differ in size); and each world's contact geom pairs
    ((ncon_i, 2) int). Built fresh per step: a view handed to a world stays valid after the
    stepper moves on."""

    arrays: dict[str, np.ndarray | list[np.ndarray]]
    contacts: list[np.ndarray]

    def world(self, index: int, qpos: np.ndarray) -> DerivedView:
        """Return world ``index``'s view, with ``qpos`` (its state after the step)."""
        return DerivedView(self.arrays, index, self.contacts[index], qpos)
