"""core.registry.Registry, and the domains that read and write through it: each keeps its
``register``/``get`` names and its errors (the one line naming the known names)."""

import pytest

from realm_ros.core import backends, metrics, perturbations, policy, scoring, skills, tasks
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.registry import Registry
from realm_ros.core.sysid import strategies


def test_add_lookup_names_and_the_unknown_name_line():
    reg: Registry[int] = Registry('widget')
    assert reg.add('b', 2) == 2 and reg.add('a', 1) == 1
    assert reg.lookup('a') == 1 and reg.names() == ['a', 'b']
    assert reg.get('zz') is None and dict(reg) == {'b': 2, 'a': 1}  # still a dict
    with pytest.raises(ConfigError) as err:
        reg.lookup('c')
    assert str(err.value) == "unknown widget 'c'; choose one of ['a', 'b']"
    ordered = Registry('code', {'z': 0, 'y': 1}, lead='codes:', ordered=True)
    with pytest.raises(ConfigError, match=r"^unknown code 'x'; codes: \['z', 'y'\]$"):
        ordered.lookup('x')


def test_a_taken_name_is_an_error_unless_replace_or_a_target():
    one, other = object(), object()
    reg: Registry[object] = Registry('thing', {'lazy': 'pkg.mod:THING'}, duplicate=DataError)
    reg.add('x', one)
    assert reg.add('x', one) is one  # the same thing again: fine
    with pytest.raises(DataError, match="^thing 'x' is already registered$"):
        reg.add('x', other)
    assert reg['x'] is one
    assert reg.add('lazy', other) is other  # its 'module:attribute' target is replaced
    loose: Registry[object] = Registry('thing', replace=True)
    loose.add('x', one)
    assert loose.add('x', other) is other and loose['x'] is other


@pytest.mark.parametrize('get, name, line', [
    (tasks.get_task, 'stack_cube', "unknown task 'stack_cube'; choose one of ["),
    (skills.get, 'fly', "unknown skill 'fly'; choose one of ["),
    (perturbations.get, 'V-NOPE', "unknown perturbation 'V-NOPE'; REALM codes: ['Default'"),
    (backends.get, 'gazebo', "unknown world backend 'gazebo'; choose one of ["),
    (strategies.get, 'slow', "unknown fit strategy 'slow'; choose one of ["),
    (policy.policy_class, 'magic', "unknown policy 'magic'; choose one of ["),
    (scoring.make_scorer, 'oracle', "unknown scorer 'oracle'; choose from ["),
])
def test_every_domain_keeps_its_unknown_name_error(get, name, line):
    with pytest.raises(ConfigError) as err:
        get(name)
    assert str(err.value).startswith(line) and '\n' not in str(err.value), str(err.value)


def test_every_domain_registry_is_one_registry():
    for reg in (tasks.TASKS, skills.SKILLS, perturbations.PERTURBATIONS, backends.BACKENDS,
                metrics.METRICS, strategies.STRATEGIES, policy.POLICIES, scoring.SCORERS):
        assert isinstance(reg, Registry), reg
    with pytest.raises(ConfigError, match="world backend 'mujoco' is already registered"):
        backends.register(backends.Backend('mujoco', real=False, target='x:Y'))
    with pytest.raises(DataError, match="metric 'mmrv' is already registered"):
        metrics.register(metrics.Metric('mmrv', metrics.mmrv, 'MMRV', 'MMRV'))
    assert tasks.register(tasks.TASKS['push_switch']) is tasks.TASKS['push_switch']
