"""bench/device_pack.py: wheels and files laid out in device calls of bounded size, and joined
back, md5-checked, by the unpack.sh it writes (run here with bash and python3)."""

import os
import shutil
import subprocess

from bench_module import load_bench
import numpy as np
import pytest

device_pack = load_bench('device_pack')


@pytest.mark.parametrize('seed', range(5))
def test_every_byte_once_and_no_call_over_its_room(seed):
    rng = np.random.default_rng(seed)
    sizes = {f'f{i}.whl': int(s) for i, s in enumerate(rng.integers(0, 5000, 12))}
    room, last_room = 1500, 1200
    calls = device_pack.plan_calls(sizes, room, last_room)
    assert all(sum(p[2] for p in call) <= room for call in calls)
    assert sum(p[2] for p in calls[-1]) <= last_room
    for name, size in sizes.items():
        pieces = sorted((off, n) for call in calls for f, off, n in call if f == name)
        assert pieces, name
        covered = 0
        for off, n in pieces:
            assert off == covered
            covered += n
        assert covered == size
    # no more calls than the bytes need, plus the split pieces' slack and the last call's room
    assert len(calls) <= sum(sizes.values()) // last_room + len(sizes) + 1


def test_no_room_is_an_error():
    with pytest.raises(ValueError, match='no room'):
        device_pack.plan_calls({'a': 10}, 0, 0)


def test_unpack_joins_and_checks(tmp_path):
    rng = np.random.default_rng(0)
    src = tmp_path / 'src'
    src.mkdir()
    files = []
    for name, size in (('big.whl', 2500), ('mid.whl', 700), ('pkg.tar.xz', 10),
                       ('empty.whl', 0)):
        path = src / name
        path.write_bytes(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        files.append(path)
    folders = device_pack.lay_out(files, tmp_path / 'dev', room=1000, last_room=900)
    assert len(folders) >= 4 and (folders[-1] / 'unpack.sh').is_file()
    assert all(sum(f.stat().st_size for f in d.iterdir() if f.suffix not in ('.json', '.sh'))
               <= 1000 for d in folders)
    home = tmp_path / 'home'
    (home / 'parts').mkdir(parents=True)
    for folder in folders[:-1]:  # what the earlier calls copied to ~/parts
        for f in folder.iterdir():
            shutil.copy(f, home / 'parts')
    env = dict(os.environ, HOME=str(home))
    dest = tmp_path / 'w'
    proc = subprocess.run(['bash', str(folders[-1] / 'unpack.sh'), str(dest)], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for path in files:
        assert (dest / path.name).read_bytes() == path.read_bytes()
    # a part damaged on the way: the file is named, nothing silently wrong
    part = next((home / 'parts').glob('big.whl.part*'))
    part.write_bytes(b'x' + part.read_bytes()[1:])
    proc = subprocess.run(['bash', str(folders[-1] / 'unpack.sh'), str(tmp_path / 'w2')],
                          env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and 'big.whl: md5 differs' in proc.stderr
