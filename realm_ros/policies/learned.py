"""realm_ros's own learned visuomotor policy: images + instruction + joints -> action chunks.

In the spirit of ACT and diffusion policy's CNN variant, sized to train in minutes on one GPU
and to run on a laptop CPU:

* **vision**: one compact CNN per camera (four 3x3/5x5 convolutions with GroupNorm, 128x128 RGB
  in, a 16x16 feature map out) followed by a spatial soft-argmax (robomimic / diffusion policy):
  128 expected keypoint (x, y) pairs per camera;
* **language**: a tiny text encoder with nothing to download: the instruction's lower-cased
  words are hashed (CRC32) into 1024 buckets and averaged by an ``EmbeddingBag`` (64 values);
* **proprioception**: the seven joint positions and the gripper, normalised with the training
  set's mean and std;
* **action head**: an MLP that predicts a chunk of H = 10 actions at once (action chunking):
  each row the absolute joint-position target as a normalised offset from the current joints,
  and a gripper-closing logit. Loss: L1 on the offsets (ACT) + binary cross-entropy on the
  gripper.

The images each camera contributes are ``resize_with_pad(image, 128, 128)``: a 320x180 DROID
frame and openpi's 224x224 padded frame give the same picture, so the policy served over the
openpi protocol sees what it was trained on.

Checkpoints are one ``torch.save`` file each (float16 weights, a few MB): ``{'format',
'config', 'state_dict', 'stats', 'meta'}``, loaded with ``weights_only=True`` (no pickled code).
:class:`LearnedPolicy` (registry name ``learned``) runs one on CPU or CUDA and answers (H, 8)
absolute joint-position chunks; realm_ros's openpi server converts them to DROID joint
velocities when asked to serve ``joint_velocity``.
"""

from __future__ import annotations

import os
import time
from typing import Any, Sequence
import zlib

import numpy as np

from realm_ros.core.errors import BackendUnavailable, ConfigError, InfrastructureError
from realm_ros.core.policy import Policy, PolicyNeeds
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation
from realm_ros.policies.image_tools import resize_with_pad
from realm_ros.policies.latency import LatencyRecorder, LatencyStats

try:
    import torch
    from torch import nn
except ImportError as err:  # pragma: no cover - exercised only where torch is absent
    raise BackendUnavailable(
        "the 'learned' policy needs PyTorch: pip install 'realm_ros[torch]'; " f'{err}') from err

FORMAT = 'realm_ros.learned/1'
TEXT_BUCKETS = 1024
MAX_WORDS = 16


def tokenize(instruction: str) -> list[int]:
    """Hash an instruction's words into bucket ids 1..TEXT_BUCKETS-1 (0 = padding)."""
    words = ''.join(c if c.isalnum() else ' ' for c in instruction.lower()).split()
    ids = [1 + zlib.crc32(w.encode()) % (TEXT_BUCKETS - 1) for w in words][:MAX_WORDS]
    return ids + [0] * (MAX_WORDS - len(ids))


def prepare_image(image: np.ndarray, size: int) -> np.ndarray:
    """(H, W, 3) uint8 -> (3, size, size) uint8, aspect kept with zero padding."""
    return np.ascontiguousarray(np.transpose(resize_with_pad(image, size, size), (2, 0, 1)))


class SpatialSoftmax(nn.Module):
    """Expected (x, y) image position of each feature channel (soft-argmax), in [-1, 1]."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        attention = torch.softmax(x.flatten(2).float(), dim=-1).view(b, c, h, w)
        ys = torch.linspace(-1.0, 1.0, h, device=x.device)
        xs = torch.linspace(-1.0, 1.0, w, device=x.device)
        ex = (attention.sum(2) * xs).sum(-1)
        ey = (attention.sum(3) * ys).sum(-1)
        return torch.cat([ex, ey], dim=1)


def _conv(cin: int, cout: int, k: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2), nn.GroupNorm(8, cout),
                         nn.ReLU(inplace=True))


class CameraEncoder(nn.Module):
    """128x128 RGB -> 2 x ``keypoints`` soft-argmax features."""

    def __init__(self, width: int = 32, keypoints: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(_conv(3, width, 5, 2), _conv(width, 2 * width, 3, 2),
                                 _conv(2 * width, 4 * width, 3, 2),
                                 nn.Conv2d(4 * width, keypoints, 3, 1, 1))
        self.pool = SpatialSoftmax()

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.pool(self.net(image))


class VisuomotorPolicy(nn.Module):
    """(images (B, C, 3, S, S) in [0, 1], state (B, 8), tokens (B, L)) -> (B, H, 8) raw outputs.

    Output rows: seven normalised joint offsets from the current joints, then a gripper logit.
    """

    def __init__(self, cameras: int = 2, horizon: int = 10, width: int = 32,
                 keypoints: int = 64, text_dim: int = 64, hidden: int = 512) -> None:
        super().__init__()
        self.horizon = int(horizon)
        self.encoders = nn.ModuleList(CameraEncoder(width, keypoints) for _ in range(cameras))
        self.text = nn.EmbeddingBag(TEXT_BUCKETS, text_dim, mode='mean', padding_idx=0)
        self.state = nn.Sequential(nn.Linear(8, 64), nn.ReLU(inplace=True))
        fused = cameras * 2 * keypoints + text_dim + 64
        self.head = nn.Sequential(
            nn.Linear(fused, hidden), nn.LayerNorm(hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, self.horizon * 8))
        self.image_mean: torch.Tensor
        self.image_std: torch.Tensor
        self.register_buffer('image_mean', torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer('image_std', torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, images: torch.Tensor, state: torch.Tensor,
                tokens: torch.Tensor) -> torch.Tensor:
        feats = [enc((images[:, i] - self.image_mean) / self.image_std)
                 for i, enc in enumerate(self.encoders)]
        feats.append(self.text(tokens))
        feats.append(self.state(state))
        out = self.head(torch.cat(feats, dim=1))
        return out.view(-1, self.horizon, 8)


def build_model(config: dict[str, Any]) -> VisuomotorPolicy:
    """The network a checkpoint's ``config`` describes."""
    return VisuomotorPolicy(cameras=len(config['cameras']), horizon=int(config['horizon']),
                            width=int(config.get('width', 32)),
                            keypoints=int(config.get('keypoints', 64)),
                            text_dim=int(config.get('text_dim', 64)),
                            hidden=int(config.get('hidden', 512)))


def save_checkpoint(path: str, model: VisuomotorPolicy, config: dict[str, Any],
                    stats: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Write a checkpoint: float16 weights (buffers too), config, normalisation, metadata."""
    state = {k: (v.detach().to('cpu', torch.float16) if v.is_floating_point()
                 else v.detach().cpu()) for k, v in model.state_dict().items()}
    torch.save({'format': FORMAT, 'config': dict(config), 'state_dict': state,
                'stats': {k: torch.as_tensor(np.asarray(v, dtype=np.float32))
                          for k, v in stats.items()},
                'meta': dict(meta)}, path)


def load_checkpoint(path: str, device: str | torch.device = 'cpu'
                    ) -> tuple[VisuomotorPolicy, dict[str, Any], dict[str, torch.Tensor],
                               dict[str, Any]]:
    """Return (model in eval mode on ``device``, config, stats, meta) of a checkpoint file.

    Raises:
        ConfigError: not a file, not a realm_ros learned-policy checkpoint, or one that does
            not fit the Franka (:func:`check_fit`: one line naming what does not fit).
    """
    if not os.path.isfile(path):
        raise ConfigError(f"learned policy 'path' {path!r} is not a file")
    try:
        blob = torch.load(path, map_location='cpu', weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unreadable file is a config problem
        raise ConfigError(f'cannot read learned-policy checkpoint {path}: {err}') from err
    if not isinstance(blob, dict) or blob.get('format') != FORMAT:
        raise ConfigError(f'{path} is not a realm_ros learned-policy checkpoint '
                          f'(format {FORMAT!r})')
    config = check_fit(blob, path)
    model = build_model(config)
    try:
        model.load_state_dict({k: v.float() if v.is_floating_point() else v
                               for k, v in blob['state_dict'].items()})
    except RuntimeError as err:
        first = str(err).strip().splitlines()[1:2] or [str(err)]
        raise ConfigError(f'{path}: its weights do not fit its config: '
                          f'{first[0].strip()}') from None
    stats = {k: v.float().to(device) for k, v in blob['stats'].items()}
    return model.to(device).eval(), config, stats, blob.get('meta', {})


#: What a checkpoint must say to run on the Franka (DROID): its robot, the state and action
#: widths (7 joints + gripper), and the statistics the policy normalises with, with their widths.
ROBOT = 'franka'
STATE_DIM = 8
ACTION_DIM = 8
STATS = {'state_mean': STATE_DIM, 'state_std': STATE_DIM, 'delta_mean': 7, 'delta_std': 7}


def check_fit(blob: dict[str, Any], path: str) -> dict[str, Any]:
    """Return the checkpoint's config, or raise ConfigError naming the first thing that does
    not fit the Franka (robot, state or action width, cameras, image size, statistics)."""
    from realm_ros.core.config import CAMERA_NAMES

    config = blob.get('config')
    if not isinstance(config, dict):
        raise ConfigError(f'{path}: the checkpoint has no config')
    robot = config.get('robot', ROBOT)
    if robot != ROBOT:
        raise ConfigError(f'{path} was trained for robot {robot!r}, not the {ROBOT} (DROID)')
    for key, want, what in (('state_dim', STATE_DIM, 'state'), ('action_dim', ACTION_DIM,
                                                                 'action')):
        got = config.get(key, want)
        if got != want:
            raise ConfigError(f"{path}: its {what} has {got} values; the Franka's has {want} "
                              '(7 joints + gripper)')
    cameras = config.get('cameras')
    if not cameras or not isinstance(cameras, list) or \
            any(c not in CAMERA_NAMES for c in cameras):
        raise ConfigError(f'{path}: cameras {cameras!r} are not DROID cameras {CAMERA_NAMES}')
    size = config.get('image_size')
    if isinstance(size, bool) or not isinstance(size, int) or not 32 <= size <= 1024:
        raise ConfigError(f'{path}: image size {size!r} is not a side of 32..1024 px')
    horizon = config.get('horizon')
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ConfigError(f'{path}: horizon {horizon!r} is not a positive integer')
    stats = blob.get('stats')
    if not isinstance(stats, dict):
        raise ConfigError(f'{path}: the checkpoint has no normalisation stats')
    for key, width in STATS.items():
        if key not in stats:
            raise ConfigError(f'{path}: missing stats {key!r} (the normalisation of the '
                              'training set)')
        if tuple(stats[key].shape) != (width,):
            raise ConfigError(f'{path}: stats {key!r} has shape {tuple(stats[key].shape)}, '
                              f'not ({width},)')
    weights = blob.get('state_dict')
    if not isinstance(weights, dict):
        raise ConfigError(f'{path}: the checkpoint has no weights')
    head = weights.get('head.5.weight')
    if head is not None and head.shape[0] != horizon * ACTION_DIM:
        raise ConfigError(f'{path}: its head answers {head.shape[0]} numbers, not horizon '
                          f'{horizon} x {ACTION_DIM} (7 joints + gripper): wrong action width')
    return config


def decode(raw: torch.Tensor, state: torch.Tensor, stats: dict[str, torch.Tensor]
           ) -> torch.Tensor:
    """Raw network output (B, H, 8) -> absolute joint targets (rad) + gripper in [0, 1]."""
    offsets = raw[..., :7] * stats['delta_std'] + stats['delta_mean']
    return torch.cat([state[:, None, :7] + offsets, torch.sigmoid(raw[..., 7:])], dim=-1)


class LearnedPolicy(Policy):
    """Run a :mod:`realm_ros.policies.learned` checkpoint as a realm_ros policy."""

    name = 'learned'

    def __init__(self, path: str = '', device: str = 'cpu', horizon: int = 8,
                 prompt: str = '', blind: bool = False) -> None:
        """Load the checkpoint.

        Args:
            path: checkpoint file written by ``realm-ros train``.
            device: torch device string (``cpu``, ``cuda``).
            horizon: actions executed open loop per chunk (default 8, as openpi's DROID client).
            prompt: instruction to use when the observation carries none ('' = the task's).
            blind: give the network black images instead of the cameras' (the blind baseline:
                the same weights without their pictures, to show a score comes from looking).
        """
        if not path:
            raise ConfigError("the learned policy needs 'path' (a checkpoint from realm-ros "
                              'train)')
        if device.startswith('cuda') and not torch.cuda.is_available():
            raise BackendUnavailable(f'learned policy device {device!r}: CUDA is not available')
        self.device = torch.device(device)
        self.path = path
        self.model, self.config, self.stats, self.meta = load_checkpoint(path, self.device)
        self.cameras: tuple[str, ...] = tuple(self.config['cameras'])
        self.image_size = int(self.config['image_size'])
        self.horizon = int(horizon)
        if not 1 <= self.horizon <= int(self.config['horizon']):
            raise ConfigError(f"learned policy 'horizon' must be 1..{self.config['horizon']}, "
                              f'got {horizon}')
        self.prompt = prompt
        self.blind = str(blind).lower() in ('1', 'true', 'yes')
        self._instruction = prompt
        self._latency = LatencyRecorder()

    @property
    def needs(self) -> PolicyNeeds:
        return PolicyNeeds(cameras=self.cameras, image_size=(self.image_size, self.image_size),
                           action_space='joint_position', horizon=self.horizon)

    @property
    def label(self) -> str:
        stage = self.meta.get('stage', '')
        return f'learned:{stage or os.path.basename(self.path)}' + (':blind' if self.blind else '')

    @property
    def latency(self) -> LatencyStats:
        return self._latency.stats()

    def reset(self, spec: EpisodeSpec) -> None:
        instruction = self.prompt or spec.instruction
        from realm_ros.core import tasks
        if not instruction and not tasks.is_empty(spec.task):
            instruction = tasks.get_task(spec.task).instruction
        self._instruction = instruction

    def infer(self, obs: Observation) -> ActionChunk:
        images = []
        for camera in self.cameras:
            if camera not in obs.images:
                raise ConfigError(f'the learned policy needs camera {camera!r} but the '
                                  f'observation has {sorted(obs.images)}')
            image = prepare_image(obs.images[camera], self.image_size)
            images.append(np.zeros_like(image) if self.blind else image)
        state = np.r_[obs.joints.position, obs.joints.gripper].astype(np.float32)[None]
        instruction = obs.instruction or self._instruction
        start = time.perf_counter()
        try:
            with torch.inference_mode():
                img = torch.from_numpy(np.stack(images)[None]).to(self.device).float() / 255.0
                st = torch.from_numpy(state).to(self.device)
                tok = torch.tensor([tokenize(instruction)], device=self.device)
                norm = (st - self.stats['state_mean']) / self.stats['state_std']
                decoded = decode(self.model(img, norm, tok), st, self.stats)[0]
                values = decoded.to('cpu', torch.float64).numpy()
        except RuntimeError as err:
            raise InfrastructureError(f'learned policy {self.label} failed: {err}') from err
        self._latency.add((time.perf_counter() - start) * 1000.0)
        if not np.all(np.isfinite(values)):
            raise InfrastructureError(f'learned policy {self.label} returned NaN or inf')
        return ActionChunk(values, ActionMode.POSITION)


def default_config(cameras: Sequence[str], horizon: int = 10, image_size: int = 128,
                   **overrides: Any) -> dict[str, Any]:
    """Model and data settings stored in every checkpoint."""
    config = {'cameras': list(cameras), 'horizon': int(horizon), 'image_size': int(image_size),
              'width': 32, 'keypoints': 64, 'text_dim': 64, 'hidden': 512,
              'action_space': 'joint_position', 'robot': ROBOT, 'state_dim': STATE_DIM,
              'action_dim': ACTION_DIM}
    config.update(overrides)
    return config


__all__ = ['FORMAT', 'LearnedPolicy', 'VisuomotorPolicy', 'build_model', 'check_fit', 'decode',
           'default_config', 'load_checkpoint', 'prepare_image', 'save_checkpoint', 'tokenize']
