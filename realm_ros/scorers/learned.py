"""realm_ros's own learned progress-and-stage scorer: a small CNN over low-resolution frames.

What it predicts, per sampled frame: how many of the task's rubric stages are met (a class in
``0..N``, the task's N stages, REALM's tiered rubric), hence the stage and the progress
(``expected stages met / N``). It is trained on episodes of the twin and the digital real whose
every sampled frame is labelled by the episode referee's rubric (``ProgressTracker``: stages met
so far, sticky), and it runs on CPU.

* **input**: the current frame and the episode's first frame, each resized (area) to 64x36 RGB,
  and their difference, stacked as 9 channels (what moved since the start is what the stages
  are about), and the task (an embedding per task it was trained on); a checkpoint's
  ``config`` may also name more ``cameras`` (each read by its own convolutions: the wrist
  checkpoint's ``exterior_1`` and ``wrist``) and ``normalise`` each frame pair by its first
  frame's per-channel mean and spread (:class:`InputSpec`);
* **network**: four strided 3x3 convolutions (16-32-64-64 channels, GroupNorm, ReLU), the last
  3x4 feature map flattened (where things are is what the stages are about), the task
  embedding concatenated, a 64-unit MLP, one logit per stage count; logits past the task's N
  are masked out. About 112 k parameters, a 233 kB checkpoint (the first checkpoint's 6-channel,
  average-pooled network still loads: ``config`` says which);
* **episode**: frames sampled at 3 per second; the per-frame most likely stage count is median
  filtered (3 frames) and made monotone (running maximum: the rubric's stages stay met), so a
  stage is proposed at the first frame whose filtered count reaches it; the episode's
  progression is the last value of that curve (the rubric's: its maximum), success = every
  stage proposed. That is the greedy :class:`Decoder`; a checkpoint may carry another
  (``decoder``: the most likely monotone path, :func:`monotone_path`), no shipped one does.

Training spans looks: the digital real's default hidden look and lab looks drawn by seed
(``core.appearance.lab_look``: cameras, materials, light, clutter, sensor), with colour jitter.
A checkpoint keeps ``look_stats``, what its training episodes' first frames look like to it, so
:meth:`LearnedScorer.look_check` says when an episode's look is outside them.

Checkpoints are one ``torch.save`` dict (float16 weights) loaded with ``weights_only=True``:
``{'format', 'config', 'tasks', 'stages', 'state_dict', 'meta', 'look_stats'}`` (the first
ones keep no ``look_stats``; one may add ``decoder``, :func:`with_decoder`). An **ensemble**
checkpoint (:func:`ensemble`) holds several networks of one ``config`` and tasks under
``state_dicts`` instead of ``state_dict``: it is
read wherever a checkpoint is (:class:`LearnedScorer` averages its networks' stage
probabilities, then decodes them as one network's), and refused in one line where one network
is trained from it (:func:`one_network`: ``score train --init``, ``score calibrate``). The
shipped one is
``realm_ros/data/progress_scorer.pt``; the one fine-tuned across lab looks is
``realm_ros/data/progress_scorer_looks.pt`` (``realm-ros score train``, docs/scoring.md); the
one that also reads the wrist camera, its frame pairs normalised, is
``realm_ros/data/progress_scorer_wrist.pt`` (bench/scorer_cameras.py); the same inputs trained on
80 lab looks, ``realm_ros/data/progress_scorer_wrist80.pt``; the same inputs trained on
episodes of more policy families, ``realm_ros/data/progress_scorer_families.pt``, and three
training seeds of those as one ensemble, ``realm_ros/data/progress_scorer_families3.pt``; with
episodes under lab_demo's look too, three seeds as one ensemble,
``realm_ros/data/progress_scorer_families_demo3.pt``; that ensemble's networks with those of two
more three-seed ensembles (the first frame fixed, and boundary episodes), nine networks as one,
``realm_ros/data/progress_scorer_families_hjk.pt``; three networks trained on what each frame
shows now (a per-stage head) and read back by the rubric's order with a median of 3,
``realm_ros/data/progress_scorer_families_now3.pt``; those fine-tuned with an auxiliary
regression of the distances the stage predicates threshold, the one for a lab's look,
``realm_ros/data/progress_scorer_families_dist3.pt``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import pathlib
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from realm_ros.core import backends, scoring, skills, tasks
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.metrics import wilson_interval

FORMAT = 'realm_ros.progress_scorer/1'
#: Frame size the network sees (width, height): 320x180 DROID frames downscaled 5x.
IMAGE_W, IMAGE_H = 64, 36
#: Frames per second the scorer samples (every 5th control step at 15 Hz).
SAMPLE_FPS = 3.0
#: Frames of the median filter over the per-frame most likely counts (:func:`decode`).
MEDIAN_FRAMES = 3
#: Most stages of any task (REALM: 5), so classes 0..MAX_STAGES.
MAX_STAGES = 5
#: Ways the network pools its last feature map (see :func:`build_net`).
POOLS = ('mean', 'flat')
#: How far a frame's width / height may be from the network's (64 / 36, the videos' 320x180)
#: before it is refused: another shape would be squeezed into 64x36, a look never trained on.
ASPECT_TOLERANCE = 0.03
#: Its size after four stride-2 convolutions of 36x64.
_FEATURE_H, _FEATURE_W = 3, 4
DEFAULT_CHECKPOINT = pathlib.Path(__file__).resolve().parents[1] / 'data' / 'progress_scorer.pt'
#: The checkpoint fine-tuned across lab looks (``score train --init DEFAULT_CHECKPOINT``): for a
#: lab whose look the default one flags as outside its training looks (docs/scoring.md).
LOOKS_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_looks.pt')
#: The checkpoint that reads the ``wrist`` camera beside ``exterior_1``, each frame pair
#: normalised by its first frame (``TrainConfig.cameras``, ``normalise``), trained across the
#: 40 training lab looks (bench/scorer_cameras.py): better than LOOKS_CHECKPOINT on the held-out
#: looks in Pearson r and stage accuracy (docs/scoring.md). ``score --video EXTERIOR_1
#: --camera-video wrist=WRIST``.
WRIST_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_wrist.pt')
#: The wrist checkpoint's inputs and settings trained on 80 lab looks (bench/scorer_cameras.py
#: variant ``f_wrist_norm_80looks``, training seed 2: the median of three by r), shipped by
#: issue 42's round-3 rule (every seed beat WRIST_CHECKPOINT in r and stage accuracy on looks
#: 7001-7003 + 7011-7013; docs/scoring.md): the checkpoint for a lab's look.
WRIST80_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_wrist80.pt')
#: The same inputs trained on wrist80's scripted episodes plus 480 episodes of two other policy
#: families (the twin-trained and the real-trained learned ladders) under training looks
#: (bench/scorer_cameras.py variant ``g_families``, training seed 1: the median of three by r),
#: shipped by issue 42's round-4 rule (every seed beat WRIST80_CHECKPOINT in r and stage
#: accuracy on looks 7001-7003 + 7011-7013 + 7031-7033 and lost no r on the vision ladder
#: there; docs/scoring.md, "Round 4"); its seeds' ensemble, FAMILIES3_CHECKPOINT, replaced it
#: as the checkpoint for a lab's look in round 5.
FAMILIES_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_families.pt')
#: FAMILIES_CHECKPOINT's three training seeds in one ensemble checkpoint (:func:`ensemble`;
#: bench/scorer_cameras.py variant ``g_ensemble``), shipped by issue 42's round-5 rule (it beat
#: FAMILIES_CHECKPOINT in r and stage accuracy on the 432 pooled scripted episodes of looks
#: 7001-7003 + 7011-7013 + 7031-7033 and lost neither r nor success accuracy on the 336 pooled
#: vision-ladder episodes; docs/scoring.md, "Round 5"): the checkpoint for a lab's look until
#: FAMILIES_DEMO3_CHECKPOINT replaced it in round 9.
FAMILIES3_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_families3.pt')
#: Round 6's recipe (FAMILIES_CHECKPOINT's episodes plus episodes under lab_demo's look; the
#: learned vision ladder in none; the learned families' frames kept 4 steps late, as before the
#: labelled_run fix) trained with three seeds as one ensemble (bench/scorer_cameras.py variant
#: ``h_ensemble``), shipped by issue 42's round-9 rule (it met or beat FAMILIES3_CHECKPOINT
#: in r and stage accuracy on 96 new episodes of the held-out vision ladder and lost no r on
#: fresh looks 7081-7083; docs/scoring.md, "Round 9"): the checkpoint for a lab's look until
#: FAMILIES_HJK_CHECKPOINT replaced it in round 12.
FAMILIES_DEMO3_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_families_demo3.pt')
#: FAMILIES_DEMO3_CHECKPOINT's three networks with those of bench/scorer_cameras.py's
#: ``j_ensemble`` (round 9: the learned families from the episode's first frame) and
#: ``k_ensemble`` (round 10: boundary episodes too), nine networks as one ensemble (variant
#: ``hjk_ensemble``, :func:`members` then :func:`ensemble`; its look check is
#: FAMILIES_DEMO3_CHECKPOINT's), shipped by issue 42's round-12 rule (above
#: FAMILIES_DEMO3_CHECKPOINT in stage accuracy on 96 new episodes of the held-out vision ladder,
#: within 0.03 of it in r there and in r and stage accuracy on fresh looks 7111-7113;
#: docs/scoring.md, "Round 12"): the checkpoint for a lab's look until FAMILIES_NOW3_CHECKPOINT
#: replaced it in round 14.
FAMILIES_HJK_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_families_hjk.pt')
#: Round 13's now-head networks (j's recipe and sets with per-stage "now" targets, three seeds
#: as one ensemble: bench/scorer_cameras.py variant ``n_ensemble_m3``), read by the decoder the
#: checkpoint carries (:func:`decode_now`, a median of 3 per stage), shipped byte for byte by
#: issue 42's round-14 rule (above FAMILIES_HJK_CHECKPOINT in stage accuracy on 192 new episodes
#: of the held-out vision ladder, within 0.03 of it in r there and in r and stage accuracy on
#: fresh looks 7131-7133; docs/scoring.md, "Round 14"): the checkpoint for a lab's look until
#: FAMILIES_DIST3_CHECKPOINT.
FAMILIES_NOW3_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_families_now3.pt')
#: FAMILIES_NOW3_CHECKPOINT's three networks each fine-tuned 10 epochs with an auxiliary
#: regression of the distances the stage predicates threshold (``TrainConfig.measure_weight``;
#: bench/scorer_cameras.py variant ``q_ensemble_m3``), read as it is (:func:`decode_now`, a
#: median of 3; the added output is not read), shipped byte for byte by issue 42's round-16 rule
#: (above FAMILIES_NOW3_CHECKPOINT in stage accuracy on 192 new episodes of the held-out vision
#: ladder, within 0.03 of it in r there and in r and stage accuracy on fresh looks 7151-7153;
#: docs/scoring.md, "Round 16"): the checkpoint for a lab's look.
FAMILIES_DIST3_CHECKPOINT = DEFAULT_CHECKPOINT.with_name('progress_scorer_families_dist3.pt')


@dataclasses.dataclass(frozen=True)
class Plan:
    """Which episodes a labelled set holds: every (world, task, policy, seed)."""

    worlds: tuple[str, ...]
    tasks: tuple[str, ...]
    policies: tuple[str, ...]
    seeds: tuple[int, ...]
    max_steps: int = 200
    #: Lab looks drawn by seed (``core.appearance.lab_look``) the digital real is dressed in,
    #: one world per look; empty: the one look given (``--appearance``). With looks and no
    #: ``seeds``, each look runs one episode seed per (task, policy): the look's own seed.
    looks: tuple[int, ...] = ()


#: The tasks the shipped scorer knows: one of each of three skills (push, pick, put).
TASKS = ('push_switch', 'pick_spoon', 'put_green_block_in_bowl')
#: The three scripted rungs it is trained on; ``scripted:2`` (sloppy) is never seen.
TRAIN_POLICIES = ('scripted:0', 'scripted:1', 'scripted:3')
#: Lab looks the scorer trains on (``lab_look`` seeds; each look's episodes use its own seed).
TRAIN_LOOKS = tuple(range(1000, 1040))
#: Lab looks it is measured on, never trained on (``realm-ros score eval``).
EVAL_LOOKS = (7001, 7002, 7003)
#: Lab looks the per-lab calibration is measured on (never in training; 7010: the unit test's).
CALIBRATION_LOOKS = EVAL_LOOKS + (7010,)
#: The one look the calibration's settings (layers, epochs, learning rate) were chosen on.
TUNE_LOOK = 7020
#: The worlds the sets are recorded in: the twin and the digital real (``core.backends`` names).
TWIN = 'mujoco'
DIGITAL_REAL = 'digital_real'
#: Rungs of the learned vision ladder (``learned`` policy, shipped checkpoints) measured as a
#: policy family the scorer never saw: success about 0.05, 0.53 and 0.88 on the lab look.
LEARNED_LADDER = tuple(f'{name}=learned:path=checkpoints/learned_vision/{name}.pt'
                       for name in ('plain5k_s150', 'plain5k_s1200', 'plain12k_s12000'))
#: The training set (the default look, both worlds), the training looks, the held-out
#: digital-real set (other seeds), the unseen policy's set, and the held-out looks (other looks,
#: other seeds, every rung including the unseen one).
PLANS = {
    'train': Plan((TWIN, DIGITAL_REAL), TASKS, TRAIN_POLICIES, tuple(range(8))),
    'train_looks': Plan((DIGITAL_REAL,), TASKS, TRAIN_POLICIES, (), looks=TRAIN_LOOKS),
    'heldout': Plan((DIGITAL_REAL,), TASKS, TRAIN_POLICIES, tuple(range(100, 105))),
    'unseen': Plan((DIGITAL_REAL,), TASKS, ('scripted:2',), tuple(range(100, 108))),
    'looks': Plan((DIGITAL_REAL,), TASKS, TRAIN_POLICIES + ('scripted:2',),
                  tuple(range(100, 104)), looks=EVAL_LOOKS),
    # Per-lab calibration (``score calibrate``, bench/scorer_calibration.py): the held-out looks
    # and look 7010, each a lab whose few labelled episodes calibrate and whose others measure;
    # ``calibrate_tune``: one more look the calibration's settings were chosen on (no other).
    'calibrate': Plan((DIGITAL_REAL,), TASKS, TRAIN_POLICIES + ('scripted:2',),
                      tuple(range(100, 104)), looks=CALIBRATION_LOOKS),
    'calibrate_tune': Plan((DIGITAL_REAL,), TASKS, TRAIN_POLICIES + ('scripted:2',),
                           tuple(range(100, 104)), looks=(TUNE_LOOK,)),
    # A policy family never in training nor in any calibration pool: three rungs of the learned
    # vision ladder (docs/learned-policy.md section 5: weak, middle, strong) on the two tasks
    # it shares with the scorer, under three held-out looks (bench/scorer_learned_ladder.py).
    'learned_ladder': Plan((DIGITAL_REAL,), ('push_switch', 'pick_spoon'), LEARNED_LADDER,
                           tuple(range(200, 204)), max_steps=160, looks=EVAL_LOOKS),
}
#: The digital real's hidden look the plans use (the twin never reads it).
APPEARANCE = 'config/appearance/lab_demo.yaml'


def small_frame(frame: np.ndarray) -> np.ndarray:
    """Return ``frame`` (H, W, 3 RGB) resized with area averaging to IMAGE_H x IMAGE_W uint8.

    A frame of several cameras' RGB stacked (H, W, 3K: a multi-camera checkpoint's input,
    ``TrainConfig.cameras``) is resized camera by camera; one of another channel count (RGBA)
    keeps its first three."""
    import cv2
    image = np.asarray(frame)
    if image.ndim != 3 or image.shape[2] < 3:
        raise DataError(f'a frame must be (H, W, 3) RGB, got shape {image.shape}')
    image = np.ascontiguousarray(image if image.shape[2] % 3 == 0 else image[..., :3],
                                 dtype=np.uint8)
    if image.shape[:2] == (IMAGE_H, IMAGE_W):
        return image
    return np.concatenate([cv2.resize(np.ascontiguousarray(image[..., k:k + 3]),
                                      (IMAGE_W, IMAGE_H), interpolation=cv2.INTER_AREA)
                           for k in range(0, image.shape[2], 3)], axis=-1)


@dataclasses.dataclass
class LabelledEpisode:
    """One episode's sampled frames with the rubric's stages met at each (the training data).

    Attributes:
        task, world, policy, seed: where it came from (``world``: mujoco or digital_real).
        look: the lab look it was dressed in (``lab:SEED``, ``lab_look``), '' for the look the
            plan was given (the default: ``config/appearance/lab_demo.yaml`` for the digital
            real, its own for the twin).
        frames: (T, IMAGE_H, IMAGE_W, 3) uint8, the first the episode's first step.
        times_s: (T,) seconds from the episode's start.
        met: (T,) stages met at each frame (the rubric's, sticky).
        n_stages: the task's stage count N.
        now: (T, N) bool or None (sets collected before issue 42's round 13): each stage's
            own predicate (``tasks.stage_predicates``, order ignored) held at some control step
            of the frame's window, the steps since the previous kept frame up to this one
            (:func:`labelled_run`); :func:`sticky_counts` of it is ``met`` (the rubric's order
            and stickiness, reproduced from per-frame predicates).
        measures: (T, N) float32 or None (sets collected before issue 42's round 16): each
            stage's measure (``tasks.stage_measures``: the distance its predicate thresholds,
            NaN for a stage that has none), the least over the frame's window (the window
            ``now`` is read over), so it is below the threshold where the distance was at some
            step of the window.
    """

    task: str
    world: str
    policy: str
    seed: int
    frames: np.ndarray
    times_s: np.ndarray
    met: np.ndarray
    n_stages: int
    look: str = ''
    now: np.ndarray | None = None
    measures: np.ndarray | None = None

    @property
    def progression(self) -> float:
        """The rubric's episode progression (maximum stages met / N)."""
        return float(self.met.max()) / self.n_stages

    @property
    def success(self) -> bool:
        return int(self.met.max()) == self.n_stages

    def now_padded(self, dtype: Any) -> np.ndarray:
        """Its ``now`` (which must be set) as (T, MAX_STAGES) ``dtype``, the stages past its
        task's false: one width for the episodes of every task (saved, trained on)."""
        return self._stages_padded(self.now, dtype, 0)

    def measures_padded(self) -> np.ndarray:
        """Its ``measures`` (which must be set) as (T, MAX_STAGES) float32, NaN past its
        task's stages."""
        return self._stages_padded(self.measures, np.float32, np.nan)

    def _stages_padded(self, values: Any, dtype: Any, fill: float) -> np.ndarray:
        """Per-frame, per-stage ``values`` as (T, MAX_STAGES) ``dtype``, ``fill`` past its
        task's stages."""
        values = np.asarray(values, dtype=dtype).reshape(len(self.met), -1)
        return np.pad(values, ((0, 0), (0, MAX_STAGES - self.n_stages)), constant_values=fill)


def world_config(world: str, appearance_file: str = '', camera: str = 'exterior_1',
                 stride: int = 5, policy_cameras: Sequence[str] = ()) -> Any:
    """Return the ``WorldConfig`` :func:`collect` runs ``world`` with: ``camera`` rendered on
    every ``stride``-th control step, the hidden look ``appearance_file`` for the digital real
    only (the twin never reads it). A policy that looks (``policy_cameras``, its
    ``needs.cameras``) gets those and ``camera`` on every step instead; the scorer still reads
    every ``stride``-th (:func:`labelled_run`)."""
    from realm_ros.core import robot
    from realm_ros.core.config import WorldConfig
    cameras = (camera,) + tuple(c for c in policy_cameras if c != camera)
    return WorldConfig(backend=world, cameras=cameras,
                       camera_rate_hz=robot.CONTROL_HZ / (1 if policy_cameras else stride),
                       appearance_file=appearance_file if backends.get(world).hidden else '')


def policy_cameras(policies: Sequence[str]) -> tuple[str, ...]:
    """The cameras the policy entries ``policies`` look through (none for the scripted
    ladder), in order of first use."""
    from realm_ros.core.evaluation import PolicyEntry
    from realm_ros.core.policy import policy_needs
    out: list[str] = []
    for text in policies:
        entry = PolicyEntry.parse(text)
        for name in policy_needs(entry.policy, **dict(entry.args)).cameras:
            if name not in out:
                out.append(name)
    return tuple(out)


def write_look(seed: int, folder: str | pathlib.Path) -> pathlib.Path:
    """Write the lab look of ``seed`` (``core.appearance.droid_lab_look``) to
    ``folder/lab-SEED.yaml`` and return its path."""
    from realm_ros.core.appearance import write_lab_look
    return write_lab_look(seed, pathlib.Path(folder) / f'lab-{int(seed)}.yaml')


def plan_settings(plan: Plan, appearance_file: str = '', camera: str = 'exterior_1',
                  stride: int = 5) -> dict[str, Any]:
    """Return everything that changes a plan's labelled episodes, as provenance settings: each
    world's config (appearance, rig and dynamics files by content, image size, rates), the
    tasks, the policies, the seeds, max steps, the scorer's frame size and the realm_ros
    version; a plan of lab looks: each look by content, not ``appearance_file``.
    ``realm-ros score train/eval`` key their cache by its digest."""
    from realm_ros.core import appearance, provenance
    from realm_ros.core.evaluation import PolicyEntry

    # A plan of lab looks dresses the digital real in those (below), not in the given look.
    appearance_file = '' if plan.looks else appearance_file
    # Flat (``world.field``), as provenance compares a file setting by content at the top only.
    looking = policy_cameras(plan.policies)
    worlds = {f'{w}.{key}': value for w in plan.worlds for key, value in
              provenance.config_settings(world_config(w, appearance_file, camera, stride,
                                                      looking)).items()}
    return {
        'worlds': list(plan.worlds), **worlds, 'tasks': list(plan.tasks),
        'policies': [provenance.policy_setting(e.policy, e.args)
                     for e in map(PolicyEntry.parse, plan.policies)],
        'seeds': list(plan.seeds), 'max_steps': plan.max_steps,
        **({'looks': {str(k): provenance.digest(appearance.droid_lab_look(k))
                      for k in plan.looks}} if plan.looks else {}),
        'image': [IMAGE_W, IMAGE_H], 'code': provenance.code_version(),
        # A looking policy's world renders every step and labelled_run keeps every stride-th
        # from the first (before issue 42's round 8: from the stride-th, 4 steps late), so a
        # cache made by the old rule is not reused.
        **({'kept_frames': 'steps 1, 1 + stride, ...'} if looking else {})}


def collect(worlds: Sequence[str], task_names: Sequence[str], policies: Sequence[str],
            seeds: Sequence[int], max_steps: int = 200, appearance_file: str = '',
            camera: str = 'exterior_1', stride: int = 5,
            on_episode: Callable[[LabelledEpisode], None] | None = None,
            look: str = '') -> list[LabelledEpisode]:
    """Run every (world, task, policy, seed) episode in process and label its frames.

    The world renders ``camera`` at 320x180 (the episode videos' size) only on every
    ``stride``-th control step (15 Hz / 5 = 3 frames per second), which is resized to the
    scorer's 64x36; the label of each frame is the rubric's stages met at that step.
    ``appearance_file`` gives the digital real its hidden look (the twin never reads it);
    ``look`` is the label its episodes keep (``lab:SEED``).
    """
    from realm_ros.core.world import make_world

    for name in task_names:
        tasks.get_task(name)
    out: list[LabelledEpisode] = []
    looking = policy_cameras(policies)
    for world_name in worlds:
        world = make_world(world_config(world_name, appearance_file, camera, stride, looking))
        try:
            for label, name, seed, run in policy_runs(
                    world, policies, task_names, seeds, max_steps, (camera,),
                    stride if looking else 0):
                if not run.frames[camera]:
                    continue
                episode = labelled_episode(name, world_name, label, seed, run.frames[camera],
                                           run.times, run.met, look, run.now)
                out.append(episode)
                if on_episode is not None:
                    on_episode(episode)
        finally:
            world.close()
    return out


def policy_runs(world: Any, policies: Sequence[str], task_names: Sequence[str],
                seeds: Sequence[int], max_steps: int, cameras: Sequence[str], every: int = 0
                ) -> Iterator[tuple[str, str, int, LabelledRun]]:
    """Run every (policy, task, seed) episode in ``world`` (each policy entry made once,
    through the standard chain, closed after its episodes); yield ``(policy label, task,
    seed, run)``, the run as :func:`labelled_run` keeps it."""
    from realm_ros.core.evaluation import PolicyEntry
    from realm_ros.core.policy import make_policy, standard_chain
    from realm_ros.core.types import EpisodeSpec

    for text in policies:
        entry = PolicyEntry.parse(text)
        inner = make_policy(entry.policy, common={'seed': 0}, **dict(entry.args))
        policy = standard_chain(inner, execute=inner.needs.horizon)
        for name in task_names:
            for seed in seeds:
                spec = EpisodeSpec(task=name, seed=int(seed), policy=entry.label,
                                   max_steps=max_steps)
                yield entry.label, name, int(seed), labelled_run(world, policy, spec, cameras,
                                                                 every)
        policy.close()


def labelled_episode(task: str, world: str, policy: str, seed: int,
                     frames: Sequence[np.ndarray], times: Sequence[float], met: Sequence[int],
                     look: str = '', now: Sequence[Sequence[bool]] | None = None,
                     measures: Sequence[Sequence[float]] | None = None) -> LabelledEpisode:
    """One camera's kept frames of a :func:`labelled_run` as a :class:`LabelledEpisode`
    (times from the episode's first kept frame; ``now``: each frame's stage predicates;
    ``measures``: their measures)."""
    return LabelledEpisode(task=task, world=world, policy=policy, seed=int(seed),
                           frames=np.stack(frames), times_s=np.asarray(times) - times[0],
                           met=np.asarray(met, dtype=np.int64),
                           n_stages=len(tasks.get_task(task).stages), look=look,
                           now=None if now is None else np.asarray(now, dtype=bool),
                           measures=None if measures is None
                           else np.asarray(measures, dtype=np.float32))


@dataclasses.dataclass
class LabelledRun:
    """One episode as :func:`labelled_run` keeps it: each camera's small frames, their times,
    the rubric's stages met (sticky), each stage's predicate in the frame's window and each
    stage's measure, the least in the window (NaN where a stage has none)."""

    frames: dict[str, list[np.ndarray]]
    times: list[float]
    met: list[int]
    now: list[list[bool]]
    measures: list[list[float]] = dataclasses.field(default_factory=list)


def labelled_run(world: Any, policy: Any, spec: Any, cameras: Sequence[str], every: int = 0
                 ) -> LabelledRun:
    """Run one episode; return each camera's rendered frames (small), their times, stages
    met and stage predicates (:class:`LabelledRun`), kept at the steps where every one of
    ``cameras`` rendered: every such step, or (``every`` > 0, the world rendering each step for
    a policy that looks) every ``every``-th from the episode's first: steps 1, 1 + every, ...,
    the steps a world rendering every ``every``-th step renders, so a policy that looks gives
    the scorer the frames a blind one does (until round 8 of issue 42 steps every, 2 every, ...
    were kept: the first frame 4 steps late).

    A frame's predicates (issue 42, round 13) are the scored task's stage predicates
    (``tasks.stage_predicates`` on the step's privileged state, the rubric's own, order
    ignored), each true if it held at any control step of the frame's window: the steps after
    the previous kept frame up to this one (the reset's state, which the rubric scores too,
    joins the first frame's window), so a touch between two frames is seen by the frame after
    it, as the rubric's sticky count sees it. A frame's measures (round 16) are each stage's
    ``tasks.stage_measures`` (the distance its predicate thresholds), the least over the same
    window (NaN for a stage that has none)."""
    from realm_ros.core import robot
    from realm_ros.core.episode import make_tracker, run_episode

    tracker = make_tracker(spec.task, spec)
    task = None if tracker is None else tracker.task
    frames: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
    times: list[float] = []
    met: list[int] = []
    now: list[list[bool]] = []
    measures: list[list[float]] = []
    window = [False] * (0 if task is None else len(task.stages))
    least = [math.nan] * len(window)

    def see(state: Any) -> None:
        if task is not None and state:
            holds = tasks.stage_predicates(task, state)
            window[:] = [a or holds[s] for a, s in zip(window, task.stages)]
            values = tasks.stage_measures(task, state)
            least[:] = [float(np.fmin(a, values[s])) for a, s in zip(least, task.stages)]

    def on_step(step: int, obs: Any, action: Any, progress: Any) -> None:
        see(obs.privileged)
        if all(c in obs.images for c in cameras) and (not every or (step - 1) % every == 0):
            for c in cameras:
                frames[c].append(small_frame(obs.images[c]))
            times.append(step / robot.CONTROL_HZ)
            met.append(int(sum(progress.met)))
            now.append(list(window))
            measures.append(list(least))
            window[:] = [False] * len(window)
            least[:] = [math.nan] * len(least)

    run_episode(world, policy, spec, on_step=on_step,
                on_reset=lambda obs: see(obs.privileged))
    return LabelledRun(frames, times, met, now, measures)


def sticky_counts(now: np.ndarray) -> np.ndarray:
    """Return the stages met at each frame from each frame's (T, N) stage predicates, by the
    rubric's own rule (``tasks.ProgressTracker``): at each frame the stages are checked in
    order, stopping at the first unmet one whose predicate does not hold; a met stage stays
    met. On a :func:`labelled_run`'s windows it reproduces the rubric's sticky count except
    where, within one window, a stage's predicate held only at steps before the stage before
    it was first met (counted here, not by the rubric)."""
    now = np.asarray(now, dtype=bool)
    met = np.zeros(now.shape[1] if now.ndim == 2 else 0, dtype=bool)
    out = np.zeros(len(now), dtype=np.int64)
    for t, row in enumerate(now):
        for i, holds in enumerate(row):
            if met[i]:
                continue
            if not holds:
                break
            met[i] = True
        out[t] = int(np.argmin(met)) if not met.all() else len(met)
    return out


def labelled_from_video(frames: Sequence[np.ndarray], times_s: Sequence[float], task: str,
                        stage_times_s: Sequence[float], look: str = '',
                        fps: float = SAMPLE_FPS) -> LabelledEpisode:
    """Return a video's episode labelled by a person's stage marks: frames sampled at ``fps``
    (as the scorer reads them), each labelled with the stages whose mark time (seconds from the
    video's first frame, in the rubric's order) is at or before it.

    Raises:
        DataError: an unknown task, more marks than its stages, marks out of order, fewer than
            two sampled frames, or frames that are not RGB.
    """
    n = len(tasks.get_task(task).stages)
    marks = [float(t) for t in stage_times_s]
    if len(marks) > n:
        raise DataError(f'{len(marks)} stage times for {task}, which has {n} stages')
    if any(b < a for a, b in zip(marks, marks[1:])):
        raise DataError(f"stage times {marks} are not in order (the rubric's stages are)")
    if len(frames) != len(times_s) or not len(frames):
        raise DataError('a labelled video needs one time per frame and at least one frame')
    indices = scoring.sample_indices(times_s, fps)
    if len(indices) < 2:
        raise DataError(f'a video of {float(times_s[-1]) - float(times_s[0]):.2f} s: the '
                        f'learned scorer needs two frames at {fps:g} per second')
    t0 = float(times_s[0])
    times = np.asarray([float(times_s[i]) - t0 for i in indices])
    met = np.asarray([sum(1 for m in marks if m <= t + 1e-9) for t in times], dtype=np.int64)
    return LabelledEpisode(task=task, world='video', policy='', seed=0,
                           frames=np.stack([small_frame(frames[i]) for i in indices]),
                           times_s=times, met=met, n_stages=n, look=look)


def save_episodes(path: str | pathlib.Path, episodes: Sequence[LabelledEpisode]) -> None:
    """Write labelled episodes to one compressed ``.npz`` (frames concatenated)."""
    if not episodes:
        raise DataError('no labelled episodes to save')
    lengths = np.asarray([len(e.met) for e in episodes])
    meta = np.asarray([[e.task, e.world, e.policy, str(e.seed), str(e.n_stages), e.look]
                       for e in episodes])
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # One partial file per process: two processes joining one plan's cache at once (the last
    # collect shares and a bench started beside it) each write their own, the same content.
    partial = path.with_name(f'{path.name}.{os.getpid()}.partial.npz')
    # Each frame's stage predicates (round 13), padded to MAX_STAGES, only if every episode
    # has them (a file without ``now`` loads with ``now`` None, as before).
    now = ({'now': np.concatenate([e.now_padded(bool) for e in episodes])}
           if all(e.now is not None for e in episodes) else {})
    # Each frame's stage measures (round 16), padded with NaN, only if every episode has them.
    if all(e.measures is not None for e in episodes):
        now['measures'] = np.concatenate([e.measures_padded() for e in episodes])
    np.savez_compressed(partial, frames=np.concatenate([e.frames for e in episodes]),
                        times_s=np.concatenate([e.times_s for e in episodes]),
                        met=np.concatenate([e.met for e in episodes]), lengths=lengths,
                        meta=meta, **now)
    partial.replace(path)


def load_episodes(path: str | pathlib.Path) -> list[LabelledEpisode]:
    """Read :func:`save_episodes` output."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise DataError(f'labelled episodes {path} do not exist')
    with np.load(path) as data:
        try:
            frames, times, met = data['frames'], data['times_s'], data['met']
            lengths, meta = data['lengths'], data['meta']
            now = data['now'] if 'now' in data.files else None
            measures = data['measures'] if 'measures' in data.files else None
        except KeyError as err:
            raise DataError(f'{path}: not a labelled-episode file (no {err})') from None
    out = []
    start = 0
    for n, row in zip(lengths, meta):
        task, world, policy, seed, n_stages = row[:5]
        end = start + int(n)
        out.append(LabelledEpisode(task=str(task), world=str(world), policy=str(policy),
                                   seed=int(seed), frames=frames[start:end],
                                   times_s=times[start:end], met=met[start:end],
                                   n_stages=int(n_stages),
                                   look=str(row[5]) if len(row) > 5 else '',
                                   now=None if now is None
                                   else now[start:end, :int(n_stages)],
                                   measures=None if measures is None
                                   else measures[start:end, :int(n_stages)]))
        start = end
    return out


# -- the network --------------------------------------------------------------------------------

def _torch() -> Any:
    try:
        import torch
    except ImportError as err:
        raise ImportError('the learned progress scorer needs torch (pip install '
                          "'realm_ros[torch]')", name='torch') from err
    return torch


def build_net(n_tasks: int, width: int = 16, diff: bool = False, pool: str = 'mean',
              cameras: int = 1, head: str = 'count', measures: bool = False) -> Any:
    """Return the scorer's network (see the module docstring).

    ``diff``: the input has a third image, the current frame minus the first (9 channels, not
    6); ``pool``: ``'flat'`` keeps where things are (the last 3x4 feature map flattened),
    ``'mean'`` (the first checkpoint's) averages it away; ``cameras``: how many cameras' images
    it reads, each through its own convolutions (``conv`` the first's, ``towers`` the others'),
    their features concatenated before the MLP; ``head`` (:data:`HEADS`): ``'count'``, one
    logit per stage count 0..MAX_STAGES (softmax), or ``'now'``, one per stage (sigmoid: the
    stage's predicate holds in this frame); ``measures`` (issue 42, round 16): an added linear
    output on the head's hidden layer, one per stage (``measure``: the stage's measure,
    :data:`MEASURE_SCALE` units, trained only; ``forward(..., measures=True)`` returns it
    beside the head's output, which does not depend on it).
    """
    torch = _torch()
    nn = torch.nn
    if pool not in POOLS:
        raise ConfigError(f'pool must be one of {POOLS}, got {pool!r}')
    if head not in HEADS:
        raise ConfigError(f'head must be one of {HEADS}, got {head!r}')
    outputs = MAX_STAGES + 1 if head == 'count' else MAX_STAGES

    class ScorerNet(nn.Module):  # type: ignore[name-defined]  # nn is a local alias of torch.nn
        def __init__(self) -> None:
            super().__init__()
            self.conv = tower()
            if cameras > 1:  # only then, so a one-camera checkpoint's weights keep their names
                self.towers = nn.ModuleList([tower() for _ in range(cameras - 1)])
            self.task = nn.Embedding(max(1, n_tasks), 16)
            features = cameras * 4 * width * (_FEATURE_H * _FEATURE_W if pool == 'flat' else 1)
            self.head = nn.Sequential(nn.Linear(features + 16, 64), nn.ReLU(),
                                      nn.Linear(64, outputs))
            if measures:  # only then, so every other checkpoint's weights are as before
                self.measure = nn.Linear(64, MAX_STAGES)

        def forward(self, images: Any, task: Any, measures: bool = False) -> Any:
            convs = [self.conv, *(self.towers if cameras > 1 else [])]
            parts = []
            for conv, block in zip(convs, images.chunk(cameras, dim=1)):
                x = conv(block)
                parts.append(x.flatten(1) if pool == 'flat' else x.mean(dim=(2, 3)))
            features = torch.cat([*parts, self.task(task)], dim=1)
            if not measures:
                return self.head(features)
            hidden = self.head[1](self.head[0](features))
            return self.head[2](hidden), self.measure(hidden)

    def tower() -> Any:
        chans = [9 if diff else 6, width, 2 * width, 4 * width, 4 * width]
        layers: list[Any] = []
        for a, b in zip(chans, chans[1:]):
            layers += [nn.Conv2d(a, b, 3, stride=2, padding=1), nn.GroupNorm(4, b), nn.ReLU()]
        return nn.Sequential(*layers)

    return ScorerNet()


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """What the network reads of a (current, first) frame pair (a checkpoint's ``config``):
    ``cameras`` cameras' images, each pair ``normalise``-d by its first frame's per-channel mean
    and spread (so a camera's light, white balance and exposure cancel), with the current
    minus the first appended (``diff``)."""

    diff: bool = False
    normalise: bool = False
    cameras: int = 1

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> InputSpec:
        return cls(bool(config.get('diff', False)), bool(config.get('normalise', False)),
                   len(config.get('cameras', ('exterior_1',))))


#: Least per-channel spread a first frame is divided by when normalised (of [-1, 1] values).
_MIN_SPREAD = 0.02


def _pairs(torch: Any, current: np.ndarray, first: np.ndarray, cameras: int = 1) -> Any:
    """(B, H, W, 3K) uint8 current and first frames of K cameras -> (B, 6K, H, W) float in
    [-1, 1], per camera its current then its first frame's RGB."""
    blocks = [np.concatenate([current[..., 3 * k:3 * k + 3], first[..., 3 * k:3 * k + 3]],
                             axis=-1) for k in range(cameras)]
    x = np.concatenate(blocks, axis=-1).astype(np.float32) / 127.5 - 1.0
    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))


def _prepare(torch: Any, pairs: Any, spec: InputSpec) -> Any:
    """(B, 6K, H, W) pairs (:func:`_pairs`, augmented or not) -> the network's input: per
    camera, normalised (``spec.normalise``) and with current minus first appended
    (``spec.diff``: 9 channels a camera, else 6)."""
    out = []
    for pair in pairs.chunk(spec.cameras, dim=1):
        current, first = pair[:, :3], pair[:, 3:]
        if spec.normalise:
            mean = first.mean(dim=(2, 3), keepdim=True)
            spread = first.std(dim=(2, 3), keepdim=True).clamp_min(_MIN_SPREAD)
            current, first = (current - mean) / spread, (first - mean) / spread
        out += [current, first] + ([current - first] if spec.diff else [])
    return torch.cat(out, dim=1)


def _inputs(torch: Any, current: np.ndarray, first: np.ndarray,
            spec: InputSpec = InputSpec()) -> Any:
    """(B, H, W, 3K) uint8 current and first frames -> the network's input (:func:`_prepare`):
    with the defaults (B, 6, H, W) in [-1, 1]; with ``diff`` a third image, current minus first,
    in [-2, 2]."""
    return _prepare(torch, _pairs(torch, current, first, spec.cameras), spec)


#: What a network's output reads (``TrainConfig.head``; a checkpoint without it: ``count``):
#: ``count``, the stages met (softmax over 0..N, trained on the rubric's sticky count), or
#: ``now`` (issue 42, round 13), each stage's predicate in this frame (a sigmoid per stage,
#: trained on ``LabelledEpisode.now``), the count read back by :func:`decode_now`.
HEADS = ('count', 'now')


def head_of(config: Mapping[str, Any]) -> str:
    """A checkpoint config's head (:data:`HEADS`); ``count`` for one from before round 13."""
    return str(config.get('head', 'count'))


def _masked(torch: Any, logits: Any, n_stages: Any) -> Any:
    classes = torch.arange(MAX_STAGES + 1, device=logits.device).unsqueeze(0)
    return logits.masked_fill(classes > n_stages.unsqueeze(1), -1e9)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Training settings (kept in the checkpoint)."""

    epochs: int = 20
    batch: int = 128
    lr: float = 3e-3
    weight_decay: float = 1e-4
    width: int = 16
    seed: int = 0
    threads: int = 1
    device: str = 'cpu'  # 'cuda' trains on a GPU (the checkpoint is the same format)
    diff: bool = False  # a third input image: the current frame minus the first
    pool: str = 'mean'  # 'flat' keeps the last feature map's layout (see build_net)
    class_weight_power: float = 0.5  # class weights (inverse frequency) ** this; 0: none
    # Colour jitter of a training pair, the same for both frames (a camera's white balance,
    # exposure and contrast): per-channel gains in 1 +- this, an offset in +- this / 2 and a
    # contrast in 1 +- this; 0: the brightness gain only (the first checkpoints').
    colour_jitter: float = 0.0
    #: The cameras it reads, in the order of a frame's stacked RGB (one tower each; build_net).
    cameras: tuple[str, ...] = ('exterior_1',)
    #: Each frame pair divided by its first frame's per-channel mean and spread (InputSpec).
    normalise: bool = False
    #: What the output reads (:data:`HEADS`); ``now``: binary cross-entropy per stage on the
    #: episodes' ``now`` predicates, a positive weight of (negatives / positives) ** the
    #: ``class_weight_power`` per stage (the count head's class weights' counterpart).
    head: str = 'count'
    #: Issue 42, round 16: the weight of an auxiliary loss, Huber (:data:`MEASURE_HUBER`) between
    #: an added output (``build_net``'s ``measures``) and each frame's stage measures
    #: (``LabelledEpisode.measures``, :func:`measure_targets`), beside a now-head's binary
    #: cross-entropy; 0: no added output, the training and checkpoint as before.
    measure_weight: float = 0.0


#: Issue 42, round 16: a stage measure (m) as the auxiliary loss's target: clipped to
#: MEASURE_CLIP (beyond it the distance does not matter to the rubric) and divided by
#: MEASURE_SCALE (REACH's threshold is 1.0); Huber's delta in those units. Fixed before training.
MEASURE_CLIP = 0.30
MEASURE_SCALE = 0.10
MEASURE_HUBER = 1.0


def measure_targets(measures: np.ndarray) -> np.ndarray:
    """(F, MAX_STAGES) stage measures in m (NaN where none) -> the auxiliary loss's targets:
    min(measure, MEASURE_CLIP) / MEASURE_SCALE, NaN kept."""
    values = np.asarray(measures, dtype=np.float32)
    return np.minimum(values, MEASURE_CLIP) / MEASURE_SCALE


def config_dict(config: TrainConfig) -> dict[str, Any]:
    """A checkpoint's ``config`` entry: the settings, ``measure_weight`` only where it is set
    (so a checkpoint trained without it is as before round 16)."""
    out = dataclasses.asdict(config)
    if not out['measure_weight']:
        del out['measure_weight']
    return out


def _measure_loss(torch: Any, predicted: Any, target: Any, n: Any) -> Any:
    """The auxiliary loss: Huber (delta MEASURE_HUBER) over the entries of the task's stages
    that have a measure (``target`` not NaN), their mean (0 where none has)."""
    keep = (torch.arange(MAX_STAGES, device=predicted.device).unsqueeze(0) < n.unsqueeze(1)) \
        & ~torch.isnan(target)
    if not bool(keep.any()):
        return predicted.sum() * 0.0
    return torch.nn.functional.huber_loss(predicted[keep], target[keep], delta=MEASURE_HUBER)


#: The settings ``realm-ros score train`` trains with: the network and class weights chosen on
#: a validation split of the default look's training episodes (seeds VALIDATION_SEEDS), on the
#: default look and TRAIN_LOOKS with colour jitter, 10 epochs (about as many steps as 40 on the
#: default look alone; 23 minutes on 2 shared CPU cores). Neither the checkpoint they train
#: from scratch nor the one fine-tuned from the default (``--init``) beat the default on the
#: held-out looks in both Pearson r and success accuracy, so the default keeps its weights and
#: the fine-tuned one ships beside it (LOOKS_CHECKPOINT; docs/scoring.md).
SHIPPED = TrainConfig(epochs=10, diff=True, pool='flat', colour_jitter=0.2)
#: The plans ``realm-ros score train`` trains the shipped checkpoint on.
TRAIN_PLANS = ('train', 'train_looks')
#: The training plan's seeds held back for validation (``realm-ros score train --validate``).
VALIDATION_SEEDS = (6, 7)


def split(episodes: Sequence[LabelledEpisode], seeds: Sequence[int] = VALIDATION_SEEDS
          ) -> tuple[list[LabelledEpisode], list[LabelledEpisode]]:
    """Return (episodes not of ``seeds``, episodes of ``seeds``): a validation split of the
    training episodes by seed (whole episodes, so no frame of a validation episode is seen)."""
    keep = set(int(s) for s in seeds)
    return ([e for e in episodes if e.seed not in keep], [e for e in episodes if e.seed in keep])


def train(episodes: Sequence[LabelledEpisode], config: TrainConfig = TrainConfig(),
          log: Callable[[str], None] | None = None,
          init: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Train a scorer on ``episodes`` and return its checkpoint dict (CPU, deterministic for a
    seed and thread count); ``init``: a checkpoint (of the same network and tasks) whose
    weights it starts from (fine-tuning) instead of random ones."""
    if not episodes:
        raise DataError('no labelled episodes to train on')
    torch = _torch()
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    rng = np.random.default_rng(config.seed)
    task_names = sorted({e.task for e in episodes})
    stages = {name: list(tasks.get_task(name).stages) for name in task_names}
    spec = InputSpec.of(dataclasses.asdict(config))
    now = config.head == 'now'
    if now and any(e.now is None for e in episodes):
        raise DataError("a now-head trains on each frame's stage predicates: episodes "
                        'collected before round 13 have none (collect them again)')
    aux = config.measure_weight > 0
    if aux and (not now or any(e.measures is None for e in episodes)):
        raise DataError("measure_weight: a now-head's auxiliary loss trains on each frame's "
                        'stage measures: episodes collected before round 16 have none')
    padded, labels, task_ids, n_stages = _frame_tensors(torch, episodes, task_names,
                                                        spec.cameras, now)
    device = torch.device(config.device)
    net = build_net(len(task_names), config.width, config.diff, config.pool, spec.cameras,
                    config.head, aux)
    if init is not None:
        one_network(init, 'init')
        if list(init['tasks']) != task_names:
            raise DataError(f'--init: its tasks {list(init["tasks"])} are not {task_names}')
        if head_of(init['config']) != config.head:
            raise DataError(f'--init: a {head_of(init["config"])}-head checkpoint; this trains '
                            f'a {config.head}-head')
        weights = _float32(init['state_dict'])
        if aux and not any(k.startswith('measure.') for k in weights):
            # A network without the added output (round 16 fine-tunes n_now's): it starts new.
            weights.update({k: v for k, v in net.state_dict().items()
                            if k.startswith('measure.')})
        net.load_state_dict(weights)
    net = net.to(device)
    labels, task_ids, n_stages = labels.to(device), task_ids.to(device), n_stages.to(device)
    if aux:
        targets = torch.from_numpy(measure_targets(np.concatenate(
            [e.measures_padded() for e in episodes]))).to(device)
    optimiser = torch.optim.AdamW(net.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)
    steps_per_epoch = max(1, math.ceil(len(labels) / config.batch))
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=config.lr,
                                                   total_steps=config.epochs * steps_per_epoch)
    if now:
        now_loss = _now_loss(torch, labels, n_stages, config.class_weight_power, device)
    else:
        count_loss = torch.nn.CrossEntropyLoss(
            weight=_class_weights(torch, labels, config.class_weight_power).to(device))
    history = []
    net.train()
    for epoch in range(config.epochs):
        order = rng.permutation(len(labels))
        total = 0.0
        for k in range(steps_per_epoch):
            idx = order[k * config.batch:(k + 1) * config.batch]
            x = _prepare(torch, _augment(torch, padded[torch.from_numpy(idx)], rng,
                                         config.colour_jitter, spec.cameras), spec)
            if aux:
                out, measured = net(x.to(device), task_ids[idx], measures=True)
            else:
                out = net(x.to(device), task_ids[idx])
            loss = now_loss(out, labels[idx], n_stages[idx]) if now else \
                count_loss(_masked(torch, out, n_stages[idx]), labels[idx])
            if aux:
                loss = loss + config.measure_weight * _measure_loss(
                    torch, measured, targets[idx], n_stages[idx])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += float(loss.item()) * len(idx)
        history.append(total / len(labels))
        if log is not None:
            log(f'epoch {epoch + 1}/{config.epochs}: loss {history[-1]:.4f}')
    state = {k: v.detach().cpu().to(torch.float16) if v.is_floating_point() else v.cpu()
             for k, v in net.state_dict().items()}
    checkpoint = {'format': FORMAT, 'config': config_dict(config), 'tasks': task_names,
                  'stages': stages, 'state_dict': state,
                  'meta': {'episodes': len(episodes), 'frames': int(len(labels)),
                           'worlds': sorted({e.world for e in episodes}),
                           'looks': len({(e.world, e.look) for e in episodes}),
                           'policies': sorted({e.policy for e in episodes}),
                           'loss': history}}
    # What its training looks look like to it, to say when an episode's look is far from them.
    checkpoint['look_stats'] = look_stats(LearnedScorer(checkpoint), episodes)
    return checkpoint


#: Most pixels a training pair is shifted by (each way).
_SHIFT = 2


def _float32(state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's weights (stored as float16) as float32 tensors to load into a network."""
    return {k: v.float() if v.is_floating_point() else v for k, v in state_dict.items()}


def networks(checkpoint: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The weights of each network a checkpoint holds: one, or an ensemble's several."""
    if 'state_dicts' in checkpoint:
        return list(checkpoint['state_dicts'])
    return [checkpoint['state_dict']]


def one_network(checkpoint: Mapping[str, Any], what: str) -> None:
    """Refuse, in one line naming ``what``, an ensemble checkpoint where one network is
    trained from it (``score train --init``, ``score calibrate``).

    Raises:
        ConfigError: the checkpoint holds more than one network.
    """
    count = len(networks(checkpoint))
    if count > 1:
        raise ConfigError(f'{what}: an ensemble of {count} networks; this trains one network '
                          'from one: give one of its members (docs/scoring.md, "Round 4")')


def calibratable(checkpoint: Mapping[str, Any], what: str) -> None:
    """Refuse, in one line naming ``what``, a checkpoint :func:`calibrate` cannot adapt: a
    now-head's (a person's stage marks give the sticky count, not what each frame shows), then
    an ensemble (:func:`one_network`).

    Raises:
        ConfigError: a now-head, or more than one network.
    """
    head = head_of(checkpoint['config'])
    if head != 'count':
        raise ConfigError(f'{what}: a {head}-head checkpoint, and stage marks label a count '
                          'head only: calibrate a count-head network, e.g. --checkpoint '
                          'realm_ros/data/progress_scorer_families.pt (docs/scoring.md, '
                          '"Per-lab calibration")')
    one_network(checkpoint, what)


def _net_from(checkpoint: Mapping[str, Any], state_dict: Mapping[str, Any] | None = None
              ) -> Any:
    """The network a checkpoint describes (its ``config`` and ``tasks``), with its weights
    (``state_dict``: one of an ensemble's; by default the checkpoint's one network)."""
    if state_dict is None:
        one_network(checkpoint, 'the checkpoint')
        state_dict = checkpoint['state_dict']
    config = checkpoint['config']
    net = build_net(len(checkpoint['tasks']), int(config.get('width', 16)),
                    bool(config.get('diff', False)), str(config.get('pool', 'mean')),
                    InputSpec.of(config).cameras, head_of(config),
                    any(str(k).startswith('measure.') for k in state_dict))
    net.load_state_dict(_float32(state_dict))
    return net


#: What must be equal for checkpoints to be one ensemble: what the networks read and are.
_ENSEMBLE_KEYS = ('width', 'diff', 'pool', 'cameras', 'normalise')


def ensemble(checkpoints: Sequence[Mapping[str, Any]], names: Sequence[str] = ()
             ) -> dict[str, Any]:
    """Return one checkpoint holding the networks of ``checkpoints`` (each one network, all
    of one :class:`InputSpec`, network and tasks): :class:`LearnedScorer` averages their stage
    probabilities. It keeps the first's ``config`` and ``look_stats`` (the look check reads the
    first network) and names its members (``names``, e.g. their scorer names) in ``meta``.
    It reads with the default decoder whatever decoder its members carry: give it one with
    :func:`with_decoder` (``bench/scorer_cameras.py``'s variants do).

    Raises:
        DataError: fewer than two checkpoints, an ensemble among them, or members that differ
            in what they read (cameras, normalisation, difference image), network or tasks.
    """
    if len(checkpoints) < 2:
        raise DataError(f'an ensemble needs at least two checkpoints, got {len(checkpoints)}')
    first = checkpoints[0]
    for k, other in enumerate(checkpoints):
        if len(networks(other)) != 1:
            raise DataError(f'ensemble member {k}: already an ensemble')
        if head_of(other['config']) != head_of(first['config']):
            raise DataError(f'ensemble member {k}: a {head_of(other["config"])}-network with a '
                            f'{head_of(first["config"])}-network; an ensemble averages one kind '
                            'of output (docs/scoring.md, "Round 13")')
        for key in _ENSEMBLE_KEYS:
            if other['config'].get(key) != first['config'].get(key):
                raise DataError(f'ensemble member {k}: config {key} {other["config"].get(key)!r}'
                                f", not the first member's {first['config'].get(key)!r}")
        if list(other['tasks']) != list(first['tasks']) or other['stages'] != first['stages']:
            raise DataError(f'ensemble member {k}: tasks {list(other["tasks"])}, not the first '
                            f"member's {list(first['tasks'])}")
    out = {'format': FORMAT, 'config': dict(first['config']), 'tasks': list(first['tasks']),
           'stages': dict(first['stages']),
           'state_dicts': [c['state_dict'] for c in checkpoints],
           'meta': {'ensemble': list(names) or [f'member {k}' for k in range(len(checkpoints))],
                    'members': [dict(c.get('meta', {})) for c in checkpoints]}}
    if first.get('look_stats'):
        out['look_stats'] = first['look_stats']
    return out


def members(checkpoint: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return a checkpoint's networks as one-network checkpoints (one for a single network's,
    that checkpoint; an ensemble's members in order), so several ensembles' networks become one
    :func:`ensemble` of them all (issue 42, round 12). Each keeps the ensemble's ``config``,
    ``tasks`` and ``stages`` and its own ``meta`` where the ensemble kept it; only the first
    keeps ``look_stats`` (an ensemble keeps its first member's)."""
    if 'state_dicts' not in checkpoint:
        return [dict(checkpoint)]
    metas = list(checkpoint.get('meta', {}).get('members', ()))
    out = []
    for k, state_dict in enumerate(checkpoint['state_dicts']):
        one = {'format': checkpoint.get('format', FORMAT), 'config': dict(checkpoint['config']),
               'tasks': list(checkpoint['tasks']), 'stages': dict(checkpoint['stages']),
               'state_dict': state_dict, 'meta': dict(metas[k]) if k < len(metas) else {}}
        if k == 0 and checkpoint.get('look_stats'):
            one['look_stats'] = checkpoint['look_stats']
        out.append(one)
    return out


def _frame_tensors(torch: Any, episodes: Sequence[LabelledEpisode], task_names: list[str],
                   cameras: int = 1, now: bool = False) -> tuple[Any, Any, Any, Any]:
    """Every (current, first) frame pair of ``episodes`` once, as a padded float tensor a batch
    is cut from (``_augment``), with each frame's stage label (``now``: its (MAX_STAGES,)
    stage predicates, 0 past the task's stages), task index and stage count; ``cameras``: how
    many cameras' RGB each frame stacks (it must have 3 x that channels)."""
    channels = {int(e.frames.shape[-1]) for e in episodes}
    if channels != {3 * cameras}:
        raise DataError(f'episodes of {sorted(channels)} channels; a scorer of {cameras} '
                        f'camera(s) reads {3 * cameras}')
    current = np.concatenate([e.frames for e in episodes])
    first = np.concatenate([np.repeat(e.frames[:1], len(e.frames), axis=0) for e in episodes])
    pairs = _pairs(torch, current, first, cameras)
    padded = torch.nn.functional.pad(pairs, (_SHIFT, _SHIFT, _SHIFT, _SHIFT), mode='replicate')
    if now:
        labels = torch.from_numpy(np.concatenate([e.now_padded(np.float32) for e in episodes]))
    else:
        labels = torch.from_numpy(np.concatenate([e.met for e in episodes]).astype(np.int64))
    task_ids = torch.from_numpy(np.concatenate(
        [np.full(len(e.met), task_names.index(e.task)) for e in episodes]).astype(np.int64))
    n_stages = torch.from_numpy(np.concatenate(
        [np.full(len(e.met), e.n_stages) for e in episodes]).astype(np.int64))
    return padded, labels, task_ids, n_stages


def _class_weights(torch: Any, labels: Any, power: float) -> Any:
    """Cross-entropy weights (total / count) ** ``power`` per stage count (0 where a count never
    occurs): stage counts are unbalanced (most frames sit at 0 or at the last stage)."""
    counts = np.bincount(labels.cpu().numpy(), minlength=MAX_STAGES + 1).astype(float)
    return torch.tensor(np.where(counts > 0, (counts.sum() / np.maximum(counts, 1)) ** power,
                                 0.0), dtype=torch.float32)


def now_pos_weights(labels: np.ndarray, n_stages: np.ndarray, power: float) -> np.ndarray:
    """The weight a now-head's loss gives each stage's positives (:func:`_now_loss`): from the
    training frames' (F, MAX_STAGES) 0/1 stage ``labels`` and each frame's task's ``n_stages``
    (F,), per stage index (pooled over the tasks that have it) (negatives / positives) **
    ``power``; 1 for a stage never or always true."""
    labels = np.asarray(labels, dtype=float)
    mask = (np.arange(MAX_STAGES)[None, :] < np.asarray(n_stages)[:, None]).astype(float)
    positives = (labels * mask).sum(axis=0)
    negatives = ((1 - labels) * mask).sum(axis=0)
    return np.where((positives > 0) & (negatives > 0),
                    (negatives / np.maximum(positives, 1)) ** power, 1.0)


def prior_thresholds(weights: Sequence[float]) -> tuple[float, ...]:
    """Each stage's threshold corrected for its positives' training ``weights`` (issue 42,
    round 15): binary cross-entropy whose positives count w times estimates the logit
    log(w) + log(p / (1 - p)), so the stage's probability p is above 1/2 where the output is
    above w / (1 + w) (a weight of 1: 0.5, as uncorrected)."""
    return tuple(float(w) / (1.0 + float(w)) for w in weights)


def _now_loss(torch: Any, labels: Any, n_stages: Any, power: float, device: Any
              ) -> Callable[[Any, Any, Any], Any]:
    """A now-head's loss: binary cross-entropy per stage over the task's stages only (mean over
    them), each stage's positives weighted by :func:`now_pos_weights` over the training
    frames."""
    weight = torch.tensor(now_pos_weights(labels.cpu().numpy(), n_stages.cpu().numpy(), power),
                          dtype=torch.float32).to(device)
    bce = torch.nn.BCEWithLogitsLoss(pos_weight=weight, reduction='none')

    def loss(logits: Any, target: Any, n: Any) -> Any:
        keep = (torch.arange(MAX_STAGES, device=logits.device).unsqueeze(0)
                < n.unsqueeze(1)).float()
        return (bce(logits, target) * keep).sum() / keep.sum()

    return loss


# -- per-lab calibration ------------------------------------------------------------------------

#: What a calibration trains: the head (the MLP after the convolutions and the task
#: embedding), the head and the GroupNorm scales and shifts, or every weight.
CALIBRATE_LAYERS = ('head', 'norm', 'all')


@dataclasses.dataclass(frozen=True)
class CalibrateConfig:
    """Settings of a per-lab calibration (kept in the calibrated checkpoint's ``meta``).

    ``steps`` optimiser steps of ``batch`` frames (with replacement, so the same number of steps
    for 2 episodes as for 16), AdamW at a constant ``lr``, the training augmentation (shift,
    brightness, ``colour_jitter``), the same class weights as training (over the lab's frames).
    Chosen on look TUNE_LOOK only (docs/scoring.md, bench/scorer_calibration.py --tune).
    """

    layers: str = 'all'
    steps: int = 150
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-4
    colour_jitter: float = 0.2
    #: A penalty ``anchor * sum((w - w_base) ** 2)`` keeping the weights near the base's.
    anchor: float = 0.1
    seed: int = 0
    threads: int = 1


def _trainable(net: Any, layers: str) -> list[Any]:
    """Return the parameters a calibration of ``layers`` trains (the others are frozen)."""
    if layers not in CALIBRATE_LAYERS:
        raise ConfigError(f'--layers must be one of {CALIBRATE_LAYERS}, got {layers!r}')
    if layers == 'all':
        return list(net.parameters())
    chosen = list(net.head.parameters()) + list(net.task.parameters())
    if layers == 'norm':
        import torch
        chosen += [p for m in net.modules() if isinstance(m, torch.nn.GroupNorm)
                   for p in m.parameters()]
    return chosen


def calibrate(checkpoint: Mapping[str, Any], episodes: Sequence[LabelledEpisode],
              config: CalibrateConfig = CalibrateConfig(),
              base_name: str = '') -> dict[str, Any]:
    """Return ``checkpoint`` adapted to one lab's look from a few of its labelled episodes
    (an operator's stage marks, or the rubric's): its weights fine-tuned (``config.layers``)
    on their frames for ``config.steps`` steps. Seconds on a CPU; deterministic for a seed and
    thread count. The tasks stay the checkpoint's: an episode of another task is refused.

    The calibrated checkpoint keeps the base's ``look_stats`` when only the head is trained (the
    look features do not change), else none (two to sixteen episodes of one look say nothing
    about the spread of looks), and ``meta['calibration']``: the base, the episodes, frames and
    looks, the settings.
    """
    if not episodes:
        raise DataError('no labelled episodes to calibrate on')
    torch = _torch()
    task_names = list(checkpoint['tasks'])
    for e in episodes:
        if e.task not in task_names:
            raise DataError(f'a calibration episode of task {e.task!r}: the checkpoint was '
                            f'trained on {task_names} only')
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    rng = np.random.default_rng(config.seed)
    base = dict(checkpoint)
    calibratable(base, 'calibrate')
    net_config = base['config']
    net = _net_from(base)
    params = _trainable(net, config.layers)
    for p in net.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    spec = InputSpec.of(net_config)
    padded, labels, task_ids, n_stages = _frame_tensors(torch, episodes, task_names,
                                                        spec.cameras)
    loss_fn = torch.nn.CrossEntropyLoss(weight=_class_weights(
        torch, labels, float(net_config.get('class_weight_power', 0.5))))
    optimiser = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    start = [p.detach().clone() for p in params]
    net.train()
    losses = []
    for _ in range(config.steps):
        idx = rng.integers(0, len(labels), size=min(config.batch, len(labels)))
        x = _prepare(torch, _augment(torch, padded[torch.from_numpy(idx)], rng,
                                     config.colour_jitter, spec.cameras), spec)
        loss = loss_fn(_masked(torch, net(x, task_ids[idx]), n_stages[idx]), labels[idx])
        if config.anchor > 0:
            loss = loss + config.anchor * sum(((p - p0) ** 2).sum()
                                              for p, p0 in zip(params, start))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.item()))
    state = {k: v.detach().to(torch.float16) if v.is_floating_point() else v
             for k, v in net.state_dict().items()}
    out = {k: v for k, v in base.items() if k not in ('state_dict', 'meta', 'look_stats')}
    out['state_dict'] = state
    meta = dict(base.get('meta', {}))
    meta['calibration'] = {
        'base': base_name, 'episodes': len(episodes), 'frames': int(len(labels)),
        'looks': sorted({e.look or e.world for e in episodes}),
        'tasks': sorted({e.task for e in episodes}), 'config': dataclasses.asdict(config),
        'loss_first_last': [round(float(np.mean(losses[:10])), 4),
                            round(float(np.mean(losses[-10:])), 4)]}
    out['meta'] = meta
    if config.layers == 'head' and base.get('look_stats'):
        out['look_stats'] = base['look_stats']
    return out


def _augment(torch: Any, padded: Any, rng: np.random.Generator, jitter: float = 0.0,
             cameras: int = 1) -> Any:
    """Cut each padded (current, first) pair (B, 6K, H + 4, W + 4; K ``cameras``, see
    :func:`_pairs`) at the same shift of up to 2 px for every frame and scale each camera's
    pair by one brightness gain in 0.85-1.15 (the same for both frames: what differs between
    them is what moved); with ``jitter``, also one colour transform per camera's pair
    (per-channel gains in 1 +- jitter, an offset in +- jitter / 2, a contrast about the pair's
    mean in 1 +- jitter), again the same for both frames."""
    n = padded.shape[0]
    out = torch.empty((n, padded.shape[1], IMAGE_H, IMAGE_W), dtype=padded.dtype)
    shifts = rng.integers(0, 2 * _SHIFT + 1, size=(n, 2))
    for dy in range(2 * _SHIFT + 1):
        for dx in range(2 * _SHIFT + 1):
            rows = np.flatnonzero((shifts[:, 0] == dy) & (shifts[:, 1] == dx))
            if rows.size:
                index = torch.from_numpy(rows)
                out[index] = padded[index, :, dy:dy + IMAGE_H, dx:dx + IMAGE_W]
    # (n, K, 6, H, W): per camera, its current frame's RGB then its first frame's.
    blocks = out.reshape(n, cameras, 6, IMAGE_H, IMAGE_W)
    gain = rng.uniform(0.85, 1.15, size=(n, cameras, 1, 1, 1))
    x = (blocks + 1.0) * torch.from_numpy(gain.astype(np.float32))  # in [0, 2]
    if jitter > 0:
        channel = rng.uniform(1.0 - jitter, 1.0 + jitter, size=(n, cameras, 3, 1, 1))
        offset = rng.uniform(-jitter / 2, jitter / 2, size=(n, cameras, 3, 1, 1))
        contrast = rng.uniform(1.0 - jitter, 1.0 + jitter, size=(n, cameras, 1, 1, 1))
        both = np.concatenate  # the same transform for the current and the first frame
        channel_t = torch.from_numpy(both([channel, channel], axis=2).astype(np.float32))
        offset_t = torch.from_numpy(both([offset, offset], axis=2).astype(np.float32))
        mean = x.mean(dim=(2, 3, 4), keepdim=True)
        x = (x - mean) * torch.from_numpy(contrast.astype(np.float32)) + mean
        x = x * channel_t + 2.0 * offset_t
    return x.clamp(0.0, 2.0).reshape(out.shape) - 1.0


def save_checkpoint(path: str | pathlib.Path, checkpoint: Mapping[str, Any]) -> None:
    """Write a checkpoint (``torch.save``), atomically."""
    torch = _torch()
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + '.partial')
    torch.save(dict(checkpoint), partial)
    partial.replace(path)


def load_checkpoint(path: str | pathlib.Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (no pickled code)."""
    torch = _torch()
    path = pathlib.Path(path)
    if not path.is_file():
        raise ConfigError(f'scorer checkpoint {path} does not exist')
    try:
        data = torch.load(path, map_location='cpu', weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises many kinds on a bad file
        raise DataError(f'{path}: not a scorer checkpoint ({err})') from None
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise DataError(f'{path}: not a {FORMAT} checkpoint')
    return data


# -- scoring ------------------------------------------------------------------------------------

class LearnedScorer:
    """Scores episodes with a trained checkpoint (a :class:`~realm_ros.core.scoring.ProgressScorer`
    by the registry name ``learned``).

    ``name`` is ``learned:<file stem>@<first 8 hex of the file's sha256>``: the record names the
    exact weights that scored it.
    """

    def __init__(self, checkpoint: str | pathlib.Path | Mapping[str, Any] = DEFAULT_CHECKPOINT,
                 fps: float = SAMPLE_FPS, decoder: Decoder | None = None) -> None:
        torch = _torch()
        if isinstance(checkpoint, Mapping):
            data = dict(checkpoint)
            digest = hashlib.sha256(repr(sorted(data['meta'].items())).encode()).hexdigest()
            stem = 'memory'
        else:
            path = pathlib.Path(checkpoint)
            data = load_checkpoint(path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            stem = path.stem
        #: How it reads its per-frame probabilities (:class:`Decoder`): the checkpoint's
        #: ``decoder`` entry (none: greedy), or one given, which the name then says.
        self.decoder = Decoder.of(data.get('decoder')) if decoder is None else decoder
        self.name = f'learned:{stem}@{digest[:8]}' + (
            '' if decoder is None else f'+{self.decoder.label}')
        self.version = digest[:8]
        self.tasks: list[str] = list(data['tasks'])
        self.stage_names: dict[str, list[str]] = {k: list(v) for k, v in data['stages'].items()}
        self.meta = dict(data.get('meta', {}))
        self.fps = float(fps)
        config = data['config']
        self.spec = InputSpec.of(config)
        #: What its networks' outputs read (:data:`HEADS`): stage counts or stages now.
        self.head = head_of(config)
        if self.head == 'now' and self.decoder.method != 'greedy':
            raise ConfigError(f'decoder method: {self.decoder.method!r}; a now-head checkpoint '
                              "reads its stages by threshold, median and the rubric's order "
                              '(greedy only)')
        self._refuse_thresholds(self.decoder)
        #: The cameras it reads, in the order a frame stacks their RGB (H, W, 3 x this many).
        self.cameras: list[str] = list(config.get('cameras', ('exterior_1',)))
        #: Its networks: one, or an ensemble's (their stage probabilities averaged).
        self.nets = [_net_from(data, weights).eval() for weights in networks(data)]
        self.net = self.nets[0]
        self._refuse_measured(self.decoder)
        self._torch = torch
        stats = data.get('look_stats')
        self.look_stats: dict[str, Any] | None = dict(stats) if stats else None

    def _task(self, task: str) -> tuple[int, int]:
        if task not in self.tasks:
            raise DataError(f'the learned scorer {self.name} was trained on tasks {self.tasks}; '
                            f'it cannot score {task!r}')
        return self.tasks.index(task), len(self.stage_names[task])

    def _check_size(self, frames: Sequence[np.ndarray]) -> None:
        """Refuse frames of another shape than the network's 16:9 (see ASPECT_TOLERANCE)."""
        shapes = {tuple(np.shape(f)[:2]) for f in frames}
        if len(shapes) > 1:
            raise DataError(f'frames of {len(shapes)} sizes; the learned scorer reads one size')
        h, w = next(iter(shapes))
        if h < 1 or abs(w / h / (IMAGE_W / IMAGE_H) - 1.0) > ASPECT_TOLERANCE:
            raise DataError(f'{w}x{h} frames; the learned scorer {self.name} reads 16:9 '
                            'frames (320x180 episode videos, resized to '
                            f'{IMAGE_W}x{IMAGE_H})')

    def stack(self, videos: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
        """Return one episode's frames of each of :attr:`cameras` (in that order, one video
        each, frame k of every video at the same time) as the frames it reads: each frame
        resized to 64x36, the cameras' RGB stacked (64x36x3K).

        Raises:
            DataError: another number of videos than its cameras, videos of different lengths,
                or a camera's frames that are not 16:9 (see ASPECT_TOLERANCE).
        """
        if len(videos) != len(self.cameras):
            raise DataError(f'{len(videos)} camera video(s); the learned scorer {self.name} '
                            f'reads {len(self.cameras)}: {", ".join(self.cameras)}')
        lengths = [len(v) for v in videos]
        if len(set(lengths)) > 1:
            raise DataError(f'camera videos of {lengths} frames ({", ".join(self.cameras)}): '
                            'one episode has one frame per camera at each time')
        for camera, frames in zip(self.cameras, videos):
            try:
                self._check_size(frames)
            except DataError as err:
                raise DataError(f'{camera}: {err}') from None
        return [np.concatenate([small_frame(v[k]) for v in videos], axis=-1)
                for k in range(lengths[0])]

    def probabilities(self, frames: Sequence[np.ndarray], task: str) -> np.ndarray:
        """Return (T, N + 1) probabilities of each stage count for every frame of an episode
        (the first of ``frames`` is its first frame). A now-head's (:attr:`head`): the
        probability that stages 1..c hold in the frame and stage c + 1 does not (its
        per-stage probabilities, :meth:`outputs`, taken as independent), the frame's own
        count, not the rubric's sticky one.

        Raises:
            DataError: a task it was not trained on, frames that are not 16:9, or frames that
                do not stack the RGB of each of its cameras (:attr:`cameras`).
        """
        return self._count_probabilities(self.outputs(frames, task))

    def _count_probabilities(self, outputs: np.ndarray) -> np.ndarray:
        """:meth:`probabilities` from :meth:`outputs` already read."""
        return outputs if self.head == 'count' else prefix_probabilities(
            self._stage_probabilities(outputs))

    def _stage_probabilities(self, outputs: np.ndarray) -> np.ndarray:
        """A now-head's (T, N) stage probabilities of its :meth:`outputs` (the first half
        where its decoder reads the distances, ``measured`` or ``veto``)."""
        return outputs[:, :outputs.shape[1] // 2] if self.decoder.distances else outputs

    def outputs(self, frames: Sequence[np.ndarray], task: str) -> np.ndarray:
        """Return its networks' mean output for every frame of an episode: (T, N + 1) stage
        count probabilities (a count head), or (T, N) probabilities that each stage's predicate
        holds in the frame (a now-head); :meth:`read` decodes either into the count curve. A
        now-head whose decoder reads the distances (``measured``, round 17; ``veto``, round 18):
        (T, 2N), those probabilities, then each stage's :meth:`measures` over its predicate's
        own threshold (:data:`~realm_ros.core.skills.MEASURE_THRESHOLDS`; NaN for a stage
        without one), both from one pass of the networks.

        Raises:
            DataError: as :meth:`probabilities`.
        """
        distances = self.head == 'now' and self.decoder.distances
        stages, metres = self._pass(frames, task, distances)
        if not distances:
            return stages
        cuts = np.array([skills.MEASURE_THRESHOLDS.get(stage, np.nan)
                         for stage in self.stage_names[task]])
        return np.concatenate([stages, metres / cuts], axis=1)

    def _pass(self, frames: Sequence[np.ndarray], task: str, measures: bool
              ) -> tuple[np.ndarray, np.ndarray]:
        """One pass of its networks over an episode's frames: their mean head output ((T, N + 1)
        count probabilities, or a now-head's (T, N) stage probabilities) and, with
        ``measures``, their mean auxiliary output in m ((T, N); else (T, 0))."""
        torch = self._torch
        index, n = self._task(task)
        out, metres = [], []
        with torch.no_grad():
            for x in self._batches(frames):
                ids = torch.full((len(x),), index)
                results: list[tuple[Any, Any]] = [
                    net(x, ids, measures=True) if measures else (net(x, ids), None)
                    for net in self.nets]
                if self.head == 'now':
                    probs = [torch.sigmoid(logits)[:, :n] for logits, _ in results]
                else:
                    probs = [torch.softmax(_masked(torch, logits, torch.full((len(x),), n)),
                                           dim=1)[:, :n + 1] for logits, _ in results]
                out.append(torch.stack(probs).mean(dim=0).numpy())
                if measures:
                    metres.append(torch.stack([m[:, :n] for _, m in results]).mean(dim=0).numpy())
        stages = np.concatenate(out).astype(float)
        if not measures:
            return stages, np.empty((len(stages), 0))
        return stages, np.concatenate(metres).astype(float) * MEASURE_SCALE

    @property
    def has_measures(self) -> bool:
        """Whether every network has the auxiliary distance output (issue 42, round 16)."""
        return all(hasattr(net, 'measure') for net in self.nets)

    def _batches(self, frames: Sequence[np.ndarray]) -> Iterator[Any]:
        """An episode's frames as the networks' inputs, 256 frames a batch."""
        self._check_size(frames)
        small = np.stack([small_frame(f) for f in frames])
        if small.shape[-1] != 3 * len(self.cameras):
            raise DataError(f'frames of {small.shape[-1] // 3} camera(s); the learned scorer '
                            f'{self.name} reads {len(self.cameras)}: {", ".join(self.cameras)}')
        first = np.repeat(small[:1], len(small), axis=0)
        for start in range(0, len(small), 256):
            yield _inputs(self._torch, small[start:start + 256], first[start:start + 256],
                          self.spec)

    def measures(self, frames: Sequence[np.ndarray], task: str) -> np.ndarray:
        """Return its networks' mean auxiliary output (issue 42, round 16) for every frame of an
        episode, in m: (T, N) each stage's measure as the network reads it (clipped at
        MEASURE_CLIP in training; meaningful only for a stage with a measure).

        Raises:
            DataError: a checkpoint without the output, or as :meth:`probabilities`.
        """
        self._task(task)
        if not self.has_measures:
            raise DataError(f'the learned scorer {self.name} has no measure output (round 16)')
        return self._pass(frames, task, True)[1]

    def read(self, outputs: np.ndarray, decoder: Decoder | None = None) -> np.ndarray:
        """Return the stage-count curve of an episode's :meth:`outputs`: :func:`decode` of a
        count head's, :func:`decode_now` of a now-head's (``decoder``: this scorer's unless
        given)."""
        decoder = self.decoder if decoder is None else decoder
        self._refuse_measured(decoder)
        if self.head == 'now':
            probs = self._stage_probabilities(outputs)
            if decoder.distances and not self.decoder.distances:
                raise ConfigError(f'decoder {_distance_setting(decoder)}: the outputs hold no '
                                  'distances; read them from a scorer whose own decoder reads '
                                  'them (measured or veto)')
            return decode_now(probs, decoder.median_frames, decoder.thresholds,
                              outputs[:, probs.shape[1]:] if decoder.distances else None,
                              veto=decoder.veto)
        self._refuse_thresholds(decoder)
        return decode(outputs, decoder=decoder)

    def _refuse_measured(self, decoder: Decoder) -> None:
        if decoder.distances and not self.has_measures:
            raise ConfigError(f'decoder {_distance_setting(decoder)}: the learned scorer '
                              f'{self.name} has no '
                              'distance output (a now-head fine-tuned with measure_weight, '
                              'docs/scoring.md "Round 16")')

    def _refuse_thresholds(self, decoder: Decoder) -> None:
        if self.head != 'now' and decoder.thresholds is not None:
            raise ConfigError('decoder thresholds: a count-head checkpoint reads the most '
                              "likely count; per-stage thresholds are a now-head's")

    def look_features(self, first: np.ndarray) -> np.ndarray:
        """Return what an episode's look is to the network: its convolutions' features of the
        first frame (paired with itself), averaged over the feature map, one per channel (of its
        first camera's convolutions, ``exterior_1`` for every shipped checkpoint; an ensemble's
        first network's)."""
        torch = self._torch
        small = small_frame(first)[None][..., :3]
        one = dataclasses.replace(self.spec, cameras=1)
        with torch.no_grad():
            features = self.net.conv(_inputs(torch, small, small, one))
        return features.mean(dim=(2, 3))[0].numpy().astype(float)

    def look_check(self, first: np.ndarray) -> dict[str, Any] | None:
        """Return how far an episode's look (its first frame) is from the looks this scorer was
        trained on, or None for a checkpoint that keeps no ``look_stats`` (the first ones).

        ``look_distance``: the root mean square of the first frame's :meth:`look_features` in
        standard deviations of the training episodes'; ``look_threshold``: 1.25 x the 99th
        percentile of the training episodes' own distances; ``outside_training_looks``: the
        distance is past it, so the scores may be no better than a constant (docs/scoring.md).
        """
        if self.look_stats is None:
            return None
        distance = _look_distance(self.look_features(first), self.look_stats)
        threshold = float(self.look_stats['threshold'])
        return {'look_distance': round(distance, 3), 'look_threshold': round(threshold, 3),
                'outside_training_looks': bool(distance > threshold)}

    def curves(self, frames: Sequence[np.ndarray], task: str) -> tuple[np.ndarray, np.ndarray]:
        """Return the per-frame (raw expected progress, monotone filtered most likely count)."""
        _, n = self._task(task)
        outputs = self.outputs(frames, task)
        expected = self._count_probabilities(outputs) @ np.arange(n + 1)
        return expected / n, self.read(outputs)

    def score(self, episode: scoring.EpisodeFrames) -> scoring.ScoredEpisode:
        """Return the episode's monotone progress curve and its progression (its last value)."""
        _, n = self._task(episode.task)
        indices = scoring.sample_indices(episode.times_s, self.fps)
        if len(indices) < 2:  # the first frame is the start: one frame shows no progress
            raise DataError(
                f'{episode.times_s[-1] - episode.times_s[0]:.2f} s of video; the learned '
                f'scorer needs at least {1.0 / self.fps:.2f} s (two frames at {self.fps:g} per '
                'second)')
        frames = [episode.frames[i] for i in indices]
        raw, count = self.curves(frames, episode.task)
        curve = np.clip(count / n, 0.0, 1.0)
        score = float(curve[-1])
        # No per-task rescaling, so the raw score is the score (docs/scoring.md: scorer_raw);
        # the expected-count curve is kept as the one run, in no record.
        return scoring.ScoredEpisode(
            scorer=self.name, times_s=tuple(float(episode.times_s[i]) for i in indices),
            curve=tuple(float(v) for v in curve), score=score, raw_score=score,
            runs=(tuple(float(v) for v in raw),))

    def propose_stages(self, episode: scoring.EpisodeFrames) -> list[scoring.StageProposal]:
        """Return the stages this scorer sees met, each at the first sampled frame whose
        filtered stage count reaches it (in order; none past the last one seen)."""
        indices = scoring.sample_indices(episode.times_s, self.fps)
        frames = [episode.frames[i] for i in indices]
        outputs = self.outputs(frames, episode.task)  # read once: probabilities and count
        probs, count = self._count_probabilities(outputs), self.read(outputs)
        names = self.stage_names[episode.task]
        proposals = []
        for k, stage in enumerate(names, start=1):
            reached = np.flatnonzero(count >= k - 0.5)
            if reached.size == 0:
                break
            i = int(reached[0])
            proposals.append(scoring.StageProposal(
                stage=stage, time_s=float(episode.times_s[indices[i]] - episode.times_s[0]),
                confidence=float(probs[i, k:].sum())))
        return proposals


#: A look is outside the training looks past this many times the 99th percentile of the
#: training episodes' own look distances (fixed before any held-out look was scored).
LOOK_MARGIN = 1.25


def _look_distance(features: np.ndarray, stats: Mapping[str, Any]) -> float:
    z = (np.asarray(features, float) - np.asarray(stats['mean'], float)) \
        / np.asarray(stats['std'], float)
    return float(np.sqrt(np.mean(z ** 2)))


def look_stats(scorer: LearnedScorer, episodes: Sequence[LabelledEpisode]) -> dict[str, Any]:
    """Return the per-channel mean and spread of ``scorer``'s :meth:`~LearnedScorer.look_features`
    over ``episodes``' first frames, and the distance past which a look is outside them
    (:data:`LOOK_MARGIN` x the 99th percentile of these episodes' own distances)."""
    features = np.stack([scorer.look_features(e.frames[0]) for e in episodes])
    stats: dict[str, Any] = {'mean': [float(v) for v in features.mean(axis=0)],
                             'std': [float(v) for v in features.std(axis=0) + 1e-3]}
    distances = [_look_distance(f, stats) for f in features]
    stats['threshold'] = LOOK_MARGIN * float(np.quantile(distances, 0.99))
    stats['episodes'] = len(episodes)
    return stats


#: How :func:`decode` reads an episode's per-frame probabilities into its stage-count curve:
#: ``greedy`` (each frame's most likely count, median filtered, then a running maximum) and
#: ``monotone`` (the most likely non-decreasing path over all frames, :func:`monotone_path`).
DECODERS = ('greedy', 'monotone')


@dataclasses.dataclass(frozen=True)
class Decoder:
    """How a scorer turns per-frame stage-count probabilities into its curve (:func:`decode`).

    A checkpoint may carry one as ``{'decoder': {'method': ..., 'step_cost': ...}}`` (none: the
    greedy decode every checkpoint before issue 42's round 11 was measured with), so ``realm-ros
    score`` and the operator's stage proposals read a checkpoint the same way.

    Attributes:
        method: one of :data:`DECODERS`.
        median_frames: ``greedy``: the median filter's frames (odd).
        step_cost: ``monotone``: nats a stage costs to be taken (each stage climbed), so a count
            is read only where the frames from there on favour it by more than this in all.
        thresholds: a now-head's (greedy only): the probability above which each stage (by
            index) is held in a frame; None: 0.5 each (:func:`decode_now`; issue 42, round 15:
            :func:`prior_thresholds`). A count head refuses a decoder that has them.
        measured: a now-head's with the distance output (greedy only; issue 42, round 17): each
            stage with a measure (:data:`~realm_ros.core.skills.MEASURE_THRESHOLDS`) held in a
            frame where its distance output, median filtered, is below its predicate's own
            threshold, or where the next stage is held (:func:`decode_now`); the other stages
            from their heads. A checkpoint without the output refuses it.
        veto: a now-head's with the distance output (greedy only; issue 42, round 18): every
            stage read from its head, but a stage with a measure not held in a frame where its
            distance output, median filtered, is above this multiple of its predicate's own
            threshold, unless the next stage is held (:func:`decode_now`). None: no veto. A
            checkpoint without the output refuses it; so does a ``measured`` decoder.
    """

    method: str = 'greedy'
    median_frames: int = MEDIAN_FRAMES
    step_cost: float = 0.0
    thresholds: tuple[float, ...] | None = None
    measured: bool = False
    veto: float | None = None

    def __post_init__(self) -> None:
        if self.method not in DECODERS:
            raise ConfigError(f'decoder method: {self.method!r} is not one of '
                              f'{", ".join(DECODERS)}')
        if self.median_frames < 1 or self.median_frames % 2 == 0:
            raise ConfigError(f'decoder median_frames: must be odd and positive, got '
                              f'{self.median_frames}')
        if not (math.isfinite(self.step_cost) and self.step_cost >= 0.0):
            raise ConfigError(f'decoder step_cost: must be finite and >= 0, got '
                              f'{self.step_cost}')
        if self.thresholds is not None:
            if self.method != 'greedy':
                raise ConfigError(f'decoder thresholds: a {self.method} decoder has none '
                                  '(greedy only)')
            if not self.thresholds or not all(
                    math.isfinite(t) and 0.0 < t < 1.0 for t in self.thresholds):
                raise ConfigError(f'decoder thresholds: each must be in (0, 1), got '
                                  f'{list(self.thresholds)}')
        if self.measured is not True and self.measured is not False:
            raise ConfigError(f'decoder measured: true or false, got {self.measured!r}')
        if self.measured and self.method != 'greedy':
            raise ConfigError(f'decoder measured: a {self.method} decoder reads counts, not '
                              'stages (greedy only)')
        if self.veto is not None:
            if isinstance(self.veto, bool) or not isinstance(self.veto, (int, float)) or not (
                    math.isfinite(self.veto) and self.veto > 0.0):
                raise ConfigError(f'decoder veto: a multiple of the threshold above 0, got '
                                  f'{self.veto!r}')
            if self.method != 'greedy':
                raise ConfigError(f'decoder veto: a {self.method} decoder reads counts, not '
                                  'stages (greedy only)')
            if self.measured:
                raise ConfigError('decoder veto: a measured decoder reads its measured stages '
                                  'from the distances alone; veto or measured, not both')

    @classmethod
    def of(cls, settings: Mapping[str, Any] | None) -> Decoder:
        """The decoder a checkpoint's ``decoder`` entry names (None or empty: greedy)."""
        settings = dict(settings or {})
        unknown = sorted(set(settings) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ConfigError(f'decoder: unknown setting(s) {", ".join(unknown)}')
        thresholds = settings.get('thresholds')
        try:
            thresholds = None if thresholds is None else tuple(float(t) for t in thresholds)
        except (TypeError, ValueError):
            raise ConfigError(f'decoder thresholds: not a list of numbers: {thresholds!r}'
                              ) from None
        return cls(method=str(settings.get('method', 'greedy')),
                   median_frames=int(settings.get('median_frames', MEDIAN_FRAMES)),
                   step_cost=float(settings.get('step_cost', 0.0)), thresholds=thresholds,
                   measured=settings.get('measured', False), veto=settings.get('veto'))

    @property
    def distances(self) -> bool:
        """Whether it reads the distance output (``measured`` or ``veto``)."""
        return self.measured or self.veto is not None

    def as_dict(self) -> dict[str, Any]:
        """Its settings (``thresholds`` and ``veto`` only where set, ``measured`` only where
        true, so a decoder without them writes the entry every checkpoint before round 15
        carries)."""
        out = dataclasses.asdict(self)
        if not self.measured:
            del out['measured']
        if self.veto is None:
            del out['veto']
        if self.thresholds is None:
            del out['thresholds']
        else:
            out['thresholds'] = list(self.thresholds)
        return out

    @property
    def label(self) -> str:
        """A short name: ``greedy`` (the default median) or ``monotone(COST)``."""
        if self.method == 'monotone':
            return f'monotone({self.step_cost:g})'
        parts = ([] if self.median_frames == MEDIAN_FRAMES
                 else [f'median {self.median_frames}']) + (
            [] if self.thresholds is None else ['thresholds']) + (
            ['measured'] if self.measured else []) + (['veto'] if self.veto is not None else [])
        return f'greedy({", ".join(parts)})' if parts else 'greedy'


def with_decoder(checkpoint: Mapping[str, Any], decoder: Decoder) -> dict[str, Any]:
    """Return ``checkpoint`` (its networks unchanged) carrying ``decoder``: every scorer that
    loads it reads its probabilities so (greedy: the entry is left out, as before round 11)."""
    out = {k: v for k, v in checkpoint.items() if k != 'decoder'}
    if decoder != Decoder():
        out['decoder'] = decoder.as_dict()
    return out


#: Probabilities are floored at this before their logarithm (:func:`monotone_path`), so one
#: frame's zero cannot forbid a count outright.
PROB_FLOOR = 1e-6


def monotone_path(probs: np.ndarray, step_cost: float = 0.0) -> np.ndarray:
    """Return the non-decreasing count path ``c`` (from 0) over ``probs``' (T, N + 1) frames
    that maximises ``sum_t log p_t(c_t) - step_cost * c_T``: each frame's log probability
    (floored at :data:`PROB_FLOOR`), less ``step_cost`` per stage climbed (a Viterbi pass over
    counts 0..N where a count may only stay or rise; a tie keeps the lower count)."""
    logp = np.log(np.maximum(np.asarray(probs, float), PROB_FLOOR))
    steps, states = logp.shape
    climb = step_cost * np.arange(states)
    best = logp[0] - climb
    back = np.zeros((steps, states), dtype=int)
    for t in range(1, steps):
        # From any count at or below: the best of score[c'] + step_cost * c' (climbing costs
        # step_cost * (c - c')), a running maximum over c' with its first argmax.
        gain = best + climb
        arg = np.zeros(states, dtype=int)
        top = np.empty(states)
        for c in range(states):
            if c == 0 or gain[c] > top[c - 1]:
                top[c], arg[c] = gain[c], c
            else:
                top[c], arg[c] = top[c - 1], arg[c - 1]
        best = logp[t] + top - climb
        back[t] = arg
    path = np.zeros(steps, dtype=int)
    path[-1] = int(np.argmax(best))
    for t in range(steps - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path


def decode(probs: np.ndarray, median_frames: int = MEDIAN_FRAMES,
           decoder: Decoder | None = None) -> np.ndarray:
    """Return an episode's monotone stage-count curve from its (T, N + 1) per-frame
    probabilities. ``greedy`` (the default): each frame's most likely count (an expectation
    between two likely counts would name a stage neither is), median filtered over
    ``median_frames`` frames (odd; the ends repeated) against flickers, then a running maximum
    (the rubric's stages stay met): an upward misread that survives the median stays for the
    rest of the episode. ``monotone`` (``decoder``): the most likely non-decreasing path given
    every frame (:func:`monotone_path`), so a count is taken only where the later frames
    support it. A ``decoder`` given sets the median too."""
    if decoder is None:
        if median_frames < 1 or median_frames % 2 == 0:
            raise DataError(f'median_frames must be odd and positive, got {median_frames}')
        decoder = Decoder(median_frames=median_frames)
    if decoder.method == 'monotone':
        return monotone_path(probs, decoder.step_cost).astype(float)
    median_frames = decoder.median_frames
    values = _median_in_time(np.argmax(probs, axis=1).astype(float), median_frames)
    return np.maximum.accumulate(values)


def _median_in_time(values: np.ndarray, median_frames: int) -> np.ndarray:
    """``values`` (T, ...) median filtered over ``median_frames`` frames along time (odd; the
    ends repeated); as they are when shorter than the window or the window is 1."""
    if not len(values) >= median_frames > 1:
        return values
    half = median_frames // 2
    padded = np.concatenate([np.repeat(values[:1], half, axis=0), values,
                             np.repeat(values[-1:], half, axis=0)])
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, median_frames, axis=0),
                     axis=-1)


def prefix_probabilities(stage_probs: np.ndarray) -> np.ndarray:
    """(T, N) per-stage probabilities (a now-head's) -> (T, N + 1): the probability that
    stages 1..c hold and stage c + 1 does not, the stages taken as independent."""
    p = np.asarray(stage_probs, float)
    held = np.cumprod(np.concatenate([np.ones((len(p), 1)), p], axis=1), axis=1)
    return held * np.concatenate([1.0 - p, np.ones((len(p), 1))], axis=1)


def _distance_setting(decoder: Decoder) -> str:
    """The setting by which ``decoder`` reads the distance output, for a refusal."""
    return 'measured' if decoder.measured else 'veto'


def decode_now(stage_probs: np.ndarray, median_frames: int = MEDIAN_FRAMES,
               thresholds: Sequence[float] | None = None,
               measured: np.ndarray | None = None, veto: float | None = None) -> np.ndarray:
    """Return an episode's stage-count curve from a now-head's (T, N) per-frame stage
    probabilities (issue 42, round 13): each stage held where its probability is above 0.5
    (``thresholds``: stage k's, the first N used; round 15), median filtered over
    ``median_frames`` frames per stage (the ends repeated, as :func:`decode`'s), then the
    rubric's order and stickiness (:func:`sticky_counts`). ``measured`` (round 17; (T, N), each
    stage's measure over its predicate's threshold, NaN for a stage without one): a stage with
    one is held instead where that ratio, median filtered, is below 1 **or** the next stage is
    held (REACH's "or touching": the stage after REACH needs the robot touching the object).
    ``veto`` (round 18; with ``measured``): a stage with a measure is held instead where its head
    holds it **and** its ratio, median filtered, is at most ``veto``, or the next stage is held
    (the distances only take away, far from the threshold)."""
    stage_probs = np.asarray(stage_probs, float)
    if thresholds is None:
        cut: Any = 0.5
    else:
        if len(thresholds) < stage_probs.shape[1]:
            raise ConfigError(f'decoder thresholds: {len(thresholds)} for '
                              f'{stage_probs.shape[1]} stages')
        cut = np.asarray(thresholds, float)[:stage_probs.shape[1]]
    held = _median_in_time((stage_probs > cut).astype(float), median_frames) > 0.5
    if measured is not None:
        ratio = np.asarray(measured, float)
        if ratio.shape != stage_probs.shape:
            raise ConfigError(f'decoder measured: measures of shape {ratio.shape} for '
                              f'probabilities of {stage_probs.shape}')
        for k in reversed(range(ratio.shape[1])):  # the next stage's reading first
            if not np.isnan(ratio[:, k]).any():
                smooth = _median_in_time(ratio[:, k], median_frames)
                after = held[:, k + 1] if k + 1 < ratio.shape[1] else False
                held[:, k] = ((smooth < 1.0) | after if veto is None
                              else held[:, k] & ((smooth <= veto) | after))
    elif veto is not None:
        raise ConfigError('decoder veto: no distances to veto with (a now-head with the '
                          'distance output)')
    return sticky_counts(held).astype(float)


def stage_counts(scorer: LearnedScorer, episode: LabelledEpisode) -> np.ndarray:
    """Return the scorer's per-frame (monotone, rounded) stage counts of a labelled episode."""
    _, count = scorer.curves(list(episode.frames), episode.task)
    return np.rint(count).astype(int)


def evaluate(scorer: LearnedScorer, episodes: Iterable[LabelledEpisode]) -> dict[str, Any]:
    """Return the scorer's agreement with the rubric over ``episodes``.

    ``pearson_r`` of episode progressions, ``mean_abs_error``, ``success_accuracy``
    (:func:`~realm_ros.core.scoring.calls_success`, here "every stage proposed", against the
    rubric's success), ``stage_accuracy`` (sampled frames whose
    stage count matches the rubric's at that frame) and ``final_stage_accuracy`` (episodes whose
    last stage count matches).
    """
    episodes = list(episodes)
    return agreement(episodes, [stage_counts(scorer, e) for e in episodes])


def agreement(episodes: Sequence[LabelledEpisode], counts: Sequence[np.ndarray]
              ) -> dict[str, Any]:
    """:func:`evaluate`'s figures for per-frame stage ``counts`` (one array per episode, one
    count per frame of its ``met``) read by any means."""
    predicted, truth, n_stages, hits, frames, final_hits = [], [], [], 0, 0, 0
    n_episodes = 0
    for episode, counts_of in zip(episodes, counts, strict=True):
        read = np.asarray(counts_of)
        if read.shape != episode.met.shape:
            raise DataError(f'{read.size} stage counts for an episode of {episode.met.size} '
                            'frames')
        n = episode.n_stages
        predicted.append(float(read[-1]) / n)
        truth.append(episode.progression)
        n_stages.append(n)
        hits += int(np.sum(read == episode.met))
        frames += len(read)
        final_hits += int(read[-1] == episode.met[-1])
        n_episodes += 1
    if n_episodes < 2:
        raise DataError(f'need at least two episodes to measure agreement, got {n_episodes}')
    rubric = scoring.agreement_with_rubric(predicted, truth, n_stages)
    called = scoring.calls_success(predicted, n_stages)
    real = scoring.calls_success(truth, n_stages)
    return {
        'episodes': n_episodes, 'frames': frames,
        'pearson_r': rubric['pearson_r'],
        'pearson_r_ci': pearson_interval(predicted, truth),
        'mean_abs_error': rubric['mean_abs_error'],
        'stage_accuracy': hits / frames, 'final_stage_accuracy': final_hits / n_episodes,
        'success_accuracy': rubric['success_accuracy'],
        'success_accuracy_ci': wilson_interval(int(np.sum(called == real)), n_episodes),
        'rubric_success_rate': float(np.mean(real)),
        'progression_spread': float(np.std(predicted)),
    }


def pearson_interval(predicted: Sequence[float], truth: Sequence[float], n_resamples: int = 2000,
                     confidence: float = 0.95, seed: int = 0) -> list[float] | None:
    """Return a percentile bootstrap interval of Pearson r over episodes (resamples in which
    either side is constant are skipped), or None when r is undefined in every resample."""
    a, b = np.asarray(predicted, float), np.asarray(truth, float)
    rng = np.random.default_rng(seed)
    values = []
    for row in rng.integers(0, a.size, size=(n_resamples, a.size)):
        x, y = a[row], b[row]
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            values.append(float(np.corrcoef(x, y)[0, 1]))
    if not values:
        return None
    alpha = (1.0 - confidence) / 2.0
    return [float(v) for v in np.quantile(values, [alpha, 1.0 - alpha])]


def baselines(episodes: Sequence[LabelledEpisode], reference: Sequence[LabelledEpisode]
              ) -> dict[str, Any]:
    """Return what constant answers score on ``episodes``, the constants taken from
    ``reference`` (the training episodes, so nothing is read off the set measured):

    ``always_success_accuracy`` (answering success for every episode), ``mean_abs_error`` of
    answering the reference's mean progression for every episode (its Pearson r is undefined:
    a constant does not vary), and ``majority_stage_accuracy`` (answering, for every frame, the
    stage count most frequent in the reference's frames of the same task).
    """
    episodes = list(episodes)
    if not episodes or not reference:
        raise DataError('baselines need episodes and reference episodes')
    mean = float(np.mean([e.progression for e in reference]))
    majority = {}
    for task in {e.task for e in reference}:
        counts = np.bincount(np.concatenate([e.met for e in reference if e.task == task]))
        majority[task] = int(np.argmax(counts))
    hits = sum(int(np.sum(e.met == majority.get(e.task, 0))) for e in episodes)
    frames = sum(len(e.met) for e in episodes)
    successes = int(sum(e.success for e in episodes))
    return {
        'always_success_accuracy': successes / len(episodes),
        'always_success_accuracy_ci': wilson_interval(successes, len(episodes)),
        'always_failure_accuracy': 1.0 - successes / len(episodes),
        'mean_progression': mean,
        'mean_progression_abs_error': float(np.mean([abs(e.progression - mean)
                                                     for e in episodes])),
        'majority_stage_accuracy': hits / frames,
    }


__all__ = ['CALIBRATE_LAYERS', 'CALIBRATION_LOOKS', 'CalibrateConfig', 'DEFAULT_CHECKPOINT',
           'TUNE_LOOK', 'calibrate', 'labelled_from_video',
           'EVAL_LOOKS', 'FORMAT', 'InputSpec', 'LOOKS_CHECKPOINT', 'LOOK_MARGIN',
           'LabelledEpisode',
           'LearnedScorer', 'PLANS', 'Plan', 'SHIPPED', 'TRAIN_LOOKS', 'TRAIN_PLANS',
           'TrainConfig', 'VALIDATION_SEEDS', 'WRIST80_CHECKPOINT', 'WRIST_CHECKPOINT',
           'MEDIAN_FRAMES', 'SAMPLE_FPS', 'agreement', 'decode', 'DECODERS', 'Decoder',
           'PROB_FLOOR', 'monotone_path', 'with_decoder',
           'FAMILIES_CHECKPOINT', 'FAMILIES3_CHECKPOINT', 'FAMILIES_DEMO3_CHECKPOINT',
           'FAMILIES_HJK_CHECKPOINT', 'FAMILIES_NOW3_CHECKPOINT', 'FAMILIES_DIST3_CHECKPOINT',
           'MEASURE_CLIP', 'MEASURE_HUBER', 'MEASURE_SCALE', 'config_dict', 'measure_targets',
           'baselines', 'build_net',
           'collect', 'ensemble', 'evaluate', 'members', 'networks', 'one_network', 'calibratable',
           'load_checkpoint', 'load_episodes', 'look_stats', 'pearson_interval',
           'plan_settings', 'save_checkpoint', 'save_episodes', 'small_frame', 'split',
           'stage_counts', 'train', 'world_config', 'write_look']
