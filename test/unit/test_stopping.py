"""Ctrl-C lands even where a library swallows it (realm_ros.commands.stopping, issue 37): a
KeyboardInterrupt inside a C extension's import comes out as ``ImportError: initialization
failed``, which ``except ImportError: mujoco = None`` swallows; the interrupt is raised again
until the command's cleanup or the CLI takes it. (Whole runs: test/e2e/test_interrupts.py.)"""

import os
import signal
import threading
import time

import pytest

from realm_ros.commands import stopping


@pytest.fixture
def ctrl_c():
    previous = stopping.CtrlC.install()
    hook = threading.excepthook
    yield stopping.CtrlC
    stopping.CtrlC.landed()
    threading.excepthook = hook  # cleanup(interrupted=True) keeps threads off the console
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _swallow_then_work(seconds):
    """A Ctrl-C that turns into an ImportError and is swallowed, then work going on."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)
    except KeyboardInterrupt:
        pass  # what `except ImportError: mujoco = None` does to it, in effect
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.01)


def test_a_swallowed_ctrl_c_is_raised_again_until_it_lands(ctrl_c):
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        _swallow_then_work(5.0)
    assert time.monotonic() - start < 1.0 and ctrl_c.came
    # Once the cleanup takes it, it is not raised again (a cut cleanup loses a bag's index).
    with stopping.cleanup(interrupted=True):
        time.sleep(3 * stopping.AGAIN_S)


def test_a_command_that_cleans_up_itself_gets_the_one_interrupt(ctrl_c):
    ctrl_c.repeat = False  # a command without interrupted(args): its own except cleans up
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)
    time.sleep(3 * stopping.AGAIN_S)  # no second one
