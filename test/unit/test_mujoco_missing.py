"""Without MuJoCo every module of the twin refuses to load, naming the package: none of them
swallows the ImportError (``except ImportError: mujoco = None``) and fails later on ``None``.

``scenes``, ``perturb`` and ``batch`` once did: ``core.world.initial_state_sampler`` then
handed a lab without MuJoCo the twin's sampler, which broke at its first ``mujoco.`` call
instead of answering None ("not installed here"). The child interpreter makes MuJoCo absent
with ``sys.modules['mujoco'] = None``, which is how Python reports a package that is not there
(``ModuleNotFoundError``, name ``mujoco``).
"""

import json
import os
import subprocess
import sys

BLOCK = "import sys; sys.modules['mujoco'] = None\n"

CHILD = BLOCK + """
import importlib, json
from realm_ros.core import world
from realm_ros.core.errors import BackendUnavailable
out = {}
for name in ('world', 'scenes', 'perturb', 'batch', 'actuation', 'mjx_sweep'):
    try:
        importlib.import_module('realm_ros.backends.mujoco.' + name)
        out[name] = 'loaded'
    except BackendUnavailable as err:
        out[name] = str(err)
out['sampler'] = repr(world.initial_state_sampler('mujoco'))
out['perturbed'] = repr(world.perturbed_state_function('mujoco'))
print(json.dumps(out))
"""


def _child(code, *args):
    env = dict(os.environ, MUJOCO_GL='egl')
    return subprocess.run([sys.executable, '-c', code, *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_every_twin_module_refuses_to_load_without_mujoco():
    proc = _child(CHILD)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    for name in ('world', 'scenes', 'perturb', 'batch', 'actuation', 'mjx_sweep'):
        assert out[name] == 'the MuJoCo twin needs the "mujoco" package', (name, out[name])
    # Not installed here: None, as the paired evaluation expects, not a sampler that breaks.
    assert out['sampler'] == 'None' and out['perturbed'] == 'None', out


def test_realm_ros_without_mujoco_is_one_line_naming_the_install(tmp_path):
    code = BLOCK + 'from realm_ros import cli; sys.exit(cli.main(sys.argv[1:]))'
    proc = _child(code, 'perturbations', '--task', 'stack_cubes', '--out', str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert 'Traceback' not in proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert lines == ['realm-ros perturbations: error: the MuJoCo twin needs the "mujoco" '
                     'package; install pip install -c constraints.txt mujoco (make setup)'], lines
