"""Bags cut short (issue 15): real MCAP files truncated at many offsets are repaired and open."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from rostest import BIN

from realm_ros.core import robot
from realm_ros.core.errors import DataError
from realm_ros.io.bags import BagWriter, read_run
from realm_ros.io.repair import bag_opens, find_cut_bags, repair_bag, scan_mcap


def _write_bag(path, steps=300, flush_s=1.0):
    """A run bag as the recorder writes one: a command and a joint state per step."""
    rng = np.random.default_rng(0)
    with BagWriter(path, flush_s=flush_s) as bag:
        for k in range(steps):
            q = robot.RESET_Q + rng.normal(0, 0.01, 7)
            bag.write_command('/real/command', k / 15, q)
            bag.write_joint_state('/real/joint_states', k / 15 + 1e-3, q)
            if k % 50 == 49:
                bag.flush()  # as the recorder's wall-clock flush would, here every 50 steps
    return path


def _cut(src, dst, size):
    """Copy bag ``src`` to ``dst`` as a crash leaves it: the MCAP cut at ``size`` bytes."""
    dst.mkdir()
    data = (src / f'{src.name}.mcap').read_bytes()[:size]
    (dst / f'{dst.name}.mcap').write_bytes(data)


def test_truncated_mcap_at_many_offsets_is_repaired_and_opens(tmp_path):
    src = _write_bag(tmp_path / 'full')
    assert bag_opens(src) == ''
    total = (src / 'full.mcap').stat().st_size
    rng = np.random.default_rng(1)
    sizes = sorted({0, 5, 9, 100, *rng.integers(200, total, 25).tolist(), total - 1})
    recovered = []
    for i, size in enumerate(sizes):
        cut = tmp_path / f'cut{i:02d}'
        _cut(src, cut, size)
        assert bag_opens(cut), 'a cut bag without metadata.yaml should not open'
        report = repair_bag(cut)
        assert report.status in ('repaired', 'empty'), report
        assert bag_opens(cut) == '', (size, bag_opens(cut))
        assert (cut / f'cut{i:02d}.mcap.cut').exists()  # the evidence is kept
        n = sum(report.messages.values())
        recovered.append(n)
        if n:
            run = read_run(cut, namespace='/real')
            assert len(run.command_t) == report.messages['/real/command']
            assert np.all(np.isfinite(run.state_q))
        assert repair_bag(cut).status == 'ok'  # idempotent
    # More of the file, never fewer messages; the last flush point recovers 250 of 300 steps.
    assert recovered == sorted(recovered)
    assert recovered[-1] >= 2 * 250
    assert recovered[0] == 0
    print(f'\nrepair: {len(sizes)} cut copies of a {total}-byte bag repaired, all open; '
          f'messages recovered {recovered[0]}..{recovered[-1]} of 600')


def test_cut_inside_an_uncompressed_chunk_salvages_its_complete_messages(tmp_path):
    src = _write_bag(tmp_path / 'big', steps=100, flush_s=1e9)  # one chunk, flushed at 50
    data = (src / 'big.mcap').read_bytes()
    full = scan_mcap(src / 'big.mcap')
    assert len(full.messages) == 200
    cut = tmp_path / 'cut'
    # Cut in the middle of the second chunk: its complete messages survive.
    _cut(src, cut, int(len(data) * 0.7))
    report = repair_bag(cut)
    assert 100 < sum(report.messages.values()) < 200, report


def test_finished_bag_with_cut_file_and_stale_metadata_is_repaired(tmp_path):
    src = _write_bag(tmp_path / 'b')
    cut = tmp_path / 'c'
    shutil.copytree(src, cut)
    shutil.move(cut / 'b.mcap', cut / 'c.mcap')
    data = (cut / 'c.mcap').read_bytes()
    (cut / 'c.mcap').write_bytes(data[:len(data) // 2])
    (cut / 'metadata.yaml').write_text((cut / 'metadata.yaml').read_text().replace('b.mcap',
                                                                                     'c.mcap'))
    assert bag_opens(cut)
    assert find_cut_bags(tmp_path) == [cut]
    report = repair_bag(cut)
    assert report.status == 'repaired' and bag_opens(cut) == ''
    assert (cut / 'metadata.yaml.cut').exists()
    assert find_cut_bags(tmp_path) == []


def test_not_a_bag_is_a_clear_error(tmp_path):
    (tmp_path / 'x').mkdir()
    with pytest.raises(DataError, match='holds no .mcap file'):
        repair_bag(tmp_path / 'x')
    (tmp_path / 'x' / 'x.mcap').write_bytes(b'not mcap at all')
    with pytest.raises(DataError, match='not an MCAP file'):
        repair_bag(tmp_path / 'x')


def test_bag_cli_checks_and_repairs(tmp_path):
    src = _write_bag(tmp_path / 'full', steps=120)
    bags = tmp_path / 'bags'
    bags.mkdir()
    shutil.copytree(src, bags / 'pair_000')
    shutil.move(bags / 'pair_000' / 'full.mcap', bags / 'pair_000' / 'pair_000.mcap')
    (bags / 'pair_000' / 'metadata.yaml').unlink()
    _cut(src, bags / 'pair_001', 3000)
    cli = str(BIN / 'realm-ros')
    check = subprocess.run([cli, 'bag', 'check', str(bags)], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 1 and '2 of 2 bag(s) need repair' in check.stdout, check
    fixed = subprocess.run([cli, 'bag', 'repair', str(bags)], capture_output=True, text=True,
                           timeout=60)
    assert fixed.returncode == 0 and 'repaired 2 of 2 bag(s)' in fixed.stdout, fixed
    assert 'pair_000: repaired, 240 message(s)' in fixed.stdout, fixed.stdout
    # A folder of folders of bags (a run's bags_real/, bags_sim/) is searched all the way down.
    again = subprocess.run([cli, 'bag', 'check', str(tmp_path)], capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 0 and 'every bag opens (3 checked)' in again.stdout, again
    # A folder with no bag is an error, not "every bag opens" (issue 37).
    (tmp_path / 'empty').mkdir()
    for action in ('check', 'repair'):
        empty = subprocess.run([cli, 'bag', action, str(tmp_path / 'empty')],
                               capture_output=True, text=True, timeout=60)
        assert empty.returncode == 2 and empty.stdout == '', empty
        assert empty.stderr.strip().splitlines() == [
            f'realm-ros bag: error: {tmp_path / "empty"}: no bags in it (no *.mcap file below '
            'it); give a bag or a folder of bags (a run recorded with --record has bags_real/ '
            'and bags_sim/)']
    missing = subprocess.run([cli, 'bag', 'repair', str(tmp_path / 'nope')],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and 'is not a directory' in missing.stderr
    assert 'Traceback' not in missing.stderr


@pytest.mark.ros
def test_recorder_repairs_its_own_cut_bags_on_start_and_leaves_others(tmp_path):
    import rclpy
    from rclpy.parameter import Parameter

    from realm_ros.nodes.recorder_node import RecorderNode

    src = _write_bag(tmp_path / 'full', steps=60)
    out = tmp_path / 'bags'
    out.mkdir()
    _cut(src, out / 'pair_000', 20_000)  # this recorder's, killed mid-bag
    _cut(src, out / 'other_000', 20_000)  # another recorder's open bag, same folder
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = RecorderNode(context=context, parameter_overrides=[
            Parameter('out_dir', value=str(out)), Parameter('namespace', value='/real'),
            Parameter('bag_prefix', value='pair')])
        assert node.bag.path == out / 'pair_001'
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    assert bag_opens(out / 'pair_000') == ''
    assert (out / 'pair_000' / 'pair_000.mcap.cut').exists()
    assert not (out / 'other_000' / 'metadata.yaml').exists()  # untouched
