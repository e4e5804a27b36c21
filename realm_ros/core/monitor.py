"""What the live monitor shows, computed without ROS: divergence and marker content.

``monitor_node`` feeds this module joint states, progress and scene state of the two worlds of a
running pair and turns its plain records into ``visualization_msgs`` and ``std_msgs`` messages.
The same functions draw ``docs/monitor.png`` (``realm-ros monitor-snapshot``).

Divergence: each real sample is matched with the sim sample of nearest stamp (within
``max_gap_s``); the divergence is ``|q_real - q_sim|`` per joint (rad) and its Euclidean norm.

Object poses are read from an episode spec's ``initial_state`` or a world's privileged state by
convention, at any nesting depth: ``{name: {'pos': [x, y, z], 'quat': [w, x, y, z],
'size': [sx, sy, sz]}}`` (``position``/``orientation`` also accepted; ``quat`` and ``size``
optional), or flat ``<name>_pos`` / ``<name>_quat`` keys. Positions are m in ``base_link``.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import re
from typing import Any, Iterable, Mapping, Sequence, overload

import numpy as np

from realm_ros.core import robot
from realm_ros.core.config import field
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import Progress


@dataclasses.dataclass(frozen=True)
class MonitorConfig:
    """Parameters of ``monitor_node`` (declared as ROS parameters)."""

    real_namespace: str = field('/real', 'namespace of the real (or digital real) world')
    sim_namespace: str = field('/sim', 'namespace of the simulated twin')
    frame_id: str = field('base_link', 'frame of every marker (the robot base)')
    rate_hz: float = field(5.0, 'marker publishing rate, Hz')
    max_gap_s: float = field(0.05, 'largest stamp difference of a matched real/sim sample, s')
    match_by: str = field('stamp', 'stamp: match header stamps (same clock in both worlds, '
                                   'e.g. lockstep); arrival: match receipt times on the '
                                   'monitor (worlds on different clocks)',
                          choices=('stamp', 'arrival'))
    history_s: float = field(5.0, 'seconds of joint states kept per world for matching')

    def __post_init__(self) -> None:
        for name in ('rate_hz', 'max_gap_s', 'history_s'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 < value < 1e4):
                raise ConfigError(f'MonitorConfig.{name} must be a positive number, got {value!r}')
        if self.match_by not in ('stamp', 'arrival'):
            raise ConfigError(f'MonitorConfig.match_by = {self.match_by!r} is not allowed; '
                              "choose one of ['stamp', 'arrival']")
        for name in ('real_namespace', 'sim_namespace'):
            if not getattr(self, name).startswith('/'):
                raise ConfigError(f'MonitorConfig.{name} must be absolute (start with "/")')


# -- divergence ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Divergence:
    """Real-vs-sim joint divergence at one matched pair of samples.

    Attributes:
        per_joint: (7,) |q_real - q_sim|, rad, in :data:`robot.JOINT_NAMES` order.
        norm: Euclidean norm of ``per_joint``, rad.
        real_stamp, sim_stamp: the matched samples' stamps, s.
    """

    per_joint: np.ndarray
    norm: float
    real_stamp: float
    sim_stamp: float

    @property
    def worst_joint(self) -> int:
        """Index of the joint with the largest divergence."""
        return int(np.argmax(self.per_joint))


class JointHistory:
    """Recent (stamp, q) samples of one world, in stamp order; a stamp going back clears it."""

    def __init__(self, history_s: float = 5.0) -> None:
        self.history_s = history_s
        self._stamps: collections.deque[float] = collections.deque()
        self._qs: collections.deque[np.ndarray] = collections.deque()

    def add(self, stamp: float, q: Sequence[float]) -> None:
        """Append a sample; an older stamp than the last means the world was reset."""
        if self._stamps and stamp < self._stamps[-1]:
            self.clear()
        self._stamps.append(float(stamp))
        self._qs.append(np.asarray(q, dtype=float).copy())
        while self._stamps and self._stamps[0] < stamp - self.history_s:
            self._stamps.popleft()
            self._qs.popleft()

    def clear(self) -> None:
        """Forget every sample."""
        self._stamps.clear()
        self._qs.clear()

    def latest(self) -> tuple[float, np.ndarray] | None:
        """Return the newest sample or ``None``."""
        return (self._stamps[-1], self._qs[-1]) if self._stamps else None

    def nearest(self, stamp: float) -> tuple[float, np.ndarray] | None:
        """Return the sample whose stamp is nearest to ``stamp`` (ties: the earlier one)."""
        if not self._stamps:
            return None
        stamps = list(self._stamps)
        i = bisect.bisect_left(stamps, stamp)
        candidates = [j for j in (i - 1, i) if 0 <= j < len(stamps)]
        best = min(candidates, key=lambda j: (abs(stamps[j] - stamp), j))
        return stamps[best], self._qs[best]

    def __len__(self) -> int:
        return len(self._stamps)


class DivergenceTracker:
    """Match real and sim joint samples by nearest stamp and report their divergence."""

    def __init__(self, max_gap_s: float = 0.05, history_s: float = 5.0) -> None:
        self.max_gap_s = max_gap_s
        self.real = JointHistory(history_s)
        self.sim = JointHistory(history_s)
        self._last_pair: tuple[float, float] | None = None

    def latest(self) -> Divergence | None:
        """Return the divergence of the newest matchable pair, or ``None`` if none matches.

        The newest real sample is matched first; if no sim sample lies within ``max_gap_s`` of
        it, the newest sim sample is matched against the real history (the sim may lag).
        """
        for mine, other, real_first in ((self.real, self.sim, True),
                                        (self.sim, self.real, False)):
            newest = mine.latest()
            if newest is None:
                continue
            match = other.nearest(newest[0])
            if match is None or abs(match[0] - newest[0]) > self.max_gap_s + 1e-12:
                continue
            (rs, rq), (ss, sq) = (newest, match) if real_first else (match, newest)
            diff = np.abs(rq - sq)
            return Divergence(per_joint=diff, norm=float(np.linalg.norm(diff)),
                              real_stamp=rs, sim_stamp=ss)
        return None

    def new_divergence(self) -> Divergence | None:
        """Like :meth:`latest`, but ``None`` when the matched pair was already reported."""
        div = self.latest()
        if div is None or (div.real_stamp, div.sim_stamp) == self._last_pair:
            return None
        self._last_pair = (div.real_stamp, div.sim_stamp)
        return div


# -- marker content ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class MarkerSpec:
    """One marker, independent of visualization_msgs (the node converts it).

    ``kind``: 'sphere', 'cube' or 'text'; ``position`` m and ``orientation`` (w, x, y, z) in
    the monitor's frame; ``scale`` m (text: only z, the letter height); ``rgba`` in [0, 1].
    """

    ns: str
    id: int
    kind: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    scale: tuple[float, float, float] = (0.05, 0.05, 0.05)
    rgba: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)
    text: str = ''


@dataclasses.dataclass(frozen=True)
class ObjectPose:
    """An object's pose (m, wxyz quaternion) and optional full size (m)."""

    name: str
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    size: tuple[float, float, float] | None = None


COLOURS: dict[str, tuple[float, float, float]] = {
    'green': (0.1, 0.75, 0.2), 'yellow': (0.95, 0.85, 0.1), 'red': (0.85, 0.1, 0.1),
    'blue': (0.15, 0.35, 0.9), 'orange': (1.0, 0.55, 0.0), 'white': (0.95, 0.95, 0.95),
    'black': (0.1, 0.1, 0.1), 'banana': (0.95, 0.85, 0.2), 'bowl': (0.75, 0.6, 0.45),
    'box': (0.65, 0.5, 0.3), 'mug': (0.3, 0.3, 0.8), 'drawer': (0.55, 0.4, 0.3),
}
_DEFAULT_RGB = (0.6, 0.6, 0.65)
_CUBOID_WORDS = ('block', 'cube', 'box', 'drawer', 'switch', 'cabinet')


def _vector(value: Any, size: int) -> tuple[float, ...] | None:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    if arr.shape != (size,) or not np.all(np.isfinite(arr)):
        return None
    return tuple(float(v) for v in arr)


_IDENTITY = (1.0, 0.0, 0.0, 0.0)


@overload
def _xyz(v: tuple[float, ...]) -> tuple[float, float, float]: ...
@overload
def _xyz(v: None) -> None: ...
def _xyz(v: tuple[float, ...] | None) -> tuple[float, float, float] | None:
    """Narrow a 3-vector from :func:`_vector` to its tuple type."""
    return None if v is None else (v[0], v[1], v[2])


def _wxyz(v: tuple[float, ...]) -> tuple[float, float, float, float]:
    """Narrow a quaternion from :func:`_vector` to its tuple type."""
    return (v[0], v[1], v[2], v[3])


def extract_object_poses(state: Mapping[str, Any], _prefix: str = '') -> list[ObjectPose]:
    """Return every object pose found in ``state`` by the module's convention, sorted by name."""
    found: dict[str, ObjectPose] = {}
    for key, value in state.items():
        name = str(key)
        if isinstance(value, Mapping):
            pos = _vector(value.get('pos', value.get('position')), 3)
            if pos is not None:
                quat = _vector(value.get('quat', value.get('orientation')), 4) or _IDENTITY
                size = _vector(value.get('size'), 3)
                found[name] = ObjectPose(name, _xyz(pos), _wxyz(quat), _xyz(size))
            else:
                for pose in extract_object_poses(value, f'{name}/'):
                    found.setdefault(pose.name, pose)
        elif name.endswith('_pos'):
            pos = _vector(value, 3)
            if pos is not None:
                base = name[:-4]
                quat = _vector(state.get(f'{base}_quat'), 4) or _IDENTITY
                size = _vector(state.get(f'{base}_size'), 3)
                found[base] = ObjectPose(base, _xyz(pos), _wxyz(quat), _xyz(size))
    return [found[k] for k in sorted(found)]


_PLACE = re.compile(r'^\s*(?:put|place|stack|move|set)\s+(?:the\s+)?(?P<obj>.+?)\s+'
                    r'(?:in|into|inside|on|onto|on top of)\s+(?:the\s+)?(?P<dest>.+?)\s*\.?\s*$',
                    re.IGNORECASE)


def _words(text: str) -> set[str]:
    return {w for w in re.split(r'[\s_\-/]+', text.lower()) if w}


def _best_match(phrase: str, names: Iterable[str]) -> str | None:
    """Return the name sharing the most words with ``phrase`` (all of the name's words)."""
    target = _words(phrase)
    best, best_score = None, 0
    for name in names:
        words = _words(name.split('/')[-1])
        score = len(words & target)
        if score > best_score and words <= target | {'object', 'obj'}:
            best, best_score = name, score
    return best


def destination(instruction: str, names: Sequence[str]) -> tuple[str, str] | None:
    """Return ``(destination object name, label)`` for put/stack instructions, else ``None``.

    ``"put the green block in the bowl"`` -> ``('bowl', 'place the green block here')``.
    """
    match = _PLACE.match(instruction or '')
    if match is None:
        return None
    dest = _best_match(match.group('dest'), names)
    if dest is None:
        return None
    return dest, f'place the {match.group("obj").strip()} here'


def colour_of(name: str) -> tuple[float, float, float]:
    """Return an RGB colour from the colour or object words in ``name``."""
    words = _words(name)
    for word, rgb in COLOURS.items():
        if word in words:
            return rgb
    return _DEFAULT_RGB


def object_markers(poses: Sequence[ObjectPose], ns: str, alpha: float = 1.0,
                   instruction: str = '', labels: bool = True) -> list[MarkerSpec]:
    """Return a shape per object and, with ``labels``, a text label above it.

    The destination of a put/stack instruction is labelled "place the <object> here".
    """
    markers: list[MarkerSpec] = []
    dest = destination(instruction, [p.name for p in poses])
    for i, pose in enumerate(poses):
        cuboid = any(w in _words(pose.name) for w in _CUBOID_WORDS)
        size = pose.size or ((0.05, 0.05, 0.05) if cuboid else (0.06, 0.06, 0.06))
        markers.append(MarkerSpec(
            ns=ns, id=2 * i, kind='cube' if cuboid else 'sphere', position=pose.pos,
            orientation=pose.quat, scale=size, rgba=(*colour_of(pose.name), alpha)))
        if labels:
            text = pose.name.split('/')[-1].replace('_', ' ')
            if dest is not None and dest[0] == pose.name:
                text = dest[1]
            markers.append(MarkerSpec(
                ns=f'{ns}/labels', id=2 * i + 1, kind='text',
                position=(pose.pos[0], pose.pos[1], pose.pos[2] + max(size) / 2 + 0.06),
                scale=(0.0, 0.0, 0.03), rgba=(1.0, 1.0, 1.0, max(alpha, 0.8)), text=text))
    return markers


def progress_text(world: str, progress: Progress | None) -> str:
    """Return a world's stage and progression as text (two lines)."""
    if progress is None:
        return f'{world}: no progress yet'
    n = len(progress.stages)
    met = sum(progress.met)
    stages = ' '.join(f'[{"x" if m else " "}] {s}' for s, m in zip(progress.stages, progress.met))
    nxt = progress.stages[met] if met < n else 'done'
    return (f'{world} ({progress.source}) {progress.task}: {met}/{n} = '
            f'{progress.progression:.2f} (max {progress.max_progression:.2f}), step '
            f'{progress.step}, next {nxt}\n{stages}')


def divergence_text(div: Divergence | None) -> str:
    """Return the divergence as one line of text."""
    if div is None:
        return 'real vs sim: no matched samples'
    j = div.worst_joint
    return (f'real vs sim |dq|: norm {div.norm:.4f} rad, max {div.per_joint[j]:.4f} rad '
            f'at {robot.JOINT_NAMES[j]} (dt {abs(div.real_stamp - div.sim_stamp) * 1e3:.0f} ms)')


#: Where the text panels float, m in base_link: above the back of the table, side by side.
TEXT_ANCHORS = {'real': (0.2, 0.45, 0.85), 'sim': (0.2, -0.45, 0.85),
                'divergence': (0.2, 0.0, 1.0)}


def status_markers(progress: Mapping[str, Progress | None], div: Divergence | None,
                   pair_running: bool) -> list[MarkerSpec]:
    """Return TEXT_VIEW_FACING panels: each world's progress and the pair's divergence."""
    markers = []
    colours = {'real': (1.0, 0.75, 0.3, 1.0), 'sim': (0.4, 0.8, 1.0, 1.0)}
    for i, (world, prog) in enumerate(sorted(progress.items())):
        markers.append(MarkerSpec(
            ns='progress', id=i, kind='text',
            position=TEXT_ANCHORS.get(world, (0.2, 0.0, 0.7 + 0.15 * i)),
            scale=(0.0, 0.0, 0.035), rgba=colours.get(world, (1.0, 1.0, 1.0, 1.0)),
            text=progress_text(world, prog)))
    if pair_running:
        markers.append(MarkerSpec(
            ns='divergence', id=0, kind='text', position=TEXT_ANCHORS['divergence'],
            scale=(0.0, 0.0, 0.035), rgba=(1.0, 1.0, 1.0, 1.0), text=divergence_text(div)))
    return markers

