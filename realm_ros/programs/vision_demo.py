"""The vision demo: does the twin rank a real-trained learned ladder as the real arm does?

Real VLAs are trained on real robot data and evaluated in simulation. Here a learned ladder
(checkpoints of clearly different quality) trained on demonstrations recorded on the digital real,
with its hidden appearance and dynamics (``realm-ros dataset --world digital_real``), runs the
same episodes (task, seed, policy) in the digital real and in the twin under seven set-ups, one
per :class:`Column`:

(a) ``raw``: the twin as it is (DROID's rig, its own look);
(b) ``calibrated``: the twin's cameras from ``realm-ros cameras calibrate``;
(c) ``matched``: calibrated + visual matching (``realm-ros cameras match``: clean plates,
    colour transforms);
(d) ``variants``: variant aggregation (SIMPLER's VA): the calibrated twin over ``variants``
    looks of :class:`~realm_ros.core.appearance.VariantSet` (variant 0 its own look, then
    background, lighting, table, distractors in turn), each episode's score averaged over them;
(e) ``sysid``: matched + the identified parameters (``realm-ros sysid fit``);
(f) ``rebuilt``: calibrated + the rebuilt look (``realm-ros cameras rebuild`` from the same
    calibration bag, written to ``rebuild`` beside the match: the lab's table, floor and walls
    on the twin's geometry, its key light; every camera rendered; ``demo --vision`` makes it);
(g) ``rebuilt_sysid``: rebuilt + the identified parameters.

Per column: per-policy mean progression and success (bootstrap 95 % CIs over episodes), Pearson
r, MMRV(sim, real) and the mean absolute gap over the per-policy mean progressions, each with a
paired bootstrap CI over the episode seeds (a resample draws seeds, and each drawn seed brings
its real *and* its twin episode), SimplerEnv's Kruskal-Wallis test per policy, and the image
distance: the mean absolute pixel error (0-255) between the digital real's and the twin's first
frame of every episode (same initial state, same seed), per camera, all three (for the
variants: the mean over variants), and split into the robot's, the objects' and the
background's pixels (``backends/mujoco/image_regions.py``). A contact sheet shows real | twin |
matched (and every other column) for seed 0 of each task. Each policy's real mean
progression is predicted from the column's twin episodes with a map fitted on the other
policies, with a 90 % prediction interval (:mod:`realm_ros.core.prediction`), the intervals'
coverage over the ladder (with its binomial interval) and their mean width. Below the tables,
the real episodes ``--until-decided``'s rule would have spent on the digital real's ranking,
replayed on the fixed design's real episodes (:func:`decided_replay`); or, with
``until_decided`` set, the real episodes it did spend: the digital real's starts chosen one at
a time by that rule until its ranking is decided, every column's twin run on the same starts
(:func:`allocate`), stated against the fixed design's.

Everything runs in process without ROS (:func:`realm_ros.core.episode.run_episode`, the loop
every runner is checked against). Every finished episode is appended to ``episodes.jsonl``
and its first frames are kept, so an interrupted run resumes where it stopped; a column whose
inputs are missing is reported as not available rather than failing the table.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from realm_ros.core import metrics, prediction, provenance, robot, tasks
from realm_ros.core.appearance import VariantSet
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.evaluation import PolicyEntry
from realm_ros.core.policy import Policy, PolicyWrapper
from realm_ros.core.types import ActionChunk, EpisodeResult, EpisodeSpec, Observation

REAL = 'real'
EPISODES_FILE = 'episodes.jsonl'
SUMMARY_FILE = 'summary.json'
TABLE_FILE = 'table.md'
SHEET_FILE = 'contact_sheet.png'
DISTANCE_FILE = 'image_distance.png'
PREDICTION_FILE = 'prediction.png'
#: The twin's inputs one column needs; :class:`Inputs` holds the files that provide them.
RIG, MATCH, PARAMS, VARIANTS = 'rig', 'match', 'params', 'variants'
#: The rebuilt look: ``cameras rebuild``'s folder ``rebuild`` beside the match's.
REBUILD = 'rebuild'
#: Settings a run folder's ``run.json`` may predate: taken as these values when it lacks them.
FINGERPRINT_DEFAULTS: Mapping[str, Any] = {'variant_seed': 0,
                                           'distance_cameras': ['exterior_1', 'wrist']}
#: ``demo --vision``'s default ladder: rungs of ``checkpoints/learned_vision/``
#: (docs/learned-policy.md, section 5: mean progression on the digital real 0.22, 0.41, 0.61,
#: 0.91, and 0.80 for ``aug12k_s8000``, trained with appearance augmentation: as good as
#: ``plain5k_s2500`` on the lab's look, steadier under other looks).
#: The probability at which the real side's ranking counts as decided (``--until-decided``,
#: replayed on the real episodes: :func:`decided_replay`).
DECIDED_P = 0.95
LADDER = ('plain5k_s150', 'short1k_s800', 'plain5k_s1200', 'plain12k_s12000', 'aug12k_s8000')


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What the twin's columns are built from ('' or 0 = not made: the column is unavailable).

    ``variants``: how many looks of :class:`~realm_ros.core.appearance.VariantSet` (seeded by
    ``variant_seed``) the variant-aggregation column averages over. Variant k's look does not
    depend on the count, so a run resumed with more variants keeps the episodes it has.
    """

    rig_file: str = ''
    match_dir: str = ''
    params_file: str = ''
    variants: int = 0
    variant_seed: int = 0
    rebuild: str = ''

    def has(self, need: str) -> bool:
        """Whether the input ``need`` (:data:`RIG` ...) is there."""
        if need == REBUILD:
            return bool(self.rebuild_dir()) and (pathlib.Path(self.rebuild_dir())
                                                 / 'rebuild.yaml').is_file()
        return bool({RIG: self.rig_file, MATCH: self.match_dir, PARAMS: self.params_file,
                     VARIANTS: self.variants}[need])

    def rebuild_dir(self) -> str:
        """The rebuilt look's folder: ``rebuild`` if given, else ``rebuild`` beside the
        match's folder ('' if neither)."""
        if self.rebuild or not self.match_dir:
            return self.rebuild
        return str(pathlib.Path(self.match_dir).parent / 'rebuild')

    def variant_set(self) -> VariantSet:
        """The looks of the variant-aggregation column (ConfigError if none are asked)."""
        return VariantSet(self.variants, self.variant_seed)


@dataclasses.dataclass(frozen=True)
class Twin:
    """One twin world of a column: its config and, for a variant, its look's index in
    ``inputs.variant_set()`` (None: the look the config gives)."""

    config: WorldConfig
    variant: int | None = None

    def make(self, inputs: Inputs) -> Any:
        """Build the world (a variant dressed by ``AppearanceLook``, as the sweep does)."""
        from realm_ros.core.world import make_world

        if self.variant is None:
            return make_world(self.config)
        from realm_ros.backends.mujoco.appearance import AppearanceLook

        look = AppearanceLook(inputs.variant_set().appearance(self.variant))
        return make_world(self.config, look=look)


@dataclasses.dataclass(frozen=True)
class Column:
    """One way of setting up the twin: a letter, a name, its inputs and how it builds worlds."""

    letter: str
    name: str
    label: str
    needs: tuple[str, ...]
    build: Callable[[WorldConfig, Inputs], list[Twin]]

    def unavailable(self, missing: Sequence[str]) -> str:
        """Why the column is not in the table, for a person."""
        why = {RIG: 'no calibrated rig', MATCH: 'no visual match', PARAMS: 'no sysid fit',
               VARIANTS: 'no variants asked (--variants 0)',
               REBUILD: 'no rebuilt look beside the match (realm-ros cameras rebuild '
                        'CALIBRATION/bag --rig CALIBRATION/rig.yaml --out CALIBRATION/rebuild)'}
        return ', '.join(why[m] for m in missing)

    def missing(self, inputs: Inputs) -> list[str]:
        """The inputs this column lacks (empty: available)."""
        return [n for n in self.needs if not inputs.has(n)]

    def worlds(self, base: WorldConfig, inputs: Inputs) -> list[Twin]:
        """The twin's worlds; more than one are variants whose scores are averaged."""
        return self.build(base, inputs)


def _variants(base: WorldConfig, inputs: Inputs) -> list[Twin]:
    # SIMPLER's variant aggregation looks through the real cameras' poses (calibrated) and
    # changes only the look; the physics is the twin's default, as in (b) and (c).
    calibrated = dataclasses.replace(base, camera_rig_file=inputs.rig_file)
    return [Twin(calibrated, k) for k in range(inputs.variant_set().count)]


COLUMNS: tuple[Column, ...] = (
    Column('a', 'raw', 'twin as it is', (), lambda b, i: [Twin(b)]),
    Column('b', 'calibrated', 'calibrated cameras', (RIG,),
           lambda b, i: [Twin(dataclasses.replace(b, camera_rig_file=i.rig_file))]),
    Column('c', 'matched', 'calibrated + visual matching', (MATCH,),
           lambda b, i: [Twin(dataclasses.replace(b, visual_match_dir=i.match_dir))]),
    Column('d', 'variants', 'variant aggregation', (RIG, VARIANTS), _variants),
    Column('e', 'sysid', 'matched + sysid', (MATCH, PARAMS),
           lambda b, i: [Twin(dataclasses.replace(b, visual_match_dir=i.match_dir,
                                                  sim_params_file=i.params_file))]),
    Column('f', 'rebuilt', 'calibrated + rebuilt look', (REBUILD,),
           lambda b, i: [Twin(dataclasses.replace(b, visual_match_dir=i.rebuild_dir()))]),
    Column('g', 'rebuilt_sysid', 'rebuilt + sysid', (REBUILD, PARAMS),
           lambda b, i: [Twin(dataclasses.replace(b, visual_match_dir=i.rebuild_dir(),
                                                  sim_params_file=i.params_file))]),
)
COLUMN_NAMES = tuple(c.name for c in COLUMNS)


def column(name: str) -> Column:
    """Return the column called ``name`` or lettered ``name`` (ConfigError listing them)."""
    for c in COLUMNS:
        if name in (c.name, c.letter):
            return c
    raise ConfigError(f'--columns: unknown {name!r}; choose from {list(COLUMN_NAMES)}')


@dataclasses.dataclass(frozen=True)
class VisionDemoConfig:
    """What the demo runs: tasks, the ladder, seeds, steps, cameras and the digital real's files.

    Attributes:
        policies: ``label=policy:key=value`` entries (paired-eval's syntax), best last or first:
            the order is kept in the tables.
        episodes: seeds 0..episodes-1 per task and policy (the evaluation's seeds; the
            demonstrations use 1000 and up).
        cameras: rendered in both worlds (the policies' cameras); the image distance is per camera.
        distance_cameras: the image distance's cameras; those not in ``cameras`` are rendered
            for the first frame only.
        appearance_file, dynamics_file: the digital real's hidden files ('' = the twin's look /
            the default hidden dynamics).
    """

    tasks: tuple[str, ...]
    policies: tuple[str, ...]
    episodes: int
    max_steps: int
    width: int
    height: int
    cameras: tuple[str, ...] = ('exterior_1', 'wrist')
    distance_cameras: tuple[str, ...] = ('exterior_1', 'exterior_2', 'wrist')
    appearance_file: str = ''
    dynamics_file: str = ''
    columns: tuple[str, ...] = COLUMN_NAMES
    execute: int = 8
    seed: int = 0
    until_decided: float = 0.0
    allocation: str = 'adaptive'
    budget: int = 0

    def __post_init__(self) -> None:
        if self.episodes < 1 or self.max_steps < 1:
            raise ConfigError('--episodes and --max-steps must be at least 1')
        if len(self.policies) < 2:
            raise ConfigError('--policies: a ladder needs at least two policies')
        for name in self.tasks:
            tasks.get_task(name)
        for name in self.columns:
            column(name)
        if self.budget < 0:
            raise ConfigError(f'--budget must be 0 (the fixed design) or more, got {self.budget}')
        if self.until_decided:
            try:
                self.ranking()  # the target, the allocation and the budget, checked here
            except ConfigError as err:
                raise ConfigError(f'--until-decided: {err}') from None

    def fixed(self) -> int:
        """The fixed design's real episodes: every task, policy and seed."""
        return self.episodes * len(self.tasks) * len(self.policies)

    def ranking(self) -> Any:
        """A fresh :class:`~realm_ros.core.allocation.AdaptiveRanking` of the digital real's
        episodes (``--until-decided``): at most ``budget`` real episodes (0: the fixed
        design's, :meth:`fixed`), a policy cycling through the tasks, its k-th episode on a
        task being that task's seed k, as :func:`decided_replay` answers it."""
        from realm_ros.core import allocation as alloc

        return alloc.AdaptiveRanking(
            [PolicyEntry.parse(p).label for p in self.policies], self.tasks,
            self.until_decided, budget=self.budget or self.fixed(),
            allocation=self.allocation, seed=self.seed)

    def entries(self) -> list[PolicyEntry]:
        """The parsed policy entries, labels unique."""
        entries = [PolicyEntry.parse(p) for p in self.policies]
        labels = [e.label for e in entries]
        if len(set(labels)) != len(labels):
            raise ConfigError(f'--policies: labels must be unique, got {labels}')
        return entries

    def base(self, task: str) -> WorldConfig:
        """The twin's world config for ``task`` before any column's changes."""
        return WorldConfig(task=task, cameras=self.cameras, camera_rate_hz=robot.CONTROL_HZ,
                           camera_width=self.width, camera_height=self.height)

    def real(self, task: str) -> WorldConfig:
        """The digital real's world config for ``task`` (hidden appearance and dynamics)."""
        return dataclasses.replace(self.base(task), backend='digital_real',
                                   appearance_file=self.appearance_file,
                                   dynamics_file=self.dynamics_file)

    def fingerprint(self) -> dict[str, Any]:
        """What makes an episode record comparable: a resumed run must match it."""
        return {'width': self.width, 'height': self.height, 'cameras': list(self.cameras),
                'distance_cameras': list(self.distance_cameras),
                'appearance_file': provenance.file_setting(self.appearance_file),
                'dynamics_file': provenance.file_setting(self.dynamics_file),
                'max_steps': self.max_steps, 'execute': self.execute,
                'policies': list(self.policies), 'code': provenance.code_version()}

    def frame_cameras(self) -> tuple[str, ...]:
        """The cameras of the kept first frames: the policies' and the image distance's."""
        return (*self.cameras, *(c for c in self.distance_cameras if c not in self.cameras))


class FirstFrames(PolicyWrapper):
    """A policy wrapper keeping the first observation's images (the episode's initial frame),
    and what ``also`` returns at that moment (other cameras' frames, region labels)."""

    def __init__(self, inner: Policy,
                 also: Callable[[], Mapping[str, np.ndarray]] | None = None) -> None:
        super().__init__(inner)
        self.first: dict[str, np.ndarray] = {}
        self.also = also

    def reset(self, spec: EpisodeSpec) -> None:
        self.first = {}
        super().reset(spec)

    def infer(self, obs: Observation) -> ActionChunk:
        if not self.first:
            self.first = {k: np.asarray(v, dtype=np.uint8).copy() for k, v in obs.images.items()}
            if self.also is not None:
                self.first.update(self.also())
        return super().infer(obs)


def image_distance(real: Mapping[str, np.ndarray], twin: Mapping[str, np.ndarray]
                   ) -> dict[str, float]:
    """Mean absolute pixel error (0-255) per camera both frames hold (same size required)."""
    out = {}
    for name in sorted(set(real) & set(twin)):
        a, b = np.asarray(real[name], float), np.asarray(twin[name], float)
        if a.shape != b.shape:
            raise DataError(f'{name}: real frame {a.shape} vs twin {b.shape}')
        out[name] = float(np.mean(np.abs(a - b)))
    return out


class EpisodeStore:
    """``episodes.jsonl`` (one record per finished episode) and each seed-0 first frame."""

    def __init__(self, out: pathlib.Path, fingerprint: Mapping[str, Any]) -> None:
        self.out = out
        self.path = out / EPISODES_FILE
        self.frames = out / 'frames'
        out.mkdir(parents=True, exist_ok=True)
        meta = out / 'run.json'
        provenance.check_run_file(meta, fingerprint, str(out), defaults=FINGERPRINT_DEFAULTS)
        meta.write_text(json.dumps(dict(fingerprint), indent=2) + '\n')
        self.records: dict[tuple[str, str, str, int, int], dict[str, Any]] = {}
        if self.path.is_file():
            text = self.path.read_text()
            if text and not text.endswith('\n'):
                # A line cut by a kill: end it, or the next record would be glued onto it
                # and lost with it.
                with open(self.path, 'a') as f:
                    f.write('\n')
            for line in text.splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill: that episode is run again
                self.records[self.key(row)] = row

    @staticmethod
    def key(row: Mapping[str, Any]) -> tuple[str, str, str, int, int]:
        """(column, task, policy, seed, variant) of a record."""
        return (row['column'], row['task'], row['policy'], int(row['seed']),
                int(row.get('variant', 0)))

    def has(self, key: tuple[str, str, str, int, int]) -> bool:
        """Whether this episode has finished already."""
        return key in self.records

    def add(self, row: dict[str, Any]) -> None:
        """Append a finished episode (flushed, so a kill keeps it)."""
        self.records[self.key(row)] = row
        with open(self.path, 'a') as f:
            f.write(json.dumps(row) + '\n')

    def frame_path(self, column_name: str, task: str, camera: str, variant: int = 0
                   ) -> pathlib.Path:
        """Where seed 0's first frame of ``camera`` in ``column_name`` (its ``variant``) is
        kept (PNG)."""
        suffix = f'_variant_{variant}' if variant else ''
        return self.frames / column_name / f'{task}_{camera}{suffix}.png'

    def first_frames(self, column_name: str, task: str, seed: int,
                     cameras: Sequence[str]) -> dict[str, np.ndarray] | None:
        """Seed 0's kept first frames (other seeds: None; the real episode is re-rendered)."""
        if seed != 0:
            return None
        import imageio.v2 as imageio

        paths = {c: self.frame_path(column_name, task, c) for c in cameras}
        if not all(p.is_file() for p in paths.values()):
            return None
        return {c: np.asarray(imageio.imread(p)) for c, p in paths.items()}

    def keep_frames(self, column_name: str, task: str, frames: Mapping[str, np.ndarray],
                    variant: int = 0) -> None:
        """Keep seed 0's first frames for the contact sheet."""
        import imageio.v2 as imageio

        for camera, image in frames.items():
            path = self.frame_path(column_name, task, camera, variant)
            path.parent.mkdir(parents=True, exist_ok=True)
            imageio.imwrite(path, image)


def _labels(camera: str) -> str:
    """The first-frame key of ``camera``'s region labels (the real's, ``image_regions``)."""
    return f'{camera}_regions'


def _episode(world: Any, entry: PolicyEntry, spec: EpisodeSpec, config: VisionDemoConfig,
             real: bool = False) -> tuple[EpisodeResult, dict[str, np.ndarray]]:
    """Run one episode; its first frames: the policies' cameras, the image distance's others
    rendered then, and for the ``real`` world each distance camera's region labels."""
    from realm_ros.backends.mujoco.image_regions import region_labels
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import make_policy, standard_chain

    extra = [c for c in config.distance_cameras if c not in config.cameras]

    def also() -> dict[str, np.ndarray]:
        frames = world.render_cameras(extra) if extra else {}
        if real:
            seg = world.render_cameras(config.distance_cameras, segmentation=True)
            frames.update({_labels(c): region_labels(world.model, v) for c, v in seg.items()})
        return frames

    inner = make_policy(entry.policy, **dict(entry.args))
    watcher = FirstFrames(inner, also)
    execute = config.execute
    policy = standard_chain(watcher, execute=execute)
    try:
        result = run_episode(world, policy, spec)
    finally:
        policy.close()
    return result, watcher.first


def _row(result: EpisodeResult, column_name: str, entry: PolicyEntry, variant: int,
         distance: Mapping[str, float] | None,
         regions: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    return {'column': column_name, 'task': result.spec.task, 'policy': entry.label,
            'seed': int(result.spec.seed), 'variant': variant,
            'progression': float(result.progression), 'success': bool(result.success),
            'outcome': str(result.outcome.value), 'steps': int(result.steps),
            'wall_s': round(float(result.wall_time_s), 2), 'image_mae': dict(distance or {}),
            'image_mae_regions': {c: dict(v) for c, v in (regions or {}).items()}}


#: ``--appearance lab:SEED``: a hidden lab look drawn by seed (:func:`look_file`).
LOOK_PREFIX = 'lab:'


def look_file(spec: str, out: pathlib.Path) -> str:
    """``--appearance``'s value as a file: ``lab:SEED`` writes the lab look
    :func:`~realm_ros.core.appearance.lab_look` draws for SEED (cameras off DROID's rig,
    materials, light, clutter, sensor; as ``bench/bench_rebuild.py`` draws its looks) to
    ``out/look_SEED.yaml`` and returns that path; anything else is returned as it is. The
    same seed writes the same file, so a resumed run's fingerprint matches.

    Raises:
        ConfigError: ``lab:`` without an integer seed.
    """
    if not spec.startswith(LOOK_PREFIX):
        return spec
    from realm_ros.core.appearance import write_lab_look

    text = spec[len(LOOK_PREFIX):]
    try:
        seed = int(text)
    except ValueError:
        raise ConfigError(f'--appearance {spec}: lab:SEED takes an integer seed, got '
                          f'{text!r}') from None
    return str(write_lab_look(seed, out / f'look_{seed}.yaml'))


def plan(config: VisionDemoConfig, inputs: Inputs) -> list[tuple[str, list[Column]]]:
    """Return [(task, available columns)] and check every asked column's availability."""
    available = [c for c in (column(n) for n in config.columns) if not c.missing(inputs)]
    return [(task, available) for task in config.tasks]


def run(config: VisionDemoConfig, inputs: Inputs, out: pathlib.Path,
        on_episode: Callable[[], None] | None = None) -> EpisodeStore:
    """Run every episode not yet in ``out``: per start (task, seed, policy), the digital real's
    then each available column's twin episodes. The fixed design runs every task, seed and
    policy; ``config.until_decided`` runs the starts :func:`allocate` chooses, one at a time,
    until the digital real's ranking is decided. Returns the store.

    ``on_episode`` is called after each finished (or resumed) episode, for a progress bar.
    """
    store = EpisodeStore(out, {**config.fingerprint(), 'variant_seed': inputs.variant_seed})
    entries = {e.label: e for e in config.entries()}
    if on_episode is not None:
        for _ in range(finished(store, config, inputs)):
            on_episode()
    starts = _Starts(config, inputs, store, on_episode)
    try:
        if config.until_decided:
            allocate(config, store.records,
                     lambda task, seed, policy: starts.run(task, seed, entries[policy]))
        else:
            for task in config.tasks:
                for seed in range(config.episodes):
                    for entry in entries.values():
                        starts.run(task, seed, entry)
                starts.close(task)
    finally:
        starts.close()
    return store


class _Starts:
    """Runs one start's episodes (the digital real's, then each available column's twins),
    keeping each task's worlds open until :meth:`close`."""

    def __init__(self, config: VisionDemoConfig, inputs: Inputs, store: EpisodeStore,
                 on_episode: Callable[[], None] | None) -> None:
        self.config, self.inputs, self.store = config, inputs, store
        self.on_episode = on_episode
        self.columns = dict(plan(config, inputs))
        self.real_worlds: dict[str, Any] = {}
        self.twins: dict[tuple[str, str], Any] = {}

    def run(self, task: str, seed: int, entry: PolicyEntry) -> None:
        """Run the episodes of (task, seed, policy) not in the store yet."""
        from realm_ros.backends.mujoco.image_regions import split_distances
        from realm_ros.core.world import make_world

        config, inputs, store = self.config, self.inputs, self.store
        spec = EpisodeSpec(task=task, seed=seed, policy=entry.label,
                           max_steps=config.max_steps,
                           instruction=tasks.get_task(task).instruction)
        real_key = (REAL, task, entry.label, seed, 0)
        todo = [(c, v) for c in self.columns[task]
                for v in range(len(c.worlds(config.base(task), inputs)))
                if not store.has((c.name, task, entry.label, seed, v))]
        real_frames = store.first_frames(
            REAL, task, seed, [*config.frame_cameras(), *map(_labels, config.distance_cameras)]) \
            if store.has(real_key) else None
        if not store.has(real_key) or (todo and real_frames is None):
            # The real episode (again, if a twin episode still needs its frames: the same
            # seed and policy give the same episode).
            if task not in self.real_worlds:
                self.real_worlds[task] = make_world(config.real(task))
            result, real_frames = _episode(self.real_worlds[task], entry, spec, config, True)
            if not store.has(real_key):
                store.add(_row(result, REAL, entry, 0, None))
                if seed == 0:
                    store.keep_frames(REAL, task, real_frames)
                if self.on_episode is not None:
                    self.on_episode()
        for col, variant in todo:
            key = (task, f'{col.name}/{variant}')
            if key not in self.twins:
                self.twins[key] = col.worlds(config.base(task), inputs)[variant].make(inputs)
            result, frames = _episode(self.twins[key], entry, spec, config)
            distance = image_distance(real_frames or {}, frames)
            regions = split_distances(real_frames or {}, frames, {
                c: (real_frames or {})[_labels(c)] for c in config.distance_cameras
                if _labels(c) in (real_frames or {})})
            store.add(_row(result, col.name, entry, variant, distance, regions))
            if seed == 0:
                store.keep_frames(col.name, task, frames, variant)
            if self.on_episode is not None:
                self.on_episode()

    def close(self, task: str | None = None) -> None:
        """Close ``task``'s worlds (None: every task's)."""
        for name in [t for t in self.real_worlds if task in (None, t)]:
            self.real_worlds.pop(name).close()
        for key in [k for k in self.twins if task in (None, k[0])]:
            self.twins.pop(key).close()


def allocate(config: VisionDemoConfig,
             records: Mapping[tuple[str, str, str, int, int], Mapping[str, Any]],
             run_start: Callable[[str, int, str], None] | None = None) -> dict[str, Any]:
    """The digital real's episodes chosen ``--until-decided`` (paired-eval's rule,
    :class:`~realm_ros.core.allocation.AdaptiveRanking`): request by request, ``run_start(task,
    seed, policy)`` runs that start (its real episode and every twin column's on the same
    start; None: only replay what ``records`` hold) and the real episode's progression is
    recorded, until the ranking is decided at ``config.until_decided`` or the budget is spent.

    Deterministic given the episodes, so a resumed run (or :func:`summarize`) replays the same
    requests and runs only what is missing. ``records`` are keyed as :meth:`EpisodeStore.key`.
    Returns the target, the allocation, ``budget``, ``fixed`` (the fixed design's real
    episodes), ``spent``, ``decided``, ``stopped`` (why it ended), the ranking ``state``, the
    chosen ``starts`` ([task, policy, seed], in order) and, as paired-eval's summary has it,
    ``fixed_design_total``: the real episodes a fixed design would need for the same
    confidence at the measured means and spreads (``metrics --power``; None if a pair shows no
    difference).
    """
    from realm_ros.core import allocation as alloc

    ranking = config.ranking()
    starts: list[list[Any]] = []
    stopped = ''
    while (request := ranking.next()) is not None:
        if run_start is not None:
            run_start(request.task, request.index, request.policy)
        row = records.get((REAL, request.task, request.policy, request.index, 0))
        if row is None or row.get('outcome') == 'infra_failure':
            stopped = (f'{request.policy} seed {request.index} of {request.task} has no real '
                       'episode yet: run again to resume')
            break
        starts.append([request.task, request.policy, request.index])
        ranking.record(request, float(row['progression']))
    state = ranking.state
    out: dict[str, Any] = {
        'target': config.until_decided, 'allocation': config.allocation,
        'budget': ranking.budget, 'fixed': config.fixed(), 'spent': ranking.spent,
        'decided': state.decided,
        'stopped': stopped or ('decided' if state.decided
                               else 'budget spent before the ranking was decided'),
        'state': state.as_dict(), 'starts': starts}
    if all(ranking.scores.values()):
        rows = alloc.fixed_design_power(ranking.scores, config.until_decided)
        needed = [r.episodes_per_policy for r in rows]
        out['fixed_design_total'] = (None if None in needed
                                     else max(needed) * len(ranking.scores))  # type: ignore
    return out


def _worlds_of(config: VisionDemoConfig, inputs: Inputs) -> dict[str, int]:
    """{column name: twin worlds (variants) per episode} of the available columns, real: 1."""
    out = {REAL: 1}
    for task, columns in plan(config, inputs):
        for c in columns:
            out[c.name] = len(c.worlds(config.base(task), inputs))
    return out


def finished(store: EpisodeStore, config: VisionDemoConfig, inputs: Inputs) -> int:
    """Episodes of the plan already in ``store`` (a resumed run's head start)."""
    worlds = _worlds_of(config, inputs)
    labels = {e.label for e in config.entries()}
    # --until-decided: its starts are chosen as it goes; any seed may be one of them.
    seeds = config.episodes if not config.until_decided else float('inf')
    done = sum(1 for (col, task, policy, seed, variant) in store.records
               if col in worlds and variant < worlds[col] and task in config.tasks
               and policy in labels and seed < seeds)
    return min(done, count_episodes(config, inputs))


def count_episodes(config: VisionDemoConfig, inputs: Inputs) -> int:
    """Episodes the whole plan holds (real + every available column's variants); with
    ``--until-decided``, at most: the budget's starts."""
    n = 0
    for task, columns in plan(config, inputs):
        per_seed = 1 + sum(len(c.worlds(config.base(task), inputs)) for c in columns)
        n += per_seed * config.episodes * len(config.policies)
    if config.until_decided:
        n = n * (config.budget or config.fixed()) // config.fixed()
    return n


# ----------------------------------------------------------------------------- summary

def _cells(records: Iterable[Mapping[str, Any]], column_name: str, task_names: Sequence[str],
           policies: Sequence[str], seeds: int, variants: int = 1,
           starts: Mapping[tuple[str, str], Sequence[int]] | None = None
           ) -> dict[tuple[str, str], np.ndarray] | None:
    """{(task, policy): (seeds, 4) [real progression, real success, twin progression, twin
    success]} or None if any episode is missing. The twin's ``variants`` (indices 0..variants-1)
    of one seed are averaged (variant aggregation); all of them must be there.

    ``starts``: per (task, policy) the seeds run (``--until-decided``); a seed not run is a row
    of NaN (None: every seed below ``seeds``, the fixed design)."""
    real: dict[tuple[str, str, int], Mapping[str, Any]] = {}
    twin: dict[tuple[str, str, int], list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get('outcome') == 'infra_failure':
            continue
        key = (r['task'], r['policy'], int(r['seed']))
        if r['column'] == REAL:
            real[key] = r
        elif r['column'] == column_name and int(r.get('variant', 0)) < variants:
            twin.setdefault(key, []).append(r)
    cells = {}
    for task in task_names:
        for policy in policies:
            rows = []
            chosen = range(seeds) if starts is None else set(starts.get((task, policy), ()))
            if not chosen:
                return None
            for seed in range(seeds):
                if seed not in chosen:
                    rows.append([np.nan] * 4)
                    continue
                key = (task, policy, seed)
                if key not in real or key not in twin:
                    return None
                t = twin[key]
                if len(t) < variants:
                    return None
                rows.append([float(real[key]['progression']), float(real[key]['success']),
                             float(np.mean([x['progression'] for x in t])),
                             float(np.mean([float(x['success']) for x in t]))])
            cells[(task, policy)] = np.asarray(rows)
    return cells


def _agreement(cells: Mapping[tuple[str, str], np.ndarray], task_names: Sequence[str],
               policies: Sequence[str], idx: np.ndarray | None = None) -> dict[str, float]:
    """Agreement over per-policy mean progression (averaged over ``task_names``)."""
    real, sim = [], []
    for policy in policies:
        r, s = [], []
        for task in task_names:
            c = cells[(task, policy)] if idx is None else cells[(task, policy)][idx]
            r.append(_mean(c[:, 0]))
            s.append(_mean(c[:, 2]))
        real.append(float(np.mean(r)))
        sim.append(float(np.mean(s)))
    return metrics.agreement(sim=sim, real=real).as_dict()


def _mean(values: np.ndarray) -> Any:
    """The mean over the seeds run (a seed not run is NaN: ``--until-decided``)."""
    return values.mean() if not np.isnan(values).any() else np.nanmean(values)


def _agreement_ci(cells: Mapping[tuple[str, str], np.ndarray], task_names: Sequence[str],
                  policies: Sequence[str], seeds: int, seed: int, n: int = 1000
                  ) -> dict[str, list[float]]:
    """Paired bootstrap over seeds: each draw of seeds takes both worlds' episodes (a draw in
    which some cell has no seed it ran is skipped: ``--until-decided``'s cells)."""
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {name: [] for name, m in metrics.METRICS.items()
                                     if m.interval == 'paired_bootstrap'}
    for _ in range(n):
        idx = rng.integers(0, seeds, seeds)
        if any(np.isnan(c[idx, 0]).all() for c in cells.values()):
            continue
        a = _agreement(cells, task_names, policies, idx)
        for k in draws:
            draws[k].append(float(a[k]))
    return {k: [float(np.quantile(v, 0.025)), float(np.quantile(v, 0.975))]
            for k, v in draws.items()}


def summarize(records: Sequence[Mapping[str, Any]], config: VisionDemoConfig,
              inputs: Inputs) -> dict[str, Any]:
    """Return ``summary.json``: per column (and per task), per-policy scores with CIs, the
    agreement with paired-bootstrap CIs, Kruskal-Wallis per policy, the leave-one-policy-out
    predictions of the real scores (``prediction``) and the image distance."""
    policies = [e.label for e in config.entries()]
    out: dict[str, Any] = {'tasks': list(config.tasks), 'policies': policies,
                           'episodes_per_cell': config.episodes, 'columns': {}}
    seeds = config.episodes
    starts: dict[tuple[str, str], list[int]] | None = None
    if config.until_decided:
        # The starts the real side's allocation chose; every column is read on them.
        out['allocated'] = allocate(config, {EpisodeStore.key(r): r for r in records})
        starts = {}
        for task, policy, k in out['allocated']['starts']:
            starts.setdefault((task, policy), []).append(int(k))
        seeds = 1 + max((int(k) for _, _, k in out['allocated']['starts']), default=-1)
    chosen = {(t, p, k) for (t, p), ks in (starts or {}).items() for k in ks}

    def in_design(r: Mapping[str, Any]) -> bool:
        if starts is None:
            return int(r['seed']) < config.episodes
        return (r['task'], r['policy'], int(r['seed'])) in chosen
    for col in (column(n) for n in config.columns):
        entry: dict[str, Any] = {'letter': col.letter, 'label': col.label}
        missing = col.missing(inputs)
        worlds = 0 if missing else len(col.worlds(config.base(config.tasks[0]), inputs))
        cells = None if missing else _cells(records, col.name, config.tasks, policies,
                                            seeds, worlds, starts)
        if missing or cells is None:
            entry['available'] = False
            entry['reason'] = (f'not available ({col.unavailable(missing)})' if missing
                               else 'not available (episodes missing: run again to resume)')
            out['columns'][col.name] = entry
            continue
        entry['available'] = True
        entry['worlds'] = worlds
        scopes = {'all': list(config.tasks), **{t: [t] for t in config.tasks}}
        for scope, names in scopes.items():
            block: dict[str, Any] = {'per_policy': []}
            twin_real: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for k, policy in enumerate(policies):
                stacked = np.concatenate([cells[(t, policy)] for t in names])
                stacked = stacked[~np.isnan(stacked[:, 0])]  # the seeds run
                twin_real[policy] = (stacked[:, 2], stacked[:, 0])
                row: dict[str, Any] = {'policy': policy, 'episodes': len(stacked)}
                for world, (pi, si) in ((REAL, (0, 1)), ('sim', (2, 3))):
                    row[f'{world}_progress'] = float(stacked[:, pi].mean())
                    row[f'{world}_progress_ci'] = list(metrics.bootstrap_ci(
                        stacked[:, pi], seed=config.seed + k))
                    row[f'{world}_success'] = float(stacked[:, si].mean())
                    row[f'{world}_success_ci'] = list(metrics.bootstrap_ci(
                        stacked[:, si], seed=config.seed + k + 100))
                row['kruskal'] = metrics.kruskal_sim_real(sim=stacked[:, 2], real=stacked[:, 0])
                block['per_policy'].append(row)
            block['agreement'] = _agreement(cells, names, policies)
            # Each policy's real mean progression from its twin episodes, the map fitted on
            # the other policies (leave-one-policy-out), with the intervals' coverage.
            block['prediction'] = prediction.report(twin_real)
            block['agreement_ci'] = _agreement_ci(cells, names, policies, seeds, config.seed)
            entry[scope] = block
        mine = [r for r in records if r['column'] == col.name
                and r['task'] in config.tasks and r['policy'] in policies
                and in_design(r) and int(r.get('variant', 0)) < worlds]
        # Per start (task, seed: one first frame, whichever policy ran from it) the mean over
        # its variants, then over starts: a frame counted once per policy narrowed the CI.
        entry['image_mae'] = _per_start(
            ((camera, (r['task'], int(r['seed'])), float(value)) for r in mine
             for camera, value in r.get('image_mae', {}).items()), config.seed)
        # Where the error is: the robot's, the objects' and the background's pixels.
        entry['image_mae_regions'] = _per_start(
            ((f'{camera} {region}', (r['task'], int(r['seed'])), float(value)) for r in mine
             for camera, split in r.get('image_mae_regions', {}).items()
             for region, value in split.items() if region != 'image'), config.seed)
        if worlds > 1:
            looks = inputs.variant_set()
            entry['variants'] = [looks.name(k) for k in range(worlds)]
            entry['per_variant'] = {
                policy: [float(np.mean([r['progression'] for r in mine
                                        if r['policy'] == policy and int(r['variant']) == k
                                        and r.get('outcome') != 'infra_failure']))
                         for k in range(worlds)] for policy in policies}
        out['columns'][col.name] = entry
    if not config.until_decided:  # the fixed design: what the rule would have spent
        out['until_decided'] = {allocation: decided_replay(records, config, DECIDED_P,
                                                           allocation)
                                for allocation in ('adaptive', 'uniform')}
    return out


def decided_replay(records: Iterable[Mapping[str, Any]], config: VisionDemoConfig,
                   target: float = 0.95, allocation: str = 'adaptive') -> dict[str, Any]:
    """How many of this run's digital-real episodes ``paired-eval --until-decided`` would have
    spent: :class:`~realm_ros.core.allocation.AdaptiveRanking` (the rule ``paired-eval`` and
    ``sweep`` allocate real episodes by) replayed on the fixed design's real episodes, each
    request (policy, task, k-th episode) answered by that policy's real episode of seed k.

    The demo runs a fixed design (every policy, task and seed), so this is a replay, not an
    allocation: it stops when the ranking is decided at ``target``, when the fixed design's
    episodes are spent, or when a policy needs a seed beyond them (``exhausted``: deciding
    needs more real episodes than the fixed design has). Returns ``decided``, ``spent``,
    ``fixed`` (the fixed design's real episodes), ``exhausted``, the final ranking state
    (``state``: order, adjacent pairs' probabilities, episodes per policy) and the fixed
    design's own state on all its real episodes (``fixed_state``).
    """
    from realm_ros.core import allocation as alloc

    policies = [e.label for e in config.entries()]
    # The fixed design's episodes only (a folder an --until-decided run shared may hold more).
    real = {(r['task'], r['policy'], int(r['seed'])): float(r['progression'])
            for r in records if r.get('column') == REAL and r.get('outcome') != 'infra_failure'
            and int(r['seed']) < config.episodes}
    fixed = config.episodes * len(config.tasks) * len(policies)
    try:
        ranking = alloc.AdaptiveRanking(policies, config.tasks, target, budget=fixed,
                                        allocation=allocation, seed=config.seed)
    except ConfigError as err:  # too few episodes for the rule to start: say so, no replay
        return {'target': target, 'allocation': allocation, 'fixed': fixed, 'note': str(err)}
    exhausted = ''
    while (request := ranking.next()) is not None:
        key = (request.task, request.policy, request.index)
        if key not in real:
            exhausted = (f'{request.policy} needs seed {request.index} of {request.task}, '
                         + (f"beyond the fixed design's {config.episodes}"
                            if request.index >= config.episodes else 'not in the run'))
            break
        ranking.record(request, real[key])
    everything = {p: [v for (t, q, k), v in real.items()
                      if q == p and t in config.tasks and k < config.episodes] for p in policies}
    fixed_state = alloc.ranking_state(everything, target, seed=config.seed)
    return {'target': target, 'allocation': allocation, 'decided': ranking.state.decided,
            'spent': ranking.spent, 'fixed': fixed, 'exhausted': exhausted,
            'state': ranking.state.as_dict(), 'fixed_state': fixed_state.as_dict()}


def format_decided(section: Mapping[str, Any] | None) -> str:
    """One paragraph for table.md: the real episodes ``--until-decided`` would have spent
    (:func:`decided_replay`) against the fixed design's."""
    if not section:
        return ''
    first = next(iter(section.values()))
    if first.get('note'):
        return (f'Real episodes until decided at P = {first["target"]:.2f}: not replayed '
                f'({first["note"]})')
    lines = []
    for allocation, d in section.items():
        state = d['state']
        weakest = min(state['adjacent_pairs'], key=lambda a: a['probability'], default=None)
        if d['decided']:
            how = f'decided after {d["spent"]} of the fixed design\'s {d["fixed"]} real episodes'
        else:
            why = d['exhausted'] or "the fixed design's episodes spent"
            how = f'not decided after {d["spent"]} real episodes ({why})'
        if weakest is not None and not d['decided']:
            how += (f'; least certain pair {weakest["above"]} > {weakest["below"]} '
                    f'P = {weakest["probability"]:.2f}')
        lines.append(f'- {allocation}: {how}; order ' + ' > '.join(state['order']))
    fixed = first['fixed_state']
    pairs = ', '.join(f'{a["above"]} > {a["below"]} {a["probability"]:.2f}'
                      for a in fixed['adjacent_pairs'])
    head = (f"Real episodes until the digital real's ranking is decided at P = "
            f'{first["target"]:.2f} (paired-eval --until-decided\'s rule replayed on this '
            f"run's real episodes; the demo itself runs the fixed design):")
    tail = (f'- the fixed design, all {first["fixed"]} real episodes: '
            f'{"decided" if fixed["decided"] else "not decided"} (adjacent pairs {pairs})')
    return '\n'.join([head, *lines, tail])


def format_allocated(section: Mapping[str, Any] | None) -> str:
    """One paragraph for table.md: the real episodes ``--until-decided`` spent (:func:`allocate`)
    against the fixed design's, and where the ranking stands."""
    if not section:
        return ''
    state = section['state']
    per_policy = ', '.join(f'{p} {n}' for p, n in state['episodes'].items())
    saved = section['fixed'] - section['spent']
    how = (f'decided after {section["spent"]} real episodes' if section['decided'] else
           f'not decided after {section["spent"]} real episodes ({section["stopped"]})')
    lines = [
        f"Real episodes allocated until the digital real's ranking is decided at P = "
        f'{section["target"]:.2f} ({section["allocation"]}, paired-eval --until-decided\'s '
        f'rule, at most {section["budget"]}): {how}, against the fixed design\'s '
        f'{section["fixed"]} ({saved} {"saved" if saved >= 0 else "more"}); per policy '
        f'{per_policy}; every twin column ran on the same {section["spent"]} starts.',
        f'- order {" > ".join(state["order"])}; adjacent pairs '
        + ', '.join(f'{a["above"]} > {a["below"]} P = {a["probability"]:.2f}'
                    for a in state['adjacent_pairs'])]
    if section.get('fixed_design_total'):
        lines.append(f'- a fixed design would need about {section["fixed_design_total"]} real '
                     'episodes for the same confidence at these means and spreads '
                     '(realm-ros metrics --power)')
    return '\n'.join(lines)


def _per_start(values: Iterable[tuple[str, tuple[str, int], float]], seed: int
               ) -> dict[str, dict[str, Any]]:
    """{key: mean, bootstrap CI, frames, starts} of (key, start, value) triples: per start
    the mean of its values (its variants), then over starts."""
    per: dict[str, dict[tuple[str, int], list[float]]] = {}
    for key, start, value in values:
        per.setdefault(key, {}).setdefault(start, []).append(value)
    out = {}
    for key, starts in sorted(per.items()):
        v = [float(np.mean(x)) for x in starts.values()]
        out[key] = {'mean': float(np.mean(v)), 'ci': list(metrics.bootstrap_ci(v, seed=seed)),
                    'frames': sum(len(x) for x in starts.values()), 'episodes': len(v)}
    return out


def _markdown(text: str) -> str:
    """``text`` safe in a Markdown table cell (a ``|`` would end the cell)."""
    return text.replace('|', '\\|')


def _fmt_ci(value: float, ci: Sequence[float]) -> str:
    return f'{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]'


def _prediction_rows(cols: Mapping[str, Any], names: Sequence[str], available: Sequence[str],
                     scope: str, policies: Sequence[str]) -> list[str]:
    """Rows of the leave-one-policy-out predictions: per policy its real mean predicted
    from the column's twin episodes with the 90 % interval (* where the observed real mean is
    outside it), then the intervals' coverage and mean width."""
    def section(n: str) -> Mapping[str, Any]:
        return cols[n][scope].get('prediction') or {}

    lines = []
    observed: dict[str, float] = {}
    for n in available:
        for p in section(n).get('leave_one_out', ()):
            observed[p['policy']] = p['real']
    for policy in policies:
        def cell(n: str, policy: str = policy) -> str:
            if n not in available:
                return cols[n]['reason']
            found = [p for p in section(n).get('leave_one_out', ()) if p['policy'] == policy]
            if not found:
                return 'n/a'
            p = found[0]
            return (_fmt_ci(p['predicted'], [p['low'], p['high']])
                    + ('' if p['covered'] else ' *'))
        real = f'{observed[policy]:.2f}' if policy in observed else ''
        lines.append(f'| {policy}: real predicted from the twin [90 % PI] | {real} | '
                     + ' | '.join(cell(n) for n in names) + ' |')

    def cover(n: str) -> str:
        if n not in available:
            return cols[n]['reason']
        c = section(n).get('coverage') or {}
        if not c.get('policies'):
            return 'n/a'
        ci = c.get('coverage_ci95')
        rate = f' (95 % CI [{ci[0]:.2f}, {ci[1]:.2f}])' if ci else ''
        return f'{c["covered"]} of {c["policies"]} / {c["mean_width"]:.2f}{rate}'
    lines.append('| 90 % PI coverage (policies) / mean width | | '
                 + ' | '.join(cover(n) for n in names) + ' |')
    return lines


def format_table(summary: Mapping[str, Any], scope: str = 'all') -> str:
    """The Markdown table: one column per twin set-up, rows for each policy's real and twin
    scores, the agreement figures with CIs, Kruskal-Wallis p per policy and image distances."""
    cols = summary['columns']
    names = list(cols)
    head = ' | '.join(f'({cols[n]["letter"]}) {cols[n]["label"]}' for n in names)
    lines = [f'| {scope} | digital real | {head} |', '|---|---|' + '---|' * len(names)]

    available = [n for n in names if cols[n]['available']]

    def row_of(text: Callable[[Mapping[str, Any]], str]) -> str:
        return ' | '.join(text(cols[n][scope]) if n in available else cols[n]['reason']
                          for n in names)

    def score(entry: Mapping[str, Any], world: str) -> str:
        return (f'{entry[f"{world}_success"]:.2f} / '
                + _fmt_ci(entry[f'{world}_progress'], entry[f'{world}_progress_ci']))

    policies = summary['policies']
    for k, policy in enumerate(policies):
        real = score(cols[available[0]][scope]['per_policy'][k], REAL) if available else ''

        def sim_score(block: Mapping[str, Any], k: int = k) -> str:
            return score(block['per_policy'][k], 'sim')

        lines.append(f'| {policy}: success / progression | {real} | {row_of(sim_score)} |')
    # The agreement rows: one per core.metrics.Metric, as paired-eval's table and report.
    for metric in metrics.METRICS.values():

        def figure(block: Mapping[str, Any], m: metrics.Metric = metric) -> str:
            value = block['agreement'].get(m.name)
            interval = block.get('agreement_ci', {}).get(m.name)
            return (_fmt_ci(value, interval) if interval else m.text(value)) \
                if value is not None else 'n/a'

        title = _markdown(metric.column or metric.label)
        lines.append(f'| {title} [95 % CI] | | {row_of(figure)} |')

    def kruskal(block: Mapping[str, Any]) -> str:
        return ', '.join(f'{p["kruskal"]["pvalue"]:.2f}' for p in block['per_policy'])

    lines.append(f'| Kruskal-Wallis p ({", ".join(policies)}) | | {row_of(kruskal)} |')
    lines += _prediction_rows(cols, names, available, scope, policies)
    if scope == 'all':
        for part in ('image_mae', 'image_mae_regions'):
            cameras = sorted({c for n in names if cols[n]['available']
                              for c in cols[n].get(part, {})})
            for camera in cameras:
                row = ' | '.join(
                    (cols[n]['reason'] if not cols[n]['available'] else
                     _fmt_ci(cols[n][part][camera]['mean'], cols[n][part][camera]['ci'])
                     if camera in cols[n].get(part, {}) else 'n/a') for n in names)
                lines.append(f'| image distance {camera} (mean abs px, 0-255) | 0 | {row} |')
    return '\n'.join(lines)


# ----------------------------------------------------------------------------- figures

def distance_figure(summary: Mapping[str, Any], path: pathlib.Path) -> pathlib.Path:
    """Bar chart: mean absolute pixel error real vs twin per column and camera, with CIs."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    cols = [(n, c) for n, c in summary['columns'].items() if c['available']]
    cameras = sorted({cam for _, c in cols for cam in c['image_mae']})
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * max(1, len(cols)), 3.2), dpi=110)
    width = 0.8 / max(1, len(cameras))
    for j, camera in enumerate(cameras):
        xs = np.arange(len(cols)) + (j - (len(cameras) - 1) / 2) * width
        means = [c['image_mae'][camera]['mean'] for _, c in cols]
        lo = [m - c['image_mae'][camera]['ci'][0] for m, (_, c) in zip(means, cols)]
        hi = [c['image_mae'][camera]['ci'][1] - m for m, (_, c) in zip(means, cols)]
        ax.bar(xs, means, width, yerr=[lo, hi], capsize=3, label=camera)
    ax.set_xticks(np.arange(len(cols)))
    ax.set_xticklabels([f'({c["letter"]}) {n}' for n, c in cols], fontsize=8)
    ax.set_ylabel('mean |real - twin| (0-255)')
    ax.set_title('first frame of each episode, digital real vs twin', fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def prediction_figure(summary: Mapping[str, Any], path: pathlib.Path) -> pathlib.Path | None:
    """One panel per available column: each policy's real mean progression predicted from the
    twin (leave-one-policy-out) with its 90 % interval, and the digital real's measured mean
    (a cross, red where it lies outside the interval). None without any prediction."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    cols = [(n, c) for n, c in summary['columns'].items()
            if c['available'] and c['all'].get('prediction', {}).get('leave_one_out')]
    if not cols:
        return None
    fig, axes = plt.subplots(1, len(cols), figsize=(0.6 + 2.6 * len(cols), 3.4), dpi=110,
                             squeeze=False, sharey=True)
    for ax, (name, c) in zip(axes[0], cols):
        section = c['all']['prediction']
        rows = section['leave_one_out']
        x = np.arange(len(rows))
        centre = np.array([p['predicted'] for p in rows])
        ax.errorbar(x, centre, yerr=[centre - [p['low'] for p in rows],
                                     [p['high'] for p in rows] - centre],
                    fmt='o', color='#2471a3', capsize=3, label='predicted [90 % PI]')
        ax.scatter(x, [p['real'] for p in rows], marker='x', zorder=3, label='measured real',
                   color=['#1e8449' if p['covered'] else '#c0392b' for p in rows])
        cov = section['coverage']
        ax.set_title(f'({c["letter"]}) {name}: {cov["covered"]} of {cov["policies"]} inside, '
                     f'width {cov["mean_width"]:.2f}', fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels([p['policy'] for p in rows], rotation=35, ha='right', fontsize=7)
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].set_ylabel('real mean progression')
    axes[0][0].legend(fontsize=7, loc='upper left')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def contact_sheet(store: EpisodeStore, config: VisionDemoConfig, path: pathlib.Path,
                  inputs: Inputs | None = None) -> pathlib.Path | None:
    """Rows: (task, camera); columns: real | twin | calibrated | matched | ... (seed 0). The
    variants' column shows one variant per axis (variant 0 is the calibrated twin's look)."""
    import imageio.v2 as imageio
    from PIL import Image, ImageDraw

    tiles_of: list[tuple[str, int, str]] = [(REAL, 0, 'digital real')]
    for name in (n for n in COLUMN_NAMES if n in config.columns):
        count = inputs.variants if inputs is not None and name == 'variants' else 0
        if count > 1:
            looks = VariantSet(count, inputs.variant_seed if inputs else 0)
            tiles_of += [(name, k, f'var {k} {looks.axis(k)}') for k in range(1, min(count, 5))]
        else:
            tiles_of.append((name, 0, name))
    rows = []
    for task in config.tasks:
        for camera in config.frame_cameras():
            tiles = []
            for name, variant, title in tiles_of:
                p = store.frame_path(name, task, camera, variant)
                if not p.is_file():
                    continue
                image = Image.fromarray(np.asarray(imageio.imread(p))[..., :3])
                if image.width < 240:
                    scale = 240 / image.width
                    image = image.resize((240, round(image.height * scale)),
                                         Image.Resampling.NEAREST)
                draw = ImageDraw.Draw(image)
                draw.rectangle((0, 0, image.width, 12), fill=(20, 20, 20))
                draw.text((3, 0), f'{title}  {task} {camera}', fill=(240, 240, 240))
                tiles.append(np.asarray(image))
            if tiles:
                h = max(t.shape[0] for t in tiles)
                tiles = [np.pad(t, ((0, h - t.shape[0]), (0, 2), (0, 0))) for t in tiles]
                rows.append(np.concatenate(tiles, 1))
    if not rows:
        return None
    w = max(r.shape[1] for r in rows)
    sheet = np.concatenate([np.pad(r, ((0, 2), (0, w - r.shape[1]), (0, 0))) for r in rows], 0)
    imageio.imwrite(path, sheet)
    return path


def write_outputs(store: EpisodeStore, config: VisionDemoConfig, inputs: Inputs) -> dict[str, Any]:
    """Summarise the store; write summary.json, table.md and the two figures; return the
    summary with the paths under ``'files'``."""
    summary = summarize(list(store.records.values()), config, inputs)
    out = store.out
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + '\n')
    tables = [format_table(summary, 'all')] + [format_table(summary, t) for t in config.tasks]
    decided = (format_decided(summary.get('until_decided'))
               or format_allocated(summary.get('allocated')))
    (out / TABLE_FILE).write_text('\n\n'.join(tables + ([decided] if decided else [])) + '\n')
    files = {'summary': str(out / SUMMARY_FILE), 'table': str(out / TABLE_FILE)}
    if any(c['available'] for c in summary['columns'].values()):
        files['image_distance'] = str(distance_figure(summary, out / DISTANCE_FILE))
    figure = prediction_figure(summary, out / PREDICTION_FILE)
    if figure is not None:
        files['prediction'] = str(figure)
    sheet = contact_sheet(store, config, out / SHEET_FILE, inputs)
    if sheet is not None:
        files['contact_sheet'] = str(sheet)
    summary['files'] = files
    return summary
