"""What a realm_ros command shows in a terminal: one bar per phase, warnings, errors, tables.

A small API for every long command (``dataset``, ``paired-eval``, ``sysid record``, ``demo``,
``sweep``); it needs no ROS::

    from realm_ros import console
    with console.phase('pairs', total=48, unit='pair') as bar:   # one bar for the phase
        ...
        bar.update(1)
    console.line('reusing 24 real episodes')   # one line, printed above any bar
    console.warn('skipped open_drawer / V-LIGHT: ...')   # 'warning: ...' on stderr
    console.error('...')                                  # 'error: ...' on stderr
    console.result(table)                      # the final table, the files written
    console.set_quiet(True)                    # --quiet: the bar and the results, no lines

``--quiet``, in every command that takes it (``realm_ros.commands.add_quiet_flag``), means one
thing: the bar and the results (the final table and the files written) stay, every other line
goes; warnings and errors always show.

Lines go through ``tqdm.write``, so a bar that is drawing is moved below the line instead of
being broken by it. Bars draw on stderr; ``line`` writes stdout (tables and summaries).

A missing backend or lab package is one line naming what to install
(:func:`missing_package`), for every executable (``ros/runner.spin_node`` and ``realm-ros``).

Node logs are not the console's business: :mod:`realm_ros.ros.logs` sends them to log files
and brings only warnings and errors here (``--verbose``: every node line, as ``ros2 launch``
prints them).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

_state = {'quiet': False}


def set_quiet(quiet: bool) -> None:
    """``--quiet``: no :func:`line` output from now on (the bars, :func:`result`, warnings and
    errors stay)."""
    _state['quiet'] = bool(quiet)


def quiet() -> bool:
    """Whether :func:`set_quiet` turned output off."""
    return _state['quiet']


def _write(text: str, stream: Any) -> None:
    try:
        from tqdm import tqdm
    except ImportError:
        print(text, file=stream, flush=True)
        return
    tqdm.write(text, file=stream)
    stream.flush()


def line(text: str) -> None:
    """Print one line (or a block) on stdout, above any drawing bar; nothing when quiet."""
    if not _state['quiet']:
        _write(text, sys.stdout)


def result(text: str) -> None:
    """Print a result on stdout (the final table, a file written), above any bar; also when
    quiet."""
    _write(text, sys.stdout)


def warn(text: str) -> None:
    """Print ``warning: text`` on stderr, above any drawing bar (also when quiet)."""
    _write(f'warning: {text}', sys.stderr)


def error(text: str) -> None:
    """Print ``error: text`` on stderr, above any drawing bar (also when quiet)."""
    _write(f'error: {text}', sys.stderr)


def capture_warnings() -> None:
    """Show Python ``warnings`` (an rclpy RuntimeWarning) as one ``warning:`` line, above bars."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        del file, line
        warn(f'{category.__name__}: {message} ({os.path.basename(filename)}:{lineno})')

    warnings.showwarning = show


def bar(total: int, desc: str, unit: str = 'it', initial: int = 0, leave: bool = True) -> Any:
    """A progress bar for one phase on stderr (also when quiet); close it when done."""
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=leave,
                dynamic_ncols=True, file=sys.stderr)


@contextlib.contextmanager
def phase(desc: str, total: int, unit: str = 'it', initial: int = 0) -> Iterator[Any]:
    """``with phase('pairs', 48, 'pair') as b: ... b.update(1)``: the bar closes on exit."""
    b = bar(total, desc, unit, initial)
    try:
        yield b
    finally:
        b.close()


#: Top-level module -> how a lab installs it ({distro}: $ROS_DISTRO). Lab ROS packages are not
#: on PyPI: they come from the ROS apt repository or the lab's workspace.
INSTALL = {
    'franka_msgs': 'ros-{distro}-franka-msgs (apt; or build franka_ros2 in the lab workspace)',
    'franka_hardware': 'ros-{distro}-franka-hardware (apt; or build franka_ros2)',
    'control_msgs': 'ros-{distro}-control-msgs (apt)',
    'controller_manager_msgs': 'ros-{distro}-controller-manager-msgs (apt)',
    'rclpy': 'ROS 2 (source /opt/ros/{distro}/setup.bash, or pip install realm_ros[ros])',
    'isaacsim': "Isaac Sim 6.x (NVIDIA's isaacsim pip package, Python 3.12, an RTX GPU; "
                'realm-ros doctor checks it)',
    'omni': "Isaac Sim 6.x (NVIDIA's isaacsim pip package, Python 3.12, an RTX GPU)",
    'ovphysx': 'pip install -c constraints.txt ovphysx (make setup tries it)',
    'mujoco': 'pip install -c constraints.txt mujoco (make setup)',
    'jax': 'pip install realm_ros[mjx]',
    'torch': 'pip install torch',
    'cv2': 'pip install opencv-python-headless',
    'imageio_ffmpeg': 'pip install imageio-ffmpeg',
    'rosbags': 'pip install rosbags',
    'websockets': 'pip install websockets',
    'openpi_client': 'pip install openpi-client',
}


def _missing_module(err: BaseException) -> str | None:
    """The module whose import failed, following the error's causes; None if none did."""
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, ImportError) and getattr(err, 'name', None):
            return str(err.name)
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
        seen += 1
    return None


def install_hint(module: str) -> str:
    """How to install top-level ``module`` (``ros-kilted-franka-msgs (apt; ...)``)."""
    top = module.split('.')[0]
    distro = os.environ.get('ROS_DISTRO') or '${ROS_DISTRO}'
    hint = INSTALL.get(top)
    if hint is None:
        return f'the package that provides {top!r}'
    return hint.format(distro=distro)


def missing_package(prog: str, err: BaseException) -> str | None:
    """One line for a backend or package that cannot load, naming what to install.

    ``None`` when ``err`` is realm_ros's own import failing (a bug: let it raise).
    """
    module = _missing_module(err)
    if module is not None and module.split('.')[0] == 'realm_ros':
        return None
    reason = ' '.join(str(err).split())
    if module is None:  # a backend that says why itself (not built here, no GPU, ...)
        return f'{prog}: {reason}'
    what = reason.split(': No module named')[0]
    for aside in (' (install', ' (pip install'):  # the backend's own hint: ours replaces it
        what = what.split(aside)[0]
    if what.startswith('No module named') or not what:
        what = f'{module!r} is not installed'
    return f'{prog}: {what}; install {install_hint(module)}'



def exit_now(code: int) -> None:
    """End the process with ``code`` now, after flushing the logs and the console: skip the
    interpreter's finalisation (threads left waiting, DDS participants' destructors). Only for
    a process's last act, once every file it writes is closed."""
    import logging
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


__all__ = ['INSTALL', 'bar', 'capture_warnings', 'error', 'exit_now', 'install_hint', 'line',
           'missing_package', 'phase', 'quiet', 'result', 'set_quiet', 'warn']
