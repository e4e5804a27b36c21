"""Episode videos of paired-evaluation run folders, grouped into matchups for blind judging.

A *matchup* is one start judged twice: the same world (role, backend and that world's
parameters), task, perturbation, intensity and seed (so the same initial state and
instruction), run by different policies. Every pair of its policies is one *slot* a judge can
be shown. Records come from each run folder's ``episodes.jsonl``; an episode counts when it was
scored (not an infrastructure failure) and its ``video`` file exists.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import pathlib
from typing import Any, Iterable, Mapping, Sequence

from realm_ros.core import perturbations
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import EpisodeLog, scored
from realm_ros.core.types import record_role

#: A matchup key: (world, task, perturbation, intensity, seed).
MatchupKey = tuple[str, str, str, float, int]


@dataclasses.dataclass(frozen=True)
class Clip:
    """One episode's video and what the arena knows of it (never sent to a judge whole)."""

    world: str          # world identity, e.g. 'sim|mujoco|<sim params file>'
    role: str           # real or sim
    task: str
    perturbation: str
    intensity: float
    seed: int
    policy: str
    pair_id: str
    path: pathlib.Path
    progression: float

    @property
    def key(self) -> MatchupKey:
        """The matchup this clip belongs to."""
        return (self.world, self.task, self.perturbation, self.intensity, self.seed)


def _world_identity(role: str, record: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """role|backend|parameters: two run folders share a world only if all three agree."""
    params = config.get('sim_params_file' if role == 'sim' else 'real_dynamics_file', '')
    return f'{role}|{record.get("backend", "")}|{params or "default"}'


def world_label(role: str, record: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """Name a world as the operator configured it: its backend (``digital_real``, ``franka``,
    ``mujoco``...), the side of the pair it played, and its parameters file if any.

    A paired run's records carry the role only; the backend is the run's ``config`` (``real:
    digital_real``), so the digital real is never called the real world.
    """
    backend = str(record.get('backend') or config.get(role) or role)
    label = backend if backend == role else f'{backend} ({role} side of the pair)'
    params = config.get('sim_params_file' if role == 'sim' else 'real_dynamics_file', '')
    return f'{label}, parameters {pathlib.Path(str(params)).name}' if params else label


def instruction(task: str, perturbation: str, intensity: float, seed: int) -> str:
    """Return the instruction both episodes of a matchup were given."""
    return perturbations.scored_task(task, perturbation, intensity, seed).instruction


class Catalog:
    """The matchups of one or more run folders.

    Raises:
        ConfigError: a folder without ``episodes.jsonl``, or no video anywhere.
    """

    def __init__(self, run_dirs: Sequence[str | pathlib.Path],
                 roles: Iterable[str] | None = None) -> None:
        """``roles``: keep only these (real, sim; a run outside a pair, e.g. a sweep, has the
        backend as its role); None = every role."""
        self.run_dirs = [pathlib.Path(d).expanduser().resolve() for d in run_dirs]
        self.roles = None if roles is None else tuple(roles)
        self.records: list[dict[str, Any]] = []  # every scored record, with or without video
        self.clips: list[Clip] = []
        #: world identity -> the name a judge sees (:func:`world_label`)
        self.labels: dict[str, str] = {}
        seen: set[tuple[str, str, str]] = set()
        for run_dir in self.run_dirs:
            path = run_dir / 'episodes.jsonl'
            if not path.is_file():
                raise ConfigError(f'{run_dir}: no episodes.jsonl (not a paired-eval run folder)')
            config = _config_of(run_dir)
            for record in scored(EpisodeLog(path).records):
                role = record_role(record)
                if self.roles is not None and role not in self.roles:
                    continue
                world = _world_identity(role, record, config)
                ident = (world, record['pair_id'], record['policy'])
                if ident in seen:  # the same episode in two folders (--reuse-real)
                    continue
                seen.add(ident)
                self.labels.setdefault(world, world_label(role, record, config))
                self.records.append({**record, '_world': world})
                video = record.get('video')
                if not video or not (run_dir / video).is_file():
                    continue
                self.clips.append(Clip(
                    world=world, role=role, task=record['task'],
                    perturbation=record.get('perturbation', 'Default'),
                    intensity=float(record.get('intensity', 1.0)), seed=int(record['seed']),
                    policy=record['policy'], pair_id=record['pair_id'],
                    path=run_dir / video, progression=float(record['progression'])))
        if not self.clips:
            raise ConfigError(
                'no episode videos in ' + ', '.join(str(d) for d in self.run_dirs)
                + ': run realm-ros paired-eval with --videos')
        self.matchups: dict[MatchupKey, dict[str, Clip]] = {}
        for clip in self.clips:
            self.matchups.setdefault(clip.key, {})[clip.policy] = clip
        self.slots: list[tuple[MatchupKey, str, str]] = [
            (key, a, b) for key, clips in sorted(self.matchups.items(), key=lambda kv: str(kv[0]))
            for a, b in itertools.combinations(sorted(clips), 2)]
        if not self.slots:
            raise ConfigError('no matchup has videos of two policies: every start was run by one '
                              'policy only')

    def policies(self, role: str | None = None) -> list[str]:
        """Return the policies that have a video (of ``role``)."""
        return sorted({c.policy for c in self.clips if role is None or c.role == role})


def _config_of(run_dir: pathlib.Path) -> dict[str, Any]:
    try:
        return dict(json.loads((run_dir / 'summary.json').read_text()).get('config') or {})
    except (OSError, ValueError):
        return {}


def key_text(key: MatchupKey) -> str:
    """Return a matchup key as stored in the database (JSON)."""
    return json.dumps(list(key))


def key_from_text(text: str) -> MatchupKey:
    """Parse :func:`key_text`."""
    world, task, perturbation, intensity, seed = json.loads(text)
    return (str(world), str(task), str(perturbation), float(intensity), int(seed))
