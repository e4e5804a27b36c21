"""A LeRobot checkpoint (``lerobot-train``'s ``pretrained_model`` folder) as a realm_ros policy.

lerobot pins its own torch, so it runs in its own venv (``make lerobot-env``): this policy starts
:mod:`realm_ros.policies.lerobot_server` with that venv's interpreter on a free local port and
speaks openpi's websocket protocol to it (it is an :class:`~realm_ros.policies.openpi.OpenPIPolicy`
whose server it owns), or connects to one already running (``server='host:port'``). Inference is
LeRobot's own (the server's docstring says which calls); this side only sends the observation
(images resized with padding to the checkpoint's size, black with ``blind=true``) and reads the
(chunk, 8) absolute joint targets + gripper back. What one query answers (``chunk`` rows,
``execute`` of them run open loop by default, ``history`` observations in) is the server's
:func:`~realm_ros.policies.lerobot_server.action_plan` of the checkpoint's config, read here and
there by the same function: ACT answers ``chunk_size`` rows from the current observation;
diffusion answers ``n_action_steps`` rows from its last ``n_obs_steps`` observations, so this
side keeps the observations of the steps it ran open loop (:meth:`LeRobotPolicy.observe`) and
sends them with the next query, and the server puts them in the policy's own queues.

Everything that can be refused without lerobot is refused when the policy is built, with one
line naming what does not fit (the CLIs exit 2 on it, before any world or arm is touched):
no ``config.json``, a state or action that is not the Franka's 8 values (7 joints + gripper),
cameras that are not DROID's, images that are not 3 x H x W, no saved normalisation stats; a
missing lerobot venv is :class:`BackendUnavailable`.
"""

from __future__ import annotations

import json
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time
from typing import IO, Any

import numpy as np

from realm_ros.core.errors import BackendUnavailable, ConfigError, InfrastructureError
from realm_ros.core.policy import PolicyNeeds
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation
from realm_ros.policies import openpi as op
from realm_ros.policies.image_tools import resize_with_pad
from realm_ros.policies.lerobot_server import KEY_HISTORY, action_plan
from realm_ros.policies.msgpack_numpy import openpi_packb

#: The Franka's state and action: 7 joints + gripper.
FRANKA_DIM = 8
#: realm_ros cameras an openpi DROID request can carry (exterior image 1 and the wrist).
SERVED_CAMERAS = ('exterior_1', 'wrist')
SERVER_SCRIPT = pathlib.Path(__file__).with_name('lerobot_server.py')
REPO = pathlib.Path(__file__).resolve().parents[2]
#: Where the lerobot interpreter is looked for when ``python`` is not given, in order: this
#: checkout's ``make lerobot-env`` venv, then one venv per user shared by every checkout (8 GB
#: is too much to build per clone: ``make lerobot-env LEROBOT_VENV=~/.local/share/realm_ros/
#: lerobot-venv`` makes it, or a link there to an existing lerobot venv).
PYTHON_CANDIDATES = (REPO / '.venv-lerobot' / 'bin' / 'python',
                     pathlib.Path.home() / '.local' / 'share' / 'realm_ros' / 'lerobot-venv'
                     / 'bin' / 'python')


def find_checkpoint(path: str) -> pathlib.Path:
    """The ``pretrained_model`` folder of ``path`` (that folder, a ``checkpoints/NNN`` folder or
    a ``lerobot-train`` output folder, whose ``checkpoints/last`` is taken).

    Raises:
        ConfigError: no ``config.json`` there.
    """
    if not path:
        raise ConfigError("the lerobot policy needs 'path' (a pretrained_model folder written by "
                          'lerobot-train)')
    root = pathlib.Path(path).expanduser()
    for candidate in (root, root / 'pretrained_model', root / 'checkpoints' / 'last' /
                      'pretrained_model'):
        if (candidate / 'config.json').is_file():
            return candidate
    raise ConfigError(f'{path}: no LeRobot checkpoint there (no config.json in it, its '
                      'pretrained_model/ or checkpoints/last/pretrained_model/)')


def check_checkpoint(folder: pathlib.Path) -> dict[str, Any]:
    """Read ``config.json`` and refuse what cannot drive the Franka here; returns
    ``{'type', 'cameras': {name: (h, w)}, 'chunk', 'execute', 'history'}`` (the last three:
    :func:`~realm_ros.policies.lerobot_server.action_plan`).

    Raises:
        ConfigError: one line naming what does not fit.
    """
    try:
        config = json.loads((folder / 'config.json').read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f'{folder}/config.json is not readable JSON: {err}') from None
    inputs = config.get('input_features') or {}
    outputs = config.get('output_features') or {}
    state = inputs.get('observation.state', {}).get('shape')
    action = outputs.get('action', {}).get('shape')
    if state != [FRANKA_DIM]:
        raise ConfigError(f'{folder}: its observation.state has shape {state}, not [8]: a '
                          'checkpoint of another robot (the Franka here: 7 joints + gripper)')
    if action != [FRANKA_DIM]:
        raise ConfigError(f'{folder}: its action has shape {action}, not [8] (7 joint targets + '
                          'gripper): wrong action dimension')
    cameras: dict[str, tuple[int, int]] = {}
    for key, feature in inputs.items():
        if feature.get('type') != 'VISUAL':
            continue
        name = key.rsplit('.', 1)[-1]
        shape = feature.get('shape')
        if name not in SERVED_CAMERAS:
            raise ConfigError(f'{folder}: camera {key!r} is not one of the DROID cameras '
                              f'{SERVED_CAMERAS} an openpi request carries')
        if not (isinstance(shape, list) and len(shape) == 3 and shape[0] == 3
                and all(isinstance(s, int) and 16 <= s <= 1024 for s in shape[1:])):
            raise ConfigError(f'{folder}: camera {key!r} has shape {shape}, not [3, H, W] with '
                              'H, W in 16..1024 px')
        cameras[name] = (int(shape[1]), int(shape[2]))
    if not cameras:
        raise ConfigError(f'{folder}: the checkpoint takes no image; realm_ros evaluates vision '
                          'policies (input_features has no VISUAL entry)')
    if len(set(cameras.values())) != 1:
        raise ConfigError(f'{folder}: its cameras have different sizes {cameras}; realm_ros '
                          'renders one size per world')
    stats = [p for p in folder.glob('policy_preprocessor*normalizer*.safetensors')]
    if not (folder / 'policy_preprocessor.json').is_file() or not stats:
        raise ConfigError(f'{folder}: missing stats (no policy_preprocessor.json with its '
                          "normalizer .safetensors: the training set's normalisation)")
    try:
        plan = action_plan(config)
    except ValueError as err:
        raise ConfigError(f'{folder}: {err}') from None
    return {'type': str(config.get('type', '?')), 'cameras': cameras, **plan}


def find_python(python: str) -> str:
    """The lerobot venv's interpreter: ``python``, else ``$REALM_LEROBOT_PYTHON``, else the
    first of :data:`PYTHON_CANDIDATES` that exists.

    Raises:
        BackendUnavailable: none found (one line: how to make it).
    """
    given = python or os.environ.get('REALM_LEROBOT_PYTHON', '')
    if given:
        if not pathlib.Path(given).exists():
            raise BackendUnavailable(f'lerobot policy: no interpreter {given!r}; make the lerobot '
                                     'venv with `make lerobot-env`')
        return given
    for candidate in PYTHON_CANDIDATES:
        if candidate.exists():
            return str(candidate)
    raise BackendUnavailable('lerobot policy: lerobot is not installed here (no '
                             f'{PYTHON_CANDIDATES[0]}); make it with `make lerobot-env` or pass '
                             'policy_args python=/path/to/lerobot/venv/bin/python')


class LeRobotPolicy(op.OpenPIPolicy):
    """A LeRobot checkpoint served from its own venv (see the module docstring)."""

    name = 'lerobot'

    def __init__(self, path: str = '', python: str = '', server: str = '', horizon: int = 0,
                 blind: bool = False, threads: int = 1, device: str = 'cpu',
                 startup_timeout_s: float = 180.0, timeout_s: float = 60.0,
                 prompt: str = '') -> None:
        """Check the checkpoint and find lerobot; nothing is started yet.

        Args:
            path: ``pretrained_model`` folder (or a ``lerobot-train`` output folder).
            python: the lerobot venv's interpreter ('' = ``$REALM_LEROBOT_PYTHON`` or
                ``make lerobot-env``'s).
            server: ``host:port`` or ``ws://`` URI of a :mod:`lerobot_server` already running
                ('' = start one on a free local port at the first reset).
            horizon: actions executed open loop per chunk (0 = the checkpoint's
                ``n_action_steps``; below it, a policy with a history re-plans sooner than
                ``select_action`` would, from the right observations).
            blind: send black images (the blind baseline: the same weights without pictures).
            threads: torch threads of the server started here (0 = torch's default).
            device: torch device of the server started here.
            startup_timeout_s: seconds for the server to load the checkpoint and listen.
            timeout_s: seconds to wait for one chunk.
            prompt: instruction when neither the observation nor the episode has one.
        """
        self.path = path
        self.checkpoint = find_checkpoint(path)
        self.info = check_checkpoint(self.checkpoint)
        self.cameras = tuple(sorted(self.info['cameras']))
        self.image_hw: tuple[int, int] = next(iter(self.info['cameras'].values()))
        self.python = '' if server else find_python(python)
        self.horizon = int(horizon) or int(self.info['execute'])
        if not 1 <= self.horizon <= int(self.info['chunk']):
            raise ConfigError(f"lerobot policy 'horizon' must be 1..{self.info['chunk']} "
                              f'(the chunk size), got {horizon}')
        self.blind = str(blind).lower() in ('1', 'true', 'yes')
        self.threads = int(threads)
        self.device = device
        self.startup_timeout_s = float(startup_timeout_s)
        host, port = (server, None) if server.startswith(('ws://', 'wss://')) else \
            (server.rpartition(':')[0] or '127.0.0.1', int(server.rpartition(':')[2] or 0) or 1)
        super().__init__(host=host, port=port, action_space='joint_position',
                         timeout_s=timeout_s, connect_timeout_s=10.0, retries=1, prompt=prompt)
        self._owned = not server
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: list[str] = []
        #: (step, request map) of the control steps since the last query, newest last.
        self._unsent: list[tuple[int, dict[str, Any]]] = []

    @property
    def label(self) -> str:
        name = self.checkpoint.parent.parent.name if self.checkpoint.name == 'pretrained_model' \
            else self.checkpoint.name
        return f"lerobot:{self.info['type']}:{name}" + (':blind' if self.blind else '')

    @property
    def needs(self) -> PolicyNeeds:
        return PolicyNeeds(cameras=self.cameras, image_size=self.image_hw,
                           action_space='joint_position', horizon=self.horizon)

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        self._unsent = []
        # A new episode: the server resets the policy (its queues, ACT's temporal ensembler)
        # and seeds torch with the episode's seed (diffusion draws the same noise every run).
        self._round_trip(openpi_packb({'__ctrl__': 'episode_start', 'seed': int(spec.seed)}))

    def observe(self, obs: Observation) -> None:
        """Keep a step run open loop: a policy with a history (diffusion's ``n_obs_steps``)
        gets it with the next query, as ``select_action`` gets every step."""
        keep = int(self.info['history']) - 1
        if keep < 1:
            return
        if self._unsent and obs.step == self._unsent[-1][0]:
            return  # the same step seen again (a timer answering the latest observation twice)
        if self._unsent and obs.step < self._unsent[-1][0]:
            self._unsent = []  # the step count went back: a new episode without reset
        self._unsent = [*self._unsent, (obs.step, self._state(obs))][-keep:]

    def infer(self, obs: Observation) -> ActionChunk:
        request: dict[str, Any] = {**self._state(obs),
                                   op.KEY_PROMPT: self.prompt.for_observation(obs)}
        history = [m for step, m in self._unsent if step < obs.step]
        if history:
            request[KEY_HISTORY] = history
        self._unsent = []
        response = self._round_trip(openpi_packb(request))
        values = op.parse_actions(response, f'lerobot server {self.uri}')
        timing = response.get('server_timing')
        if isinstance(timing, dict) and isinstance(timing.get('infer_ms'), (int, float)):
            self._server_latency.add(float(timing['infer_ms']))
        return ActionChunk(values, ActionMode.POSITION)

    def _state(self, obs: Observation) -> dict[str, Any]:
        """``obs`` as the server reads it: cameras at the checkpoint's size, joints, gripper."""
        h, w = self.image_hw
        images = {}
        for key, camera in ((op.KEY_EXTERIOR, 'exterior_1'), (op.KEY_WRIST, 'wrist')):
            if camera not in self.cameras:
                continue
            if camera not in obs.images:
                raise ConfigError(f'the lerobot policy needs camera {camera!r} but the '
                                  f'observation has {sorted(obs.images)}')
            image = resize_with_pad(obs.images[camera], h, w)
            images[key] = np.zeros_like(image) if self.blind else image
        return {**images,
                op.KEY_JOINTS: np.asarray(obs.joints.position, dtype=np.float64).reshape(7),
                op.KEY_GRIPPER: np.array([float(obs.joints.gripper)], dtype=np.float64)}

    def close(self) -> None:
        super().close()
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()  # the server exits when its stdin closes
            try:
                proc.wait(timeout=15)  # it exits at once; a loaded machine may take a while
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def _ensure_connected(self) -> Any:
        if self._owned and (self._proc is None or self._proc.poll() is not None):
            self._drop()
            self._start_server()
        return super()._ensure_connected()

    def _start_server(self) -> None:
        cmd = [self.python, str(SERVER_SCRIPT), '--checkpoint', str(self.checkpoint),
               '--host', '127.0.0.1', '--port', '0', '--device', self.device,
               '--threads', str(self.threads), '--exit-with-stdin']
        env = dict(os.environ, HF_HUB_OFFLINE='1', HF_DATASETS_OFFLINE='1',
                   WANDB_MODE='disabled', PYTHONPATH='')
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        self._proc = proc
        lines: queue.Queue[str] = queue.Queue()
        self._stderr = []

        def pump(stream: IO[str] | None, sink: Any) -> None:
            for line in iter(stream.readline, '') if stream is not None else ():
                sink(line)

        threading.Thread(target=pump, args=(proc.stdout, lines.put), daemon=True).start()
        threading.Thread(target=pump, args=(proc.stderr, self._stderr.append),
                         daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                if proc.poll() is not None:
                    time.sleep(0.2)  # let the stderr pump finish
                    tail = ''.join(self._stderr[-3:]).strip().splitlines()
                    raise InfrastructureError(
                        f'lerobot server for {self.checkpoint} exited with {proc.returncode} '
                        f'before listening: {tail[-1] if tail else "(no output)"}') from None
                continue
            if line.startswith('LEROBOT_SERVER_READY port='):
                port = int(line.split()[1].split('=')[1])
                self.port = port
                self.uri = op.websocket_uri('127.0.0.1', port)
                return
        self.close()
        raise InfrastructureError(f'lerobot server for {self.checkpoint} did not listen within '
                                  f'{self.startup_timeout_s:.0f} s')


def lerobot_available(python: str = '') -> bool:
    """True when a lerobot venv is found (tests skip without one)."""
    try:
        py = find_python(python)
    except BackendUnavailable:
        return False
    return subprocess.run([py, '-c', 'import lerobot, websockets, msgpack'],
                          capture_output=True).returncode == 0


__all__ = ['LeRobotPolicy', 'check_checkpoint', 'find_checkpoint', 'find_python',
           'lerobot_available']

if __name__ == '__main__':  # pragma: no cover - a quick manual check
    print(check_checkpoint(find_checkpoint(sys.argv[1])))
