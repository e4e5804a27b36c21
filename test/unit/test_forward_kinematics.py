"""The arm's forward kinematics is written once, ``core.robot.link_poses``: the per-link list
(``robot.forward_kinematics``), the TCP fast path and IK (``core/kinematics.py``, one
configuration or a batch) and the PhysX twin's batched Jacobians are views of it. The empty-task
rule is written once too (``core.tasks.is_empty``)."""

import ast
import pathlib

import numpy as np
import pytest

from realm_ros.core import kinematics, robot, tasks

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'realm_ros'


def _builds_dh_transforms(tree: ast.AST) -> list[int]:
    """Lines of functions that read the DH table and take a cosine: a forward kinematics."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = {n.attr if isinstance(n, ast.Attribute) else getattr(n, 'id', '')
                 for n in ast.walk(fn)}
        if names & {'DH_MODIFIED', '_DH', '_TEMPLATE'} and names & {'cos', 'cos_'}:
            found.append(fn.lineno)
    return found


def test_one_forward_kinematics_in_the_package():
    found = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        lines = _builds_dh_transforms(ast.parse(path.read_text()))
        if lines:
            found[str(path.relative_to(PACKAGE))] = lines
    assert list(found) == ['core/robot.py'] and len(found['core/robot.py']) == 1, found


def test_the_variants_are_views_of_it(monkeypatch):
    calls = []
    original = robot.link_poses

    def counted(q, tool=None):
        calls.append(np.shape(q))
        return original(q, tool)
    monkeypatch.setattr(robot, 'link_poses', counted)
    q = np.asarray(robot.RESET_Q, dtype=float)
    robot.forward_kinematics(q)
    kinematics.tcp_pose(q)
    kinematics.tcp_pose_batch(np.stack([q, q]))
    assert calls == [(7,), (7,), (2, 7)]
    try:
        from realm_ros.backends.physx.common import batched_flange_jacobian
    except Exception:  # noqa: BLE001 - the PhysX extras are optional here
        return
    jac = batched_flange_jacobian(np.stack([q, q]))
    assert calls[-1] == (2, 7)
    np.testing.assert_array_equal(jac[0], robot.flange_jacobian(q))


def test_one_configuration_and_a_batch_agree_exactly():
    rng = np.random.default_rng(3)
    q = rng.uniform(robot.JOINT_LOWER, robot.JOINT_UPPER, size=(16, 7))
    batch = robot.link_poses(q)
    assert batch.shape == (16, 8, 4, 4)
    for k in range(len(q)):
        np.testing.assert_array_equal(batch[k], np.stack(robot.forward_kinematics(q[k])))
    with pytest.raises(ValueError, match=r'\(\.\.\., 7\)'):
        robot.link_poses(np.zeros(6))


@pytest.mark.parametrize('name, empty', [('', True), ('empty', True), ('pick_spoon', False)])
def test_the_empty_task_rule(name, empty):
    assert tasks.is_empty(name) is empty
