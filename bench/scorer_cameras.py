"""Which inputs help the learned scorer read a look it never saw: the wrist camera, per-image
normalisation, both (issue 42; docs/scoring.md, "Measured: other cameras and per-image
normalisation").

    python bench/scorer_cameras.py collect SET [--data-dir data/progress_scorer/cameras]
    python bench/scorer_cameras.py train [--variants V ...] [--seeds S ...] [--epochs E] [...]
    python bench/scorer_cameras.py measure [SET ...] [--variants [V ...]] [--seeds S ...]
                                           [--ladders LADDER_SET ...] [--json OUT.json]
                                           [--data-dir ...]
    python bench/scorer_cameras.py timing [SET] [--variants V ...] [--seeds S ...]
    python bench/scorer_cameras.py touched [LADDER_SET ...] [--variants V ...] [--seeds S ...]
    python bench/scorer_cameras.py finals [SET ...] [--variants V ...] [--seeds S ...]
    python bench/scorer_cameras.py diagnose [SET ...] [--variants V ...] [--seeds S ...]
    python bench/scorer_cameras.py round6 | round7 | round9 | round10 | round11 | round12
    python bench/scorer_cameras.py round13 | round14 | round15 | round16
    python bench/scorer_cameras.py same SET ... --against DATA_DIR
    python bench/scorer_cameras.py decoders SET ... [--tune] [--where] [--greedy]
                                            [--checkpoints NAME ...] [--json OUT.json]
    python bench/scorer_cameras.py rates [SET ...] [--variants V ...] [--json OUT.json]
    python bench/scorer_cameras.py distances SET ... --checkpoints NAME ...

``collect`` runs the digital real's episodes of one set (below) in process, rendering
``exterior_1`` **and** ``wrist`` on every 5th control step (3 per second), and keeps each
camera's frames labelled by the rubric (``learned.LabelledEpisode``, one ``.npz`` per look and
camera: ``DATA_DIR/SET/lab-SEED.CAMERA.npz``), so every variant trains and is measured on the
same episodes. Sets:

* ``train``: lab looks 1000-1039 (``learned.TRAIN_LOOKS``), push_switch, pick_spoon,
  put_green_block_in_bowl, scripted:0, 1, 3, the look's own seed: 360 episodes (the episodes
  of plan ``train_looks``);
* ``looks``: lab looks 7001-7003 (never in training), the same tasks, scripted:0-3 (scripted:2
  never in training), seeds 100-103: 144 episodes, the episodes of plan ``looks``;
* ``learned_ladder``: the same looks, push_switch and pick_spoon, three rungs of the learned
  vision ladder (``learned.LEARNED_LADDER``, a policy family never in training), seeds 200-203,
  at most 160 steps: 72 episodes, the episodes of plan ``learned_ladder`` (the cameras are
  rendered on every step for the policy, the scorer's frames kept on every 5th).

Round 2 (issue 42) adds ``new_looks`` and ``new_learned_ladder``: the same episodes under lab
looks 7011-7013, which no figure, choice or training had used (the figures held against the
targets), and ``train_more``: 20 more training looks (1100-1119), the same policies.

Round 3 (issue 42) adds ``fresh_looks``: the same episodes as ``looks`` under lab looks
7031-7033, used by no figure, choice or training before (the figures reported against the
targets, nothing chosen on them), and ``train_more2``: 20 more training looks (1120-1139) for
variant ``f`` (the wrist checkpoint's inputs on 80 looks). ``measure looks new_looks`` pools
several sets (the rows per look and the learned ladder of each set that has one) and, with
variants, applies ``SHIP_RULE`` on the pooled episodes.

Round 4 (issue 42) adds ``train_families`` and ``train_families_real``: two other policy
families (``TWIN_LADDER``, ``REAL_LADDER``: the twin-trained and the digital-real-trained learned
ladders, never the vision ladder) under 40 training looks each, for variant ``g_families``;
variant ``f_ensemble`` is not trained but built (``learned.ensemble``) from ``f``'s three seeds;
``measure looks new_looks fresh_looks`` applies ``ROUND4_*`` (``round4_rule``); ``eval4_looks``
and ``eval4_learned_ladder`` are lab looks 7041-7043, reported once, never chosen on;
``timing`` measures the CPU time to score a 200-step episode; ``touched`` counts the learned
ladders' push_switch episodes that touched the panel without toggling it called successes.
``collect --share I N`` collects every N-th look from the I-th, for N processes side by side.

Round 5 (issue 42) adds ``demo_ladder``: the held-out vision ladder's four rungs
(``VISION_LADDER4``) under the look it was trained and evaluated on, the appearance file
``config/appearance/lab_demo.yaml`` (a set's look is a lab look's seed or an appearance file),
push_switch and pick_spoon, seeds 300-314, at most 160 steps; ``measure demo_ladder`` reports
it alone (all, per task, per rung): a policy family in no training set, on a look only the
default and looks checkpoints were trained on. ``finals`` tabulates, per task, each episode's
final stage count by the rubric against the scorer's, and the look check
(``LearnedScorer.look_check``) on each episode's first frame. Variant ``g_ensemble`` is built
(not trained) from ``g_families``' three seeds; ``measure looks new_looks fresh_looks --ladders
eval4_learned_ladder demo_ladder`` pools those ladder sets with the held sets' own and applies
``ROUND5_*`` (``round5_rule``); ``eval5_looks`` is lab looks 7051-7053, reported once.

Round 6 (issue 42) adds ``train_demo`` and ``train_demo_families``: lab_demo's look in training
(the scripted ladder's rungs 0, 1, 3 and the twin and real ladders, seeds 400-407) for variant
``h_families_demo`` (g's episodes plus these; the vision ladder still in no training set), and
``eval6_demo_ladder``: the vision ladder's four rungs under lab_demo, seeds 320-331, reported
once. ``round6`` applies ``ROUND6_*`` (``round6_rule``) to ``measure eval6_demo_ladder`` and
``measure eval5_looks`` (their ``--json`` files, ``ROUND6_FILES``).

Round 7 (issue 42) adds ``diagnose`` (where a scorer's errors on a set come from: per frame
against decoded, which counts, which third of the episode, short successes), the candidates
``h_ensemble`` (h's three seeds as one) and ``i_ensemble`` (three seeds of ``i_families_more``:
h's episodes plus ``train7_demo_more``, more policy families under lab_demo, never the vision
ladder), and ``eval7_demo_ladder`` (the vision ladder under lab_demo, seeds 340-351) and
``eval7_looks`` (lab looks 7061-7063), reported once; ``round7`` applies ``ROUND7_*``
(``round7_rule``) to their ``measure --json`` files (``ROUND7_FILES``).

Round 8 (issue 42) adds ``eval8_demo_ladder`` (the vision ladder under lab_demo, seeds 360-371)
and ``eval8_looks`` (lab looks 7071-7073), their frames kept at **every** control step
(``EVERY_STEP``), and ``rates``: each checkpoint read at several rates and median windows
(``ROUND8_READINGS``) on those episodes, all scored at the shipped reading's frames; ``rates
eval8_demo_ladder eval8_looks --json docs/scorer-round8-rates.json`` also applies ``ROUND8_*``
(``round8_rule``) and writes the verdict; ``timing --fps 3 5 15`` times a 200-step episode read
at each rate. ``bench/scorer_round8_offset.py`` (run after the verdict) reads the ladder set
from its 5th kept frame as rounds 5-7's ladder sets were kept, and counts where the readings
differ.

Round 9 (issue 42) collects the learned families' training sets (``train_families``,
``train_families_real``, ``train_demo_families``, ``train7_demo_more``: the same entries) again
into its own data dir with the fixed ``labelled_run`` (frames from the episode's first step;
rounds 4-7 kept them 4 steps late), trains ``j_families_fixed`` (i's recipe on those) with
seeds 0-2 and ``j_ensemble`` (the three as one), and adds ``eval9_demo_ladder`` (the vision
ladder under lab_demo, seeds 380-391), ``eval9_looks`` (lab looks 7081-7083) and
``eval9_looks_ladder`` (the vision ladder under those looks, seed 381), reported once;
``round9`` applies ``ROUND9_*`` (``round9_rule``) to the first two's ``measure --json`` files
(``ROUND9_FILES``).

Round 10 (issue 42) adds the boundary sets ``train10_boundary`` (60 training looks) and
``train10_demo_boundary`` (lab_demo, train_demo's seeds): the scripted policy's ``near_miss``
level (``NEAR_MISS``; ``scripted.NAMED_LEVELS``: a wrong approach point outside REACH, a
press or lift of 0-35 %), never the vision ladder; ``k_boundary`` (j's recipe on j's sets plus
those), seeds 0-2, and ``k_ensemble``; ``eval10_demo_ladder`` (the vision ladder under lab_demo,
seeds 420-431), ``eval10_looks`` (lab looks 7091-7093) and ``eval10_looks_ladder`` (the vision
ladder under those looks, seed 421), reported once; ``round10`` applies ``ROUND10_*``
(``round10_rule``) to the first two's ``measure --json`` files (``ROUND10_FILES``).

Round 11 (issue 42) retrains nothing: ``decoders`` reads ``ROUND11_CHECKPOINTS`` with the greedy
decoder and the monotone one (``learned.Decoder``); ``decoders --tune`` chooses the monotone
decoder's cost on training sets (``ROUND11_TUNE_*``); ``eval11_demo_ladder`` (the vision ladder
under lab_demo, seeds 432-443) and ``eval11_looks`` (lab looks 7101-7103) are read once;
``round11`` applies ``ROUND11_*`` (``round11_rule``) to their ``decoders --json`` files
(``ROUND11_FILES``).

Round 12 (issue 42) retrains nothing: ``hj_ensemble`` and ``hjk_ensemble`` (``VARIANTS``,
``networks_of``; ``train --variants hj_ensemble hjk_ensemble`` builds them) are one ensemble of
the networks of h's and j's ensembles (and k's; ``learned.members``); ``decoders SET
--checkpoints ... --greedy`` reads them; ``eval12_demo_ladder`` (the vision ladder under
lab_demo, seeds 444-455) and ``eval12_looks`` (lab looks 7111-7113) are read once; ``round12``
applies ``ROUND12_*`` (``round12_rule``) to their ``decoders --json`` files (``ROUND12_FILES``).

Round 13 (issue 42) collects j's eight training sets again with each frame's stage predicates
(``LabelledEpisode.now``: what the frame shows now, the rubric's own predicates) and trains
``n_now`` (j's recipe with a per-stage "now" head, ``learned.HEADS``) with seeds 0-2 one after
the other, ``n_ensemble`` the seeds that finished; ``eval13_demo_ladder`` (the vision ladder
under lab_demo, seeds 456-467) and ``eval13_looks`` (lab looks 7121-7123) are read once;
``round13`` applies ``ROUND13_*`` (``round13_rule``) to their ``decoders --json`` files
(``ROUND13_FILES``). ``collect`` prints whether each episode's predicates give back its sticky
count (``learned.sticky_counts``); ``same SET ... --against DIR`` counts the episodes equal to an
earlier collection's; ``decoders --versus NAME`` prints each reading's paired difference from
NAME's; ``diagnose --bar-too`` reads the shipped families_hjk beside, and a now-head's
per-frame stage readings against the recorded predicates.

Round 14 (issue 42) trains nothing: round 13's ``n_ensemble_m3`` (chosen after round 13's sets
were read) is judged against the shipped families_hjk on ``eval14_demo_ladder`` (the vision
ladder under lab_demo, seeds 468-491, 192 episodes) and ``eval14_looks`` (lab looks
7131-7133), read once; ``round14`` applies ``ROUND14_*`` (``round14_rule``) to their
``decoders --json`` files (``ROUND14_FILES``).

Round 15 (issue 42) trains nothing: the shipped families_now3's networks read with each stage
called where its probability is above w_k / (1 + w_k) (w_k the positive weight stage k's loss
used in training, ``learned.now_pos_weights``; the prior correction of a weighted binary
cross-entropy) instead of 0.5 (``n_ensemble_m3_prior``), judged against families_now3 as
shipped on ``eval15_demo_ladder`` (the vision ladder under lab_demo, seeds 492-515, 192
episodes) and ``eval15_looks`` (lab looks 7141-7143), read once; ``round15`` applies
``ROUND15_*`` (``round15_rule``) to their ``decoders --json`` files (``ROUND15_FILES``).

Round 16 (issue 42) collects n_now's eight training sets again with each frame's stage
measures (``LabelledEpisode.measures``: the continuous quantity a stage's predicate thresholds,
the finger-to-reach-point distance for REACH, the object-to-target distance for MOVE_CLOSE;
``skills.STAGE_MEASURES``) and fine-tunes each ``n_now`` seed with an auxiliary regression of
them beside its binary cross-entropy (``q_dist``, ``TrainConfig.measure_weight``);
``q_ensemble_m3`` (the three, a median of 3) is judged against families_now3 as shipped on
``eval16_demo_ladder`` (the vision ladder under lab_demo, seeds 516-539, 192 episodes) and
``eval16_looks`` (lab looks 7151-7153), read once; ``round16`` applies ``ROUND16_*``
(``round16_rule``) to their ``decoders --json`` files (``ROUND16_FILES``); ``distances SET ...
--checkpoints NAME ...`` reads, per task, how often a frame farther than FAR_M from REACH is
read as REACH, and an auxiliary output's distance error.

Round 17 (issue 42) trains nothing: ``train --variants families_dist3_read`` writes the shipped
families_dist3's networks carrying ``learned.Decoder(measured=True)`` (each stage with a
measure read from the distance output against its predicate's own threshold), judged against
families_dist3 as shipped on ``eval17_demo_ladder`` (seeds 540-563, 192 episodes) and
``eval17_looks`` (lab looks 7161-7163), read once; ``round17`` applies ``ROUND17_*``
(``round17_rule``) to their ``decoders --json`` files (``ROUND17_FILES``).

Round 18 (issue 42) trains nothing: ``vetoes`` reads, on families_dist3's training sets only
(``ROUND18_VETO_SETS``), the smallest multiple of each measured stage's threshold its distance
output stays under on all but 1 % of the frames where the predicate holds (``ROUND18_VETO``);
``train --variants families_dist3_veto`` writes the shipped families_dist3's networks carrying
``learned.Decoder(veto=...)`` (a measured stage the head holds is dropped where its distance is
above that multiple, unless the next stage is held), judged against families_dist3 as shipped
on ``eval18_demo_ladder`` (seeds 564-587, 192 episodes) and ``eval18_looks`` (lab looks
7171-7173), read once; ``round18`` applies ``ROUND18_*`` (``round18_rule``) to their
``decoders --json`` files (``ROUND18_FILES``).

``train`` trains the variants (``VARIANTS``) on the ``train`` set (variant ``e``: ``train`` and
``train_more``) with the same settings (``learned.SHIPPED``'s, ``--epochs`` each unless the
variant names its own) into ``DATA_DIR/VARIANT.pt`` (``--seeds``: one checkpoint per training
seed, ``VARIANT_s<seed>.pt`` for a seed other than 0); ``measure [looks|new_looks]`` measures
them and the shipped checkpoints (``--variants`` with no name: the shipped ones only) on that
set and its learned ladder (Pearson r with a bootstrap interval over episodes, stage accuracy,
success accuracy with a Wilson interval, and the constants).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
import dataclasses
import json
import os
import pathlib
import sys
import time
from typing import Any

import numpy as np

os.environ.setdefault('MUJOCO_GL', 'egl')

CAMERAS = ('exterior_1', 'wrist')
TASKS = ('push_switch', 'pick_spoon', 'put_green_block_in_bowl')
#: Round 4's second policy family for training: the twin-trained learned ladder's early and
#: middle checkpoints (trained on push_switch and put_green_block_in_bowl demonstrations).
TWIN_LADDER = ('twin_early=learned:path=checkpoints/learned/early.pt',
               'twin_middle=learned:path=checkpoints/learned/middle.pt')
#: ... and a third: the digital-real-trained ladder's middle and final checkpoints
#: (docs/vision-demo.md, trained on push_switch and pick_spoon demonstrations).
REAL_LADDER = ('real_middle=learned:path=checkpoints/learned_real/middle.pt',
               'real_final=learned:path=checkpoints/learned_real/final.pt')
#: Round 7: checkpoints of the non-vision-ladder families no scorer set ran (the twin ladder's
#: final, the real ladder's early, the push_switch ladder's three) and the scripted ladder's
#: rung 2, under lab_demo for variant ``i`` (never the vision ladder).
MORE_FAMILIES = ('twin_final=learned:path=checkpoints/learned/final.pt',
                 'real_early=learned:path=checkpoints/learned_real/early.pt',
                 *(f'push_{name}=learned:path=checkpoints/learned_push_switch/{name}.pt'
                   for name in ('early', 'middle', 'final')),
                 'scripted:2')
#: Round 5: the held-out vision ladder's four rungs (docs/learned-policy.md section 5: success
#: about 0.05 / 0.15 / 0.53 / 0.88 under lab_demo's look), weakest first.
VISION_LADDER4 = tuple(f'{name}=learned:path=checkpoints/learned_vision/{name}.pt'
                       for name in ('plain5k_s150', 'plain5kb_s800', 'plain5k_s1200',
                                    'plain12k_s12000'))
#: Round 10: the scripted policy's boundary episodes (``scripted.NAMED_LEVELS['near_miss']``: a
#: wrong approach point 13-20 cm off, outside REACH; a press or lift of 0-35 %), not a rung.
NEAR_MISS = ('scripted:near_miss',)
#: The look the vision ladder was trained and evaluated on (and the scorer's ``train`` plan's).
DEMO_LOOK = 'config/appearance/lab_demo.yaml'
#: Set -> (looks, tasks, policies, seeds (empty: the look's own seed), max steps); a look is a
#: lab look's seed (``learned.write_look``) or an appearance file's path.
SETS = {
    'train': (tuple(range(1000, 1040)), TASKS, ('scripted:0', 'scripted:1', 'scripted:3'), (),
              200),
    # 20 more training looks (issue 42, round 2: variant e), seeds no figure has used.
    'train_more': (tuple(range(1100, 1120)), TASKS, ('scripted:0', 'scripted:1', 'scripted:3'),
                   (), 200),
    'looks': ((7001, 7002, 7003), TASKS,
              ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
              200),
    'learned_ladder': ((7001, 7002, 7003), ('push_switch', 'pick_spoon'), (), (200, 201, 202, 203),
                       160),
    # Looks no figure had used before issue 42's second round (nor any choice since): the
    # figures put first against the targets.
    'new_looks': ((7011, 7012, 7013), TASKS,
                  ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
                  200),
    'new_learned_ladder': ((7011, 7012, 7013), ('push_switch', 'pick_spoon'), (),
                           (200, 201, 202, 203), 160),
    # Round 3: 20 more training looks (variant f), seeds no figure had used.
    'train_more2': (tuple(range(1120, 1140)), TASKS, ('scripted:0', 'scripted:1', 'scripted:3'),
                    (), 200),
    # Round 3: looks no figure, choice or training had used; reported, never chosen on.
    'fresh_looks': ((7031, 7032, 7033), TASKS,
                    ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
                    200),
    # Round 4: other policy families than the scripted ladder under half the training looks
    # (variant g): the twin-trained learned ladder's early and middle checkpoints
    # (docs/learned-policy.md section 4), never the vision ladder (the held-out family).
    'train_families': (tuple(range(1000, 1040)), TASKS, TWIN_LADDER, (), 200),
    'train_families_real': (tuple(range(1100, 1140)), TASKS, REAL_LADDER, (), 200),
    # Round 4: looks no file, figure, choice or training had named; reported once, never
    # chosen on: the scripted ladder and the held-out vision ladder under them.
    'eval4_looks': ((7041, 7042, 7043), TASKS,
                    ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
                    200),
    'eval4_learned_ladder': ((7041, 7042, 7043), ('push_switch', 'pick_spoon'), (),
                             (200, 201, 202, 203), 160),
    # Round 5: the held-out family where its outcomes vary: the vision ladder's four rungs under
    # its own look, seeds no scorer set had used; reported once, nothing chosen on it.
    'demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                    tuple(range(300, 315)), 160),
    # Round 5: looks no file, figure, choice or training had named; reported once, never
    # chosen on: the scripted ladder under them.
    'eval5_looks': ((7051, 7052, 7053), TASKS,
                    ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
                    200),
    # Round 6: lab_demo's look in training (variant h), seeds no scorer set had used: the
    # scripted ladder, and the twin-trained and real-trained learned ladders (never the vision
    # ladder, the held-out family). Two sets so that two processes collect them side by side.
    'train_demo': ((DEMO_LOOK,), TASKS, ('scripted:0', 'scripted:1', 'scripted:3'),
                   tuple(range(400, 408)), 200),
    'train_demo_families': ((DEMO_LOOK,), TASKS, TWIN_LADDER + REAL_LADDER,
                            tuple(range(400, 408)), 200),
    # Round 6: the held-out family under lab_demo again, seeds no scorer set had used;
    # reported once, nothing chosen on it.
    'eval6_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                          tuple(range(320, 332)), 160),
    # Round 7: more policy families under lab_demo's look (variant i), seeds no scorer set
    # had used; never the vision ladder (the held-out family).
    'train7_demo_more': ((DEMO_LOOK,), TASKS, MORE_FAMILIES, tuple(range(410, 418)), 200),
    # Round 7: the held-out family under lab_demo on seeds no scorer set had used, and the
    # scripted ladder under looks no file had named; reported once, nothing chosen on them.
    'eval7_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                          tuple(range(340, 352)), 160),
    'eval7_looks': ((7061, 7062, 7063), TASKS,
                    ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
                    200),
    # Round 8: the held-out family under lab_demo on seeds no scorer set had used, and the
    # scripted ladder under looks no file had named, their frames kept at every control step
    # (EVERY_STEP); reported once, nothing chosen on them but round 8's verdict.
    'eval8_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                          tuple(range(360, 372)), 160),
    'eval8_looks': ((7071, 7072, 7073), TASKS,
                    ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
                    200),
    # Round 9: the held-out family under lab_demo on seeds no scorer set had used, the scripted
    # ladder under looks no file had named, and the held-out family under those looks (one
    # seed); frames from the episode's first (the fixed labelled_run), every 5th step; reported
    # once, nothing chosen on them but round 9's verdict (the first two).
    'eval9_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                          tuple(range(380, 392)), 160),
    'eval9_looks': ((7081, 7082, 7083), TASKS,
                    ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'), (100, 101, 102, 103),
                    200),
    'eval9_looks_ladder': ((7081, 7082, 7083), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           (381,), 160),
    # Round 10: boundary episodes (NEAR_MISS) under training looks only, the looks' own seeds
    # (train's and train_more's looks) and train_demo's lab_demo seeds; never the vision ladder.
    'train10_boundary': (tuple(range(1000, 1040)) + tuple(range(1100, 1120)), TASKS, NEAR_MISS,
                         (), 200),
    'train10_demo_boundary': ((DEMO_LOOK,), TASKS, NEAR_MISS, tuple(range(400, 408)), 200),
    # Round 10: the held-out family under lab_demo on seeds no scorer set had used, the scripted
    # ladder under looks no file had named, and the held-out family under those looks (one
    # seed); reported once, nothing chosen on them but round 10's verdict (the first two).
    'eval10_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(420, 432)), 160),
    'eval10_looks': ((7091, 7092, 7093), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    'eval10_looks_ladder': ((7091, 7092, 7093), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                            (421,), 160),
    # Round 11: the held-out family under lab_demo on seeds no scorer set had used and the
    # scripted ladder under looks no file had named; reported once, nothing chosen on them but
    # round 11's verdict (the decoder is chosen on the training episodes' validation split).
    'eval11_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(432, 444)), 160),
    'eval11_looks': ((7101, 7102, 7103), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    # Round 12: the held-out family under lab_demo on seeds no scorer set had used and the
    # scripted ladder under looks no file had named; reported once, nothing chosen on them but
    # round 12's verdict (the candidates are ensembles of checkpoints that exist).
    'eval12_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(444, 456)), 160),
    'eval12_looks': ((7111, 7112, 7113), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    # Round 13: the held-out family under lab_demo on seeds no scorer set had used and the
    # scripted ladder under looks no file had named, with each frame's stage predicates;
    # reported once, nothing chosen on them but round 13's verdict.
    'eval13_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(456, 468)), 160),
    'eval13_looks': ((7121, 7122, 7123), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    # Round 14: the held-out family under lab_demo on seeds no scorer set had used (24 seeds,
    # twice the earlier rounds', for tighter intervals) and the scripted ladder under looks no
    # file had named, with each frame's stage predicates; reported once, nothing chosen on them
    # but round 14's verdict (no training this round).
    'eval14_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(468, 492)), 160),
    'eval14_looks': ((7131, 7132, 7133), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    # Round 15: the held-out family under lab_demo on seeds no scorer set had used (24 seeds)
    # and the scripted ladder under looks no file had named, with each frame's stage
    # predicates; reported once, nothing chosen on them but round 15's verdict (no training).
    'eval15_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(492, 516)), 160),
    'eval15_looks': ((7141, 7142, 7143), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    # Round 16: the held-out family under lab_demo on seeds no scorer set had used (24 seeds)
    # and the scripted ladder under looks no file had named, with each frame's stage
    # predicates and measures; reported once, nothing chosen on them but round 16's verdict.
    'eval16_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(516, 540)), 160),
    'eval16_looks': ((7151, 7152, 7153), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    # Round 17: the same again on seeds and looks no scorer set had used; reported once,
    # nothing chosen on them but round 17's verdict (no training).
    'eval17_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(540, 564)), 160),
    'eval17_looks': ((7161, 7162, 7163), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
    # Round 18: the same again on seeds and looks no scorer set had used; reported once,
    # nothing chosen on them but round 18's verdict (no training; the veto distance is chosen
    # on the training sets before these are collected).
    'eval18_demo_ladder': ((DEMO_LOOK,), ('push_switch', 'pick_spoon'), VISION_LADDER4,
                           tuple(range(564, 588)), 160),
    'eval18_looks': ((7171, 7172, 7173), TASKS,
                     ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
                     (100, 101, 102, 103), 200),
}
#: Sets whose frames are kept at every control step (15 per second) instead of every 5th, so
#: that a reading at any rate (round 8) is taken from the same episodes; every 5th of their
#: frames is the frame the other sets keep.
EVERY_STEP = ('eval8_demo_ladder', 'eval8_looks')
#: Sets of a learned ladder alone, measured on their own (rows: all, per task, per rung).
LADDER_ONLY = ('demo_ladder', 'eval6_demo_ladder', 'eval7_demo_ladder', 'eval9_demo_ladder',
               'eval9_looks_ladder', 'eval10_demo_ladder', 'eval10_looks_ladder',
               'eval11_demo_ladder', 'eval12_demo_ladder', 'eval13_demo_ladder',
               'eval14_demo_ladder', 'eval15_demo_ladder', 'eval16_demo_ladder',
               'eval17_demo_ladder', 'eval18_demo_ladder')
#: A held-out set -> the learned-ladder set on the same looks.
LADDER_OF = {'looks': 'learned_ladder', 'new_looks': 'new_learned_ladder',
             'eval4_looks': 'eval4_learned_ladder'}
#: The variants, each trained with the same settings on the same episodes: which cameras the
#: network reads and whether each frame pair is normalised by its first frame's statistics.
VARIANTS = {
    'a_ext1': {'cameras': ('exterior_1',), 'normalise': False},
    'b_ext1_wrist': {'cameras': ('exterior_1', 'wrist'), 'normalise': False},
    'c_ext1_norm': {'cameras': ('exterior_1',), 'normalise': True},
    'd_ext1_wrist_norm': {'cameras': ('exterior_1', 'wrist'), 'normalise': True},
    # Round 2 (decided before measuring): (d)'s inputs and epochs (the shipped wrist
    # checkpoint's: 30), trained on half as many looks again (train + train_more: 60 lab looks).
    'e_wrist_norm_60looks': {'cameras': ('exterior_1', 'wrist'), 'normalise': True,
                             'epochs': 30, 'sets': ('train', 'train_more')},
    # Round 3 (decided before measuring): the same inputs and settings on 80 lab looks.
    'f_wrist_norm_80looks': {'cameras': ('exterior_1', 'wrist'), 'normalise': True,
                             'epochs': 30, 'sets': ('train', 'train_more', 'train_more2')},
    # Round 4 (decided before measuring): f's inputs, settings and 720 scripted episodes plus
    # 480 episodes of two other policy families under the same training looks (never the
    # vision ladder, the held-out family).
    'g_families': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 30,
                   'sets': ('train', 'train_more', 'train_more2', 'train_families',
                            'train_families_real')},
    # Round 4 (decided before measuring): not trained: f's three seeds (the shipped wrist80 among
    # them) in one ensemble checkpoint (learned.ensemble), their stage probabilities averaged.
    'f_ensemble': {'ensemble_of': 'f_wrist_norm_80looks', 'seeds': (0, 1, 2)},
    # Round 5 (decided before measuring): not trained: g's three seeds (the shipped families
    # checkpoint is seed 1) in one ensemble checkpoint.
    'g_ensemble': {'ensemble_of': 'g_families', 'seeds': (0, 1, 2)},
    # Round 6 (decided before measuring): g's inputs, settings and episodes plus lab_demo's
    # look in training (train_demo, train_demo_families): the vision ladder still in none.
    'h_families_demo': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 30,
                        'sets': ('train', 'train_more', 'train_more2', 'train_families',
                                 'train_families_real', 'train_demo', 'train_demo_families')},
    # Round 7 (decided before measuring): not trained: h's three seeds in one ensemble.
    'h_ensemble': {'ensemble_of': 'h_families_demo', 'seeds': (0, 1, 2)},
    # Round 7 (decided before measuring): h's inputs, settings and episodes plus 144 episodes of
    # more policy families under lab_demo (train7_demo_more), trained with seeds 0-2, and those
    # three seeds as one ensemble (the candidate); the vision ladder still in no training set.
    'i_families_more': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 30,
                        'sets': ('train', 'train_more', 'train_more2', 'train_families',
                                 'train_families_real', 'train_demo', 'train_demo_families',
                                 'train7_demo_more')},
    'i_ensemble': {'ensemble_of': 'i_families_more', 'seeds': (0, 1, 2)},
    # Round 9 (decided before measuring): i's inputs, settings and sets, the four learned-family
    # sets among them (train_families, train_families_real, train_demo_families,
    # train7_demo_more) collected again from the episode's first frame (the fixed labelled_run;
    # the data dir's copies, not round 4-7's late frames), seeds 0-2, and those three seeds as
    # one ensemble (the candidate); the vision ladder still in no training set.
    'j_families_fixed': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 30,
                         'sets': ('train', 'train_more', 'train_more2', 'train_families',
                                  'train_families_real', 'train_demo', 'train_demo_families',
                                  'train7_demo_more')},
    'j_ensemble': {'ensemble_of': 'j_families_fixed', 'seeds': (0, 1, 2)},
    # Round 10 (decided before measuring): j's recipe unchanged on j's eight sets plus the
    # boundary episodes (train10_boundary, train10_demo_boundary), seeds 0-2, and those as one
    # ensemble (the candidate); the vision ladder still in no training set.
    'k_boundary': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 30,
                   'sets': ('train', 'train_more', 'train_more2', 'train_families',
                            'train_families_real', 'train_demo', 'train_demo_families',
                            'train7_demo_more', 'train10_boundary', 'train10_demo_boundary')},
    'k_ensemble': {'ensemble_of': 'k_boundary', 'seeds': (0, 1, 2)},
    # Round 12 (decided before measuring): not trained: the networks of ensembles that exist
    # (learned.members) in one ensemble, their stage probabilities averaged: h's three (the
    # shipped families_demo3) and j's three; and those and k's three.
    'hj_ensemble': {'networks_of': ('h_ensemble', 'j_ensemble')},
    'hjk_ensemble': {'networks_of': ('h_ensemble', 'j_ensemble', 'k_ensemble')},
    # Round 13 (decided before measuring): j's recipe, inputs and eight sets (collected again
    # with each frame's stage predicates, ``LabelledEpisode.now``) with the output a per-stage
    # "now" head (``learned.HEADS``: a sigmoid per stage, binary cross-entropy on the frame's
    # predicates), seeds 0-2 one after the other; ``n_ensemble``: the seeds that finished by
    # ROUND13_SEED_DEADLINE as one ensemble (the candidate); the vision ladder in no set.
    # Its decode: no median (``decoder`` median_frames 1), chosen on the training sets' own
    # predicates (``same``: a median of 3 per stage reads the true predicates of train's
    # frames at the sticky count on 0.947 of them; no median: all), carried by the
    # checkpoints; ``_m3``: the same networks with a median of 3 per stage (reported only).
    'n_now': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 30,
              'head': 'now', 'decoder': {'median_frames': 1},
              'sets': ('train', 'train_more', 'train_more2', 'train_families',
                       'train_families_real', 'train_demo', 'train_demo_families',
                       'train7_demo_more')},
    'n_ensemble': {'ensemble_of': 'n_now', 'seeds': (0, 1, 2), 'finished_only': True,
                   'decoder': {'median_frames': 1}},
    'n_ensemble_m3': {'ensemble_of': 'n_now', 'seeds': (0, 1, 2), 'finished_only': True,
                      'decoder': {'median_frames': 3}},
    # Round 15 (decided before measuring): n_ensemble_m3's networks (the shipped
    # families_now3's) with a median of 3, each stage k called where its probability is above
    # w_k / (1 + w_k), w_k the positive weight its loss used over ``prior_of``'s training
    # frames (``learned.now_pos_weights``, ``learned.prior_thresholds``): the prior correction.
    'n_ensemble_m3_prior': {'ensemble_of': 'n_now', 'seeds': (0, 1, 2), 'finished_only': True,
                            'decoder': {'median_frames': 3}, 'prior_of': 'n_now'},
    # Round 16 (decided before collecting or training): n_now's recipe, inputs and eight sets
    # (collected again with each frame's stage measures, ``LabelledEpisode.measures``), each
    # seed fine-tuned from the matching n_now network (``init_of``) for 10 epochs with the
    # auxiliary regression of the measures (``measure_weight`` 1.0: loss = BCE + 1.0 x Huber
    # (delta 1) on the valid entries of min(measure, 0.30 m) / 0.10 m; ``learned.MEASURE_*``);
    # ``q_ensemble_m3``: the three seeds, a median of 3, thresholds 0.5 (the candidate).
    'q_dist': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 10,
               'head': 'now', 'measure_weight': 1.0, 'init_of': 'n_now',
               'decoder': {'median_frames': 3},
               'sets': ('train', 'train_more', 'train_more2', 'train_families',
                        'train_families_real', 'train_demo', 'train_demo_families',
                        'train7_demo_more')},
    'q_ensemble_m3': {'ensemble_of': 'q_dist', 'seeds': (0, 1, 2), 'finished_only': True,
                      'decoder': {'median_frames': 3}},
    # Round 16, reported only (decided before training): the same fine-tuning without the
    # auxiliary loss (measure_weight 0), trained after q_dist's three seeds, to tell the
    # fine-tuning's effect from the measures'.
    'q_ctrl': {'cameras': ('exterior_1', 'wrist'), 'normalise': True, 'epochs': 10,
               'head': 'now', 'init_of': 'n_now', 'decoder': {'median_frames': 3},
               'sets': ('train', 'train_more', 'train_more2', 'train_families',
                        'train_families_real', 'train_demo', 'train_demo_families',
                        'train7_demo_more')},
    'q_ctrl_m3': {'ensemble_of': 'q_ctrl', 'seeds': (0, 1, 2), 'finished_only': True,
                  'decoder': {'median_frames': 3}},
    # Round 17 (decided before measuring; no training): the shipped families_dist3's networks
    # (``decoder_of``, the file as shipped) carrying a decoder that reads each stage with a
    # measure from the auxiliary distance output against its predicate's own threshold
    # (``learned.Decoder.measured``), the other stages from their heads as before.
    'families_dist3_read': {'decoder_of': 'families_dist3',
                            'decoder': {'median_frames': 3, 'measured': True}},
    # Round 18 (the rule decided before collecting or measuring; the multiple, 1.3, chosen by
    # it on the training sets, ``vetoes``, ROUND18_VETO): the shipped families_dist3's networks
    # read from their heads, a measured stage vetoed where its distance output is above 1.3x
    # its predicate's threshold unless the next stage is held (``learned.Decoder.veto``).
    'families_dist3_veto': {'decoder_of': 'families_dist3',
                            'decoder': {'median_frames': 3, 'veto': 1.3}},
}
#: Round 3's shipping rule (fixed before measuring; docs/scoring.md): a variant ships only if
#: every one of its training seeds beats the shipped wrist checkpoint in Pearson r **and** stage
#: accuracy on the pooled scripted episodes of these sets; the seed shipped is the median by r.
SHIP_RULE_SETS = ('looks', 'new_looks')
SHIP_RULE_SEEDS = (0, 1, 2)
#: Round 4's rule (fixed before measuring; docs/scoring.md, "Round 4"): among the shipped
#: wrist80 and the candidates (variant -> the training seeds that must each pass), a candidate
#: passes if it beats wrist80 in Pearson r **and** stage accuracy on the pooled scripted
#: episodes of ROUND4_SETS (432) **and** does not lose to it in r (>=) on their learned
#: ladders pooled (7001-7003 + 7011-7013, 144); a passing variant of several seeds ships its
#: median seed by pooled r; if both pass, the higher pooled r ships.
ROUND4_SETS = ('looks', 'new_looks', 'fresh_looks')
ROUND4_CANDIDATES = {'f_ensemble': (0,), 'g_families': (0, 1, 2)}
#: Round 5's rule (fixed before measuring; docs/scoring.md, "Round 5"): the candidate passes if
#: it beats the shipped families checkpoint in Pearson r **and** stage accuracy on the pooled
#: scripted episodes of ROUND4_SETS (432) **and** does not lose to it (>=) in r **nor** in
#: success accuracy on every vision-ladder episode collected so far, pooled (the held sets' own
#: ladders and ROUND5_LADDERS: 336).
ROUND5_LADDERS = ('eval4_learned_ladder', 'demo_ladder')
ROUND5_CANDIDATE = 'g_ensemble'
#: Round 6's rule (fixed before measuring; docs/scoring.md, "Round 6"): the candidate passes if
#: **every** trained seed of it (at least two of ROUND6_SEEDS) beats the shipped families3
#: checkpoint in Pearson r **and** stage accuracy on all of ``eval6_demo_ladder`` (the held-out
#: family under lab_demo, 96 episodes) **and** loses no more than ROUND6_LOOKS_MARGIN of Pearson
#: r to it on ``eval5_looks`` (the scripted ladder under fresh looks 7051-7053, 144). If it
#: passes, seed ROUND6_SHIPS_SEED ships (fixed here, not chosen on any figure).
ROUND6_CANDIDATE = 'h_families_demo'
ROUND6_SEEDS = (0, 1, 2)
ROUND6_SHIPS_SEED = 0
ROUND6_LOOKS_MARGIN = 0.03
#: The two measurements the rule reads (``measure eval6_demo_ladder`` / ``measure eval5_looks``
#: with ``--json``) and where its verdict is written.
ROUND6_FILES = (pathlib.Path('docs/scorer-round6-ladder.json'),
                pathlib.Path('docs/scorer-round6-looks.json'),
                pathlib.Path('docs/scorer-round6-rule.json'))

#: Round 7's rule (fixed before measuring; docs/scoring.md, "Round 7"): a candidate (one
#: checkpoint each: an ensemble) passes if on all of ``eval7_demo_ladder`` (the held-out family
#: under lab_demo, seeds 340-351, 96 episodes) its Pearson r **and** stage accuracy are above
#: both the shipped families3's and h's (the mean of ROUND7_H's seeds' figures), **and** on
#: ``eval7_looks`` (the scripted ladder under fresh looks 7061-7063, 144) it loses no more than
#: ROUND7_LOOKS_MARGIN of Pearson r to families3. If both pass, the higher r on
#: ``eval7_demo_ladder`` ships (a tie: the first in ROUND7_CANDIDATES), as ROUND7_SHIPS_AS names.
ROUND7_CANDIDATES = ('h_ensemble', 'i_ensemble')
ROUND7_H = ('h_families_demo', (0, 1, 2))
ROUND7_LOOKS_MARGIN = 0.03
ROUND7_SHIPS_AS = {'h_ensemble': 'progress_scorer_families_demo3.pt',
                   'i_ensemble': 'progress_scorer_families_more3.pt'}
ROUND7_FILES = (pathlib.Path('docs/scorer-round7-ladder.json'),
                pathlib.Path('docs/scorer-round7-looks.json'),
                pathlib.Path('docs/scorer-round7-rule.json'))

#: Round 8's readings (fixed before measuring; docs/scoring.md, "Round 8"): the same checkpoint
#: reading an episode's frames at every ``stride``-th control step (15 / stride per second), its
#: per-frame most likely counts median filtered over ``median`` frames (``learned.decode``). The
#: shipped reading is every 5th step, a median of 3 (1 s); ``_median1s`` keeps the median's
#: window at 1 s as the rate rises. Every reading is scored at the same times, the shipped
#: reading's frames (every 5th step), its curve's value there being that of its last frame at or
#: before each (so stage accuracy has the same denominator for all, and the progression is the
#: curve's value at the last of them).
ROUND8_READINGS = {'3fps': (5, 3), '15fps': (1, 3), '15fps_median1s': (1, 15),
                   '5fps': (3, 3), '5fps_median1s': (3, 5)}
ROUND8_BASE = '3fps'
#: The checkpoint whose readings the rule compares (the recommendation); the others measured
#: beside it (``rates --variants``, the shipped wrist) are reported, nothing chosen on them.
ROUND8_CHECKPOINT = 'shipped families3'
#: Round 8's rule: a candidate reading of ROUND8_CHECKPOINT passes if on all of
#: ``eval8_demo_ladder`` (the held-out family under lab_demo, seeds 360-371, 96) its Pearson r
#: **and** stage accuracy are above the shipped reading's, **and** on ``eval8_looks`` (the
#: scripted ladder under fresh looks 7071-7073, 144) it loses no more than ROUND8_R_MARGIN of r
#: and ROUND8_STAGE_MARGIN of stage accuracy to it. Of several passing, the higher r on
#: ``eval8_demo_ladder`` becomes the default (a tie: the first in ROUND8_CANDIDATES).
ROUND8_CANDIDATES = ('15fps', '15fps_median1s', '5fps', '5fps_median1s')
ROUND8_R_MARGIN = 0.03
ROUND8_STAGE_MARGIN = 0.02
#: ``rates eval8_demo_ladder eval8_looks --json``'s file, and where the verdict is written.
ROUND8_FILES = (pathlib.Path('docs/scorer-round8-rates.json'),
                pathlib.Path('docs/scorer-round8-rule.json'))

#: Round 9's rule (fixed before measuring; docs/scoring.md, "Round 9"): a candidate (one
#: checkpoint each: an ensemble) passes if on all of ``eval9_demo_ladder`` (the held-out family
#: under lab_demo, seeds 380-391, 96 episodes) its Pearson r **and** stage accuracy each meet or
#: beat (>=) the shipped families3's, **and** on ``eval9_looks`` (the scripted ladder under
#: fresh looks 7081-7083, 144) it loses no more than ROUND9_LOOKS_MARGIN of Pearson r to
#: families3. Of two passing, the higher r on ``eval9_demo_ladder`` ships (a tie: the first in
#: ROUND9_CANDIDATES), as ROUND9_SHIPS_AS names, and becomes the recommendation.
#: ``j_ensemble`` is the retrained candidate; ``h_ensemble`` (round 7's, trained on the late
#: frames) is the one more: after the frame fix it read both re-read held-out sets above
#: families3 in r and stage accuracy (docs/scoring.md, "After the frame fix"), with no rule
#: written first.
ROUND9_CANDIDATES = ('j_ensemble', 'h_ensemble')
ROUND9_LOOKS_MARGIN = 0.03
ROUND9_SHIPS_AS = {'j_ensemble': 'progress_scorer_families_fixed3.pt',
                   'h_ensemble': 'progress_scorer_families_demo3.pt'}
ROUND9_FILES = (pathlib.Path('docs/scorer-round9-ladder.json'),
                pathlib.Path('docs/scorer-round9-looks.json'),
                pathlib.Path('docs/scorer-round9-rule.json'))

#: Round 10's rule (fixed before measuring; docs/scoring.md, "Round 10"): the bar is the shipped
#: recommendation, families_demo3 (round 9's ``h_ensemble``). A candidate (one checkpoint each)
#: passes if on all of ``eval10_demo_ladder`` (the held-out family under lab_demo, seeds
#: 420-431, 96 episodes) its stage accuracy is **above** the bar's and its Pearson r no more than
#: ROUND10_R_MARGIN below it, **and** on ``eval10_looks`` (the scripted ladder under fresh looks
#: 7091-7093, 144) its r is no more than ROUND10_R_MARGIN below the bar's and its stage accuracy
#: meets or beats (>=) the bar's. Of several passing, the one meeting more of the issue's six
#: targets (three targets on each set, at the point estimate) ships; a tie: the higher stage
#: accuracy on ``eval10_demo_ladder``; then the first in ROUND10_CANDIDATES. It ships as
#: ROUND10_SHIPS_AS names and becomes the recommendation. ``k_ensemble`` is k's seeds 0-2 as one
#: ensemble; if seed 2 has not finished by 19:10 UTC, the seeds that finished by then.
ROUND10_CANDIDATES = ('k_ensemble', 'j_ensemble')
ROUND10_BAR = 'shipped families_demo3'
ROUND10_R_MARGIN = 0.03
ROUND10_SHIPS_AS = {'k_ensemble': 'progress_scorer_boundary3.pt',
                    'j_ensemble': 'progress_scorer_families_fixed3.pt'}
ROUND10_NOTHING_SHIPS = 'nothing (families_demo3 stays the recommendation)'
ROUND10_FILES = (pathlib.Path('docs/scorer-round10-ladder.json'),
                 pathlib.Path('docs/scorer-round10-looks.json'),
                 pathlib.Path('docs/scorer-round10-rule.json'))


#: Round 11 (docs/scoring.md, "Round 11"): no retraining, another decoder
#: (``learned.Decoder``: ``monotone``, the most likely non-decreasing path, a cost in nats per
#: stage climbed). ``decoders --tune`` chooses its cost among ROUND11_STEP_COSTS by the stage
#: accuracy pooled over ROUND11_TUNE_CHECKPOINTS' frames of ROUND11_TUNE_SETS (training sets:
#: the boundary episodes neither checkpoint was trained on, and train_demo, which both were;
#: never an eval set); a tie: the lower cost.
ROUND11_STEP_COSTS = (0.0, 1.0, 2.0, 4.0, 8.0)
ROUND11_TUNE_SETS = ('train10_boundary', 'train10_demo_boundary', 'train_demo')
ROUND11_TUNE_CHECKPOINTS = ('families_demo3', 'j_ensemble')
#: The checkpoints round 11 reads (shipped families_demo3 = round 9's h_ensemble; j's and k's
#: ensembles in the data dir), each with the greedy decoder and the monotone one.
ROUND11_CHECKPOINTS = ('families_demo3', 'j_ensemble', 'k_ensemble')
#: The cost ``decoders --tune train10_boundary train10_demo_boundary train_demo`` chose.
ROUND11_STEP_COST = 1.0

#: Round 11's rule (fixed before measuring; docs/scoring.md, "Round 11"): the bar is the shipped
#: recommendation as shipped, families_demo3 with the greedy decoder. A candidate (each of
#: ROUND11_CHECKPOINTS with the monotone decoder at ROUND11_STEP_COST) passes if on all of
#: ``eval11_demo_ladder`` (the held-out family under lab_demo, seeds 432-443, 96 episodes) its
#: stage accuracy is **above** the bar's and its Pearson r no more than ROUND11_MARGIN below it,
#: **and** on ``eval11_looks`` (the scripted ladder under fresh looks 7101-7103, 144) its r and
#: its stage accuracy are each no more than ROUND11_MARGIN below the bar's. Of several passing,
#: the one meeting more of the issue's six targets (three on each set, at the point estimate)
#: ships; a tie: the higher stage accuracy on ``eval11_demo_ladder``; then the first in
#: ROUND11_CANDIDATES. It ships as ROUND11_SHIPS_AS names (the checkpoint carrying the
#: decoder, ``learned.with_decoder``) and becomes the recommendation. The three greedy
#: readings are measured beside them, reported only.
ROUND11_BAR = 'families_demo3 greedy'
ROUND11_CANDIDATES = ('families_demo3 monotone', 'j_ensemble monotone', 'k_ensemble monotone')
ROUND11_MARGIN = 0.03
ROUND11_SHIPS_AS = {'families_demo3 monotone': 'progress_scorer_families_demo3_monotone.pt',
                    'j_ensemble monotone': 'progress_scorer_families_fixed3_monotone.pt',
                    'k_ensemble monotone': 'progress_scorer_boundary3_monotone.pt'}
ROUND11_NOTHING_SHIPS = 'nothing (families_demo3, greedy, stays the recommendation)'
ROUND11_FILES = (pathlib.Path('docs/scorer-round11-ladder.json'),
                 pathlib.Path('docs/scorer-round11-looks.json'),
                 pathlib.Path('docs/scorer-round11-rule.json'))


#: Round 12's rule (fixed before measuring; docs/scoring.md, "Round 12"): no training; the
#: candidates are ensembles of the networks of ensembles that exist (``hj_ensemble``: h's three,
#: the shipped families_demo3, and j's three; ``hjk_ensemble``: those and k's three), read with
#: the greedy decoder. The bar: families_demo3 with the greedy decoder, as shipped. Round 11's
#: conditions (``bar_rule``): a candidate passes only if on all of ``eval12_demo_ladder`` (the
#: held-out family under lab_demo, seeds 444-455, 96 episodes) its stage accuracy is **above**
#: the bar's and its Pearson r no more than ROUND12_MARGIN below it, **and** on
#: ``eval12_looks`` (the scripted ladder under fresh looks 7111-7113, 144) its r and its stage
#: accuracy are each no more than ROUND12_MARGIN below the bar's. Of several passing, the one
#: meeting more of the issue's six targets (at the point estimate) ships; a tie: the higher
#: stage accuracy on ``eval12_demo_ladder``; then the first in ROUND12_CANDIDATES. It ships as
#: ROUND12_SHIPS_AS names and becomes the recommendation. ``decoders --checkpoints
#: ROUND12_CHECKPOINTS --greedy`` reads them (j_ensemble and k_ensemble beside, reported only).
ROUND12_CHECKPOINTS = ('families_demo3', 'hj_ensemble', 'hjk_ensemble', 'j_ensemble',
                       'k_ensemble')
ROUND12_BAR = 'families_demo3 greedy'
ROUND12_CANDIDATES = ('hj_ensemble greedy', 'hjk_ensemble greedy')
ROUND12_MARGIN = 0.03
ROUND12_SHIPS_AS = {'hj_ensemble greedy': 'progress_scorer_families_hj.pt',
                    'hjk_ensemble greedy': 'progress_scorer_families_hjk.pt'}
ROUND12_NOTHING_SHIPS = 'nothing (families_demo3, greedy, stays the recommendation)'
ROUND12_FILES = (pathlib.Path('docs/scorer-round12-ladder.json'),
                 pathlib.Path('docs/scorer-round12-looks.json'),
                 pathlib.Path('docs/scorer-round12-rule.json'))


#: Round 13's rule (fixed before measuring; docs/scoring.md, "Round 13"): the candidate is
#: ``n_ensemble``, the now-head networks (``n_now``, j's recipe and sets with per-stage "now"
#: targets, decoded by ``learned.decode_now``) of the seeds that finished training by
#: ROUND13_SEED_DEADLINE UTC as one ensemble. The bar: the shipped recommendation as shipped,
#: families_hjk (round 12's ``hjk_ensemble``, greedy). Round 11's conditions (``bar_rule``): it
#: passes only if on all of ``eval13_demo_ladder`` (the held-out family under lab_demo, seeds
#: 456-467, 96 episodes) its stage accuracy is **above** the bar's and its Pearson r no more than
#: ROUND13_MARGIN below it, **and** on ``eval13_looks`` (the scripted ladder under fresh looks
#: 7121-7123, 144) its r and its stage accuracy are each no more than ROUND13_MARGIN below the
#: bar's. If it passes it ships as ROUND13_SHIPS_AS names and becomes the recommendation.
#: ``decoders --checkpoints ROUND13_CHECKPOINTS --greedy`` reads them; every other reading is
#: reported only (families_demo3, j_ensemble, each n_now seed, ``n_ensemble_m3``: the
#: candidate's networks with a median of 3 per stage). Each is read with its own decoder
#: (``--greedy``): the now-heads with no median (their checkpoints carry it).
ROUND13_CHECKPOINTS = ('families_hjk', 'n_ensemble', 'n_ensemble_m3', 'n_now', 'n_now_s1',
                       'n_now_s2', 'families_demo3', 'j_ensemble')
ROUND13_BAR = 'families_hjk greedy'
ROUND13_CANDIDATES = ('n_ensemble greedy(median 1)',)
ROUND13_MARGIN = 0.03
ROUND13_SHIPS_AS = {'n_ensemble greedy(median 1)': 'progress_scorer_families_now3.pt'}
ROUND13_NOTHING_SHIPS = 'nothing (families_hjk, greedy, stays the recommendation)'
ROUND13_SEED_DEADLINE = '22:12'
ROUND13_FILES = (pathlib.Path('docs/scorer-round13-ladder.json'),
                 pathlib.Path('docs/scorer-round13-looks.json'),
                 pathlib.Path('docs/scorer-round13-rule.json'))


#: Round 14's rule (fixed before measuring; docs/scoring.md, "Round 14"): no training; the
#: candidate is round 13's ``n_ensemble_m3`` (its three now-head networks, read by the decoder
#: its checkpoint carries: ``decode_now`` with a median of 3 per stage), chosen in round 13
#: after its sets were read, so judged here on sets never used. The bar: the shipped
#: recommendation as shipped, families_hjk (greedy). Round 11's conditions (``bar_rule``): it
#: passes only if on all of ``eval14_demo_ladder`` (the held-out family under lab_demo, seeds
#: 468-491, 192 episodes) its stage accuracy is **above** the bar's and its Pearson r no more
#: than ROUND14_MARGIN below it, **and** on ``eval14_looks`` (the scripted ladder under fresh
#: looks 7131-7133, 144) its r and its stage accuracy are each no more than ROUND14_MARGIN below
#: the bar's. If it passes it ships as ROUND14_SHIPS_AS names (the measured file, byte for byte)
#: and becomes the recommendation. ``decoders --checkpoints ROUND14_CHECKPOINTS --greedy`` reads
#: them; n_ensemble, families_demo3 and j_ensemble are reported only.
ROUND14_CHECKPOINTS = ('families_hjk', 'n_ensemble_m3', 'n_ensemble', 'families_demo3',
                       'j_ensemble')
ROUND14_BAR = 'families_hjk greedy'
ROUND14_CANDIDATES = ('n_ensemble_m3 greedy',)
ROUND14_MARGIN = 0.03
ROUND14_SHIPS_AS = {'n_ensemble_m3 greedy': 'progress_scorer_families_now3.pt'}
ROUND14_NOTHING_SHIPS = 'nothing (families_hjk, greedy, stays the recommendation)'
ROUND14_FILES = (pathlib.Path('docs/scorer-round14-ladder.json'),
                 pathlib.Path('docs/scorer-round14-looks.json'),
                 pathlib.Path('docs/scorer-round14-rule.json'))


#: Round 15's rule (fixed before measuring; docs/scoring.md, "Round 15"): no training; the
#: candidate is ``n_ensemble_m3_prior``: the shipped families_now3's three now-head networks
#: with its median of 3, each stage k called where its probability is above w_k / (1 + w_k)
#: instead of 0.5 (w_k the positive weight stage k's binary cross-entropy used over n_now's
#: training frames: the prior correction, nothing tuned). The bar: the recommendation as
#: shipped, families_now3 (greedy, its own decoder). Round 11's conditions (``bar_rule``): it
#: passes only if on all of ``eval15_demo_ladder`` (the held-out family under lab_demo, seeds
#: 492-515, 192 episodes) its stage accuracy is **above** the bar's and its Pearson r no more
#: than ROUND15_MARGIN below it, **and** on ``eval15_looks`` (the scripted ladder under fresh
#: looks 7141-7143, 144) its r and its stage accuracy are each no more than ROUND15_MARGIN below
#: the bar's. If it passes it ships as ROUND15_SHIPS_AS names (the measured file, byte for byte)
#: and becomes the recommendation. ``decoders --checkpoints ROUND15_CHECKPOINTS --greedy`` reads
#: them; families_hjk and n_ensemble are reported only.
ROUND15_CHECKPOINTS = ('families_now3', 'n_ensemble_m3_prior', 'families_hjk', 'n_ensemble')
ROUND15_BAR = 'families_now3 greedy'
ROUND15_CANDIDATES = ('n_ensemble_m3_prior greedy(thresholds)',)
ROUND15_MARGIN = 0.03
ROUND15_SHIPS_AS = {'n_ensemble_m3_prior greedy(thresholds)':
                    'progress_scorer_families_now3p.pt'}
ROUND15_NOTHING_SHIPS = 'nothing (families_now3, greedy, stays the recommendation)'
ROUND15_FILES = (pathlib.Path('docs/scorer-round15-ladder.json'),
                 pathlib.Path('docs/scorer-round15-looks.json'),
                 pathlib.Path('docs/scorer-round15-rule.json'))


#: Round 16's rule (fixed before collecting or training; docs/scoring.md, "Round 16"): the
#: candidate is ``q_ensemble_m3``: n_now's three networks each fine-tuned (10 epochs, its own
#: seed) with an auxiliary regression of each frame's stage measures (the finger-to-reach-point
#: distance REACH thresholds at 0.10 m, the object-to-target distance MOVE_CLOSE thresholds),
#: read as families_now3 is (``decode_now``, a median of 3, thresholds 0.5; the auxiliary head
#: is not read). The bar: the recommendation as shipped, families_now3. Round 11's conditions
#: (``bar_rule``): it passes only if on all of ``eval16_demo_ladder`` (the held-out family under
#: lab_demo, seeds 516-539, 192 episodes) its stage accuracy is **above** the bar's and its
#: Pearson r no more than ROUND16_MARGIN below it, **and** on ``eval16_looks`` (the scripted
#: ladder under fresh looks 7151-7153, 144) its r and its stage accuracy are each no more than
#: ROUND16_MARGIN below the bar's. If it passes it ships as ROUND16_SHIPS_AS names (the
#: measured file, byte for byte) and becomes the recommendation. ``decoders --checkpoints
#: ROUND16_CHECKPOINTS --greedy`` reads them; families_hjk and q_ctrl_m3 (the same fine-tuning
#: without the auxiliary loss) are reported only.
ROUND16_CHECKPOINTS = ('families_now3', 'q_ensemble_m3', 'q_ctrl_m3', 'families_hjk')
ROUND16_BAR = 'families_now3 greedy'
ROUND16_CANDIDATES = ('q_ensemble_m3 greedy',)
ROUND16_MARGIN = 0.03
ROUND16_SHIPS_AS = {'q_ensemble_m3 greedy': 'progress_scorer_families_dist3.pt'}
ROUND16_NOTHING_SHIPS = 'nothing (families_now3, greedy, stays the recommendation)'
ROUND16_FILES = (pathlib.Path('docs/scorer-round16-ladder.json'),
                 pathlib.Path('docs/scorer-round16-looks.json'),
                 pathlib.Path('docs/scorer-round16-rule.json'))

#: Round 17's rule (fixed before collecting or measuring; docs/scoring.md, "Round 17"): the
#: candidate is ``families_dist3_read``: the shipped families_dist3's three networks, no
#: retraining, read by a decoder (``learned.Decoder(measured=True)``) that holds each stage
#: with a measure (``skills.STAGE_MEASURES``: REACH, MOVE_CLOSE) in a frame where its auxiliary
#: distance, in metres and median filtered over 3 frames, is below that predicate's own
#: threshold (``skills.REACH_DISTANCE``, ``skills.MOVE_CLOSE_DISTANCE``) **or** where the next
#: stage is held (REACH's "or touching": the stage after REACH is GRASP, TOUCH or
#: TOUCH_AND_MOVE_JOINT in every skill, each of which needs the robot touching the object; the
#: stage after MOVE_CLOSE is a placement in or on the target), every other stage from its head
#: (probability > 0.5, median of 3), then the rubric's order and stickiness. Nothing tuned. The
#: bar: the recommendation as shipped, families_dist3. Round 11's conditions (``bar_rule``): it
#: passes only if on all of ``eval17_demo_ladder`` (the held-out family under lab_demo, seeds
#: 540-563, 192 episodes) its stage accuracy is **above** the bar's and its Pearson r no more
#: than ROUND17_MARGIN below it, **and** on ``eval17_looks`` (the scripted ladder under fresh
#: looks 7161-7163, 144) its r and its stage accuracy are each no more than ROUND17_MARGIN below
#: the bar's. If it passes it ships as ROUND17_SHIPS_AS names (the measured file, byte for byte)
#: and becomes the recommendation. ``decoders --checkpoints ROUND17_CHECKPOINTS --greedy`` reads
#: them; families_now3 and q_ctrl_m3 are reported only.
ROUND17_CHECKPOINTS = ('families_dist3', 'families_dist3_read', 'families_now3', 'q_ctrl_m3')
ROUND17_BAR = 'families_dist3 greedy'
ROUND17_CANDIDATES = ('families_dist3_read greedy(measured)',)
ROUND17_MARGIN = 0.03
ROUND17_SHIPS_AS = {'families_dist3_read greedy(measured)': 'progress_scorer_families_dist3r.pt'}
ROUND17_NOTHING_SHIPS = 'nothing (families_dist3, greedy, stays the recommendation)'
ROUND17_FILES = (pathlib.Path('docs/scorer-round17-ladder.json'),
                 pathlib.Path('docs/scorer-round17-looks.json'),
                 pathlib.Path('docs/scorer-round17-rule.json'))

#: Round 18's rule (fixed before collecting or measuring; docs/scoring.md, "Round 18"): the
#: candidate is ``families_dist3_veto``: the shipped families_dist3's three networks, no
#: retraining, read by a decoder (``learned.Decoder(veto=ROUND18_VETO)``) that holds each stage
#: as its head holds it (probability > 0.5, median of 3), except that a stage with a measure
#: (``skills.STAGE_MEASURES``) is **not** held in a frame where its auxiliary distance, median
#: filtered over 3 frames, is above ROUND18_VETO times its predicate's own threshold
#: (``skills.MEASURE_THRESHOLDS``) **unless** the next stage is held (the distance cannot see
#: REACH's touch; round 17's clause). ROUND18_VETO is chosen on the training sets only
#: (ROUND18_VETO_SETS, families_dist3's eight) before the new sets are collected: the smallest
#: multiple from ROUND18_VETO_STEPS at which, for each measured stage, at most
#: ROUND18_VETO_ABOVE of the training frames where its predicate holds and the next stage's
#: does not have a median-filtered distance above it (``vetoes``); none: nothing is tested.
#: The bar: the recommendation as shipped, families_dist3. Round 11's conditions
#: (``bar_rule``) on ``eval18_demo_ladder`` (the held-out family under lab_demo, seeds 564-587,
#: 192) and ``eval18_looks`` (the scripted ladder under fresh looks 7171-7173, 144), margin
#: ROUND18_MARGIN. If it passes it ships as ROUND18_SHIPS_AS names (the measured file, byte for
#: byte) and becomes the recommendation. families_dist3_read and families_now3 reported only.
ROUND18_CHECKPOINTS = ('families_dist3', 'families_dist3_veto', 'families_dist3_read',
                       'families_now3')
ROUND18_BAR = 'families_dist3 greedy'
ROUND18_CANDIDATES = ('families_dist3_veto greedy(veto)',)
ROUND18_MARGIN = 0.03
ROUND18_SHIPS_AS = {'families_dist3_veto greedy(veto)': 'progress_scorer_families_dist3v.pt'}
ROUND18_NOTHING_SHIPS = 'nothing (families_dist3, greedy, stays the recommendation)'
ROUND18_FILES = (pathlib.Path('docs/scorer-round18-ladder.json'),
                 pathlib.Path('docs/scorer-round18-looks.json'),
                 pathlib.Path('docs/scorer-round18-rule.json'))
#: The veto's search (round 18, fixed before it ran): multiples 1.1, 1.2, ... of each measured
#: stage's threshold up to 2.4 (0.30 m, the training clip ``learned.MEASURE_CLIP``, over
#: MOVE_CLOSE's 0.125 m: above it the output cannot reach), at most 1 % of the frames above it.
ROUND18_VETO_STEPS = tuple(round(0.1 * k, 1) for k in range(11, 25))
ROUND18_VETO_ABOVE = 0.01
ROUND18_VETO_SETS: tuple[str, ...] = VARIANTS['q_dist']['sets']
#: The veto multiple the rule chose (``vetoes``, on ROUND18_VETO_SETS only, before the new sets
#: were collected): at 1.3x, 0.13 % of REACH's 8,252 and 0.24 % of MOVE_CLOSE's 419 training
#: frames are above it (at 1.2x MOVE_CLOSE's 1.19 %, over 1 %).
ROUND18_VETO = 1.3


def look_stem(look: int | str) -> str:
    """A set's look as a file stem: ``lab-SEED`` for a lab look, ``file-NAME`` for a file."""
    return f'lab-{look}' if isinstance(look, int) else f'file-{pathlib.Path(look).stem}'


def collect_look(look: int | str, task_names: tuple[str, ...], policies: tuple[str, ...],
                 seeds: tuple[int, ...], folder: pathlib.Path, max_steps: int = 200,
                 every_step: bool = False) -> dict[str, list[Any]]:
    """Run one look's episodes with both cameras; return each camera's labelled episodes
    (frames at every 5th control step, or at every step with ``every_step``)."""
    from realm_ros.core import robot, tasks
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.world import make_world
    from realm_ros.scorers import learned

    path = (learned.write_look(look, folder / 'appearance') if isinstance(look, int)
            else pathlib.Path(look))
    # A policy that looks, or frames kept at every step: the world renders every step.
    looking = bool(learned.policy_cameras(policies)) or every_step
    world = make_world(WorldConfig(backend='digital_real', cameras=CAMERAS,
                                   camera_rate_hz=robot.CONTROL_HZ / (1 if looking else 5),
                                   appearance_file=str(path)))
    out: dict[str, list[Any]] = {c: [] for c in CAMERAS}
    label = f'lab:{look}' if isinstance(look, int) else ''  # '': the look the plan was given
    try:
        start = time.monotonic()
        for name, task, seed, run in learned.policy_runs(
                world, policies, task_names, seeds or (look,), max_steps, CAMERAS,
                1 if every_step else 5 if looking else 0):  # kept: every step, or every 5th
            for c in CAMERAS:
                out[c].append(learned.labelled_episode(task, 'digital_real', name, seed,
                                                       run.frames[c], run.times, run.met, label,
                                                       run.now, run.measures))
            same = bool(np.array_equal(learned.sticky_counts(run.now), run.met))
            print(f'{label or look} {task} {name} seed {seed}: {len(run.met)} frames, '
                  f'rubric {max(run.met)}/{len(tasks.get_task(task).stages)}, sticky counts '
                  f'of the predicates {"equal" if same else "DIFFER"}, '
                  f'{time.monotonic() - start:.1f} s', file=sys.stderr, flush=True)
            start = time.monotonic()
    finally:
        world.close()
    return out


def run_collect(args: argparse.Namespace) -> None:
    from realm_ros.scorers import learned
    looks, task_names, policies, seeds, max_steps = SETS[args.set]
    if args.set in LADDER_OF.values():
        policies = learned.LEARNED_LADDER
    folder = args.data_dir / args.set
    share, shares = args.share
    for look in looks[:args.limit_looks or None][share::shares]:
        if all((folder / f'{look_stem(look)}.{c}.npz').is_file() for c in CAMERAS):
            continue
        episodes = collect_look(look, task_names, policies, seeds, args.data_dir, max_steps,
                                args.set in EVERY_STEP)
        for c in CAMERAS:
            learned.save_episodes(folder / f'{look_stem(look)}.{c}.npz', episodes[c])


def load_set(folder: pathlib.Path, name: str, cameras: tuple[str, ...]) -> list[Any]:
    """Return set ``name``'s labelled episodes with ``cameras``' frames stacked (H, W, 3K)."""
    from realm_ros.scorers import learned
    looks = SETS[name][0]
    out = []
    for look in looks:
        per_camera = [learned.load_episodes(folder / name / f'{look_stem(look)}.{c}.npz')
                      for c in cameras]
        for parts in zip(*per_camera):
            if any(not np.array_equal(p.met, parts[0].met) for p in parts):
                raise SystemExit(f"{look}: the cameras' labels differ")
            out.append(dataclasses.replace(
                parts[0], frames=np.concatenate([p.frames for p in parts], axis=-1)))
    return out


def variant_config(name: str, args: argparse.Namespace, seed: int = 0) -> Any:
    from realm_ros.scorers import learned
    settings = {k: v for k, v in VARIANTS[name].items()
                if k not in ('sets', 'decoder', 'init_of')}
    settings.setdefault('epochs', args.epochs)
    return dataclasses.replace(learned.SHIPPED, threads=args.threads, seed=seed, **settings)


def checkpoint_name(name: str, seed: int) -> str:
    """A variant's checkpoint stem: its name, ``_s<seed>`` for a training seed other than 0."""
    return name if seed == 0 else f'{name}_s{seed}'


def run_train(args: argparse.Namespace) -> None:
    for variant in args.variants or VARIANTS:
        for seed in args.seeds:
            train_one(args, variant, seed)


def with_variant_decoder(variant: str, checkpoint: dict[str, Any]) -> dict[str, Any]:
    """``checkpoint`` carrying its variant's decoder (``VARIANTS[...]['decoder']``, round 13),
    or as it is."""
    from realm_ros.scorers import learned
    settings = VARIANTS[variant].get('decoder')
    return checkpoint if settings is None else learned.with_decoder(
        checkpoint, learned.Decoder.of(settings))


def training_pos_weights(args: argparse.Namespace, variant: str) -> np.ndarray:
    """The positive weight per stage a now-head ``variant``'s loss used: ``now_pos_weights``
    over its training sets' frames (the labels ``learned.train`` reads: the first camera's
    episodes' ``now``), with its ``class_weight_power``."""
    from realm_ros.scorers import learned
    config = variant_config(variant, args)
    episodes = [e for part in VARIANTS[variant]['sets']
                for e in load_set(args.data_dir, part, ('exterior_1',))]
    if any(e.now is None for e in episodes):
        raise SystemExit(f"{variant}: its training sets lack the frames' stage predicates")
    labels = np.concatenate([np.pad(np.asarray(e.now, dtype=float),
                                    ((0, 0), (0, learned.MAX_STAGES - e.n_stages)))
                             for e in episodes])
    n_stages = np.concatenate([np.full(len(e.met), e.n_stages) for e in episodes])
    print(f'{variant}: {len(episodes)} episodes, {len(labels)} frames', flush=True)
    return learned.now_pos_weights(labels, n_stages, config.class_weight_power)


def train_one(args: argparse.Namespace, variant: str, seed: int) -> None:
    from realm_ros.scorers import learned
    name = checkpoint_name(variant, seed)
    if 'ensemble_of' in VARIANTS[variant]:  # built from trained seeds, not trained
        if seed != 0:
            return
        paths = [args.data_dir / f'{checkpoint_name(VARIANTS[variant]["ensemble_of"], k)}.pt'
                 for k in VARIANTS[variant]['seeds']]
        if VARIANTS[variant].get('finished_only'):  # round 13: the seeds that finished
            paths = [p for p in paths if p.is_file()]
        checkpoint = with_variant_decoder(variant, learned.ensemble(
            [learned.load_checkpoint(p) for p in paths],
            [learned.LearnedScorer(p).name for p in paths]))
        if 'prior_of' in VARIANTS[variant]:  # round 15: thresholds from the training weights
            weights = training_pos_weights(args, VARIANTS[variant]['prior_of'])
            decoder = dataclasses.replace(
                learned.Decoder.of(checkpoint.get('decoder')),
                thresholds=learned.prior_thresholds(weights))
            checkpoint = learned.with_decoder(checkpoint, decoder)
            print(f'{name}: positive weights {", ".join(f"{w:.4f}" for w in weights)}; '
                  f'thresholds {", ".join(f"{t:.4f}" for t in decoder.thresholds or ())}',
                  flush=True)
        learned.save_checkpoint(args.data_dir / f'{name}.pt', checkpoint)
        print(f'{name}: the ensemble of {", ".join(checkpoint["meta"]["ensemble"])}', flush=True)
        return
    if 'decoder_of' in VARIANTS[variant]:  # round 17: a shipped file's networks, not trained
        if seed != 0:
            return
        source = round11_path(VARIANTS[variant]['decoder_of'], args.data_dir)
        checkpoint = with_variant_decoder(variant, learned.load_checkpoint(source))
        learned.save_checkpoint(args.data_dir / f'{name}.pt', checkpoint)
        print(f'{name}: {source}\'s networks, decoder {checkpoint["decoder"]}', flush=True)
        return
    if 'networks_of' in VARIANTS[variant]:  # built from ensembles' networks, not trained
        if seed != 0:
            return
        parts = [learned.load_checkpoint(args.data_dir / f'{part}.pt')
                 for part in VARIANTS[variant]['networks_of']]
        names = [f'{part}: {one}' for part, checkpoint in zip(VARIANTS[variant]['networks_of'],
                                                             parts)
                 for one in checkpoint['meta']['ensemble']]
        checkpoint = learned.ensemble([one for c in parts for one in learned.members(c)], names)
        learned.save_checkpoint(args.data_dir / f'{name}.pt', checkpoint)
        print(f'{name}: the ensemble of {len(names)} networks: {", ".join(names)}', flush=True)
        return
    config = variant_config(variant, args, seed)
    episodes = [e for part in VARIANTS[variant].get('sets', ('train',))
                for e in load_set(args.data_dir, part, config.cameras)]
    # Round 16: fine-tuned from the matching seed of variant ``init_of``.
    init_of = VARIANTS[variant].get('init_of')
    init = (learned.load_checkpoint(args.data_dir / f'{checkpoint_name(init_of, seed)}.pt')
            if init_of else None)
    start = time.monotonic()
    cpu = time.process_time()
    checkpoint = learned.train(episodes, config, log=lambda line, name=name: print(
        f'{name}: {line}', file=sys.stderr, flush=True), init=init)
    checkpoint['meta']['train_s'] = [round(time.monotonic() - start, 1),
                                     round(time.process_time() - cpu, 1)]
    checkpoint = with_variant_decoder(variant, checkpoint)
    learned.save_checkpoint(args.data_dir / f'{name}.pt', checkpoint)
    print(f'{name}: {len(episodes)} episodes, {checkpoint["meta"]["frames"]} frames, '
          f'{time.monotonic() - start:.0f} s wall, {time.process_time() - cpu:.0f} s CPU, '
          f'final loss {checkpoint["meta"]["loss"][-1]:.4f}', flush=True)


def measure_one(scorer: Any, episodes: list[Any], reference: list[Any],
                counts: list[np.ndarray] | None = None) -> dict[str, Any]:
    """A scorer's figures on ``episodes`` (``learned.evaluate``; or of per-frame ``counts``
    read otherwise, ``learned.agreement``), stage accuracy's bootstrap interval over episodes
    (frames of one episode are not independent, so a Wilson interval over frames would be too
    narrow) and the constants (``learned.baselines``, from ``reference``; the best success
    constant read off ``episodes`` themselves)."""
    from realm_ros.core.metrics import wilson_interval
    from realm_ros.scorers import learned
    if counts is None:
        counts = [learned.stage_counts(scorer, e) for e in episodes]
    result = learned.agreement(episodes, counts)
    hits = np.asarray([int(np.sum(c == e.met)) for c, e in zip(counts, episodes)])
    frames = np.asarray([len(e.met) for e in episodes])
    rng = np.random.default_rng(0)
    rows = rng.integers(0, len(episodes), size=(2000, len(episodes)))
    boot = hits[rows].sum(axis=1) / frames[rows].sum(axis=1)
    result['stage_accuracy_ci'] = [float(v) for v in np.quantile(boot, [0.025, 0.975])]
    base = learned.baselines(episodes, reference)
    base['best_success_constant'] = max(base['always_success_accuracy'],
                                        base['always_failure_accuracy'])
    # Knowing the task and nothing else: each task's mean progression on these episodes.
    means = {t: np.mean([e.progression for e in episodes if e.task == t])
             for t in {e.task for e in episodes}}
    truth = [e.progression for e in episodes]
    answer = [means[e.task] for e in episodes]
    base['task_mean_pearson_r'] = (float(np.corrcoef(answer, truth)[0, 1])
                                   if np.ptp(answer) > 0 and np.ptp(truth) > 0 else None)
    # The operator's view (docs/scoring.md, "Stage proposals"): the proposal at the episode's
    # end accepted unchanged = its final stage count is the rubric's (final_stage_accuracy);
    # the constant proposes each task's most frequent final count on these episodes.
    finals: dict[str, list[int]] = {}
    for e in episodes:
        finals.setdefault(e.task, []).append(int(e.met[-1]))
    base['final_count_constant'] = sum(int(np.bincount(v).max())
                                       for v in finals.values()) / len(episodes)
    result['final_stage_accuracy_ci'] = wilson_interval(
        round(result['final_stage_accuracy'] * len(episodes)), len(episodes))
    result['baselines'] = base
    result['targets'] = {
        'pearson_r>=0.85': bool((result['pearson_r'] or 0) >= 0.85),
        'stage_accuracy>=0.8': bool(result['stage_accuracy'] >= 0.8),
        'success_accuracy>=best_constant+0.15': bool(
            result['success_accuracy'] >= base['best_success_constant'] + 0.15)}
    return result


def _num(value: float | None) -> str:
    return 'n/a' if value is None or not np.isfinite(value) else f'{value:.2f}'


def span_of(name: str) -> str:
    """A set's looks in a row's title: ``FIRST-LAST`` lab looks, or the appearance file's name."""
    first, last = SETS[name][0][0], SETS[name][0][-1]
    return f'{first}-{last}' if isinstance(first, int) else pathlib.Path(str(first)).stem


def held_sets(folder: pathlib.Path, held: tuple[str, ...], cameras: tuple[str, ...],
              extra_ladders: tuple[str, ...] = ()) -> dict[str, list[Any]]:
    """The rows ``measure`` reports for the held-out sets ``held`` pooled: all their episodes,
    each look, the unseen rung, and the learned ladder of each set that has one collected (and
    the ladder sets ``extra_ladders``), those ladders pooled; a set of ``LADDER_ONLY`` alone:
    its episodes, each task and each rung (several such sets: pooled, round 13)."""
    if any(name in LADDER_ONLY for name in held):
        if not all(name in LADDER_ONLY for name in held):
            raise SystemExit(f'measure: {", ".join(LADDER_ONLY)} are measured alone or '
                             'pooled with each other only')
        ladder = [e for name in held for e in load_set(folder, name, cameras)]
        title = ' + '.join(held)
        sets = {f'{title}, all': ladder}
        for task in dict.fromkeys(t for name in held for t in SETS[name][1]):
            sets[f'{title}, {task}'] = [e for e in ladder if e.task == task]
        for rung in dict.fromkeys(e.policy for e in ladder):
            sets[f'{title}, {rung}'] = [e for e in ladder if e.policy == rung]
        return sets
    looks = [e for name in held for e in load_set(folder, name, cameras)]
    numbers = [k for name in held for k in SETS[name][0]]
    title = ' + '.join(f'{SETS[name][0][0]}-{SETS[name][0][-1]}' for name in held)
    sets = {f'held-out looks {title}, all': looks}
    for look in numbers:
        sets[f'look lab:{look}'] = [e for e in looks if e.look == f'lab:{look}']
    sets['held-out looks, unseen rung scripted:2'] = [e for e in looks
                                                      if e.policy == 'scripted-2']
    ladders: dict[str, list[Any]] = {}
    for ladder_set in [LADDER_OF[name] for name in held if name in LADDER_OF] + list(
            extra_ladders):
        if not all((folder / ladder_set / f'{look_stem(k)}.{c}.npz').is_file()
                   for k in SETS[ladder_set][0] for c in cameras):
            if ladder_set in extra_ladders:
                raise SystemExit(f'measure --ladders: {ladder_set} is not collected')
            continue
        ladder = load_set(folder, ladder_set, cameras)
        span = span_of(ladder_set)
        ladders[span] = ladder
        sets[f'learned ladder, looks {span}'] = ladder
        for task in SETS[ladder_set][1]:
            sets[f'learned ladder {span}, {task}'] = [e for e in ladder if e.task == task]
        for rung in sorted({e.policy for e in ladder}):
            sets[f'learned ladder {span}, {rung}'] = [e for e in ladder if e.policy == rung]
    if len(ladders) > 1:
        sets[f'learned ladder pooled, looks {" + ".join(ladders)}'] = [
            e for ladder in ladders.values() for e in ladder]
    return sets


def checkpoint_figures(row: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    """The figures of the checkpoint whose column name in a ``measure`` row starts with
    ``prefix`` (None: not measured there)."""
    return next((v for k, v in row.items() if k.startswith(prefix)), None)


def round4_rule(figures: dict[str, Any]) -> dict[str, Any]:
    """Round 4's rule (``ROUND4_*``) read off the measured ``figures`` (the rows of
    ``measure looks new_looks fresh_looks``): which candidates pass, and which one ships."""
    pooled = next(iter(figures))  # the first row: all the held-out scripted episodes
    ladder = next(k for k in figures if k.startswith('learned ladder pooled'))

    def figures_of(prefix: str) -> dict[str, Any] | None:
        mine = checkpoint_figures(figures[pooled], prefix)
        theirs = checkpoint_figures(figures[ladder], prefix)
        if mine is None or theirs is None:
            return None
        return {'pearson_r': mine['pearson_r'], 'stage_accuracy': mine['stage_accuracy'],
                'ladder_pearson_r': theirs['pearson_r']}

    base = figures_of('shipped wrist80 (')
    assert base is not None, 'measure the shipped wrist80 too'
    verdict: dict[str, Any] = {'rows': [pooled, ladder], 'wrist80': base, 'candidates': {}}
    for variant, seeds in ROUND4_CANDIDATES.items():
        per_seed = {}
        for seed in seeds:
            mine = figures_of(f'{checkpoint_name(variant, seed)} (')
            if mine is not None:
                mine['passes'] = bool(
                    (mine['pearson_r'] or -1) > (base['pearson_r'] or -1)
                    and mine['stage_accuracy'] > base['stage_accuracy']
                    and (mine['ladder_pearson_r'] or -1) >= (base['ladder_pearson_r'] or -1))
            per_seed[seed] = mine
        measured = {k: v for k, v in per_seed.items() if v is not None}
        passes = bool(measured) and all(v['passes'] for v in measured.values())
        entry: dict[str, Any] = {'seeds': per_seed, 'seeds_measured': sorted(measured),
                                 'passes': passes}
        if passes:
            order = sorted(measured, key=lambda k: measured[k]['pearson_r'])
            entry['ships_seed'] = order[len(order) // 2]
            entry['pooled_r'] = measured[entry['ships_seed']]['pearson_r']
        verdict['candidates'][variant] = entry
    passing = {k: v for k, v in verdict['candidates'].items() if v['passes']}
    verdict['ships'] = (max(passing, key=lambda k: passing[k]['pooled_r']) if passing
                        else 'wrist80 (nothing passes)')
    return verdict


def round5_rule(figures: dict[str, Any]) -> dict[str, Any]:
    """Round 5's rule (``ROUND5_*``) read off the measured ``figures`` (the rows of ``measure
    looks new_looks fresh_looks --ladders eval4_learned_ladder demo_ladder``): does the
    candidate pass against the shipped families checkpoint?"""
    pooled = next(iter(figures))  # the first row: all the held-out scripted episodes
    ladder = next(k for k in figures if k.startswith('learned ladder pooled'))

    def figures_of(prefix: str) -> dict[str, Any] | None:
        mine = checkpoint_figures(figures[pooled], prefix)
        theirs = checkpoint_figures(figures[ladder], prefix)
        if mine is None or theirs is None:
            return None
        return {'pearson_r': mine['pearson_r'], 'stage_accuracy': mine['stage_accuracy'],
                'ladder_pearson_r': theirs['pearson_r'],
                'ladder_success_accuracy': theirs['success_accuracy']}

    base = figures_of('shipped families (')
    mine = figures_of(f'{ROUND5_CANDIDATE} (')
    assert base is not None and mine is not None, 'measure families and the candidate'
    mine['passes'] = bool(
        (mine['pearson_r'] or -1) > (base['pearson_r'] or -1)
        and mine['stage_accuracy'] > base['stage_accuracy']
        and (mine['ladder_pearson_r'] or -1) >= (base['ladder_pearson_r'] or -1)
        and mine['ladder_success_accuracy'] >= base['ladder_success_accuracy'])
    return {'rows': [pooled, ladder], 'families': base, ROUND5_CANDIDATE: mine,
            'ships': ROUND5_CANDIDATE if mine['passes'] else 'families (the candidate fails)'}


def held_out_and_looks(ladder: dict[str, Any], looks: dict[str, Any], whole: bool = False
                       ) -> tuple[tuple[str, str], Callable[[str], dict[str, Any] | None]]:
    """The rows the rounds judge by (the first of ``measure``'s figures on the held-out
    family and on the fresh looks: all of each set's episodes) and a lookup of one checkpoint's
    figures there (its column by ``prefix``; ``None`` where it was not measured on both):
    its r, stage and success accuracy on the held-out family and its r on the looks; ``whole``
    (rounds 10-12): also its stage and success accuracy on the looks and how many of the
    issue's six targets it meets on the two sets."""
    ladder_row = next(iter(ladder))
    looks_row = next(iter(looks))

    def figures_of(prefix: str) -> dict[str, Any] | None:
        mine = checkpoint_figures(ladder[ladder_row], prefix)
        theirs = checkpoint_figures(looks[looks_row], prefix)
        if mine is None or theirs is None:
            return None
        out = {'pearson_r': mine['pearson_r'], 'stage_accuracy': mine['stage_accuracy'],
               'success_accuracy': mine['success_accuracy'],
               'looks_pearson_r': theirs['pearson_r']}
        if whole:
            out.update(looks_stage_accuracy=theirs['stage_accuracy'],
                       looks_success_accuracy=theirs['success_accuracy'],
                       targets_met=sum(mine['targets'].values())
                       + sum(theirs['targets'].values()))
        return out

    return (ladder_row, looks_row), figures_of


#: What a round's verdict says ships when no candidate passes.
NOTHING_SHIPS = 'nothing (families3 stays the recommendation)'


def passing_and_best(candidates: dict[str, Any],
                     key: Callable[[dict[str, Any]], Any] = lambda v: v['pearson_r']
                     ) -> tuple[list[str], str | None]:
    """A round's passing candidates (in the rule's order; ``None``: not measured) and the one
    of them with the highest ``key`` (by default the Pearson r on the held-out family; the first
    on a tie; None: none passes)."""
    passing = [k for k, v in candidates.items() if v is not None and v['passes']]
    return passing, max(passing, key=lambda k: key(candidates[k]), default=None)


def round6_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 6's rule (``ROUND6_*``) read off ``measure eval6_demo_ladder``'s and ``measure
    eval5_looks``' figures: does every trained seed of the candidate pass against families3?
    Also the seeds' mean figures on the held-out family (the figure the docs call h's)."""
    (ladder_row, looks_row), figures_of = held_out_and_looks(ladder, looks)

    base = figures_of('shipped families3 (')
    assert base is not None, 'measure families3 on both sets'
    seeds: dict[int, Any] = {}
    for seed in ROUND6_SEEDS:
        mine = figures_of(f'{checkpoint_name(ROUND6_CANDIDATE, seed)} (')
        if mine is not None:
            mine['passes'] = bool(
                (mine['pearson_r'] or -1) > (base['pearson_r'] or -1)
                and mine['stage_accuracy'] > base['stage_accuracy']
                and (mine['looks_pearson_r'] or -1)
                >= (base['looks_pearson_r'] or -1) - ROUND6_LOOKS_MARGIN)
        seeds[seed] = mine
    measured = [v for v in seeds.values() if v is not None]
    passes = (len(measured) >= 2 and ROUND6_SHIPS_SEED in [k for k, v in seeds.items() if v]
              and all(v['passes'] for v in measured))
    mean = {key: float(np.mean([v[key] for v in measured]))
            for key in ('pearson_r', 'stage_accuracy', 'success_accuracy', 'looks_pearson_r')
            } if measured else None
    return {'rows': [ladder_row, looks_row], 'families3': base, ROUND6_CANDIDATE: seeds,
            'seeds_measured': [k for k, v in seeds.items() if v], 'mean_of_seeds': mean,
            'passes': passes,
            'ships': (f'{checkpoint_name(ROUND6_CANDIDATE, ROUND6_SHIPS_SEED)}' if passes
                      else NOTHING_SHIPS)}


def apply_round(label: str, files: tuple[pathlib.Path, ...],
                rule: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]) -> None:
    """Apply a round's ``rule`` to its two measurements' JSON files (``files``: the held-out
    family's, the fresh looks', and the verdict written beside them)."""
    ladder_file, looks_file, out = files
    for path in (ladder_file, looks_file):
        if not path.is_file():
            raise SystemExit(f'{label}: {path} is not measured yet')
    verdict = rule(json.loads(ladder_file.read_text()), json.loads(looks_file.read_text()))
    out.write_text(json.dumps(verdict, indent=2, default=float))
    print(f'{label} rule: {json.dumps(verdict, default=float)}', flush=True)


def round7_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 7's rule (``ROUND7_*``) read off ``measure eval7_demo_ladder``'s and ``measure
    eval7_looks``' figures: which candidates beat families3 and h (its seeds' mean) on the
    held-out family, within the margin on the fresh looks, and which one ships."""
    (ladder_row, looks_row), figures_of = held_out_and_looks(ladder, looks)

    base = figures_of('shipped families3 (')
    assert base is not None, 'measure families3 on both sets'
    h_name, h_seeds = ROUND7_H
    h_each = {seed: figures_of(f'{checkpoint_name(h_name, seed)} (') for seed in h_seeds}
    assert all(v is not None for v in h_each.values()), f"measure {h_name}'s seeds on both sets"
    h_mean = {key: float(np.mean([v[key] for v in h_each.values() if v is not None]))
              for key in ('pearson_r', 'stage_accuracy', 'success_accuracy', 'looks_pearson_r')}
    candidates: dict[str, Any] = {}
    for name in ROUND7_CANDIDATES:
        mine = figures_of(f'{name} (')
        if mine is not None:
            r, stage = mine['pearson_r'] or -1, mine['stage_accuracy']
            mine['passes'] = bool(
                r > (base['pearson_r'] or -1) and r > h_mean['pearson_r']
                and stage > base['stage_accuracy'] and stage > h_mean['stage_accuracy']
                and (mine['looks_pearson_r'] or -1)
                >= (base['looks_pearson_r'] or -1) - ROUND7_LOOKS_MARGIN)
        candidates[name] = mine
    passing, best = passing_and_best(candidates)
    return {'rows': [ladder_row, looks_row], 'families3': base, 'h_mean_of_seeds': h_mean,
            'candidates': candidates, 'passing': passing,
            'ships': (f'{best} as realm_ros/data/{ROUND7_SHIPS_AS[best]}' if best
                      else NOTHING_SHIPS)}


def round9_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 9's rule (``ROUND9_*``) read off ``measure eval9_demo_ladder``'s and ``measure
    eval9_looks``' figures: which candidates meet or beat families3 on the held-out family,
    within the margin on the fresh looks, which one ships, and which of the issue's three
    targets each checkpoint measured meets on each set (recorded, not part of the rule)."""
    (ladder_row, looks_row), figures_of = held_out_and_looks(ladder, looks)

    base = figures_of('shipped families3 (')
    assert base is not None, 'measure families3 on both sets'
    candidates: dict[str, Any] = {}
    for name in ROUND9_CANDIDATES:
        mine = figures_of(f'{name} (')
        if mine is not None:
            mine['passes'] = bool(
                (mine['pearson_r'] or -1) >= (base['pearson_r'] or -1)
                and mine['stage_accuracy'] >= base['stage_accuracy']
                and (mine['looks_pearson_r'] or -1)
                >= (base['looks_pearson_r'] or -1) - ROUND9_LOOKS_MARGIN)
        candidates[name] = mine
    passing, best = passing_and_best(candidates)
    targets = {row: {column: figures['targets'] for column, figures in table[row].items()}
               for row, table in ((ladder_row, ladder), (looks_row, looks))}
    return {'rows': [ladder_row, looks_row], 'families3': base, 'candidates': candidates,
            'passing': passing,
            'ships': (f'{best} as realm_ros/data/{ROUND9_SHIPS_AS[best]}' if best
                      else NOTHING_SHIPS),
            'targets': targets}


def round10_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 10's rule (``ROUND10_*``) read off ``measure eval10_demo_ladder``'s and ``measure
    eval10_looks``' figures: which candidates beat the shipped families_demo3 in stage accuracy
    on the held-out family within the r margin, hold r and stage accuracy on the fresh looks,
    which one ships (the most of the issue's six targets met, then the held-out stage
    accuracy), and which targets each checkpoint measured meets on each set."""
    return bar_rule(ladder, looks, ROUND10_BAR, {name: f'{name} (' for name in ROUND10_CANDIDATES},
                    ROUND10_R_MARGIN, ROUND10_SHIPS_AS, ROUND10_NOTHING_SHIPS,
                    looks_stage_margin=0.0)


def round11_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 11's rule (``ROUND11_*``) read off ``decoders eval11_demo_ladder``'s and
    ``decoders eval11_looks``' figures: which monotone readings beat families_demo3's greedy
    one in stage accuracy on the held-out family within the r margin and stay within the margin
    in r and stage accuracy on the fresh looks, which one ships (the most of the issue's six
    targets met, then the held-out stage accuracy), and which targets each reading meets."""
    return bar_rule(ladder, looks, ROUND11_BAR, {name: f'{name}(' for name in ROUND11_CANDIDATES},
                    ROUND11_MARGIN, ROUND11_SHIPS_AS, ROUND11_NOTHING_SHIPS)


def round12_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 12's rule (``ROUND12_*``) read off ``decoders eval12_demo_ladder``'s and
    ``decoders eval12_looks``' figures: round 11's conditions and order of shipping, the
    candidates the ensembles of several ensembles' networks (greedy), the bar families_demo3
    (greedy)."""
    return bar_rule(ladder, looks, ROUND12_BAR, {name: f'{name} (' for name in ROUND12_CANDIDATES},
                    ROUND12_MARGIN, ROUND12_SHIPS_AS, ROUND12_NOTHING_SHIPS)


def round13_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 13's rule (``ROUND13_*``) read off ``decoders eval13_demo_ladder``'s and
    ``decoders eval13_looks``' figures: round 11's conditions, the candidate the now-head
    ensemble, the bar the shipped families_hjk (greedy)."""
    return bar_rule(ladder, looks, ROUND13_BAR, {name: f'{name} (' for name in ROUND13_CANDIDATES},
                    ROUND13_MARGIN, ROUND13_SHIPS_AS, ROUND13_NOTHING_SHIPS)


def round14_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 14's rule (``ROUND14_*``) read off ``decoders eval14_demo_ladder``'s and
    ``decoders eval14_looks``' figures: round 11's conditions, the candidate round 13's now-head
    ensemble with its median of 3, the bar the shipped families_hjk (greedy)."""
    return bar_rule(ladder, looks, ROUND14_BAR, {name: f'{name} (' for name in ROUND14_CANDIDATES},
                    ROUND14_MARGIN, ROUND14_SHIPS_AS, ROUND14_NOTHING_SHIPS)


def round15_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 15's rule (``ROUND15_*``) read off ``decoders eval15_demo_ladder``'s and
    ``decoders eval15_looks``' figures: round 11's conditions, the candidate families_now3's
    networks with the prior-corrected thresholds, the bar the shipped families_now3."""
    return bar_rule(ladder, looks, ROUND15_BAR, {name: f'{name} (' for name in ROUND15_CANDIDATES},
                    ROUND15_MARGIN, ROUND15_SHIPS_AS, ROUND15_NOTHING_SHIPS)


def round16_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 16's rule (``ROUND16_*``) read off ``decoders eval16_demo_ladder``'s and
    ``decoders eval16_looks``' figures: round 11's conditions, the candidate n_now's networks
    fine-tuned with the auxiliary measure regression (a median of 3), the bar the shipped
    families_now3."""
    return bar_rule(ladder, looks, ROUND16_BAR, {name: f'{name} (' for name in ROUND16_CANDIDATES},
                    ROUND16_MARGIN, ROUND16_SHIPS_AS, ROUND16_NOTHING_SHIPS)


def round17_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 17's rule (``ROUND17_*``) read off ``decoders eval17_demo_ladder``'s and
    ``decoders eval17_looks``' figures: round 11's conditions, the candidate families_dist3's
    networks read with the measured stages (``Decoder.measured``), the bar the shipped
    families_dist3."""
    return bar_rule(ladder, looks, ROUND17_BAR, {name: f'{name} (' for name in ROUND17_CANDIDATES},
                    ROUND17_MARGIN, ROUND17_SHIPS_AS, ROUND17_NOTHING_SHIPS)


def round18_rule(ladder: dict[str, Any], looks: dict[str, Any]) -> dict[str, Any]:
    """Round 18's rule (``ROUND18_*``) read off ``decoders eval18_demo_ladder``'s and
    ``decoders eval18_looks``' figures: round 11's conditions, the candidate families_dist3's
    networks read with the distance veto (``Decoder.veto``), the bar the shipped
    families_dist3."""
    return bar_rule(ladder, looks, ROUND18_BAR, {name: f'{name} (' for name in ROUND18_CANDIDATES},
                    ROUND18_MARGIN, ROUND18_SHIPS_AS, ROUND18_NOTHING_SHIPS)


def bar_rule(ladder: dict[str, Any], looks: dict[str, Any], bar_name: str,
             candidates_by_prefix: dict[str, str], margin: float, ships_as: dict[str, str],
             nothing: str, looks_stage_margin: float | None = None) -> dict[str, Any]:
    """Rounds 10's, 11's and 12's rule on a held-out-family set's and a fresh-looks set's
    figures (each set's first row): a candidate (its column's name starts with its prefix)
    passes if on the held-out family its stage accuracy is above the bar's and its r no more
    than ``margin`` below, and on the looks its r no more than ``margin`` and its stage accuracy
    no more than ``looks_stage_margin`` (default ``margin``; round 10: 0) below the bar's; of
    several passing, the most of the issue's six targets met ships, then the higher held-out
    stage accuracy, then the first."""
    (ladder_row, looks_row), figures_of = held_out_and_looks(ladder, looks, whole=True)

    bar = figures_of(f'{bar_name} (')
    assert bar is not None, f'read {bar_name} on both sets'
    candidates: dict[str, Any] = {}
    for name, prefix in candidates_by_prefix.items():
        mine = figures_of(prefix)
        if mine is not None:
            mine['passes'] = bool(
                mine['stage_accuracy'] > bar['stage_accuracy']
                and (mine['pearson_r'] or -1) >= (bar['pearson_r'] or -1) - margin
                and (mine['looks_pearson_r'] or -1) >= (bar['looks_pearson_r'] or -1) - margin
                and mine['looks_stage_accuracy'] >= bar['looks_stage_accuracy'] - (
                    margin if looks_stage_margin is None else looks_stage_margin))
        candidates[name] = mine
    passing, best = passing_and_best(
        candidates, key=lambda v: (v['targets_met'], v['stage_accuracy']))
    targets = {row: {column: figures['targets'] for column, figures in table[row].items()}
               for row, table in ((ladder_row, ladder), (looks_row, looks))}
    return {'rows': [ladder_row, looks_row], 'bar': bar, 'candidates': candidates,
            'passing': passing,
            'ships': f'{best} as realm_ros/data/{ships_as[best]}' if best else nothing,
            'targets': targets}


def round8_rule(rates: dict[str, Any]) -> dict[str, Any]:
    """Round 8's rule (``ROUND8_*``) read off ``rates eval8_demo_ladder eval8_looks``'s
    figures: which readings of ROUND8_CHECKPOINT beat its shipped reading on the held-out
    family within the margins on the fresh looks, and which becomes the default."""
    ladder_row, looks_row = 'eval8_demo_ladder, all', 'eval8_looks, all'

    def figures_of(reading: str) -> dict[str, Any]:
        column = f'{ROUND8_CHECKPOINT} @ {reading}'
        mine, theirs = rates[ladder_row][column], rates[looks_row][column]
        return {'pearson_r': mine['pearson_r'], 'stage_accuracy': mine['stage_accuracy'],
                'success_accuracy': mine['success_accuracy'],
                'looks_pearson_r': theirs['pearson_r'],
                'looks_stage_accuracy': theirs['stage_accuracy']}

    base = figures_of(ROUND8_BASE)
    candidates: dict[str, Any] = {}
    for reading in ROUND8_CANDIDATES:
        mine = figures_of(reading)
        mine['passes'] = bool(
            (mine['pearson_r'] or -1) > (base['pearson_r'] or -1)
            and mine['stage_accuracy'] > base['stage_accuracy']
            and (mine['looks_pearson_r'] or -1) >= (base['looks_pearson_r'] or -1)
            - ROUND8_R_MARGIN
            and mine['looks_stage_accuracy'] >= base['looks_stage_accuracy']
            - ROUND8_STAGE_MARGIN)
        candidates[reading] = mine
    passing, best = passing_and_best(candidates)
    return {'rows': [ladder_row, looks_row], 'checkpoint': ROUND8_CHECKPOINT,
            'readings': {k: {'stride': v[0], 'median_frames': v[1]}
                         for k, v in ROUND8_READINGS.items()},
            ROUND8_BASE: base, 'candidates': candidates, 'passing': passing,
            'default': (f'{best} (stride {ROUND8_READINGS[best][0]}, median '
                        f'{ROUND8_READINGS[best][1]})' if best
                        else f'{ROUND8_BASE} (unchanged: no reading passes)')}


def reading_counts(probs: np.ndarray, stride: int, median: int, base_stride: int = 5
                   ) -> np.ndarray:
    """One episode's stage counts, read at every ``stride``-th of its frames (kept at every
    step) and decoded with a median of ``median`` frames, at the shipped reading's frames
    (every ``base_stride``-th): each the value of the last frame read at or before it."""
    from realm_ros.scorers import learned
    read = np.arange(0, len(probs), stride)
    curve = learned.decode(probs[read], median)
    at = np.searchsorted(read, np.arange(0, len(probs), base_stride), side='right') - 1
    return np.rint(curve[at]).astype(int)


def rate_rows(name: str, episodes: list[Any]) -> dict[str, list[int]]:
    """The rows ``rates`` reports for a set: all its episodes, each task, each rung (a
    ladder set) or each look, as indices into ``episodes``."""
    rows = {f'{name}, all': list(range(len(episodes)))}
    for key in ('task', 'policy' if len(SETS[name][0]) == 1 else 'look'):
        for value in dict.fromkeys(getattr(e, key) for e in episodes):
            rows[f'{name}, {value}'] = [k for k, e in enumerate(episodes)
                                        if getattr(e, key) == value]
    return rows


def run_rates(args: argparse.Namespace) -> None:
    """Round 8: each checkpoint's readings (``ROUND8_READINGS``) of sets kept at every step,
    scored at the shipped reading's frames against the rubric there; with the two round-8
    sets, the rule's verdict."""
    from realm_ros.scorers import learned
    checkpoints = {'shipped families3': learned.FAMILIES3_CHECKPOINT,
                   'shipped wrist': learned.WRIST_CHECKPOINT,
                   **{stem: args.data_dir / f'{stem}.pt'
                      for stem in (checkpoint_name(name, seed) for name in args.variants or ()
                                   for seed in args.seeds)
                      if (args.data_dir / f'{stem}.pt').is_file()}}
    names = args.sets or list(EVERY_STEP)
    if any(name not in EVERY_STEP for name in names):
        raise SystemExit(f'rates: sets kept at every step only ({", ".join(EVERY_STEP)})')
    reference = load_set(args.data_dir, 'train', ('exterior_1',))
    figures: dict[str, Any] = {}
    print('| set (episodes) | reader | Pearson r [95 % CI] (per-task constant) | stage accuracy '
          '[CI] (majority) | success accuracy [CI] (always success / failure) | final count '
          'right [CI] (constant) |')
    print('|---|---|---|---|---|---|')
    for label, path in checkpoints.items():
        scorer = learned.LearnedScorer(path)
        for name in names:
            episodes = load_set(args.data_dir, name, tuple(scorer.cameras))
            cpu = time.process_time()
            probs = [scorer.probabilities(list(e.frames), e.task) for e in episodes]
            print(f'{label} ({scorer.name}), {name}: probabilities of '
                  f'{sum(len(p) for p in probs)} frames, {time.process_time() - cpu:.1f} s CPU',
                  file=sys.stderr, flush=True)
            shipped = [dataclasses.replace(e, frames=e.frames[::5], times_s=e.times_s[::5],
                                           met=e.met[::5]) for e in episodes]
            for reading, (stride, median) in ROUND8_READINGS.items():
                counts = [reading_counts(p, stride, median) for p in probs]
                for row, keep in rate_rows(name, shipped).items():
                    r = measure_one(None, [shipped[k] for k in keep], reference,
                                    [counts[k] for k in keep])
                    r['checkpoint'] = scorer.name
                    figures.setdefault(row, {})[f'{label} @ {reading}'] = r
                    b, ci = r['baselines'], r['pearson_r_ci'] or [float('nan')] * 2
                    print(f'| {row} ({len(keep)}) | {label} @ {reading} | '
                          f'{_num(r["pearson_r"])} [{_num(ci[0])}, {_num(ci[1])}] '
                          f'({_num(b["task_mean_pearson_r"])}) | {r["stage_accuracy"]:.3f} '
                          f'[{r["stage_accuracy_ci"][0]:.2f}, {r["stage_accuracy_ci"][1]:.2f}] '
                          f'({b["majority_stage_accuracy"]:.2f}) | '
                          f'{r["success_accuracy"]:.3f} [{r["success_accuracy_ci"][0]:.2f}, '
                          f'{r["success_accuracy_ci"][1]:.2f}] '
                          f'({b["always_success_accuracy"]:.3f} / '
                          f'{b["always_failure_accuracy"]:.3f}) | '
                          f'{r["final_stage_accuracy"]:.2f} '
                          f'[{r["final_stage_accuracy_ci"][0]:.2f}, '
                          f'{r["final_stage_accuracy_ci"][1]:.2f}] '
                          f'({b["final_count_constant"]:.2f}) |', flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=float))
    if sorted(names) == sorted(EVERY_STEP) and args.json == ROUND8_FILES[0]:
        verdict = round8_rule(figures)
        ROUND8_FILES[1].write_text(json.dumps(verdict, indent=2, default=float))
        print(f'round 8 rule: {json.dumps(verdict, default=float)}', flush=True)


def ship_rule(figures: dict[str, Any], pooled: str, variant: str, seeds: tuple[int, ...]
              ) -> dict[str, Any]:
    """Round 3's rule (``SHIP_RULE_*``) read off the measured ``figures``: does every seed of
    ``variant`` beat the shipped wrist checkpoint in r and stage accuracy on ``pooled``?"""
    row = figures[pooled]
    wrist = next(v for k, v in row.items() if k.startswith('shipped wrist '))
    verdict: dict[str, Any] = {'rows': pooled, 'wrist': {
        'pearson_r': wrist['pearson_r'], 'stage_accuracy': wrist['stage_accuracy']}, 'seeds': {}}
    for seed in seeds:
        stem = checkpoint_name(variant, seed)
        mine = checkpoint_figures(row, f'{stem} (')
        if mine is None:
            verdict['seeds'][seed] = None
            continue
        verdict['seeds'][seed] = {
            'pearson_r': mine['pearson_r'], 'stage_accuracy': mine['stage_accuracy'],
            'beats': bool((mine['pearson_r'] or -1) > (wrist['pearson_r'] or -1)
                          and mine['stage_accuracy'] > wrist['stage_accuracy'])}
    measured = [v for v in verdict['seeds'].values() if v is not None]
    verdict['ships'] = bool(len(measured) == len(seeds) and all(v['beats'] for v in measured))
    if verdict['ships']:
        order = sorted(seeds, key=lambda k: verdict['seeds'][k]['pearson_r'])
        verdict['median_seed_by_r'] = order[len(order) // 2]
    return verdict


def run_measure(args: argparse.Namespace) -> None:
    from realm_ros.scorers import learned
    checkpoints = {'shipped default': learned.DEFAULT_CHECKPOINT,
                   'shipped looks': learned.LOOKS_CHECKPOINT,
                   'shipped wrist': learned.WRIST_CHECKPOINT,
                   'shipped wrist80': learned.WRIST80_CHECKPOINT,
                   'shipped families': learned.FAMILIES_CHECKPOINT,
                   'shipped families3': learned.FAMILIES3_CHECKPOINT,
                   'shipped families_demo3': learned.FAMILIES_DEMO3_CHECKPOINT,
                   **{stem: args.data_dir / f'{stem}.pt'
                      for stem in (checkpoint_name(name, seed)
                                   for name in (VARIANTS if args.variants is None
                                                else args.variants)
                                   for seed in args.seeds)
                      if (args.data_dir / f'{stem}.pt').is_file()}}
    if args.only_wrist:
        checkpoints = {k: v for k, v in checkpoints.items()
                       if k not in ('shipped default', 'shipped looks')}
    held = tuple(s for s in args.sets if not s.startswith('train')
                 and s not in LADDER_OF.values()) or ('looks',)
    reference = load_set(args.data_dir, 'train', ('exterior_1',))
    figures: dict[str, Any] = {}
    print('| set (episodes) | scorer | Pearson r [95 % CI] (per-task constant) | stage accuracy '
          '[CI] (majority) | success accuracy [CI] (always success / failure) | proposal '
          'accepted unchanged [CI] (constant) | mean abs error (mean) |')
    print('|---|---|---|---|---|---|---|')
    for label, path in checkpoints.items():
        scorer = learned.LearnedScorer(path)
        sets = held_sets(args.data_dir, held, tuple(scorer.cameras), tuple(args.ladders))
        for name, episodes in sets.items():
            r = measure_one(scorer, episodes, reference)
            figures.setdefault(name, {})[f'{label} ({scorer.name})'] = r
            b = r['baselines']
            ci = r['pearson_r_ci'] or [float('nan')] * 2
            task_r = b['task_mean_pearson_r']
            print(f'| {name} ({len(episodes)}) | {label} | {_num(r["pearson_r"])} '
                  f'[{_num(ci[0])}, {_num(ci[1])}] ({_num(task_r)}) | '
                  f'{r["stage_accuracy"]:.3f} '
                  f'[{r["stage_accuracy_ci"][0]:.2f}, {r["stage_accuracy_ci"][1]:.2f}] '
                  f'({b["majority_stage_accuracy"]:.2f}) | {r["success_accuracy"]:.3f} '
                  f'[{r["success_accuracy_ci"][0]:.2f}, {r["success_accuracy_ci"][1]:.2f}] '
                  f'({b["always_success_accuracy"]:.3f} / {b["always_failure_accuracy"]:.3f}) | '
                  f'{r["final_stage_accuracy"]:.2f} [{r["final_stage_accuracy_ci"][0]:.2f}, '
                  f'{r["final_stage_accuracy_ci"][1]:.2f}] ({b["final_count_constant"]:.2f}) | '
                  f'{r["mean_abs_error"]:.3f} ({b["mean_progression_abs_error"]:.3f}) |',
                  flush=True)
    if held == ROUND4_SETS and tuple(args.ladders) == ROUND5_LADDERS:
        figures['round5_rule'] = round5_rule(figures)
        print(f'round 5 rule: {json.dumps(figures["round5_rule"])}', flush=True)
    elif held == ROUND4_SETS and not args.ladders:
        figures['round4_rule'] = round4_rule(figures)
        print(f'round 4 rule: {json.dumps(figures["round4_rule"])}', flush=True)
    if held == SHIP_RULE_SETS:
        pooled = next(iter(figures))  # the first row: all the held-out episodes
        for variant in args.variants or ():
            verdict = ship_rule(figures, pooled, variant, SHIP_RULE_SEEDS)
            figures.setdefault('ship_rule', {})[variant] = verdict
            print(f'ship rule, {variant}: {json.dumps(verdict)}', flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=float))


def run_timing(args: argparse.Namespace) -> None:
    """CPU time to score one 200-step episode as ``score RUN_DIR`` does after decoding its
    videos: each camera's 200 frames at 320x180 (15 per second: a labelled episode's 40 frames,
    each shown 5 times, enlarged 5x) stacked (``LearnedScorer.stack``) and scored."""
    from realm_ros.core import scoring
    from realm_ros.scorers import learned
    checkpoints = {'shipped wrist80': learned.WRIST80_CHECKPOINT,
                   'shipped families': learned.FAMILIES_CHECKPOINT,
                   **{stem: args.data_dir / f'{stem}.pt'
                      for stem in (checkpoint_name(name, seed) for name in args.variants or ()
                                   for seed in args.seeds)
                      if (args.data_dir / f'{stem}.pt').is_file()}}
    name = (args.sets or ['fresh_looks'])[0]
    repeat = 1 if name in EVERY_STEP else 5  # a set kept at every 5th step: each frame 5 times
    episodes = [e for e in load_set(args.data_dir, name, CAMERAS)
                if len(e.met) == 200 // repeat][:args.episodes]
    for label, path in checkpoints.items():
        for fps in args.fps:
            scorer = learned.LearnedScorer(path, fps=fps)
            cpu = []
            for e in episodes:
                videos = [[np.kron(f[..., 3 * k:3 * k + 3], np.ones((5, 5, 1), np.uint8))
                           for f in e.frames for _ in range(repeat)]
                          for k in range(len(scorer.cameras))]
                start = time.process_time()
                frames = scorer.stack(videos)
                scorer.score(scoring.EpisodeFrames(frames=frames, times_s=np.arange(len(frames))
                                                   / 15.0, instruction='', task=e.task))
                cpu.append(time.process_time() - start)
            print(f'{label} ({scorer.name}, {len(scorer.nets)} network(s)) at {fps:g} frames '
                  f'per second: CPU s per 200-step episode over {len(cpu)}: mean '
                  f'{np.mean(cpu):.3f}, max {np.max(cpu):.3f}', flush=True)


def run_touched(args: argparse.Namespace) -> None:
    """How many of the learned ladders' push_switch episodes that touched the panel without
    toggling it (the rubric's 2 of 3) each scorer calls a success (its final count 3)."""
    from realm_ros.scorers import learned
    checkpoints = {'shipped wrist80': learned.WRIST80_CHECKPOINT,
                   'shipped families': learned.FAMILIES_CHECKPOINT,
                   **{stem: args.data_dir / f'{stem}.pt'
                      for stem in (checkpoint_name(name, seed) for name in args.variants or ()
                                   for seed in args.seeds)
                      if (args.data_dir / f'{stem}.pt').is_file()}}
    for label, path in checkpoints.items():
        scorer = learned.LearnedScorer(path)
        for name in args.sets or list(LADDER_OF.values()):
            episodes = [e for e in load_set(args.data_dir, name, tuple(scorer.cameras))
                        if e.task == 'push_switch']
            touched = [e for e in episodes if e.met[-1] == 2]
            called = sum(int(learned.stage_counts(scorer, e)[-1] == 3) for e in touched)
            print(f'{label} ({scorer.name}), {name}: {len(episodes)} push_switch episodes, '
                  f'{len(touched)} touched without toggling, {called} of them called a '
                  'success', flush=True)


def run_finals(args: argparse.Namespace) -> None:
    """Per checkpoint and set: how many episodes end at each (task, rubric's final count,
    scorer's final count), and how many first frames the look check puts outside its training
    looks (with the median look distance and the threshold)."""
    from realm_ros.scorers import learned
    checkpoints = {'shipped wrist': learned.WRIST_CHECKPOINT,
                   'shipped wrist80': learned.WRIST80_CHECKPOINT,
                   'shipped families': learned.FAMILIES_CHECKPOINT,
                   **{stem: args.data_dir / f'{stem}.pt'
                      for stem in (checkpoint_name(name, seed) for name in args.variants or ()
                                   for seed in args.seeds)
                      if (args.data_dir / f'{stem}.pt').is_file()}}
    for label, path in checkpoints.items():
        scorer = learned.LearnedScorer(path)
        for name in args.sets or ['demo_ladder']:
            episodes = load_set(args.data_dir, name, tuple(scorer.cameras))
            table: dict[tuple[str, int, int], int] = {}
            for e in episodes:
                key = (e.task, int(e.met[-1]), int(learned.stage_counts(scorer, e)[-1]))
                table[key] = table.get(key, 0) + 1
            checks = [scorer.look_check(e.frames[0]) for e in episodes]
            distances = [c['look_distance'] for c in checks if c is not None]
            print(f'{label} ({scorer.name}), {name}, {len(episodes)} episodes:', flush=True)
            for task in dict.fromkeys(e.task for e in episodes):
                rows = [f'rubric {k[1]} -> scorer {k[2]}: {v}'
                        for k, v in sorted(table.items()) if k[0] == task]
                print(f'  {task}: {"; ".join(rows)}', flush=True)
            if distances:
                print(f'  look check: {sum(c["outside_training_looks"] for c in checks if c)} '
                      f'of {len(checks)} outside the training looks, distance median '
                      f'{np.median(distances):.2f} (max {max(distances):.2f}), threshold '
                      f'{checks[0]["look_threshold"]:.2f}', flush=True)


def run_diagnose(args: argparse.Namespace) -> None:
    """Where a scorer's errors come from (round 7's diagnosis, docs/scoring.md "Round 7"), per
    checkpoint and set: Pearson r; stage accuracy of each frame's most likely count before the
    episode's decoding (median of 3, running maximum) and after it, and the frames the decoded
    count is above / below the rubric's; episodes whose final count is above / below; per task
    the frames' confusion (rows: the rubric's count, columns: the scorer's); the decoded
    accuracy in each third of an episode's frames; successes of at most 25 frames against
    failures (stage accuracy, final count right); and on push_switch the median probability of
    the count 3 (the switch toggled) where the rubric says 3."""
    from realm_ros.scorers import learned
    checkpoints = {stem: args.data_dir / f'{stem}.pt'
                   for stem in (checkpoint_name(name, seed) for name in args.variants or ()
                                for seed in args.seeds)
                   if (args.data_dir / f'{stem}.pt').is_file()}
    checkpoints['shipped families3'] = learned.FAMILIES3_CHECKPOINT
    if args.bar_too:  # round 13: the recommendation beside
        checkpoints['shipped families_hjk'] = learned.FAMILIES_HJK_CHECKPOINT
    for label, path in checkpoints.items():
        scorer = learned.LearnedScorer(path)
        for name in args.sets or ['demo_ladder']:
            episodes = load_set(args.data_dir, name, tuple(scorer.cameras))
            probs = [scorer.probabilities(list(e.frames), e.task) for e in episodes]
            decoded = [learned.stage_counts(scorer, e) for e in episodes]
            met = np.concatenate([e.met for e in episodes])
            raw = np.concatenate([np.argmax(p, axis=1) for p in probs])
            dec = np.concatenate(decoded)
            finals = np.asarray([(d[-1], e.met[-1]) for d, e in zip(decoded, episodes)])
            r = np.corrcoef([d[-1] / e.n_stages for d, e in zip(decoded, episodes)],
                            [e.progression for e in episodes])[0, 1]
            print(f'{label} ({scorer.name}), {name}, {len(episodes)} episodes, {len(met)} '
                  f'frames: r {r:.3f}; stage accuracy per frame {np.mean(raw == met):.3f}, '
                  f'decoded {np.mean(dec == met):.3f} (above {np.mean(dec > met):.3f}, below '
                  f'{np.mean(dec < met):.3f}); final count above '
                  f'{int(np.sum(finals[:, 0] > finals[:, 1]))}, below '
                  f'{int(np.sum(finals[:, 0] < finals[:, 1]))}', flush=True)
            for task in dict.fromkeys(e.task for e in episodes):
                n = next(e.n_stages for e in episodes if e.task == task)
                table = np.zeros((n + 1, n + 1), int)
                for d, e in zip(decoded, episodes):
                    if e.task == task:
                        np.add.at(table, (e.met, d), 1)
                print(f'  {task} frames, rubric -> scorer: '
                      + '; '.join(f'{k}: {list(row)}' for k, row in enumerate(table)), flush=True)
            thirds = np.zeros((3, 2))
            for d, e in zip(decoded, episodes):
                part = np.minimum(2, 3 * np.arange(len(d)) // len(d))
                np.add.at(thirds, (part, 0), (d == e.met).astype(float))
                np.add.at(thirds, (part, 1), 1.0)
            print('  by third of the episode: '
                  + ' / '.join(f'{a / b:.3f}' for a, b in thirds), flush=True)
            for title, keep in (('successes of <= 25 frames',
                                 lambda e: e.success and len(e.met) <= 25),
                                ('successes of > 25 frames',
                                 lambda e: e.success and len(e.met) > 25),
                                ('failures', lambda e: not e.success)):
                rows = [(d, e) for d, e in zip(decoded, episodes) if keep(e)]
                if rows:
                    length = np.median([len(e.met) for _, e in rows])
                    right = np.mean(np.concatenate([d == e.met for d, e in rows]))
                    final = np.mean([d[-1] == e.met[-1] for d, e in rows])
                    print(f'  {title}: {len(rows)}, median {length:.0f} frames, stage accuracy '
                          f'{right:.3f}, final count right {final:.2f}', flush=True)
            if scorer.head == 'now' and all(e.now is not None for e in episodes):
                print(now_agreement(scorer, episodes), flush=True)
            toggled = [p[e.met == 3, 3] for p, e in zip(probs, episodes)
                       if e.task == 'push_switch' and e.success]
            if toggled:
                print(f'  push_switch, frames the rubric says toggled: median P(3) '
                      f'{np.median(np.concatenate(toggled)):.2f}', flush=True)


#: Round 16's diagnose: a frame whose recorded REACH distance is above FAR_M, read as within
#: the threshold (``skills.REACH_DISTANCE``) by the auxiliary output, or as REACH by the head.
FAR_M = 0.15


def run_distances(args: argparse.Namespace) -> None:
    """Round 16: on the sets given (pooled; episodes collected with ``measures``), per task,
    each checkpoint's REACH on frames by their recorded finger-to-reach-point distance: how
    often a frame farther than FAR_M is read as REACH (the head's probability above 0.5;
    Wilson interval over frames), and for a checkpoint with the auxiliary output, the median
    absolute error of its distance (both clipped at ``learned.MEASURE_CLIP``; a bootstrap
    interval over episodes) and how often it puts a frame farther than FAR_M under the REACH
    threshold; round 17: and how often it puts a frame within the threshold at or above it."""
    from realm_ros.core import skills
    from realm_ros.core.metrics import wilson_interval
    from realm_ros.scorers import learned
    for name in args.checkpoints:
        scorer = learned.LearnedScorer(round11_path(name, args.data_dir))
        episodes = [e for part in args.sets
                    for e in load_set(args.data_dir, part, tuple(scorer.cameras))]
        if any(e.measures is None for e in episodes):
            raise SystemExit(f'distances: {", ".join(args.sets)} lack the frames\' measures')
        aux = scorer.has_measures
        for task in dict.fromkeys(e.task for e in episodes):
            mine = [e for e in episodes if e.task == task]
            true = [np.asarray(e.measures[:, 0], dtype=float) for e in mine]
            outputs = [scorer.outputs(list(e.frames), task) for e in mine]  # read once
            called = [o[:, 0] > 0.5 for o in outputs]
            far = np.concatenate(true) > FAR_M
            hits = int(np.sum(np.concatenate(called)[far]))
            lo, hi = wilson_interval(hits, int(far.sum()))
            line = (f'{name} {task} ({len(mine)} episodes, {sum(len(t) for t in true)} frames, '
                    f'{int(far.sum())} farther than {FAR_M} m): read as REACH {hits} '
                    f'({hits / max(int(far.sum()), 1):.3f} [{lo:.3f}, {hi:.3f}])')
            if aux:
                read = [scorer.measures(list(e.frames), task)[:, 0] for e in mine]
                errors = [np.abs(r - np.minimum(t, learned.MEASURE_CLIP))
                          for r, t in zip(read, true)]
                rng = np.random.default_rng(0)
                medians = [float(np.median(np.concatenate(
                    [errors[k] for k in rng.integers(0, len(errors), len(errors))])))
                    for _ in range(1000)]
                under = int(np.sum(np.concatenate(read)[far] < skills.REACH_DISTANCE))
                ulo, uhi = wilson_interval(under, int(far.sum()))
                line += (f'; its distance: median |error| '
                         f'{float(np.median(np.concatenate(errors))):.3f} m '
                         f'[{np.quantile(medians, 0.025):.3f}, {np.quantile(medians, 0.975):.3f}]'
                         f', farther than {FAR_M} m read under {skills.REACH_DISTANCE} m {under} '
                         f'({under / max(int(far.sum()), 1):.3f} [{ulo:.3f}, {uhi:.3f}])')
                # Round 17: the other way, frames within the threshold read at or above it.
                near = np.concatenate(true) < skills.REACH_DISTANCE
                over = int(np.sum(np.concatenate(read)[near] >= skills.REACH_DISTANCE))
                olo, ohi = wilson_interval(over, int(near.sum()))
                line += (f'; of {int(near.sum())} frames within {skills.REACH_DISTANCE} m, read '
                         f'at or above it {over} ({over / max(int(near.sum()), 1):.3f} '
                         f'[{olo:.3f}, {ohi:.3f}])')
                # Round 18: where the decoded count first reads REACH before the rubric has it
                # (an early call, which the rubric's stickiness then holds), the recorded and
                # the output's distance at that frame (quartiles over those episodes).
                first = []
                for e, o, t, r in zip(mine, outputs, true, read):
                    count = scorer.read(o)
                    at = int(np.argmax(count >= 1)) if (count >= 1).any() else None
                    if at is not None and e.met[at] < 1:
                        first.append((t[at], r[at]))
                if first:
                    t_at, r_at = (np.quantile(np.array(v), (0.25, 0.5, 0.75))
                                  for v in zip(*first))
                    line += (f'; {len(first)} episodes read REACH before the rubric, at that '
                             f'first frame recorded {t_at[1]:.3f} m [quartiles {t_at[0]:.3f}, '
                             f'{t_at[2]:.3f}], its output {r_at[1]:.3f} m [{r_at[0]:.3f}, '
                             f'{r_at[2]:.3f}]')
            print(line, flush=True)


def run_vetoes(args: argparse.Namespace) -> None:
    """Round 18: the veto multiple (ROUND18_VETO's rule), read on families_dist3's training sets
    only (ROUND18_VETO_SETS): for each stage with a measure, the frames where its predicate
    holds and the next stage's does not (the next-stage clause keeps the others), and of them
    the share whose distance output over the predicate's threshold, median filtered over
    ``learned.MEDIAN_FRAMES`` as the decoder reads it, is above each multiple of
    ROUND18_VETO_STEPS; the smallest multiple at which every stage's share is at most
    ROUND18_VETO_ABOVE (none: nothing to test)."""
    from realm_ros.core import skills
    from realm_ros.scorers import learned
    scorer = learned.LearnedScorer(round11_path('families_dist3', args.data_dir))
    ratios: dict[str, list[np.ndarray]] = {}
    for part in ROUND18_VETO_SETS:
        for e in load_set(args.data_dir, part, tuple(scorer.cameras)):
            if e.now is None:
                raise SystemExit(f"vetoes: {part} lacks the frames' predicates")
            names = scorer.stage_names[e.task]
            read = scorer.measures(list(e.frames), e.task)
            now = np.asarray(e.now, bool)
            for k, stage in enumerate(names):
                cut = skills.MEASURE_THRESHOLDS.get(stage)
                if cut is None:
                    continue
                ratio = learned._median_in_time(read[:, k] / cut, learned.MEDIAN_FRAMES)
                holds = now[:, k] & ~(now[:, k + 1] if k + 1 < len(names) else False)
                ratios.setdefault(stage, []).append(ratio[holds])
    pooled = {stage: np.concatenate(values) for stage, values in ratios.items()}
    for stage, values in pooled.items():
        shares = ', '.join(f'{f:g}x {float(np.mean(values > f)):.4f}' for f in ROUND18_VETO_STEPS)
        print(f'{stage} ({len(values)} frames where it holds and the next does not): share '
              f'above each multiple: {shares}', flush=True)
    chosen = next((f for f in ROUND18_VETO_STEPS
                   if all(float(np.mean(v > f)) <= ROUND18_VETO_ABOVE for v in pooled.values())),
                  None)
    print(f'veto multiple: {chosen}', flush=True)


def run_same(args: argparse.Namespace) -> None:
    """Round 13: each set's episodes in the data dir against the same set in ``--against``
    (collected before, without the predicates), episode for episode: how many have the same
    sticky ``met`` and the same frames, and how many of the data dir's give back their sticky
    count from their predicates (``learned.sticky_counts``), by set and camera; and, of the
    first camera's frames, how many the now-head's decode (``learned.decode_now``, its median
    of 3 per stage) of the true predicates reads at the sticky count: the most a perfect
    now-network would reach. Round 16: also how many have the same ``now`` as the earlier
    collection's and how many carry ``measures``."""
    from realm_ros.scorers import learned
    totals = np.zeros(6, int)
    frames = np.zeros(2, int)
    for name in args.sets:
        for look in SETS[name][0]:
            for c in CAMERAS:
                stem = f'{look_stem(look)}.{c}.npz'
                mine = learned.load_episodes(args.data_dir / name / stem)
                theirs = {(e.task, e.policy, e.seed): e
                          for e in learned.load_episodes(args.against / name / stem)}
                for e in mine:
                    o = theirs.get((e.task, e.policy, e.seed))
                    counts = np.array([
                        1, int(o is not None and np.array_equal(o.met, e.met)),
                        int(o is not None and np.array_equal(o.frames, e.frames)),
                        int(e.now is not None
                            and np.array_equal(learned.sticky_counts(e.now), e.met)),
                        int(o is not None and o.now is not None and e.now is not None
                            and np.array_equal(o.now, e.now)),
                        int(e.measures is not None)])
                    totals += counts
                    if c == CAMERAS[0] and e.now is not None:
                        frames += (len(e.met), int(np.sum(
                            learned.decode_now(e.now.astype(float)) == e.met)))
                    if c == CAMERAS[0] and counts[1:4].min() == 0:
                        print(f'{name} {look} {e.task} {e.policy} {e.seed}: met same '
                              f'{bool(counts[1])}, frames same {bool(counts[2])}, sticky '
                              f'counts of the predicates same {bool(counts[3])}', flush=True)
        print(f'{" + ".join(args.sets[:args.sets.index(name) + 1])}: {totals[0]} episode-cameras, '
              f'met same {totals[1]}, frames same {totals[2]}, predicates give met {totals[3]}, '
              f'now same {totals[4]}, with measures {totals[5]}; '
              f'decode_now of the predicates at the sticky count on {frames[1]} of {frames[0]} '
              f'frames ({frames[1] / max(frames[0], 1):.4f})', flush=True)


def now_agreement(scorer: Any, episodes: list[Any]) -> str:
    """A now-head's per-frame stage readings (probability > 0.5) against the episodes'
    recorded predicates (round 13), per task, stage and outcome: frames where the predicate
    held / was read, and those both."""
    lines = []
    for task in dict.fromkeys(e.task for e in episodes):
        names = scorer.stage_names[task]
        for title, keep in (('successes', True), ('failures', False)):
            rows = [e for e in episodes if e.task == task and e.success == keep]
            if not rows:
                continue
            truth = np.concatenate([e.now for e in rows])
            read = np.concatenate([scorer.outputs(list(e.frames), task) > 0.5 for e in rows])
            parts = [f'{stage} held {int(truth[:, i].sum())} read {int(read[:, i].sum())} '
                     f'both {int((truth[:, i] & read[:, i]).sum())}'
                     for i, stage in enumerate(names)]
            lines.append(f'  {task} {title} ({len(rows)}, {len(truth)} frames), the frame '
                         f'shows now: ' + '; '.join(parts))
    return '\n'.join(lines)


def round11_path(name: str, data_dir: pathlib.Path) -> pathlib.Path:
    """A round-11 checkpoint's file: a shipped one (SHIPPED_BY_NAME: families_demo3, round
    13's families_hjk), or a checkpoint in the data dir (a variant, ``VARIANT_s<seed>``)."""
    return SHIPPED_BY_NAME[name]() if name in SHIPPED_BY_NAME else data_dir / f'{name}.pt'


def _shipped(constant: str) -> Callable[[], pathlib.Path]:
    def path() -> pathlib.Path:
        from realm_ros.scorers import learned
        return pathlib.Path(getattr(learned, constant))
    return path


#: The shipped checkpoints ``decoders --checkpoints`` reads by name.
SHIPPED_BY_NAME = {'families_demo3': _shipped('FAMILIES_DEMO3_CHECKPOINT'),
                   'families_hjk': _shipped('FAMILIES_HJK_CHECKPOINT'),
                   'families_now3': _shipped('FAMILIES_NOW3_CHECKPOINT'),
                   'families_dist3': _shipped('FAMILIES_DIST3_CHECKPOINT')}


def round11_decoders(step_costs: tuple[float, ...]) -> dict[str, Any]:
    """The decoders round 11 reads with: greedy (as shipped) and monotone at each cost."""
    from realm_ros.scorers import learned
    return {'greedy': learned.Decoder(),
            **{f'monotone({c:g})': learned.Decoder(method='monotone', step_cost=c)
               for c in step_costs}}


def run_decoders(args: argparse.Namespace) -> None:
    """Each of ROUND11_CHECKPOINTS (``--tune``: ROUND11_TUNE_CHECKPOINTS; ``--checkpoints``:
    those named, round 12's ROUND12_CHECKPOINTS) read with each (``--greedy``: the greedy)
    decoder on the sets given: the networks' probabilities once per episode, then every
    decoder's counts (``measure_one``). ``--tune``: the sets pooled, the monotone decoder at
    each of ROUND11_STEP_COSTS, and the cost chosen; else the rows ``measure`` reports for one
    held-out set, the greedy and ROUND11_STEP_COST's monotone decoder, and the figures
    (``--json``) round 11's rule reads."""
    from realm_ros.scorers import learned
    tune = args.tune
    names = args.checkpoints or (ROUND11_TUNE_CHECKPOINTS if tune else ROUND11_CHECKPOINTS)
    decoders = round11_decoders(ROUND11_STEP_COSTS if tune else (ROUND11_STEP_COST,))
    if args.greedy:
        decoders = {'greedy': decoders['greedy']}
    reference = load_set(args.data_dir, 'train', ('exterior_1',))
    figures: dict[str, Any] = {}
    readings: dict[str, dict[str, Any]] = {}
    pooled: dict[str, list[float]] = {}
    print('| set (episodes) | checkpoint + decoder | Pearson r [95 % CI] | stage accuracy [CI] '
          '(majority) | success accuracy [CI] (always success / failure) | final count right '
          '[CI] |')
    print('|---|---|---|---|---|---|')
    for name in names:
        scorer = learned.LearnedScorer(round11_path(name, args.data_dir))
        if tune:
            sets = {' + '.join(args.sets): [e for part in args.sets
                                            for e in load_set(args.data_dir, part,
                                                              tuple(scorer.cameras))]}
        else:
            sets = held_sets(args.data_dir, tuple(args.sets), tuple(scorer.cameras))
        start, cpu = time.monotonic(), time.process_time()
        episodes_all = next(iter(sets.values()))
        # A count head's stage-count probabilities, a now-head's per-stage ones (round 13).
        probs = {id(e): scorer.outputs(list(e.frames), e.task) for e in episodes_all}
        print(f'{name} ({scorer.name}): probabilities of {len(probs)} episodes in '
              f'{time.monotonic() - start:.0f} s wall, {time.process_time() - cpu:.0f} s CPU',
              file=sys.stderr, flush=True)
        # --greedy: each checkpoint with its own decoder (its checkpoint's entry; greedy where
        # it has none, every checkpoint before round 13's now-heads).
        for label, decoder in ({scorer.decoder.label: scorer.decoder} if args.greedy
                               else decoders).items():
            for row, episodes in sets.items():
                counts = [np.rint(scorer.read(probs[id(e)], decoder)).astype(int)
                          for e in episodes]
                r = measure_one(scorer, episodes, reference, counts)
                figures.setdefault(row, {})[f'{name} {label} ({scorer.name})'] = r
                readings.setdefault(row, {})[name] = (episodes, counts)
                if args.where and episodes is episodes_all:
                    print(decoder_errors(f'{name} {label}', episodes, counts), file=sys.stderr,
                          flush=True)
                pooled.setdefault(label, []).append(r['stage_accuracy'])
                ci = r['pearson_r_ci'] or [float('nan')] * 2
                b = r['baselines']
                print(f'| {row} ({len(episodes)}) | {name} {label} | {_num(r["pearson_r"])} '
                      f'[{_num(ci[0])}, {_num(ci[1])}] | {r["stage_accuracy"]:.3f} '
                      f'[{r["stage_accuracy_ci"][0]:.2f}, {r["stage_accuracy_ci"][1]:.2f}] '
                      f'({b["majority_stage_accuracy"]:.2f}) | {r["success_accuracy"]:.3f} '
                      f'[{r["success_accuracy_ci"][0]:.2f}, {r["success_accuracy_ci"][1]:.2f}] '
                      f'({b["always_success_accuracy"]:.3f} / '
                      f'{b["always_failure_accuracy"]:.3f}) | '
                      f'{r["final_stage_accuracy"]:.2f} [{r["final_stage_accuracy_ci"][0]:.2f}, '
                      f'{r["final_stage_accuracy_ci"][1]:.2f}] |', flush=True)
    if args.versus:
        for row, by_name in readings.items():
            for name, (episodes, counts) in by_name.items():
                if name != args.versus and args.versus in by_name:
                    print(f'{row}: {paired_difference(episodes, counts, by_name[args.versus][1])}'
                          f' ({name} - {args.versus})', flush=True)
    if tune:
        figures['tune'] = round11_tune(figures)
        print(f'round 11 tuning: {json.dumps(figures["tune"])}', flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=float))


def paired_difference(episodes: list[Any], counts: list[np.ndarray], base: list[np.ndarray],
                      resamples: int = 2000) -> str:
    """Two readings of the same episodes compared (``decoders --versus``, round 13): the
    difference in stage accuracy and in Pearson r (of the episodes' progressions) with a paired
    percentile bootstrap interval over episodes (the same resampled episodes for both)."""
    truth = np.asarray([e.progression for e in episodes])
    frames = np.asarray([len(e.met) for e in episodes])
    hits, finals = [], []
    for reading in (counts, base):
        hits.append(np.asarray([int(np.sum(c == e.met)) for c, e in zip(reading, episodes)]))
        finals.append(np.asarray([float(c.max()) / e.n_stages
                                  for c, e in zip(reading, episodes)]))

    def r(x: np.ndarray, y: np.ndarray) -> float:
        return float(np.corrcoef(x, y)[0, 1]) if np.ptp(x) > 0 and np.ptp(y) > 0 else np.nan

    rows = np.random.default_rng(0).integers(0, len(episodes), size=(resamples, len(episodes)))
    stage = (hits[0][rows].sum(axis=1) - hits[1][rows].sum(axis=1)) / frames[rows].sum(axis=1)
    dr = np.asarray([r(finals[0][k], truth[k]) - r(finals[1][k], truth[k]) for k in rows])
    point = ((hits[0].sum() - hits[1].sum()) / frames.sum(),
             r(finals[0], truth) - r(finals[1], truth))
    lo, hi = np.quantile(stage, [0.025, 0.975])
    rlo, rhi = np.nanquantile(dr, [0.025, 0.975])
    return (f'stage accuracy {point[0]:+.3f} [{lo:+.3f}, {hi:+.3f}], Pearson r '
            f'{point[1]:+.3f} [{rlo:+.3f}, {rhi:+.3f}] over {len(episodes)} episodes')


def decoder_errors(label: str, episodes: list[Any], counts: list[np.ndarray]) -> str:
    """Where a reading's frames differ from the rubric (``decoders --where``): frames above and
    below it, in the successes and the failures, per task; and the episodes whose last count
    is below the rubric's (a met stage read as lost or never reached)."""
    parts = [f'{label}:']
    for task in dict.fromkeys(e.task for e in episodes):
        for title, success in (('successes', True), ('failures', False)):
            rows = [(c, e) for c, e in zip(counts, episodes)
                    if e.task == task and e.success == success]
            if not rows:
                continue
            frames = sum(len(e.met) for _, e in rows)
            above = sum(int(np.sum(c > e.met)) for c, e in rows)
            below = sum(int(np.sum(c < e.met)) for c, e in rows)
            last_below = sum(int(c[-1] < e.met[-1]) for c, e in rows)
            parts.append(f'{task} {title} {len(rows)} ({frames} frames): above {above}, below '
                         f'{below}, last count below {last_below};')
    return ' '.join(parts)


def round11_tune(figures: dict[str, Any]) -> dict[str, Any]:
    """The monotone decoder's cost ``decoders --tune`` chooses: the highest stage accuracy
    pooled over the tuning checkpoints' frames (each checkpoint's hits and frames summed),
    a tie: the lower cost; with the greedy decoder's figure beside it."""
    row = next(iter(figures.values()))

    def pooled(label: str) -> float:
        hits = frames = 0.0
        for column, r in row.items():
            if column.split(' (')[0].split(' ', 1)[1] == label:
                hits += r['stage_accuracy'] * r['frames']
                frames += r['frames']
        return hits / frames

    accuracy = {f'{c:g}': pooled(f'monotone({c:g})') for c in ROUND11_STEP_COSTS}
    chosen = max(ROUND11_STEP_COSTS, key=lambda c: (accuracy[f'{c:g}'], -c))
    return {'pooled_stage_accuracy': accuracy, 'greedy': pooled('greedy'), 'chosen': chosen}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('command', choices=('collect', 'train', 'measure', 'timing', 'touched',
                                            'finals', 'diagnose', 'round6', 'round7',
                                            'round9', 'round10', 'round11', 'round12',
                                            'round13', 'round14', 'round15', 'round16',
                                            'round17', 'round18', 'rates', 'same',
                                            'decoders', 'distances', 'vetoes'))
    parser.add_argument('sets', nargs='*', default=[], metavar='SET',
                        help='collect: one set (default train); measure: the held-out sets '
                             'pooled (default looks)')
    parser.add_argument('--data-dir', type=pathlib.Path,
                        default=pathlib.Path('data/progress_scorer/cameras'))
    parser.add_argument('--limit-looks', type=int, default=0)
    parser.add_argument('--against', type=pathlib.Path, default=None,
                        help='same: the data dir the sets were collected in before')
    parser.add_argument('--share', type=int, nargs=2, default=(0, 1), metavar=('I', 'N'),
                        help='collect: every N-th look from the I-th (N processes side by side)')
    parser.add_argument('--epochs', type=int, default=10)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--episodes', type=int, default=10, help='timing: how many episodes')
    parser.add_argument('--fps', type=float, nargs='+', default=[3.0],
                        help='timing: the frames per second the scorer reads')
    parser.add_argument('--json', type=pathlib.Path, default=None)
    parser.add_argument('--where', action='store_true',
                        help="decoders: each reading's frames above / below the rubric, by "
                             'task, successes and failures (stderr)')
    parser.add_argument('--tune', action='store_true',
                        help="decoders: choose the monotone decoder's cost on these "
                             '(training) sets')
    parser.add_argument('--checkpoints', nargs='+', default=None, metavar='NAME',
                        help='decoders: these checkpoints (families_demo3, the shipped one, or '
                             'a variant in the data dir; default ROUND11_CHECKPOINTS)')
    parser.add_argument('--bar-too', action='store_true',
                        help='diagnose: the shipped families_hjk too')
    parser.add_argument('--versus', default=None, metavar='NAME',
                        help='decoders: each other checkpoint against this one, the same '
                             'episodes (paired bootstrap of the differences)')
    parser.add_argument('--greedy', action='store_true',
                        help="decoders: the checkpoint's own decoder only (greedy where it "
                             'names none)')
    parser.add_argument('--ladders', nargs='*', default=[], metavar='LADDER_SET',
                        help="measure: more learned-ladder sets, pooled with the held sets' own")
    parser.add_argument('--only-wrist', action='store_true',
                        help='measure: leave out the shipped default and looks checkpoints')
    parser.add_argument('--variants', nargs='*', choices=tuple(VARIANTS), default=None,
                        help='train / measure these (measure: none = the shipped only)')
    parser.add_argument('--seeds', nargs='+', type=int, default=[0],
                        help="training seeds (TrainConfig.seed); a seed's checkpoint is "
                             'VARIANT_s<seed>.pt (seed 0: VARIANT.pt)')
    args = parser.parse_args()
    unknown = [name for name in args.sets + args.ladders if name not in SETS]
    if unknown:
        parser.error(f'unknown set(s) {", ".join(unknown)}: one of {", ".join(SETS)}')
    for name in args.checkpoints or ():
        if name not in SHIPPED_BY_NAME and name.rsplit('_s', 1)[0] not in VARIANTS \
                and name not in VARIANTS:
            parser.error(f'--checkpoints: unknown checkpoint {name}: one of '
                         f'{", ".join(SHIPPED_BY_NAME)} or of {", ".join(VARIANTS)} '
                         '(VARIANT_s<seed> for a seed)')
        if not round11_path(name, args.data_dir).is_file():
            parser.error(f'--checkpoints: {name}: no {round11_path(name, args.data_dir)}')
    if args.command == 'collect':
        if len(args.sets) > 1:
            parser.error('collect: one set')
        args.set = (args.sets or ['train'])[0]
    {'collect': run_collect, 'train': run_train, 'measure': run_measure,
     'timing': run_timing, 'touched': run_touched, 'finals': run_finals,
     'diagnose': run_diagnose, 'rates': run_rates, 'decoders': run_decoders,
     'same': run_same, 'distances': run_distances,
     'vetoes': run_vetoes,
     'round6': lambda _: apply_round('round 6', ROUND6_FILES, round6_rule),
     'round7': lambda _: apply_round('round 7', ROUND7_FILES, round7_rule),
     'round9': lambda _: apply_round('round 9', ROUND9_FILES, round9_rule),
     'round10': lambda _: apply_round('round 10', ROUND10_FILES, round10_rule),
     'round11': lambda _: apply_round('round 11', ROUND11_FILES, round11_rule),
     'round12': lambda _: apply_round('round 12', ROUND12_FILES, round12_rule),
     'round13': lambda _: apply_round('round 13', ROUND13_FILES, round13_rule),
     'round14': lambda _: apply_round('round 14', ROUND14_FILES, round14_rule),
     'round15': lambda _: apply_round('round 15', ROUND15_FILES, round15_rule),
     'round16': lambda _: apply_round('round 16', ROUND16_FILES, round16_rule),
     'round17': lambda _: apply_round('round 17', ROUND17_FILES, round17_rule),
     'round18': lambda _: apply_round('round 18', ROUND18_FILES, round18_rule),
     }[args.command](args)


if __name__ == '__main__':
    main()
