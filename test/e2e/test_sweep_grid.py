"""The sweep: its grid (pure), warm cell runners, the local executors and their faults, resume,
policy servers that stop answering, and ``realm-ros sweep`` end to end with its report.

Real parts: CPU MuJoCo worlds, spawned worker processes (one killed mid-run), a real openpi
websocket server on loopback (stopped mid-run), the CLI killed with SIGKILL and re-run.
The Ray executor on a two-node cluster: ``test_sweep_ray.py``.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.evaluation import EvalConfig, plan_pairs
from realm_ros.core.sweep import (
    SweepConfig,
    comparable,
    format_sweep_table,
    plan_cells,
    summarize_sweep,
)
from realm_ros.sweep.driver import EVENTS, run_sweep
from realm_ros.sweep.executors import InProcessExecutor, ProcessExecutor
from realm_ros.sweep.runner import CellRunner

SMALL = SweepConfig(tasks=('stack_cubes',), policies=('scripted:0', 'scripted:3'),
                    perturbations=('Default', 'VB-POSE'), episodes_per_cell=2, max_steps=20)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _by_id(records):
    return {r['pair_id']: comparable(r) for r in records}


# ---- the grid (pure) --------------------------------------------------------------------------

def test_grid_cells_share_paired_evals_seeds_and_skip_incompatible_pairs():
    config = SweepConfig(tasks=('push_switch', 'pick_spoon'), policies=('scripted:0', 'hold'),
                         perturbations=('Default', 'V-SC'), intensities=(0.5, 1.0),
                         episodes_per_cell=3, max_steps=10, seed=7, worlds=('mujoco', 'physx'))
    cells = plan_cells(config)
    # push_switch x V-SC is incompatible in REALM: 2 worlds x 3 runnable pairs x 2 x 3 x 2.
    assert len(cells) == 2 * 3 * 2 * 3 * 2
    assert len({c.key for c in cells}) == len(cells)
    assert not any(c.spec.task == 'push_switch' and c.spec.perturbation == 'V-SC' for c in cells)
    # Every policy, intensity and world faces the seeds paired-eval gives the same episode.
    pairs = plan_pairs(EvalConfig(tasks=config.tasks, policies=config.policies,
                                  perturbations=config.perturbations, episodes_per_cell=3,
                                  max_steps=10, seed=7))
    seeds = {(p.task, p.perturbation, p.pair_id.split('/')[2]): p.seed for p in pairs}
    for c in cells:
        task, cond, k, _ = c.spec.pair_id.split('/')
        assert seeds[(task, cond.split('@')[0], k)] == c.spec.seed
    assert cells[0].spec.pair_id == 'push_switch/Default@0.5/0/scripted-0'


def test_grid_refuses_bad_input_by_name():
    with pytest.raises(ConfigError, match='SweepConfig.tasks'):
        SweepConfig(tasks=('no_such_task',))
    with pytest.raises(ConfigError, match='intensity'):
        SweepConfig(intensities=(1.5,))
    with pytest.raises(ConfigError, match='worlds'):
        SweepConfig(worlds=('bullet',))
    with pytest.raises(ConfigError, match='mjx'):
        SweepConfig(policies=('hold',), worlds=('mjx',))
    with pytest.raises(ConfigError, match='--servers'):
        plan_cells(SMALL, servers={'pi0': ('127.0.0.1:8000',)})


def _record(policy, task, code, seed, progression, world='mujoco', outcome=''):
    success = progression >= 1.0
    return {'pair_id': f'{task}/{code}@1/{seed}/{policy}', 'role': '', 'backend': world,
            'world': world, 'task': task, 'perturbation': code, 'intensity': 1.0,
            'policy': policy, 'seed': seed, 'progression': progression, 'success': success,
            'outcome': outcome or ('success' if success else 'timeout'), 'steps': 10}


def test_summary_ranks_policies_with_cis_and_perturbation_deltas():
    records = []
    for seed in range(6):
        for code, drop in (('Default', 0.0), ('V-LIGHT', 0.25)):
            records.append(_record('good', 'pick_spoon', code, seed, 1.0 - drop))
            records.append(_record('bad', 'pick_spoon', code, seed, 0.5 - drop))
    records.append(_record('bad', 'pick_spoon', 'Default', 99, 0.0, outcome='infra_failure'))
    summary = summarize_sweep(records)
    w = summary['per_world']['mujoco']
    assert summary['infra_failures'] == 1 and w['episodes'] == 24
    good, bad = w['per_policy']
    assert (good['policy'], good['progress'], bad['progress']) == ('good', 0.875, 0.375)
    assert good['progress_ci'][0] <= good['progress'] <= good['progress_ci'][1]
    assert [r['policy'] for r in w['ranking']] == ['good', 'bad']
    assert w['perturbations']['V-LIGHT@1']['delta'] == pytest.approx(-0.25)
    assert w['per_condition']['Default'][0]['progress'] == 1.0
    assert 'good' in format_sweep_table(summary) and summary['agreement'] == {}
    twin = [dict(r, backend='physx', world='physx',
                 progression=r['progression'] * 0.5 if r['policy'] == 'bad' else r['progression'])
            for r in records]
    both = summarize_sweep(records + twin)['agreement']['physx vs mujoco']
    assert both['n_policies'] == 2 and both['mmrv'] == 0.0 and both['pearson_r'] == 1.0
    with pytest.raises(DataError):
        summarize_sweep([records[-1]])


def test_workers_share_a_policys_servers_round_robin():
    from realm_ros.sweep.runner import server_for

    (cell,) = plan_cells(SweepConfig(policies=('pi=openpi',), episodes_per_cell=1),
                         servers={'pi': ('gpu1:8000', 'gpu2:8001', '10.0.0.3:8000')})
    assert [server_for(cell, i) for i in range(4)] == [
        ('gpu1', 8000), ('gpu2', 8001), ('10.0.0.3', 8000), ('gpu1', 8000)]
    (plain,) = plan_cells(SweepConfig(policies=('hold',), episodes_per_cell=1))
    assert server_for(plain, 3) is None


# ---- warm runners and executors ---------------------------------------------------------------

def test_a_warm_runner_gives_the_record_a_fresh_one_gives():
    """A world and policy reused across cells of other tasks and perturbations reset to the
    cell's spec: the cell is a function of its spec, not of what ran before it."""
    cells = plan_cells(SweepConfig(tasks=('stack_cubes', 'pick_spoon'),
                                   policies=('scripted:1',), perturbations=('Default', 'VB-POSE'),
                                   episodes_per_cell=1, max_steps=40))
    warm = CellRunner()
    try:
        records = warm.run_cells(cells + cells[:1])
    finally:
        warm.close()
    for cell, record in zip(cells, records):
        fresh = CellRunner()
        try:
            assert comparable(fresh.run(cell)) == comparable(record)
        finally:
            fresh.close()
    assert comparable(records[-1]) == comparable(records[0])


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
    with InProcessExecutor() as ex:
        _, log = run_sweep(plan_cells(SMALL), ex, tmp_path_factory.mktemp('ref'))
    return _by_id(log.records)


@pytest.mark.slow
def test_processes_worker_killed_mid_run_every_cell_once_same_records(reference, tmp_path):
    cells = plan_cells(SMALL)
    killed = []
    with ProcessExecutor(2) as ex:
        def on_record(cell, record):
            if not killed:
                pid = ex.pids[0]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        run, _ = run_sweep(cells, ex, tmp_path, on_record=on_record)
    records = _lines(tmp_path / 'episodes.jsonl')
    assert len(records) == len(cells) == len({r['pair_id'] for r in records})
    assert _by_id(records) == reference
    assert run.worker_lost >= 1 and run.duplicates == 0
    assert _lines(tmp_path / EVENTS)[0]['event'] == 'worker_lost'


@pytest.mark.slow
def test_driver_killed_mid_sweep_resumes_without_losing_or_repeating(reference, tmp_path):
    argv = [sys.executable, '-m', 'realm_ros.cli', 'sweep', '--out', str(tmp_path),
            '--tasks', 'stack_cubes', '--policies', 'scripted:0', 'scripted:3',
            '--perturbations', 'Default', 'VB-POSE', '--episodes-per-cell', '2',
            '--max-steps', '20', '--quiet']
    log = tmp_path / 'episodes.jsonl'
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if log.exists() and len(_lines(log)) >= 2:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    before = len(_lines(log))
    assert 2 <= before < 8, 'the driver was not killed mid-sweep'
    assert subprocess.run(argv, timeout=300).returncode == 0
    records = _lines(log)
    assert len(records) == 8 == len({r['pair_id'] for r in records})
    assert _by_id(records) == reference
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary['run']['resumed'] == before and summary['run']['ran'] == 8 - before


@pytest.mark.slow
def test_a_policy_server_that_stops_answering_ends_cells_as_infra_failure_retried_next_run(
        tmp_path):
    """A real openpi server on loopback stops after the first record: the cells left end as
    ``infra_failure`` (not scored); the next run, with a server up, runs exactly those."""
    from realm_ros.core.policy import HoldPolicy
    from realm_ros.policies.server import PolicyServer

    config = SweepConfig(tasks=('stack_cubes',), policies=(
        'pi=openpi:timeout_s=2,connect_timeout_s=1,retries=0',), episodes_per_cell=4,
        max_steps=3)
    server = PolicyServer(HoldPolicy(), host='127.0.0.1', port=0)
    port = server.start()
    cells = plan_cells(config, lambda e: ('exterior_1', 'wrist'), {'pi': (f'127.0.0.1:{port}',)})
    stopped = []

    def on_record(cell, record):
        if not stopped:  # PolicyServer.stop is not idempotent
            server.stop()
            stopped.append(cell)

    try:
        with InProcessExecutor() as ex:
            first, log = run_sweep(cells, ex, tmp_path, on_record=on_record)
    finally:
        if not stopped:
            server.stop()
    assert first.ran == 4 and first.infra_failures == 3
    failed = [r for r in log.records if r['outcome'] == 'infra_failure']
    assert len(failed) == 3 and all(r['error'] for r in failed)
    with PolicyServer(HoldPolicy(), host='127.0.0.1', port=0) as server:
        cells = plan_cells(config, lambda e: ('exterior_1', 'wrist'),
                           {'pi': (f'127.0.0.1:{server.port}',)})
        with InProcessExecutor() as ex:
            second, log = run_sweep(cells, ex, tmp_path)
    assert (second.resumed, second.ran, second.after_infra_failure) == (1, 3, 3)
    assert second.infra_failures == 0
    done = [r for r in log.records if r['outcome'] != 'infra_failure']
    assert sorted(r['pair_id'] for r in done) == sorted(c.spec.pair_id for c in cells)
    assert summarize_sweep(log.records)['infra_failures'] == 3


# ---- the command ------------------------------------------------------------------------------

@pytest.mark.slow
def test_sweep_cli_two_policies_two_tasks_two_perturbations_gives_the_report(tmp_path, capsys):
    from realm_ros.cli import main

    out = tmp_path / 'sweep'
    argv = ['sweep', '--out', str(out), '--tasks', 'stack_cubes', 'pick_spoon',
            '--policies', 'scripted:0', 'scripted:3', '--perturbations', 'Default', 'VB-POSE',
            '--episodes-per-cell', '2', '--max-steps', '40', '--workers', '2']
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert 'scripted-0' in text and 'BT score' in text and 'VB-POSE@1' in text
    records = _lines(out / 'episodes.jsonl')
    assert len(records) == 16 == len({r['pair_id'] for r in records})
    summary = json.loads((out / 'summary.json').read_text())
    w = summary['per_world']['mujoco']
    assert [e['policy'] for e in w['per_policy']] == ['scripted-0', 'scripted-3']
    assert set(w['per_task']) == {'stack_cubes', 'pick_spoon'}
    assert set(w['per_condition']) == {'Default', 'VB-POSE@1'}
    assert len(w['ranking']) == 2 and 'VB-POSE@1' in w['perturbations']
    html = (out / 'report.html').read_text()
    for part in ('Bradley-Terry', 'Per task', 'Perturbations', '95% CI'):
        assert part in html
    for png in ('policy_bars.png', 'ranking.png', 'perturbations.png'):
        assert (out / png).stat().st_size > 1000
    assert main(argv) == 0  # resumed: nothing runs again
    assert len(_lines(out / 'episodes.jsonl')) == 16


def test_sweep_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    from realm_ros.cli import main

    for argv, field in ((['--tasks', 'nope'], 'tasks'), (['--servers', 'pi'], '--servers'),
                        (['--policies', 'nope'], 'nope'), (['--workers', '0'], '--workers')):
        try:
            code = main(['sweep', '--out', str(tmp_path), '--quiet', *argv])
        except SystemExit as stop:  # a number is refused as the arguments are parsed
            code = stop.code
        assert code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and field in err


@pytest.mark.slow
def test_the_same_grid_in_the_twin_and_on_physx_gives_per_world_columns(tmp_path):
    from twin_helpers import import_or_skip

    import_or_skip('ovphysx')
    config = SweepConfig(tasks=('stack_cubes',), policies=('scripted:0', 'hold'),
                         episodes_per_cell=1, max_steps=4, worlds=('mujoco', 'physx'))
    with InProcessExecutor() as ex:
        run, log = run_sweep(plan_cells(config), ex, tmp_path)
    assert run.ran == 4 and {r['backend'] for r in log.records} == {'mujoco', 'physx'}
    summary = summarize_sweep(log.records)
    assert summary['worlds'] == ['mujoco', 'physx']
    assert all(len(w['per_policy']) == 2 for w in summary['per_world'].values())
    assert summary['agreement']['physx vs mujoco']['n_policies'] == 2


@pytest.mark.slow
def test_a_worker_that_cannot_build_its_runner_stops_the_sweep_with_the_reason(tmp_path):
    """A GPU batch worker process where JAX is missing says so (one line), once: not a lost
    worker replaced over and over."""
    import importlib.util

    if importlib.util.find_spec('jax') is not None:
        pytest.skip('JAX is installed here: the GPU batch worker can be built')
    cells = plan_cells(SweepConfig(tasks=('stack_cubes',), policies=('scripted:0',),
                                   episodes_per_cell=1, max_steps=2, worlds=('mjx',)))
    with ProcessExecutor(1) as ex:
        with pytest.raises(ConfigError, match='jax') as err:
            run_sweep(cells, ex, tmp_path)
    assert len(str(err.value).splitlines()) == 1
    assert not (tmp_path / EVENTS).exists()


@pytest.mark.slow
def test_sweep_videos_land_beside_the_records_and_the_arena_pairs_them(tmp_path, capsys):
    from realm_ros.arena.catalog import Catalog
    from realm_ros.cli import main
    from realm_ros.io.video import probe

    out = tmp_path / 'sweep'
    argv = ['sweep', '--out', str(out), '--tasks', 'push_switch', '--policies', 'scripted:0',
            'scripted:3', '--episodes-per-cell', '1', '--max-steps', '12', '--workers', '2',
            '--videos', '--quiet']
    assert main(argv) == 0
    records = _lines(out / 'episodes.jsonl')
    assert len(records) == 2
    for r in records:
        assert r['video'] == f'videos/mujoco/{r["pair_id"].replace("/", "__")}.webm'
        info = probe(out / r['video'])
        assert info['frames'] == r['steps'] and info['codec'] == 'vp9'
    assert not list(out.rglob('*.partial.webm'))
    catalog = Catalog([out])
    assert catalog.policies() == ['scripted-0', 'scripted-3'] and len(catalog.slots) == 1
    assert main(['sweep', '--out', str(tmp_path / 'x'), '--tasks', 'push_switch', '--videos',
                 'nose', '--quiet']) == 2
    assert 'unknown camera' in capsys.readouterr().err
