"""Pack what a GPU machine without a registry needs into device calls of at most 64 MiB.

The device machine (docs/learned-policy.md, docs/performance.md) has Python 3.12, torch and
CUDA but no registry, and one call carries the working tree plus at most what fits in 64 MiB.
This script downloads the cp312 wheels of the named plans, builds the two files
``bench/device_setup.sh`` expects beside them (``pkg.tar.xz``: imageio-ffmpeg's package and
pybullet_data's ``franka_panda`` meshes; ``ffmpeg7.xz``: imageio-ffmpeg 0.6.0's ffmpeg), splits
what is bigger than a call's room, and lays everything out in one folder per call under
``--out`` (ignored by git), with ``unpack.sh`` in the last one. Then, one call each:

    call 1 .. N-1   carry OUT/callK:        mkdir -p ~/parts && cp OUT/callK/* ~/parts/
    call N          carry OUT/callN, .gl:   bash OUT/callN/unpack.sh ~/w && \\
                                            . bench/device_setup.sh ~/w .gl

``unpack.sh`` joins the parts, checks every file's md5 against the manifest, and leaves the
wheels, ``pkg.tar.xz`` and ``ffmpeg7.xz`` in the folder it is given.

Run: ``.venv/bin/python bench/device_pack.py twin lerobot --out .dev`` (plans: twin, lerobot,
warp). It prints the calls' sizes and commands.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import math
import pathlib
import subprocess
import sys
import tarfile
import zipfile

REPO = pathlib.Path(__file__).resolve().parents[1]
CALL_BYTES = 64 * 2**20
MARGIN = 2 * 2**20

#: The wheels each plan carries (cp312, manylinux x86_64), as they ran on the device machine.
PLANS: dict[str, tuple[str, ...]] = {
    'twin': ('mujoco==4.0.0', 'mujoco-core==4.0.0', 'PyOpenGL==3.1.10', 'glfw==2.11.0',
             'websockets==17.4'),
    'lerobot': ('lerobot==0.6.1', 'av==15.1.0', 'datasets==4.8.5', 'dill==0.4.1',
                'multiprocess==0.70.19', 'draccus==0.11.6', 'mergedeep==1.3.4', 'toml==0.10.2',
                'termcolor==3.3.0', 'gymnasium==1.4.0'),
    'warp': ('warp-lang==1.19.0', 'mujoco-warp==4.0.0'),
}
PLATFORMS = ('manylinux_2_28_x86_64', 'manylinux_2_27_x86_64', 'manylinux_2_17_x86_64',
             'manylinux2014_x86_64', 'manylinux1_x86_64', 'manylinux_2_5_x86_64')
FFMPEG_WHEEL = 'imageio-ffmpeg==0.6.0'


def download(spec: str, cache: pathlib.Path) -> pathlib.Path:
    """One cp312 wheel into ``cache`` (pip's own download; a wheel already there is reused)."""
    name = spec.split('==')[0].lower().replace('-', '_')
    version = spec.split('==')[1]
    for path in cache.glob('*.whl'):
        stem = path.name.lower()
        if stem.startswith(f'{name}-{version}-'):
            return path
    cmd = [sys.executable, '-m', 'pip', 'download', '-q', '--no-deps', '--only-binary=:all:',
           '--python-version', '3.12', '--implementation', 'cp', '-d', str(cache)]
    for platform in PLATFORMS:
        cmd += ['--platform', platform]
    subprocess.run([*cmd, spec], check=True)
    return download(spec, cache)


def twin_extras(cache: pathlib.Path, out: pathlib.Path) -> list[pathlib.Path]:
    """``pkg.tar.xz`` and ``ffmpeg7.xz``, as bench/device_setup.sh unpacks them."""
    import pybullet_data

    wheel = download(FFMPEG_WHEEL, cache)
    pkg, ffmpeg = out / 'pkg.tar.xz', out / 'ffmpeg7.xz'
    with zipfile.ZipFile(wheel) as whl:
        binary = next(n for n in whl.namelist() if '/binaries/ffmpeg-' in n)
        if not ffmpeg.is_file():
            ffmpeg.write_bytes(lzma.compress(whl.read(binary), preset=9))
        if not pkg.is_file():
            data = pathlib.Path(pybullet_data.__file__).parent
            with tarfile.open(pkg, 'w:xz') as tar:
                for name in whl.namelist():
                    if name != binary and not name.endswith('/'):
                        info = tarfile.TarInfo(name)
                        body = whl.read(name)
                        info.size = len(body)
                        tar.addfile(info, io.BytesIO(body))
                tar.add(data / '__init__.py', 'pybullet_data/__init__.py')
                tar.add(data / 'franka_panda', 'pybullet_data/franka_panda')
    return [pkg, ffmpeg]


def tree_bytes() -> int:
    """What every call sends anyway: tracked files and untracked ones git does not ignore."""
    names = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others',
                            '--exclude-standard'], cwd=REPO, check=True,
                           capture_output=True).stdout.split(b'\0')
    return sum((REPO / n.decode()).stat().st_size for n in names
               if n and (REPO / n.decode()).is_file())


def plan_calls(sizes: dict[str, int], room: int,
               last_room: int) -> list[list[tuple[str, int, int]]]:
    """Pieces (name, offset, length) per call, as few calls as the bytes need: the files,
    biggest first, are poured into the calls in turn and cut where a call is full; every call
    holds at most ``room`` bytes, the last at most ``last_room`` (it also carries what the
    command needs besides)."""
    if room <= 0 or last_room <= 0:
        raise ValueError(f'no room in a call: {room} / {last_room} bytes')
    total = sum(sizes.values())
    n = 1 if total <= last_room else 1 + math.ceil((total - last_room) / room)
    capacity = [room] * (n - 1) + [last_room]
    calls: list[list[tuple[str, int, int]]] = [[] for _ in range(n)]
    k, used = 0, 0
    for name, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        offset = 0
        while True:
            take = min(size - offset, capacity[k] - used)
            if take or size == 0:
                calls[k].append((name, offset, take))
            offset += take
            used += take
            if offset >= size:
                break
            k, used = k + 1, 0
    return calls


UNPACK = r"""#!/bin/bash
# Join the parts (this call's files and ~/parts from the calls before), check them, leave
# every whole file in DEST (bench/device_pack.py wrote this).
set -e
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: unpack.sh DEST}
mkdir -p "$dest"
python3 - "$here" "$dest" <<'EOF'
import hashlib, json, pathlib, sys
here, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
parts = pathlib.Path.home() / 'parts'
manifest = json.loads((here / 'manifest.json').read_text())
for name, entry in manifest.items():
    body = b''.join(next(p for p in (here / part, parts / part) if p.is_file()).read_bytes()
                    for part in entry['parts'])
    if hashlib.md5(body).hexdigest() != entry['md5']:
        sys.exit(f'unpack: {name}: md5 differs; send its parts again')
    (dest / name).write_bytes(body)
print(f'unpack: {len(manifest)} files in {dest}')
EOF
"""


def lay_out(files: list[pathlib.Path], out: pathlib.Path, room: int,
            last_room: int) -> list[pathlib.Path]:
    """Write ``files`` as one folder per call under ``out`` (emptied first); the last holds
    ``manifest.json`` (each file's md5 and parts) and ``unpack.sh``. Returns the folders."""
    sizes = {f.name: f.stat().st_size for f in files}
    by_name = {f.name: f for f in files}
    calls = plan_calls(sizes, room, last_room)
    if out.exists():
        for old in sorted(out.rglob('*'), reverse=True):
            old.unlink() if old.is_file() else old.rmdir()
    manifest: dict[str, dict[str, object]] = {}
    folders = []
    for k, call in enumerate(calls, 1):
        folder = out / f'call{k}'
        folder.mkdir(parents=True)
        folders.append(folder)
        for name, offset, length in call:
            part = name if length == sizes[name] else f'{name}.part{offset:012d}'
            with open(by_name[name], 'rb') as src:
                src.seek(offset)
                (folder / part).write_bytes(src.read(length))
            if name not in manifest:  # each whole file read once for its md5
                manifest[name] = {'md5': hashlib.md5(by_name[name].read_bytes()).hexdigest(),
                                  'parts': []}
            manifest[name]['parts'].append(part)  # type: ignore[attr-defined]
    for entry in manifest.values():
        entry['parts'] = sorted(entry['parts'])  # type: ignore[arg-type]
    (folders[-1] / 'manifest.json').write_text(json.dumps(manifest, indent=1))
    (folders[-1] / 'unpack.sh').write_text(UNPACK)
    return folders


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('plans', nargs='+', choices=sorted(PLANS))
    parser.add_argument('--out', type=pathlib.Path, default=REPO / '.dev')
    parser.add_argument('--cache', type=pathlib.Path, default=REPO / '.whl',
                        help='where wheels are downloaded (reused)')
    parser.add_argument('--last-extra-mb', type=float, default=1.0,
                        help='room the last call keeps for .gl and the like')
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    files = [download(spec, args.cache) for plan in args.plans for spec in PLANS[plan]]
    if 'twin' in args.plans:
        files += twin_extras(args.cache, args.cache)
    room = CALL_BYTES - tree_bytes() - MARGIN
    calls = lay_out(files, args.out, room, room - int(args.last_extra_mb * 2**20))
    rel = args.out.resolve().relative_to(REPO) if args.out.resolve().is_relative_to(REPO) \
        else args.out
    for k, folder in enumerate(calls, 1):
        size = sum(f.stat().st_size for f in folder.iterdir())
        what = (f'bash {rel}/call{k}/unpack.sh ~/w && . bench/device_setup.sh ~/w .gl'
                if k == len(calls) else f'mkdir -p ~/parts && cp {rel}/call{k}/* ~/parts/')
        print(f'call {k}: {size / 2**20:.1f} MiB, carry {rel}/call{k}: {what}')
    print(f'(each call also sends the tree, {(CALL_BYTES - room - MARGIN) / 2**20:.1f} MiB)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
