"""How many real episodes ``demo --vision --until-decided``'s rule spends on a fixed design's
episodes, over seeds of the rule's posterior draws (docs/vision-demo.md, section 5).

Usage: ``python bench/bench_vision_decided_replay.py RUN_DIR [SEEDS]``: RUN_DIR is a
``demo --vision`` folder of section 5's fixed design (three rungs, both tasks, 8 seeds). The
episodes are the same for every seed: the spread is the rule's (its posterior draws), not
the episodes'.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys

import numpy as np

from realm_ros.programs import vision_demo

LADDER = 'checkpoints/learned_vision'


def main(run_dir: str, seeds: int = 20) -> None:
    config = vision_demo.VisionDemoConfig(
        tasks=('push_switch', 'pick_spoon'), policies=(
            f'low=learned:path={LADDER}/plain5k_s150.pt',
            f'mid=learned:path={LADDER}/plain5k_s1200.pt',
            f'high=learned:path={LADDER}/plain12k_s12000.pt'),
        episodes=8, max_steps=160, width=320, height=180, columns=('raw',))
    path = pathlib.Path(run_dir) / vision_demo.EPISODES_FILE
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for allocation in ('adaptive', 'uniform'):
        spent, decided, orders = [], 0, set()
        for seed in range(seeds):
            d = vision_demo.decided_replay(rows, dataclasses.replace(config, seed=seed), 0.95,
                                           allocation)
            spent.append(d['spent'])
            decided += bool(d['decided'])
            orders.add(' > '.join(d['state']['order']))
        print(f'{allocation}: spent min/median/max {min(spent)}/{int(np.median(spent))}/'
              f'{max(spent)} of {d["fixed"]}; decided {decided} of {seeds}; '
              f'orders {sorted(orders)}')


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20)
