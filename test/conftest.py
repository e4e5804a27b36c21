"""Shared test set-up for every folder: helpers importable, DDS isolated per test session.

The tests live by layer (docs/testing.md): ``unit/`` (pure, in-process), ``nodes/`` (rclpy nodes
and node processes over DDS), ``e2e/`` (whole runs); ``helpers/`` holds the modules and scripted
servers they share, put on ``sys.path`` here so ``from rostest import ...`` works from any folder.
"""

from __future__ import annotations

import os
import pathlib
import random
import sys

HELPERS = str(pathlib.Path(__file__).resolve().parent / 'helpers')
if HELPERS not in sys.path:
    sys.path.insert(0, HELPERS)

# One DDS domain per test session, discovery on this machine only, so parallel sessions
# (and a lab's running graph) never cross-talk. Set before anything initialises rclpy. Under
# pytest-xdist (`make test` runs two workers) each worker takes its own domain: the run's
# shared id picks a base, the worker number the offset (the workers inherit the controller's
# environment, so a domain this file chose there is chosen again here).
_WORKER = os.environ.get('PYTEST_XDIST_WORKER', '')
if 'ROS_DOMAIN_ID' not in os.environ or os.environ.get('REALM_TEST_DOMAIN') == 'conftest':
    if _WORKER.startswith('gw'):
        _base = random.Random(os.environ.get('PYTEST_XDIST_TESTRUNUID', '')).randint(1, 80)
        os.environ['ROS_DOMAIN_ID'] = str(_base + int(_WORKER[2:]) % 20)
    else:
        os.environ['ROS_DOMAIN_ID'] = str(random.Random(os.getpid()).randint(1, 100))
    os.environ['REALM_TEST_DOMAIN'] = 'conftest'
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
os.environ.setdefault('MUJOCO_GL', 'egl')


def pytest_collection_modifyitems(config, items):
    """Give every test over DDS (marked ``ros``) one re-run when it fails.

    Under two pytest-xdist workers beside node processes, DDS discovery can lose the first
    response of a just-matched service or a latched message past a test's timeout (seen once in
    1,416 tests on a fresh-clone CI run: an operator service matched but its answer never
    arrived within 10 s). A test that fails twice fails the run; the summary lists every re-run
    (``R`` in the progress line, ``RERUN test-id`` in the summary: ``-raR`` in
    pyproject.toml), so a flake is seen, not hidden. Pure tests (``unit/`` without the marker)
    are never re-run. ``REALM_TEST_RERUNS=0`` turns it off.
    """
    import pytest
    reruns = int(os.environ.get('REALM_TEST_RERUNS', '1'))
    if reruns <= 0 or not config.pluginmanager.hasplugin('rerunfailures'):
        return
    for item in items:
        if item.get_closest_marker('ros') is not None and item.get_closest_marker('flaky') is None:
            item.add_marker(pytest.mark.flaky(reruns=reruns, reruns_delay=1))
