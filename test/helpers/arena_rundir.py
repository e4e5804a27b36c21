"""A small paired-eval run folder with real WebM videos, for the arena's tests.

The records have the schema ``realm-ros paired-eval --videos`` writes; the videos are encoded by
:mod:`realm_ros.io.video` from frames drawn here (a bar whose length is the episode's
progression), so the browser has real files to play without running a simulator.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from realm_ros.io.video import video_relpath, write_video

#: Policy labels that appear in no English word, so a leak is found by plain search.
POLICIES = {'qxalpha': 1.0, 'qxbravo': 0.66, 'qxcharlie': 0.33, 'qxdelta': 0.0}


def make_run_dir(root: pathlib.Path, seeds: int = 3, roles: tuple[str, ...] = ('sim',),
                 frames: int = 20) -> pathlib.Path:
    """Write ``episodes.jsonl``, ``summary.json`` (its config) and ``videos/`` under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for k in range(seeds):
        seed = 1000 + k
        for policy, quality in POLICIES.items():
            progression = round(max(0.0, min(1.0, quality - 0.1 * (k % 2))) * 3) / 3
            for role in roles:
                pair_id = f'pick_spoon/Default/{k}/{policy}'
                rel = video_relpath(role, pair_id)
                images = []
                for t in range(frames):
                    image = np.full((36, 64, 3), 30, np.uint8)
                    image[10:26, :max(2, int(64 * progression * (t + 1) / frames))] = (240, 200,
                                                                                       40)
                    images.append(image)
                write_video(root / rel, images)
                lines.append({'pair_id': pair_id, 'role': role, 'world': role,
                              'backend': 'mujoco' if role == 'sim' else 'digital_real',
                              'task': 'pick_spoon', 'perturbation': 'Default',
                              'intensity': 1.0, 'policy': policy, 'seed': seed,
                              'progression': progression, 'success': progression >= 1.0,
                              'outcome': 'success' if progression >= 1.0 else 'timeout',
                              'steps': frames, 'video': rel})
    (root / 'episodes.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in lines))
    (root / 'summary.json').write_text(json.dumps({'config': {'sim': 'mujoco',
                                                              'real': 'digital_real',
                                                              'sim_params_file': ''}}))
    return root
