"""Does the real lerobot load a fresh ``realm-ros dataset`` folder? (issue 28; not in make test)

Run: ``.venv/bin/python bench/lerobot_check.py [--lerobot 0.6.1] [--python PY] [--venv DIR]
[--data DIR] [--episodes 3] [--steps 3]``.

1. Makes the lerobot venv (``--venv``; default /work/venvs/lerobot312 for 0.6.1,
   /work/venvs/lerobot for 0.4.4) with ``--python`` (default ``python3.12`` / ``python3.11``)
   if it is not there: Debian's FFmpeg libraries (torchcodec loads them), then the release's
   pins (``RELEASES``). 0.6.1 (the newest, needs Python 3.12): ``lerobot[dataset,diffusion,
   training]==0.6.1``, which brings torch 2.11, torchvision 0.26, torchcodec 0.11 and av 15
   from PyPI (a CUDA build of torch that runs on the CPU; PyPI has no CPU-only Linux torch).
   0.4.4 (the newest for Python 3.11): ``torch==2.9.1 torchvision==0.24.1``, then
   ``lerobot==0.4.4 torchcodec==0.8.1`` (PyPI's torchvision does not import beside the CPU
   torch 2.13 file on this disk; torchcodec 0.8 is the release built for torch 2.9).
2. Writes a fresh dataset with ``realm-ros dataset`` (v3.0, two tasks, failures kept so every
   episode counts), or takes ``--data``.
3. In the lerobot venv, with the hub offline: ``LeRobotDataset(repo_id, root=DIR)`` with
   each decoder (``torchcodec``, ``pyav``), every item read in shuffled order, plus the same
   with ``delta_timestamps`` (two frames per camera, as diffusion policy asks); counts items
   read and items that raised (``FrameTimestampError`` and any other).
4. ``lerobot-train`` for ``--steps`` steps of diffusion policy on the CPU.

Prints the versions and one line per check; exits 1 if any item failed or training did not run.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

#: What realm_ros/policies/lerobot_server.py needs besides lerobot (the openpi protocol).
SERVER_PACKAGES = ['websockets==17.4', 'msgpack==1.2.4']

#: lerobot release -> (default venv, default interpreter, pip install groups in order).
RELEASES = {
    '0.6.1': ('/work/venvs/lerobot312', 'python3.12',
              (['lerobot[dataset,diffusion,training]==0.6.1'], SERVER_PACKAGES)),
    '0.4.4': ('/work/venvs/lerobot', 'python3.11',
              (['torch==2.9.1', 'torchvision==0.24.1'], ['lerobot==0.4.4', 'torchcodec==0.8.1'],
               SERVER_PACKAGES)),
}
REPO_ID = 'realm_ros/check'

INNER = r"""
import json, random, sys, time
import lerobot, torch, torchcodec, torchvision, av, datasets
from lerobot.datasets.lerobot_dataset import LeRobotDataset

root = sys.argv[1]
report = {'versions': {'lerobot': lerobot.__version__ if hasattr(lerobot, '__version__')
                       else 'unknown', 'torch': torch.__version__,
                       'torchcodec': torchcodec.__version__,
                       'torchvision': torchvision.__version__, 'av': av.__version__,
                       'datasets': datasets.__version__, 'python': sys.version.split()[0]},
          'checks': []}
try:
    from importlib.metadata import version
    report['versions']['lerobot'] = version('lerobot')
except Exception:
    pass
try:  # lerobot-train's flags differ between releases (eval_freq became env_eval_freq)
    import dataclasses
    from lerobot.configs.train import TrainPipelineConfig
    report['train_fields'] = [f.name for f in dataclasses.fields(TrainPipelineConfig)]
except Exception:
    report['train_fields'] = []
for backend in ('torchcodec', 'pyav'):
    for delta in (False, True):
        t0 = time.monotonic()
        kwargs = {}
        if delta:
            meta = LeRobotDataset(sys.argv[2], root=root, video_backend=backend).meta
            kwargs['delta_timestamps'] = {k: [-1 / meta.fps, 0.0] for k in meta.video_keys}
        ds = LeRobotDataset(sys.argv[2], root=root, video_backend=backend, **kwargs)
        order = list(range(len(ds)))
        random.Random(0).shuffle(order)
        ok, errors, blank = 0, {}, 0
        for i in order:
            try:
                item = ds[i]
            except Exception as err:
                name = type(err).__name__
                errors.setdefault(name, [0, str(err).splitlines()[0][:160]])[0] += 1
                continue
            for key in ds.meta.video_keys:
                if float(item[key].std()) < 1e-3:
                    blank += 1
            ok += 1
        report['checks'].append({'backend': backend, 'delta_timestamps': delta,
                                 'items': len(order), 'read': ok, 'errors': errors,
                                 'blank_frames': blank, 'episodes': ds.meta.total_episodes,
                                 'seconds': round(time.monotonic() - t0, 1)})
print('REPORT ' + json.dumps(report))
"""


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print('+ ' + ' '.join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def ensure_venv(venv: pathlib.Path, python: str, release: str) -> pathlib.Path:
    py = venv / 'bin' / 'python'
    probe = [str(py), '-c', 'import lerobot, torchcodec.decoders, websockets, msgpack; '
             'from importlib.metadata '
             'import version; print(version("lerobot"))']
    found = subprocess.run(probe, capture_output=True, text=True) if py.exists() else None
    if found is not None and found.returncode == 0:
        if found.stdout.strip() != release:
            print(f'{venv} has lerobot {found.stdout.strip()}, not {release}: checking that')
        return py
    if shutil.which('apt-get') and not any(pathlib.Path('/usr/lib').rglob('libavcodec.so.*')):
        sh(['apt-get', 'update', '-qq'])
        sh(['apt-get', '-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '-qq',
            '--no-install-recommends', 'ffmpeg'], env=dict(os.environ,
                                                         DEBIAN_FRONTEND='noninteractive'))
    if not py.exists():
        works = shutil.which(python) and subprocess.run(
            [python, '-c', 'pass'], capture_output=True).returncode == 0  # a pyenv shim may not
        if not works:
            sys.exit(f'lerobot_check: no interpreter {python!r} to make {venv}; pass --python '
                     f'(lerobot {release} needs {RELEASES[release][1]})')
        sh([python, '-m', 'venv', str(venv)])
    for group in RELEASES[release][2]:
        sh([str(py), '-m', 'pip', 'install', '-q', *group])
    return py


def make_dataset(out: pathlib.Path, episodes: int, max_steps: int) -> None:
    sh([sys.executable, '-m', 'realm_ros.cli', 'dataset', '--out', str(out),
        '--tasks', 'push_switch,open_drawer', '--episodes', str(episodes),
        '--max-steps', str(max_steps), '--keep-failures', '--quiet'],
       env=dict(os.environ, MUJOCO_GL=os.environ.get('MUJOCO_GL', 'egl')))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--lerobot', choices=sorted(RELEASES), default='0.6.1',
                        help='lerobot release to install into a new venv (default the newest)')
    parser.add_argument('--python', default=None,
                        help='interpreter that makes a new venv (default python3.12 for 0.5+, '
                             'python3.11 for 0.4.4), e.g. ~/.pyenv/versions/3.12.1/bin/python')
    parser.add_argument('--venv', type=pathlib.Path, default=None,
                        help='lerobot venv (made if missing; default per --lerobot)')
    parser.add_argument('--data', type=pathlib.Path, default=None,
                        help='dataset folder to check (default: write a fresh one)')
    parser.add_argument('--episodes', type=int, default=3, help='episodes per task (fresh set)')
    parser.add_argument('--max-steps', type=int, default=40, help='steps per episode')
    parser.add_argument('--steps', type=int, default=3, help='lerobot-train steps (0: none)')
    parser.add_argument('--env-only', action='store_true',
                        help='only make the venv (make lerobot-env), no dataset or training')
    args = parser.parse_args()
    default_venv, default_python, _ = RELEASES[args.lerobot]
    args.venv = args.venv or pathlib.Path(default_venv)
    py = ensure_venv(args.venv, args.python or default_python, args.lerobot)
    if args.env_only:
        print(f'lerobot venv ready: {py}')
        return 0
    work = pathlib.Path(tempfile.mkdtemp(prefix='lerobot_check_'))
    data = args.data or work / 'data'
    if args.data is None:
        make_dataset(data, args.episodes, args.max_steps)
    env = dict(os.environ, HF_HUB_OFFLINE='1', HF_DATASETS_OFFLINE='1',
               HF_HOME=str(work / 'hf'), PYTHONPATH='')
    t0 = time.monotonic()
    inner = subprocess.run([str(py), '-c', INNER, str(data), REPO_ID], env=env,
                           capture_output=True, text=True)
    lines = [x for x in inner.stdout.splitlines() if x.startswith('REPORT ')]
    if inner.returncode != 0 or not lines:
        print(inner.stderr[-3000:])
        return 1
    report = json.loads(lines[-1][len('REPORT '):])
    print('versions: ' + ', '.join(f'{k} {v}' for k, v in report['versions'].items()))
    failed = False
    for c in report['checks']:
        print(f"{c['backend']:>10} delta_timestamps={str(c['delta_timestamps']):5}: "
              f"{c['read']}/{c['items']} items read in shuffled order "
              f"({c['episodes']} episodes), errors {c['errors'] or 'none'}, "
              f"blank frames {c['blank_frames']}, {c['seconds']} s")
        failed |= c['read'] != c['items'] or c['blank_frames'] > 0
    if args.steps <= 0:
        print(f'lerobot check: {"FAILED" if failed else "ok"} (no training asked for; dataset '
              f'{data})')
        return 1 if failed else 0
    train = work / 'train'
    cmd = [str(args.venv / 'bin' / 'lerobot-train'), f'--dataset.repo_id={REPO_ID}',
           f'--dataset.root={data}', '--policy.type=diffusion', '--policy.device=cpu',
           '--policy.push_to_hub=false', f'--steps={args.steps}', '--batch_size=2',
           '--num_workers=0', f'--output_dir={train}', '--wandb.enable=false',
           '--save_checkpoint=false', '--log_freq=1']
    fields = report.get('train_fields', [])
    # no ImageNet download (no hub here): 0.6's diffusion defaults to ResNet18 weights
    cmd.append('--policy.pretrained_backbone_weights=null')
    cmd.append('--env_eval_freq=0' if 'env_eval_freq' in fields else '--eval_freq=0')
    print('+ ' + ' '.join(cmd), flush=True)
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    steps = re.findall(r'step:(\d+) .*?loss:([0-9.]+)', run.stdout + run.stderr)
    print(f'lerobot-train (diffusion, cpu, batch 2): exit {run.returncode}, '
          + ', '.join(f'step {n} loss {loss}' for n, loss in steps))
    if run.returncode != 0 or not steps:
        print((run.stdout + run.stderr)[-3000:])
        failed = True
    print(f'lerobot check: {"FAILED" if failed else "ok"} in {time.monotonic() - t0:.0f} s '
          f'(dataset {data})')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
