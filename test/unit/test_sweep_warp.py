"""The MuJoCo Warp sweep (``--device gpu`` for learned policies): wiring, tolerance, the device
image preparation, and (with mujoco-warp) Warp episodes against the CPU twin.

The pure tests run everywhere. The Warp episode tests need ``mujoco-warp`` and ``warp-lang``
(the ``warp`` extra, not installed in CI: they skip) and, on a machine without a GPU, compile
Warp's kernels for the CPU (minutes the first time, cached in ``~/.cache/warp`` after): they
run only with ``REALM_WARP_CPU=1`` (and are marked slow).
"""

from __future__ import annotations

import argparse
import os
import pathlib

import numpy as np
import pytest

from realm_ros.commands import sweep as sweep_cmd
from realm_ros.core.errors import ConfigError
from realm_ros.core.sweep import Cell, SweepConfig, plan_cells
from realm_ros.sweep.compare_cpu import TOLERANCE, compare
from realm_ros.sweep.warp import refuse_on_warp

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKPOINT = ROOT / 'checkpoints' / 'learned' / 'final.pt'


def _args(tmp_path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sweep_cmd.add_arguments(parser)
    return parser.parse_args(['--out', str(tmp_path / 'out'), *extra])


def test_device_gpu_runs_learned_policies_on_warp_and_the_scripted_ladder_on_mjx(tmp_path):
    learned = f'final=learned:path={CHECKPOINT}'
    config = sweep_cmd.build_config(_args(tmp_path, '--device', 'gpu', '--policies', learned))
    assert config.worlds == ('warp',)
    config = sweep_cmd.build_config(_args(tmp_path, '--device', 'gpu'))
    assert config.worlds == ('mjx',)
    config = sweep_cmd.build_config(_args(tmp_path, '--device', 'gpu', '--gpu-engine', 'warp'))
    assert config.worlds == ('warp',)
    with pytest.raises(ConfigError, match='mjx'):
        sweep_cmd.build_config(_args(tmp_path, '--device', 'gpu', '--gpu-engine', 'mjx',
                                     '--policies', learned))


def test_gpu_workers_share_the_gpu_as_batch_worker_processes(tmp_path):
    from realm_ros.sweep.executors import InProcessExecutor, ProcessExecutor

    ex = sweep_cmd.make_executor(_args(tmp_path, '--device', 'gpu', '--gpu-workers', '3'), {})
    assert isinstance(ex, ProcessExecutor) and ex.counts == {'cpu': 1, 'gpu': 3}
    ex = sweep_cmd.make_executor(_args(tmp_path, '--device', 'gpu'), {})
    assert isinstance(ex, InProcessExecutor)
    with pytest.raises(SystemExit):  # refused as the arguments are parsed (commands.number)
        _args(tmp_path, '--gpu-workers', '0')


def test_warp_and_mjx_cells_of_one_task_go_to_separate_gpu_units():
    from realm_ros.sweep.executors import make_units

    cells = [c for world in ('warp', 'mjx') for c in plan_cells(SweepConfig(
        tasks=('push_switch',), policies=('scripted:0',), episodes_per_cell=3, worlds=(world,)))]
    units = make_units(cells, batch=8)
    assert sorted(len(u.cells) for u in units) == [3, 3]
    assert all(len({c.world for c in u.cells}) == 1 and u.kind == 'gpu' for u in units)


def test_warp_refuses_what_it_cannot_batch_with_the_reason():
    def cells(policy: str, code: str = 'Default') -> list[Cell]:
        return plan_cells(SweepConfig(tasks=('push_switch',), policies=(policy,),
                                      perturbations=(code,), worlds=('warp',)))

    refuse_on_warp(cells('scripted:0', 'V-LIGHT'))
    with pytest.raises(ConfigError, match='hold'):
        refuse_on_warp(cells('hold'))
    with pytest.raises(ConfigError, match='V-AUG'):
        refuse_on_warp(cells('scripted:0', 'V-AUG'))
    with pytest.raises(ConfigError, match='V-SC'):
        refuse_on_warp(cells('scripted:0', 'V-SC'))


def test_the_gpu_worker_builds_the_batch_its_options_name_at_start():
    """With ``warp`` options (the sweep has warp cells) the GPU worker builds the Warp batch
    worker when it starts, so a missing package is said once, before any unit."""
    pytest.importorskip('warp')
    pytest.importorskip('mujoco_warp')
    from realm_ros.sweep.warp import GpuRunner, WarpBatchRunner

    runner = GpuRunner(batch=4, warp={'device': 'cpu'})
    assert list(runner._runners) == ['warp']
    assert isinstance(runner._runners['warp'], WarpBatchRunner)
    assert runner._runners['warp'].options.batch == 4
    with pytest.raises(ConfigError, match='one world'):
        runner.run_cells(plan_cells(SweepConfig(tasks=('push_switch',), policies=('scripted:0',),
                                                worlds=('warp', 'mjx'))))
    runner.close()


def test_compare_cpu_needs_the_gpu_and_exits_2(tmp_path, capsys):
    from realm_ros.cli import main

    code = main(['sweep', '--out', str(tmp_path / 'o'), '--compare-cpu', '2', '--quiet'])
    assert code == 2
    assert '--device gpu' in capsys.readouterr().err


def test_every_gpu_sweep_compares_with_the_cpu_twin_unless_told_not_to():
    from realm_ros.commands.sweep import DEFAULT_COMPARE_CPU, compare_cells

    assert compare_cells(None, 'gpu') == DEFAULT_COMPARE_CPU > 0
    assert compare_cells(None, 'cpu') == 0
    assert compare_cells(0, 'gpu') == 0 and compare_cells(0, 'cpu') == 0
    assert compare_cells(128, 'gpu') == 128
    with pytest.raises(ConfigError, match='--device gpu'):
        compare_cells(2, 'cpu')
    with pytest.raises(ConfigError, match='positive'):
        compare_cells(-1, 'gpu')


def _record(pair: str, progression: float, success: bool) -> dict:
    return {'pair_id': pair, 'progression': progression, 'success': success, 'steps': 10}


def test_compare_counts_cells_within_the_tolerance():
    cpu = [_record(f'c{i}', p, s) for i, (p, s) in enumerate(
        [(1.0, True), (0.5, False), (0.25, False), (0.0, False), (1.0, True)])]
    same = compare(cpu, cpu)
    assert same['within_tolerance'] and same['progression_within'] == 1.0
    # One cell off by 0.5 and with the other success: 4/5 = 0.8 still passes, two do not.
    one = list(cpu)
    one[0] = _record('c0', 0.5, False)
    result = compare(one, cpu)
    assert result['progression_within'] == 0.8 and result['same_success'] == 0.8
    assert result['within_tolerance'] is (0.8 >= TOLERANCE['cells'])
    two = list(one)
    two[4] = _record('c4', 0.25, False)
    assert not compare(two, cpu)['within_tolerance']
    with pytest.raises(ConfigError, match='cells differ'):
        compare(cpu[:1], cpu[1:2])


def test_compare_carries_its_intervals_into_the_sweep_report(tmp_path):
    """--compare-cpu's figures come with 95 % intervals (Wilson for fractions of cells,
    bootstrap for the mean difference) and report.html shows them in their own section."""
    from realm_ros.sweep.compare_cpu import summary_section
    from realm_ros.sweep.report import compare_cpu_html

    cpu = [_record(f'c{i}', 1.0, True) for i in range(20)]
    gpu = [_record(f'c{i}', 1.0 if i < 16 else 0.0, i < 16) for i in range(20)]
    result = compare(gpu, cpu)
    lo, hi = result['progression_within_ci']
    assert result['progression_within'] == 0.8 and 0.58 < lo < 0.6 and 0.91 < hi < 0.93
    assert result['gpu_success_rate_ci'] == result['progression_within_ci']
    assert result['cpu_success_rate_ci'][0] > 0.83 and result['cpu_success_rate_ci'][1] == 1.0
    lo, hi = result['mean_abs_progression_diff_ci']
    assert lo < result['mean_abs_progression_diff'] == 0.2 < hi
    section = summary_section(result)
    assert 'per_cell' not in section
    page = '\n'.join(compare_cpu_html(section))
    assert '--compare-cpu' in page and 'Wilson' in page and 'within the tolerance' in page
    assert compare_cpu_html(None) == []


def test_device_image_preparation_follows_prepare_image():
    """The device's resize-with-pad (torch) gives the host's ``prepare_image`` (cv2: INTER_AREA
    shrinking, INTER_LINEAR enlarging) picture: the same padding bands, and the same pixels
    within one grey level when shrinking by any factor (OpenCV's area weights, not torch's
    pooling, which differed by up to 36 levels at edges for 320 -> 128)."""
    torch = pytest.importorskip('torch')
    from realm_ros.policies.learned import prepare_image
    from realm_ros.sweep.warp import area_weights, resize_with_pad_torch

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:180, 0:320]
    image = np.stack([(x * 0.8) % 256, (y * 1.4) % 256, 128 + 60 * np.sin(x / 9.0)], -1)
    image[40:90, 100:180] = (220, 30, 40)  # a block with sharp edges
    image = np.clip(image + rng.normal(0, 4, image.shape), 0, 255).astype(np.uint8)
    host = prepare_image(image, 128).astype(int)
    device = resize_with_pad_torch(torch.from_numpy(image)[None], 128)[0].numpy().astype(int)
    assert device.shape == host.shape == (3, 128, 128)
    assert (device[:, :28] == 0).all() and (host[:, :28] == 0).all()
    assert (device[:, 100:] == 0).all() and (host[:, 100:] == 0).all()
    assert np.abs(device - host).max() <= 1
    for size in (224, 96, 64, 37):  # other factors, integer and not
        host = prepare_image(image, size).astype(int)
        device = resize_with_pad_torch(torch.from_numpy(image)[None], size)[0].numpy()
        assert np.abs(device.astype(int) - host).max() <= 1, size
    small = image[::5, ::5]  # 36 x 64 -> 128: enlarging, bilinear on both
    host = prepare_image(small, 128).astype(int)
    device = resize_with_pad_torch(torch.from_numpy(small)[None], 128)[0].numpy().astype(int)
    assert np.abs(device - host).mean() < 1.0
    weights = area_weights(320, 128)
    assert weights.shape == (128, 320) and np.allclose(weights.sum(1), 1.0)


def test_a_copied_world_resets_to_the_fresh_worlds_state():
    """run_warp copies one built world per task: the copy's reset gives the state a freshly
    built world's reset gives (same seeded initial state, same privileged state)."""
    import copy

    from realm_ros.sweep.warp import _world

    cells = _cells('scripted:0', 2, 5, cameras=())
    template = _world(cells[0], (), (64, 36))
    for cell in cells:
        fresh, copied = _world(cell, (), (64, 36)), copy.deepcopy(template)
        a, b = fresh.reset(cell.spec), copied.reset(cell.spec)
        assert np.array_equal(fresh.data.qpos, copied.data.qpos)
        assert np.array_equal(fresh.data.mocap_pos, copied.data.mocap_pos)
        assert np.array_equal(a.joints.position, b.joints.position)
        assert a.privileged.keys() == b.privileged.keys()
        for key in a.privileged:
            assert repr(a.privileged[key]) == repr(b.privileged[key]), key


def _model_arrays(model) -> dict[str, np.ndarray]:
    return {name: np.array(getattr(model, name)) for name in dir(model)
            if not name.startswith('_') and isinstance(getattr(model, name), np.ndarray)}


def test_slot_worlds_reset_to_each_episode_as_fresh_worlds_with_models_of_their_own():
    """slot_worlds: every world's state and whole model after each reset are those of a world
    built for its cell alone, each world reads a model of its own (a reset writes the model:
    push_switch's panel is placed per world; once the worlds shared one, every world had the
    last reset's panel and the learned policy succeeded in 4 % of 4,096 Warp cells), under
    Default and under a perturbation that changes the model (V-LIGHT), also when a world is
    reset to its next episode after one (the refill: a V-LIGHT episode, then a Default one), and
    one step from the same target lands where a fresh world's does (the target frame's scratch
    kinematics data is each world's own)."""
    import dataclasses

    from realm_ros.sweep.warp import _world, slot_worlds

    default = _cells('scripted:0', 3, 5, cameras=())
    perturbed = [dataclasses.replace(c, cameras=()) for c in plan_cells(SweepConfig(
        tasks=('push_switch',), policies=('scripted:0',), perturbations=('V-LIGHT',),
        episodes_per_cell=1, max_steps=5, worlds=('warp',))) if c.spec.perturbation == 'V-LIGHT']
    cells = [default[0], *perturbed, *default[1:]]
    template = _world(cells[0], (), (64, 36))
    worlds = slot_worlds(template, 2)
    assert len({id(w.model) for w in [*worlds, template]}) == 3
    assert len({id(w.data) for w in worlds}) == 2
    panels, lights = set(), []
    for k, cell in enumerate(cells):  # world k % 2 takes episode k: two episodes each
        world = worlds[k % 2]
        world.reset(cell.spec)
        panels.add(tuple(world.model.body_pos[world.model.body('light_switch').id]))
        lights.append(np.array(world.model.light_diffuse))
        fresh = _world(cell, (), (64, 36))
        fresh.reset(cell.spec)
        for field in ('qpos', 'qvel', 'act', 'ctrl', 'mocap_pos', 'mocap_quat', 'xpos',
                      'site_xpos', 'qfrc_actuator'):
            assert np.array_equal(getattr(fresh.data, field), getattr(world.data, field)), field
        mine, theirs = _model_arrays(world.model), _model_arrays(fresh.model)
        assert mine.keys() == theirs.keys()
        for name in mine:
            assert np.array_equal(mine[name], theirs[name]), (k, name)
        q = fresh.data.qpos[:7] + 0.05
        for w in (fresh, world):
            w.hold(q, 0.5)
            w.step_physics(8)
        assert np.array_equal(fresh.data.qpos, world.data.qpos)
        assert np.array_equal(fresh.data.mocap_pos, world.data.mocap_pos)
    assert len(panels) == len(cells)  # the switch is placed per episode, in the model
    assert not np.array_equal(lights[1], lights[0]) and np.array_equal(lights[3], lights[0])


# -- MuJoCo Warp on the CPU device --------------------------------------------------------

warp_cpu = pytest.mark.skipif(
    os.environ.get('REALM_WARP_CPU') != '1',
    reason='Warp episodes on the CPU device compile for minutes: set REALM_WARP_CPU=1')


def _warp_runner(size=(64, 36)):
    pytest.importorskip('warp')
    pytest.importorskip('mujoco_warp')
    from realm_ros.sweep.warp import WarpBatchRunner

    return WarpBatchRunner(batch=4, device='cpu', image_size=size)


def _cells(policy: str, n: int, steps: int, cameras=('exterior_1', 'wrist')) -> list[Cell]:
    import dataclasses

    cells = plan_cells(SweepConfig(tasks=('push_switch',), policies=(policy,),
                                   episodes_per_cell=n, max_steps=steps, worlds=('warp',)),
                       lambda entry: tuple(cameras))
    return [dataclasses.replace(c, cameras=tuple(cameras)) for c in cells]


@pytest.mark.slow
@warp_cpu
def test_warp_scripted_episodes_follow_the_cpu_twin():
    """Two push_switch worlds, the scripted expert, a few control steps: Warp's joint paths
    follow the CPU twin's run_episode to float32 precision and the records have its shape."""
    from realm_ros.backends.mujoco import warp_sweep
    from realm_ros.backends.mujoco.batch import run_batch
    from realm_ros.core.policy import make_policy
    from realm_ros.sweep.compare_cpu import cpu_twin
    from realm_ros.sweep.runner import CellRunner
    from realm_ros.sweep.warp import _world

    runner = _warp_runner()
    cells = _cells('scripted:0', 2, 5, cameras=())
    worlds = [_world(c, (), (64, 36)) for c in cells]
    qs: list[list[np.ndarray]] = [[], []]
    results = run_batch(
        worlds, [make_policy('scripted', skill=0) for _ in cells], [c.spec for c in cells],
        lambda ws: warp_sweep.WarpStepper(ws, device=runner.device()),
        on_step=lambda i, k, obs: qs[i].append(obs.joints.position), execute=8,
        infer_batch=None)
    cpu_runner = CellRunner()
    try:
        for i, cell in enumerate(cells):
            trace: list[np.ndarray] = []
            world = cpu_runner.world(cpu_twin(cell))
            from realm_ros.core.episode import run_episode
            from realm_ros.core.policy import standard_chain

            record = run_episode(world, standard_chain(make_policy('scripted', skill=0)),
                                 cell.spec, on_step=lambda k, o, a, p, trace=trace: trace.append(
                                     o.joints.position)).to_record()
            div = np.max(np.abs(np.array(trace) - np.array(qs[i])))
            print(f'world {i}: Warp vs CPU twin joint divergence {div:.2e} rad over 5 steps')
            assert div < 1e-5, div
            warp_record = results[i].to_record()
            assert set(warp_record) == set(record)
            assert warp_record['backend'] == 'warp' and warp_record['steps'] == record['steps']
    finally:
        cpu_runner.close()


@pytest.mark.slow
@warp_cpu
def test_warp_learned_sweep_renders_batched_and_matches_the_cpu_records():
    """Two worlds of the learned checkpoint, 9 control steps (two chunks: the second query
    reads the images the device rendered after 8 steps): the records agree with the CPU
    twin's within the sweep's tolerance, the cameras were rendered on the device twice, and
    the same two cells run one after the other in one world give the same records."""
    from realm_ros.sweep.compare_cpu import cpu_runner, cpu_twin
    from realm_ros.sweep.warp import WarpBatchRunner, run_warp

    runner = _warp_runner()
    cells = _cells(f'final=learned:path={CHECKPOINT}', 2, 9)
    records, timing = run_warp(cells, runner)
    assert timing['renders'] == 2 and timing['policy_calls'] == 2
    assert [r['steps'] for r in records] == [9, 9]
    # the two cells one after the other in one world (the refill): each reads its own images
    one, _ = run_warp(cells, WarpBatchRunner(batch=1, device='cpu', image_size=(64, 36)))
    assert ([{k: v for k, v in r.items() if k != 'wall_time_s'} for r in one]
            == [{k: v for k, v in r.items() if k != 'wall_time_s'} for r in records])
    cpu_side = cpu_runner((64, 36))
    try:
        cpu = [cpu_side.run(cpu_twin(c)) for c in cells]
    finally:
        cpu_side.close()
    assert compare(records, cpu)['within_tolerance']


@pytest.mark.slow
@warp_cpu
def test_static_bodies_placed_per_world_sit_where_each_world_has_them():
    """push_switch's panel is welded to the world and placed per seed (body_pos batched):
    MuJoCo Warp computes such geoms' poses once, from world 0's model, so the stepper writes
    each world's own. Before, worlds 1.. collided with and rendered world 0's panel (H200: 1
    of 16 learned cells within 0.25 progression of the CPU twin; after: 53 of 64)."""
    pytest.importorskip('warp')
    pytest.importorskip('mujoco_warp')
    from realm_ros.backends.mujoco.warp_sweep import WarpStepper
    from realm_ros.sweep.warp import _world

    cells = _cells('scripted:0', 3, 5, cameras=())
    worlds = [_world(cell, (), (64, 36)) for cell in cells]
    for world, cell in zip(worlds, cells):
        world.reset(cell.spec)
    panel = worlds[0].model.body('light_switch').id
    geoms = [g for g in range(worlds[0].model.ngeom) if worlds[0].model.geom_bodyid[g] == panel]
    assert geoms and len({tuple(w.data.geom_xpos[geoms[0]]) for w in worlds}) == 3
    stepper = WarpStepper(worlds, device='cpu')
    device_xpos = stepper.d.geom_xpos.numpy()
    for i, world in enumerate(worlds):
        np.testing.assert_allclose(device_xpos[i, geoms], world.data.geom_xpos[geoms],
                                   atol=1e-6)


def _numbers(state, prefix=''):
    """A privileged state's numbers by path (booleans and names kept as they are)."""
    if isinstance(state, dict):
        out = {}
        for key, value in state.items():
            out.update(_numbers(value, f'{prefix}/{key}'))
        return out
    if isinstance(state, (list, tuple)) and state and isinstance(state[0], (int, float)):
        return {prefix: np.asarray(state, dtype=float)}
    return {prefix: state}


@pytest.mark.slow
@warp_cpu
def test_warp_hands_back_the_derived_quantities_the_host_forward_rebuilds():
    """WarpStepper(hand_back=True): the observations read Warp's own poses, contacts and
    actuator forces (no host mj_forward) and see what the host path rebuilds from the
    downloaded float32 state: privileged states equal to float32 precision (poses 1e-5 m),
    the same contacts, the same records, over 2 push_switch episodes of the scripted expert
    (to the switch: the fingers touch it)."""
    pytest.importorskip('warp')
    pytest.importorskip('mujoco_warp')
    from realm_ros.backends.mujoco.batch import run_batch
    from realm_ros.backends.mujoco.warp_sweep import WarpStepper
    from realm_ros.core.policy import make_policy
    from realm_ros.sweep.warp import _world

    cells = _cells('scripted:0', 2, 80, cameras=())
    seen, records = [], []
    for hand_back in (False, True):
        worlds = [_world(c, (), (64, 36)) for c in cells]
        got: list[list] = [[] for _ in cells]
        results = run_batch(
            worlds, [make_policy('scripted', skill=0) for _ in cells], [c.spec for c in cells],
            lambda ws, hb=hand_back: WarpStepper(ws, device='cpu', hand_back=hb),
            on_step=lambda i, k, o, got=got: got[i].append(
                (o.joints.effort, _numbers(dict(o.privileged)))), infer_batch=None)
        seen.append(got)
        records.append([{k: v for k, v in r.to_record().items() if k != 'wall_time_s'}
                        for r in results])
    assert records[0] == records[1]
    touched = [k for world in seen[0] for _, state in world for k, v in state.items()
               if '/contacts/' in k and v is True]
    assert touched, 'the expert never touched the switch: the contacts were not compared'
    for host, device in zip(*seen):
        assert len(host) == len(device) >= 5
        for (e_host, p_host), (e_dev, p_dev) in zip(host, device):
            np.testing.assert_allclose(e_dev, e_host, atol=1e-3)
            assert p_host.keys() == p_dev.keys()
            for key, value in p_host.items():
                if isinstance(value, np.ndarray):
                    np.testing.assert_allclose(p_dev[key], value, atol=1e-5, err_msg=key)
                else:
                    assert p_dev[key] == value, key


@pytest.mark.slow
@warp_cpu
def test_a_world_refilled_with_the_next_cell_runs_it_as_a_batch_of_its_own_would():
    """run_warp's refill: 5 scripted cells of different lengths in 2 worlds, each world taking
    the next cell when its episode ends, give the records of the 5 cells run as one batch of
    5 worlds."""
    import dataclasses

    from realm_ros.sweep.warp import WarpBatchRunner, run_warp

    cells = [dataclasses.replace(c, spec=dataclasses.replace(c.spec, max_steps=steps))
             for c, steps in zip(_cells('scripted:0', 5, 8, cameras=()), (4, 7, 3, 6, 5))]
    got = {}
    for batch, refill in ((2, True), (5, False)):
        runner = WarpBatchRunner(batch=batch, device='cpu', refill=refill)
        records, timing = run_warp(cells, runner)
        got[refill] = [{k: v for k, v in r.items() if k != 'wall_time_s'} for r in records]
        assert timing['world_steps'] == 4 + 7 + 3 + 6 + 5
    assert [r['steps'] for r in got[True]] == [4, 7, 3, 6, 5]
    assert got[True] == got[False]


@pytest.mark.slow
@warp_cpu
def test_a_replaced_world_draws_and_steps_as_a_new_batch_would():
    """WarpStepper.replace: world 0 reset to another cell and loaded into slot 0 renders the
    pictures and takes the step a batch built with that world does; a world whose model
    differs where the batch holds one value for all (V-LIGHT's lights) is refused."""
    import dataclasses

    from realm_ros.backends.mujoco.warp_sweep import WarpStepper
    from realm_ros.sweep.warp import _world

    cells = _cells('scripted:0', 3, 5, cameras=('exterior_1', 'wrist'))
    size = (64, 36)

    def worlds_for(chosen):
        out = []
        for c in chosen:
            w = _world(c, c.cameras, size)
            w.reset(c.spec)
            out.append(w)
        return out

    worlds = worlds_for(cells[:2])
    stepper = WarpStepper(worlds, cells[0].cameras, size, device='cpu', graph=False)
    worlds[0].reset(cells[2].spec)
    assert stepper.replace(0, worlds[0])
    fresh_worlds = worlds_for([cells[2], cells[1]])
    fresh = WarpStepper(fresh_worlds, cells[0].cameras, size, device='cpu', graph=False)
    a = stepper.render().numpy().astype(int)
    b = fresh.render().numpy().astype(int)
    diff = np.abs(a[0] - b[0])
    print(f'replaced vs new batch, slot 0: mean {diff.mean():.3f}, max {diff.max()} levels')
    assert diff.mean() < 0.5 and np.mean(diff > 8) < 0.01
    assert not np.array_equal(a[0], stepper.render().numpy()[1])  # another world's pictures
    rows = [w.period_controls() for w in worlds]
    (_, after), (_, after_fresh) = stepper.step(rows)[0], fresh.step(rows)[0]
    np.testing.assert_allclose(after[0], after_fresh[0], atol=1e-5)
    light = [dataclasses.replace(c, cameras=cells[0].cameras) for c in plan_cells(SweepConfig(
        tasks=('push_switch',), policies=('scripted:0',), perturbations=('V-LIGHT',),
        episodes_per_cell=1, max_steps=5, worlds=('warp',))) if c.spec.perturbation == 'V-LIGHT']
    lit = worlds_for(light[:1])[0]
    assert not stepper.replace(1, lit)


def test_coplanar_decals_are_the_window_and_the_whiteboard():
    """The room's window and whiteboard lie in their frames' front faces (OpenGL z-fights
    them, a ray picks one): Warp's copy brings exactly those two out, toward the room, by
    DECAL_NUDGE; the pure function needs no Warp."""
    from realm_ros.backends.mujoco.warp_sweep import DECAL_NUDGE, coplanar_decals
    from realm_ros.sweep.warp import _world

    cell = _cells('scripted:0', 1, 1, cameras=('exterior_1',))[0]
    world = _world(cell, ('exterior_1',), (64, 36))  # a camera: the model has its room
    world.reset(cell.spec)
    m = world.model
    decals = coplanar_decals(m, world.data)
    names = sorted(m.material(int(m.geom_matid[g])).name for g in decals)
    assert names == ['board', 'window']
    for g, offset in decals.items():
        assert np.isclose(np.linalg.norm(offset), DECAL_NUDGE)
        assert m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0
        # Toward the room's centre (the frames hang on the walls).
        assert np.dot(offset[:2], np.array([0.8, 0.0]) - world.data.geom_xpos[g][:2]) > 0


def test_twin_render_draws_like_the_twins_opengl_on_this_machine():
    """Shadows as the rig's 'auto' resolves for OpenGL (on a GPU: Warp on CUDA; off on a
    software rasteriser: Warp's CPU device), explicit settings kept, no light left in a shadow,
    and the rig's multisampling as supersampling (none by default)."""
    import dataclasses

    from realm_ros.backends.mujoco.warp_sweep import twin_render
    from realm_ros.sweep.warp import _world

    cell = _cells('scripted:0', 1, 1, cameras=('exterior_1',))[0]
    world = _world(cell, ('exterior_1',), (64, 36))
    assert world._rig.shadows == 'auto' and world._rig.antialias == 0
    gpu, cpu = twin_render([world], 'cuda:0'), twin_render([world], 'cpu')
    assert gpu['use_shadows'] and not cpu['use_shadows']
    assert gpu['shadow_light_fraction'] == 0.0 and gpu['samples_per_pixel'] == 1
    assert twin_render([world], 'cpu', shadows=True)['use_shadows']
    assert not twin_render([world], 'cuda:0', shadows=False)['use_shadows']
    world._rig = dataclasses.replace(world._rig, shadows=False, antialias=4)
    assert twin_render([world], 'cuda:0') == {**gpu, 'use_shadows': False,
                                              'samples_per_pixel': 2}


#: Mean |Warp - OpenGL| per camera (grey levels) that test_warp_pictures_stay_close_to_opengl
#: allows: bench_warp_images.py's figures at the test's size and seeds (``--seeds 2 --arm-noise 0
#: --size 160x90``: 2.36, 5.48, 3.81 with the sweep's mapping; 3.48, 9.00, 9.00 before it) plus
#: a margin, each under its figure before.
PICTURE_LIMITS = {'exterior_1': 3.0, 'exterior_2': 6.5, 'wrist': 5.0}


@pytest.mark.slow
@warp_cpu
def test_warp_pictures_stay_close_to_opengl():
    """Pictures alone: two push_switch states drawn by Warp's ray tracer (the sweep's mapping:
    shadows with no light in them, decals out of their frames) and by the CPU twin's OpenGL
    with its GPU passes (shadows, reflections); the mean difference per camera stays under
    PICTURE_LIMITS (before the mapping: far above them, docs/performance.md)."""
    pytest.importorskip('warp')
    pytest.importorskip('mujoco_warp')
    from realm_ros.backends.mujoco.render import FrameRenderer
    from realm_ros.backends.mujoco.warp_sweep import ALL_CAMERAS, WarpStepper
    from realm_ros.sweep.warp import _world

    size = (160, 90)
    cells = _cells('scripted:0', 2, 1, cameras=ALL_CAMERAS)
    worlds = [_world(cell, ALL_CAMERAS, size) for cell in cells]
    for world, cell in zip(worlds, cells):
        world.reset(cell.spec)
    # Shadows on as the CPU twin's OpenGL draws them on a GPU machine (auto: off on Warp's CPU
    # device, as llvmpipe's OpenGL here).
    stepper = WarpStepper(worlds, cameras=ALL_CAMERAS, image_size=size, device='cpu',
                          forward=False, shadows=True)
    diffs: dict[str, list[float]] = {c: [] for c in ALL_CAMERAS}
    for i, world in enumerate(worlds):
        gl = FrameRenderer(world.model, *size, shadows=True, reflections=True)
        try:
            opengl = gl.render(world.data, ALL_CAMERAS)
        finally:
            gl.close()
        warp = stepper.host_images(i)
        for cam in ALL_CAMERAS:
            diffs[cam].append(float(np.abs(warp[cam].astype(float) - opengl[cam]).mean()))
    means = {cam: float(np.mean(v)) for cam, v in diffs.items()}
    print('mean |Warp - OpenGL| per camera:', means)
    for cam, limit in PICTURE_LIMITS.items():
        assert means[cam] < limit, (cam, means[cam], limit)


@pytest.mark.slow
@warp_cpu
def test_a_gpu_sweep_reports_its_cpu_comparison(tmp_path):
    """`realm-ros sweep --device gpu --compare-cpu N`: summary.json's compare_cpu (with its
    intervals) and report.html's section come with the sweep, not only compare_cpu.json."""
    import json

    pytest.importorskip('warp')
    pytest.importorskip('mujoco_warp')
    from realm_ros.cli import main

    out = tmp_path / 'out'
    assert main(['sweep', '--out', str(out), '--tasks', 'push_switch', '--policies',
                 'scripted:0', '--episodes-per-cell', '2', '--max-steps', '3', '--device',
                 'gpu', '--gpu-engine', 'warp', '--compare-cpu', '2', '--quiet']) == 0
    section = json.loads((out / 'summary.json').read_text())['compare_cpu']
    assert section['cells'] == 2 and 'per_cell' not in section
    assert section['progression_within_ci'][1] == 1.0
    assert len(section['mean_abs_progression_diff_ci']) == 2
    assert 'GPU against the CPU twin' in (out / 'report.html').read_text()
