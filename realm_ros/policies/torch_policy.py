"""Run a local PyTorch model as a realm_ros policy (TorchScript file or state dict + module).

Input/output contract of the model (batch size 1; the policy adds and removes the batch dim):

* ``state``: float32 tensor (1, 8) = the seven joint positions in ``panda_joint1..7`` order
  (rad) followed by the gripper g in [0, 1] (1 = closed);
* ``images`` (only when ``cameras`` is not empty): float32 tensor (1, C, 3, H, W), the named
  cameras in the order given, RGB scaled to [0, 1], each resized with zero padding to
  ``image_size`` (H, W); passed as the second positional argument;
* output: a tensor (1, H, 8) (a chunk of H actions) or (1, 8) (one action): seven arm numbers
  then the gripper. ``action_space='joint_position'`` reads the arm numbers as absolute joint
  targets (rad); ``'joint_velocity'`` as DROID joint velocities (unitless, q + 0.2 v). The
  gripper is passed through for :class:`~realm_ros.core.policy.GripperBinarizer`.

Loading: ``path`` alone is a TorchScript file (``torch.jit.save``), or a ``torch.export`` archive
when it ends in ``.pt2`` (``torch.export.save``). With
``module='package.module:Class'`` the class is built with ``module_kwargs`` and ``path`` (if
given) is a state dict loaded with ``weights_only=True`` (no pickled code runs). Inference runs
under ``torch.inference_mode()`` on ``device`` (``cpu``, ``cuda``, ``cuda:1``); ``latency`` reports
the per-call time (host to device, forward, back), ms.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from typing import Any, Sequence
import warnings

import numpy as np

from realm_ros.core.errors import BackendUnavailable, ConfigError, InfrastructureError
from realm_ros.core.policy import Policy, PolicyNeeds
from realm_ros.core.types import ActionChunk, ActionMode, Observation
from realm_ros.policies.action_space import parse_action_space
from realm_ros.policies.image_tools import resize_with_pad
from realm_ros.policies.latency import LatencyRecorder, LatencyStats

try:
    import torch
except ImportError as err:  # pragma: no cover - exercised only where torch is absent
    raise BackendUnavailable(
        "the 'torch' policy needs PyTorch: pip install 'realm_ros[torch]' "
        f'(or torch itself); {err}') from err


def _import_class(target: str) -> type:
    module_name, sep, class_name = target.partition(':')
    if not sep or not module_name or not class_name:
        raise ConfigError(f"module must look like 'package.module:Class', got {target!r}")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f'cannot import module {target!r}: {err}') from err


class TorchPolicy(Policy):
    """A local torch model mapping (state[, images]) to an action chunk."""

    name = 'torch'

    def __init__(self, path: str = '', module: str = '',
                 module_kwargs: dict[str, Any] | str | None = None, device: str = 'cpu',
                 action_space: str = 'joint_position', cameras: Sequence[str] = (),
                 image_size: Sequence[int] = (224, 224)) -> None:
        """Load the model.

        Args:
            path: TorchScript file (``.pt2``: torch.export archive), or a state dict when
                ``module`` is given.
            module: ``'package.module:Class'`` of an ``nn.Module`` to build.
            module_kwargs: keyword arguments for that class (a dict or a JSON object string).
            device: torch device string.
            action_space: ``joint_position`` or ``joint_velocity``.
            cameras: realm_ros camera names fed to the model, in order (empty = state only).
            image_size: (H, W) the images are resized to with padding, px.

        Raises:
            ConfigError: missing file, bad module path, unknown action space.
            BackendUnavailable: the requested device is not available here.
        """
        self.mode = parse_action_space(action_space)
        if not path and not module:
            raise ConfigError("the torch policy needs 'path' (TorchScript file) or 'module' "
                              "('package.module:Class', with 'path' = state dict)")
        if path and not os.path.isfile(path):
            raise ConfigError(f"torch policy 'path' {path!r} is not a file")
        if isinstance(module_kwargs, str):
            try:
                module_kwargs = json.loads(module_kwargs or '{}')
            except json.JSONDecodeError as err:
                raise ConfigError(f"'module_kwargs' is not valid JSON: {err}") from None
        if not isinstance(module_kwargs or {}, dict):
            raise ConfigError("'module_kwargs' must be a mapping of keyword arguments")
        init_kwargs: dict[str, Any] = module_kwargs if isinstance(module_kwargs, dict) else {}
        try:
            self.device = torch.device(device)
        except RuntimeError as err:
            raise ConfigError(f"bad torch 'device' {device!r}: {err}") from None
        if self.device.type == 'cuda' and not torch.cuda.is_available():
            raise BackendUnavailable(f"torch 'device' {device!r} requested but CUDA is not "
                                     "available here; use device='cpu'")
        self.cameras = tuple(cameras)
        if len(image_size) != 2 or min(int(v) for v in image_size) <= 0:
            raise ConfigError(f"'image_size' must be (H, W) > 0, got {image_size}")
        self.image_size = (int(image_size[0]), int(image_size[1]))
        self.path = path
        self.module = module
        if module:
            model = _import_class(module)(**init_kwargs)
            if path:
                state = torch.load(path, map_location=self.device, weights_only=True)
                model.load_state_dict(state)
        elif path.endswith('.pt2'):
            # torch.export archive (TorchScript's successor). Its module is already in
            # inference form and refuses .eval(); its weights stay on the device it was saved on.
            model = torch.export.load(path).module()
        else:
            with warnings.catch_warnings():
                # torch >= 2.10 deprecates TorchScript but still loads it; users' files are
                # TorchScript today, so the warning would only be noise in every node log.
                warnings.simplefilter('ignore', DeprecationWarning)
                model = torch.jit.load(path, map_location=self.device)
        self.model = model if path.endswith('.pt2') and not module \
            else model.to(self.device).eval()
        self._latency = LatencyRecorder()

    @property
    def needs(self) -> PolicyNeeds:
        """The configured cameras at ``image_size``, in the configured action space."""
        space = 'joint_velocity' if self.mode is ActionMode.VELOCITY else 'joint_position'
        return PolicyNeeds(cameras=self.cameras,
                           image_size=self.image_size if self.cameras else None,
                           action_space=space)

    @property
    def label(self) -> str:
        source = self.module or os.path.basename(self.path)
        return f'torch:{source}@{self.device}'

    @property
    def latency(self) -> LatencyStats:
        """Time per :meth:`infer` from tensors built to actions back on the host, ms."""
        return self._latency.stats()

    def inputs(self, obs: Observation) -> list[Any]:
        """Return the model's positional inputs for ``obs`` (see the module docstring)."""
        state = np.r_[np.asarray(obs.joints.position, dtype=np.float32),
                      np.float32(obs.joints.gripper)][None]
        args = [torch.from_numpy(state.astype(np.float32))]
        if self.cameras:
            frames = []
            for camera in self.cameras:
                if camera not in obs.images:
                    raise ConfigError(f'the torch policy needs camera {camera!r} but the '
                                      f'observation has {sorted(obs.images)}')
                image = resize_with_pad(obs.images[camera], *self.image_size)
                frames.append(np.transpose(image, (2, 0, 1)))
            stacked = np.stack(frames)[None].astype(np.float32) / 255.0
            args.append(torch.from_numpy(stacked))
        return args

    def infer(self, obs: Observation) -> ActionChunk:
        """Run the model once and return its chunk.

        Raises:
            ConfigError: the output shape does not follow the contract.
            InfrastructureError: the forward pass failed (device error, out of memory) or
                returned NaN/inf.
        """
        args = self.inputs(obs)
        start = time.perf_counter()
        try:
            with torch.inference_mode():
                output = self.model(*[a.to(self.device) for a in args])
            if isinstance(output, (tuple, list)):
                output = output[0]
            values = output.detach().to('cpu', torch.float64).numpy()
        except TypeError as err:
            raise ConfigError(f'torch model {self.label} does not take the inputs of the '
                              f'contract (state[, images]): {err}') from err
        except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
            raise InfrastructureError(f'torch model {self.label} failed: {err}') from err
        self._latency.add((time.perf_counter() - start) * 1000.0)
        if values.ndim == 2 and values.shape[0] == 1:
            values = values[:, None, :]
        if values.ndim != 3 or values.shape[0] != 1 or values.shape[2] != 8 \
                or values.shape[1] < 1:
            raise ConfigError(f'torch model {self.label} must return (1, H, 8) or (1, 8), '
                              f'got {tuple(output.shape)}')
        values = values[0]
        if not np.all(np.isfinite(values)):
            # Treated like a malformed server answer: the episode is not scored.
            raise InfrastructureError(f'torch model {self.label} returned NaN or inf')
        return ActionChunk(values.copy(), self.mode)


__all__ = ['TorchPolicy']
