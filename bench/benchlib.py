"""What every bench script shares: the machine, and one line per figure, printed and appended.

Each figure is printed with the baseline it is compared to and the goal, and appended as one
JSON object per line to ``bench/results/bench.jsonl`` (or ``$REALM_BENCH_RESULTS``):
``{"bench", "figure", "value", "unit", "baseline", "baseline_label", "goal", "ratio", "machine",
"commit", "time", ...extra}``. ``ratio`` is value / baseline.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import platform
import subprocess
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = pathlib.Path(os.environ.get('REALM_BENCH_RESULTS', ROOT / 'bench' / 'results'
                                      / 'bench.jsonl'))


def machine() -> dict[str, Any]:
    """Return the machine: CPU model, cores, load average now, Python, MuJoCo."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, Any] = {'cpu': cpu, 'cores': os.cpu_count(),
                            'load_1min': round(os.getloadavg()[0], 2),
                            'python': platform.python_version()}
    try:
        import mujoco
        info['mujoco'] = mujoco.__version__
    except ImportError:
        pass
    return info


def describe(info: dict[str, Any]) -> str:
    return (f"{info['cpu']}, {info['cores']} cores, load {info['load_1min']} (1 min; the CPU "
            f"may be shared), Python {info['python']}, MuJoCo {info.get('mujoco', '-')}")


def _commit() -> str:
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ''


class Recorder:
    """Prints figures and appends them to the results file."""

    def __init__(self, bench: str, path: pathlib.Path | None = None) -> None:
        self.bench = bench
        self.path = path or RESULTS
        self.machine = machine()
        self.commit = os.environ.get('REALM_BENCH_COMMIT') or _commit()
        print(f'[{bench}] machine: {describe(self.machine)}; commit {self.commit or "?"}')

    def figure(self, figure: str, value: float, unit: str, baseline: float | None = None,
               baseline_label: str = '', goal: str = '', **extra: Any) -> dict[str, Any]:
        ratio = value / baseline if baseline else None
        text = f'[{self.bench}] {figure}: {value:.4g} {unit}'
        if baseline is not None:
            text += f' (baseline {baseline_label}: {baseline:.4g} {unit}; ratio {ratio:.3g})'
        if goal:
            text += f'; goal {goal}'
        print(text, flush=True)
        row = {'bench': self.bench, 'figure': figure, 'value': value, 'unit': unit,
               'baseline': baseline, 'baseline_label': baseline_label, 'goal': goal,
               'ratio': ratio, 'machine': dict(self.machine, load_1min=round(
                   os.getloadavg()[0], 2)),
               'commit': self.commit,
               'time': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
               **extra}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, 'a') as f:
            f.write(json.dumps(row, default=float) + '\n')
        return row
