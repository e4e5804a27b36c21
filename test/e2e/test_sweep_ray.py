"""The sweep on a real Ray cluster of two nodes on this machine (``ray.cluster_utils.Cluster``:
a head and a worker node, each its own raylet with one CPU), shared by the tests of this module
and shut down after them.

What it shows: a grid of 64 cells whose worker node is removed mid-run (its raylet and worker
processes killed) finishes every cell exactly once, with records identical to the same grid run
in process; and ``realm-ros sweep --ray ADDRESS`` runs on the cluster and resumes.
"""

import json
import os
import signal
import time

import pytest

# Every Ray process (GCS, raylets, workers) binds 127.0.0.1: Ray's switch for a one-machine
# cluster, read when ray is imported (the raylets inherit it).
os.environ['RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER'] = '0'
ray = pytest.importorskip('ray')

from ray.cluster_utils import Cluster  # noqa: E402

from realm_ros.core.sweep import SweepConfig, comparable, plan_cells  # noqa: E402
from realm_ros.sweep.driver import EVENTS, run_sweep  # noqa: E402
from realm_ros.sweep.executors import InProcessExecutor  # noqa: E402
from realm_ros.sweep.ray_executor import RayExecutor  # noqa: E402

pytestmark = pytest.mark.slow
LOOPBACK = '127.0.0.1'

#: 2 tasks x 2 perturbations x 8 seeds x 2 policies = 64 cells of 15 control steps (~0.05 s).
GRID = SweepConfig(tasks=('pick_spoon', 'stack_cubes'), policies=('scripted:0', 'scripted:2'),
                   perturbations=('Default', 'VB-POSE'), episodes_per_cell=8, max_steps=15)


@pytest.fixture(scope='module')
def cluster():
    """A head node and one worker node, one CPU each, on loopback; the head declares one GPU
    (a Ray resource only: there is none here) for the GPU batch worker's placement."""
    c = Cluster(initialize_head=True, head_node_args={'num_cpus': 1, 'num_gpus': 1,
                                                      'include_dashboard': False})
    try:
        worker = c.add_node(num_cpus=1)
        c.wait_for_nodes()
        assert c.address.startswith(LOOPBACK)
        ray.init(address=c.address, log_to_driver=False)
        yield c, worker
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
    """The grid run in process: the records every executor must reproduce."""
    cells = plan_cells(GRID)
    with InProcessExecutor() as ex:
        _, log = run_sweep(cells, ex, tmp_path_factory.mktemp('inproc'))
    return {r['pair_id']: comparable(r) for r in log.records}


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_cli_runs_on_the_cluster_and_resumes(cluster, tmp_path, capsys):
    """``--ray ADDRESS`` joins the running cluster; a second run finds every cell done."""
    from realm_ros.cli import main

    c, _ = cluster
    argv = ['sweep', '--out', str(tmp_path), '--ray', c.address, '--workers', '1', '--tasks',
            'stack_cubes', '--policies', 'scripted:0', 'scripted:3', '--episodes-per-cell', '2',
            '--max-steps', '10', '--quiet']
    assert main(argv) == 0
    records = _lines(tmp_path / 'episodes.jsonl')
    assert len(records) == 4 and len({r['pair_id'] for r in records}) == 4
    assert main(argv) == 0
    assert len(_lines(tmp_path / 'episodes.jsonl')) == 4
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary['run']['executor'] == 'ray' and summary['run']['resumed'] == 4


def test_a_runners_error_stops_the_sweep_and_is_not_retried(cluster, tmp_path):
    """A bad setting found on a worker is the sweep's error (one line), not a lost worker."""
    from realm_ros.core.errors import ConfigError

    c, _ = cluster
    cells = plan_cells(SweepConfig(tasks=('stack_cubes',), policies=('bad=scripted:skill=nope',),
                                   episodes_per_cell=1, max_steps=2))
    ex = RayExecutor(c.address, workers=1)
    try:
        with pytest.raises(ConfigError, match="skill 'nope' unknown") as err:
            run_sweep(cells, ex, tmp_path)
    finally:
        ex.close()
    assert len(str(err.value).splitlines()) == 1
    assert not (tmp_path / EVENTS).exists()


def test_the_gpu_batch_worker_is_an_actor_holding_a_gpu(cluster, tmp_path):
    """``--device gpu`` cells go to an actor that asks for ``num_gpus=1`` (placed on the node
    that has the GPU resource); without JAX there it says so, as the sweep's one-line error."""
    import importlib.util

    from realm_ros.core.errors import ConfigError

    if importlib.util.find_spec('jax') is not None:
        pytest.skip('JAX is installed here: the MJX batch would run')
    c, _ = cluster
    cells = plan_cells(SweepConfig(tasks=('stack_cubes',), policies=('scripted:0',),
                                   episodes_per_cell=2, max_steps=2, worlds=('mjx',)))
    ex = RayExecutor(c.address, workers=1, gpu_workers=1)
    try:
        with pytest.raises(ConfigError, match='needs jax') as err:
            run_sweep(cells, ex, tmp_path)
        assert ray.available_resources().get('GPU', 0) == 0  # the worker holds the GPU
    finally:
        ex.close()
    assert len(str(err.value).splitlines()) == 1


def _kill_and_wait(pid, timeout_s=30.0):
    """SIGKILL ``pid`` (if still there) and wait until it is gone (reaped or not ours)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f'/proc/{pid}/stat') as f:
                if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
                    return  # a zombie runs nothing
        except FileNotFoundError:
            return
        time.sleep(0.01)
    raise AssertionError(f'the worker actor (pid {pid}) outlived SIGKILL by {timeout_s} s')


def test_worker_node_lost_mid_run_every_cell_once_same_records(cluster, reference, tmp_path):
    c, worker = cluster
    cells = plan_cells(GRID)
    assert len(cells) == 64
    ex = RayExecutor(c.address, workers=2)
    try:
        placement = ex.warm_up()
        nodes = {node for node, _ in placement.values()}
        assert len(nodes) == 2 and worker.node_id in nodes  # one actor on each node
        pid = next(pid for node, pid in placement.values() if node == worker.node_id)
        written, killed = [], []

        def on_record(cell, record):
            written.append(cell.key)
            if len(written) == 12:  # kill the worker node's raylet and its actor's process
                c.remove_node(worker, allow_graceful=False)
                # An actor's calls go to its process directly, not through the raylet, and the
                # process notices its raylet's death only later: with cells this short the
                # whole sweep once finished on the orphaned actor (worker_lost 0). Killed and
                # gone before the driver dispatches again, the actor's next unit, or the one it
                # holds, is lost whichever moment of its loop the kill meets.
                _kill_and_wait(pid)
                killed.append(len(written))

        run, log = run_sweep(cells, ex, tmp_path, on_record=on_record)
    finally:
        ex.close()
    assert killed, 'the worker node was never removed'
    records = _lines(tmp_path / 'episodes.jsonl')
    ids = [r['pair_id'] for r in records]
    assert len(ids) == 64 and len(set(ids)) == 64  # every cell, each exactly once
    assert {r['pair_id']: comparable(r) for r in records} == reference
    assert run.worker_lost >= 1 and run.duplicates == 0
    events = _lines(tmp_path / EVENTS)
    assert any(e['event'] == 'worker_lost' for e in events)
    assert worker not in c.list_all_nodes()  # (Ray's GCS marks it dead after its health checks)
