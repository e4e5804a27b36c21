"""A small paired-eval run folder with real WebM videos, for the arena's tests.

The records have the schema ``realm-ros paired-eval --videos`` writes; the videos are encoded by
:mod:`realm_ros.io.video` from frames drawn here (a bar whose length is the episode's
progression), so the browser has real files to play without running a simulator.

The files carry every side channel a run folder can hold, so the arena's tests see it closed:
a container title naming the policy, a creation date and a modification time that follow the
order the policies ran in (configuration order, as paired-eval runs them), the muxer's version.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import subprocess
from typing import Sequence

import imageio_ffmpeg
import numpy as np

from realm_ros.io.video import video_relpath, write_video

#: Policy labels that appear in no English word, so a leak is found by plain search.
POLICIES = {'qxalpha': 1.0, 'qxbravo': 0.66, 'qxcharlie': 0.33, 'qxdelta': 0.0}
#: 2026-01-01 00:00 UTC: the first episode's time; each later one is 60 s newer.
T0 = 1767225600


def _leaky(path: pathlib.Path, title: str, when: int) -> None:
    """Give ``path`` a title, a creation date and a modification time (what judges must not
    see)."""
    tagged = path.with_name('tagged.webm')
    stamp = datetime.datetime.fromtimestamp(when, datetime.timezone.utc)
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), '-nostdin', '-v', 'error', '-y', '-i',
                    str(path), '-c', 'copy', '-metadata', f'title={title}', '-metadata',
                    f'creation_time={stamp:%Y-%m-%dT%H:%M:%SZ}', str(tagged)],
                   check=True)
    tagged.replace(path)
    os.utime(path, (when, when))


def make_run_dir(root: pathlib.Path, seeds: int = 3, roles: tuple[str, ...] = ('sim',),
                 frames: int = 20, policies: Sequence[str] = tuple(POLICIES)) -> pathlib.Path:
    """Write ``episodes.jsonl``, ``summary.json`` (its config) and ``videos/`` under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    episode = 0
    for k in range(seeds):
        seed = 1000 + k
        for policy in policies:
            quality = POLICIES[policy]
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
                _leaky(root / rel, policy, T0 + 60 * episode)
                episode += 1
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
