"""The one ``main()`` body of a realm_ros node executable, and how it stops.

Humble/Jazzy idiom (STYLE): ``rclpy.init()`` ... ``try/finally`` with ``rclpy.try_shutdown()``.
A bad parameter (:class:`ConfigError`) exits 2 with one line naming the field; so does a
backend or lab package that cannot load (:class:`BackendUnavailable`, or an ``ImportError`` of
anything but realm_ros itself), with one line naming what to install
(:func:`realm_ros.console.missing_package`), and no traceback.

Stopping (``ros2 launch`` sends SIGINT, then SIGTERM 5 s later, then SIGKILL): rclpy's own
signal handler shuts the context down from the signal, while a callback may still be running;
that callback then fails in ``take_message`` or with "publisher's context is invalid", and a
node blocked in a callback never sees the shutdown. So :func:`spin_node` installs rclpy
without signal handlers and handles SIGINT and SIGTERM itself: the first signal asks the spin
loop to stop, the loop notices within :data:`POLL_S` (after the running callback returns), and
the node is closed and destroyed while its context is still valid. A second signal, for a
callback that does not return, raises :class:`KeyboardInterrupt` where it is, so the process
still ends through the same ``finally``; once that cleanup has begun, signals are ignored so
that it completes (a recorder writes its bag's index there). Either way the exit code is 0:
a stop on request is a clean exit for ``ros2 launch`` ("process has finished cleanly"). After
a signal, or exit code 2, the process ends right after that cleanup (:func:`_exit_now`).

:class:`NodeRunner` is the in-process counterpart for a whole graph (``realm-ros paired-eval``,
``realm-ros sysid record``): every node on its own executor thread, as launch would run each in
its own process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any, Callable, Mapping, Sequence

import rclpy
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from realm_ros.console import exit_now, missing_package
from realm_ros.core.errors import ConfigError

#: Seconds the spin loop waits for work before it checks for a stop request.
POLL_S = 0.1


class StopRequest:
    """SIGINT and SIGTERM handlers that ask a spin loop to stop (installed in the main thread).

    Use as a context manager; the previous handlers come back on exit unless a signal came (then
    the process is ending, and a later SIGTERM must not kill it mid-exit). Outside the main thread
    (a test that runs ``main`` in a thread) nothing is installed and only :meth:`set` stops.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name = ''
        self._cleaning_up = False
        self._previous: dict[int, Any] = {}  # signal.getsignal's handlers

    def __enter__(self) -> 'StopRequest':
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.requested:
            return  # stopped by a signal: the process is on its way out, keep ignoring more
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: object) -> None:
        del frame
        if self._cleaning_up:
            return  # closing files and the node: let it finish (SIGKILL is the last resort)
        if self._event.is_set():
            # Second signal: the loop did not get back in time (a callback that blocks).
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        self._event.set()

    def cleaning_up(self) -> None:
        """From now on signals are ignored: the node is being closed (a bag's index written)."""
        self._cleaning_up = True

    def set(self) -> None:
        """Ask the loop to stop (what a signal does)."""
        self._event.set()

    @property
    def requested(self) -> bool:
        """Whether a stop was asked for."""
        return self._event.is_set()


class NodeRunner:
    """Each node on its own single-threaded executor and thread, as if in its own process.

    Nodes call each other's services from inside callbacks (the bridge resets the digital real
    from within world_node's reset service), which would deadlock on one shared
    single-threaded executor; one executor per node reproduces the launch file's process
    boundaries. A node is spinning as soon as it is added, because a later node may wait in
    its constructor for an earlier one's messages (the bridge waits for the arm's state).
    ``context``: the rclpy context of every node and executor (``None``: the default one).
    Use :meth:`shutdown` (or the runner as a context manager) to stop and destroy them.
    """

    #: Attributes of a node that own something to close before the node is destroyed.
    OWNED = ('world', 'policy')

    def __init__(self, context: Any = None) -> None:
        self.context = context
        self.nodes: list[Node] = []
        self._executors: list[Executor] = []
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> 'NodeRunner':
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def start(self, node_class: Callable[..., Node], name: str, namespace: str = '',
              parameters: Mapping[str, Any] | None = None,
              remappings: Sequence[tuple[str, str]] = ()) -> Node:
        """Build a node as ``launch_ros.actions.Node`` would (name, namespace, parameters,
        remappings; no global arguments) and start spinning it; return it."""
        overrides = [Parameter(k, value=v) for k, v in (parameters or {}).items()]
        # As launch_ros does with ``name=``: the given name replaces the class's default.
        remaps = ['-r', f'__node:={name}']
        remaps += [arg for a, b in remappings for arg in ('-r', f'{a}:={b}')]
        node = node_class(context=self.context, namespace=namespace,
                          parameter_overrides=overrides, cli_args=['--ros-args', *remaps],
                          use_global_arguments=False)
        self.add(node)
        return node

    def add(self, node: Node) -> None:
        """Start spinning ``node`` in its own thread."""
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)

        def spin() -> None:
            try:
                executor.spin()
            except ExternalShutdownException:
                pass

        thread = threading.Thread(target=spin, name=node.get_name(), daemon=True)
        thread.start()
        self.nodes.append(node)
        self._executors.append(executor)
        self._threads.append(thread)

    def shutdown(self) -> None:
        """Stop every executor, close worlds and policies, destroy the nodes (last first).

        Last first, each node's thread ended before the next is stopped: a later node
        depends on earlier ones (the evaluator calls the worlds, a world behind the franka
        bridge waits for the digital real's state), so a callback still running in a later
        node finishes against earlier nodes that still answer, instead of waiting out its
        timeout on one already stopped (``executor.shutdown`` does not wait for it).
        """
        for executor, thread in zip(reversed(self._executors), reversed(self._threads)):
            executor.shutdown(timeout_sec=2.0)
            thread.join(timeout=5.0)  # a thread left inside rcl at exit aborts the process
        for node in reversed(self.nodes):
            for owner in self.OWNED:
                close = getattr(getattr(node, owner, None), 'close', None)
                if close is not None:
                    close()
            node.destroy_node()
        self.nodes.clear()
        self._executors.clear()
        self._threads.clear()


def events_executor() -> Executor:
    """Return rclpy's ``EventsExecutor`` where this rclpy has one, else a single-threaded one.

    The events executor dispatches from a C++ event queue instead of rebuilding a wait set of
    every entity in Python on each ``spin_once``: in a lockstep world_node + policy_node episode
    that Python wait-set work was the largest ROS cost per step (docs/performance.md, "Episodes
    and the ROS graph"). It is ``rclpy.experimental`` (rclpy 8+); Humble's rclpy has none.
    ``REALM_ROS_EXECUTOR=single`` forces the single-threaded executor.
    """
    if os.environ.get('REALM_ROS_EXECUTOR', '') != 'single':
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            pass
        else:
            return EventsExecutor()
    return SingleThreadedExecutor()


def init(args: Sequence[str] | None = None) -> None:
    """``rclpy.init`` without rclpy's signal handlers (:class:`StopRequest` handles them)."""
    rclpy.init(args=None if args is None else list(args),
               signal_handler_options=SignalHandlerOptions.NO)


def spin_node(prog: str, factory: Callable[[], Node | Sequence[Node]],
              args: Sequence[str] | None = None,
              close: Callable[[Node], None] | None = None,
              until: Callable[[Node], bool] | None = None,
              executor: Callable[[], Executor] | None = None,
              result: Callable[[Node], int] | None = None, stopped: int = 0) -> int:
    """Build the node with ``factory`` and spin it until stopped; return the exit code.

    Args:
        prog: the executable's name, for error lines.
        factory: builds the node (after ``rclpy.init``); a ConfigError from it exits 2. A
            container returns several nodes: they share the one executor; ``close`` is called
            for each (last first), ``until`` and ``result`` are given the first.
        args: command line (``None``: ``sys.argv``), ``--ros-args`` included.
        close: releases what the node holds (a world, a policy) before it is destroyed.
        until: the node is done (e.g. the evaluation finished): stop spinning.
        executor: makes the executor (default: single-threaded).
        result: the exit code once the loop ended without a signal (default 0).
        stopped: the exit code after SIGINT/SIGTERM (0: a node stopped on request exits
            cleanly; the evaluator returns 130, its evaluation is unfinished).
    """
    init(args)
    node = None
    nodes: list[Node] = []
    spinner = executor() if executor is not None else SingleThreadedExecutor()
    code = 0
    with StopRequest() as stop:
        try:
            built = factory()
            nodes = [built] if isinstance(built, Node) else list(built)
            node = nodes[0]
            for each in nodes:
                spinner.add_node(each)
            while not stop.requested and rclpy.ok():
                if until is not None and until(node):
                    break
                spinner.spin_once(timeout_sec=POLL_S)
            if stop.requested:
                code = stopped
            elif result is not None:
                code = result(node)
        except ConfigError as err:
            print(f'{prog}: invalid parameter: {err}', file=sys.stderr)
            code = 2
        except (InvalidParameterTypeException, InvalidParameterValueException) as err:
            # A parameter declared without realm_ros.ros.params (its message names it).
            print(f'{prog}: invalid parameter: {err}', file=sys.stderr)
            code = 2
        except ImportError as err:  # BackendUnavailable included: a missing SDK or lab package
            line = missing_package(prog, err)
            if line is None:
                raise
            print(line, file=sys.stderr)
            code = 2
        except KeyboardInterrupt:
            code = stopped
        except ExternalShutdownException:  # another thread shut the context down
            pass
        finally:
            stop.cleaning_up()
            try:
                for each in reversed(nodes):
                    if close is not None:
                        close(each)
                    spinner.remove_node(each)
                    each.destroy_node()
            finally:
                spinner.shutdown(timeout_sec=1.0)
                rclpy.try_shutdown()
    if stop.signal_name or code == 2:
        # After a signal, or after bad input's one line: the node is closed, and the
        # interpreter's finalisation only risks the exit code (once, with a lab package's
        # import half done, a CI run's world_node printed its line and died in it, SIGSEGV).
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the process now that the node is closed: skip the interpreter's finalisation.

    Tearing down the interpreter (every module, DDS participants' destructors) took 1-4 s of
    a loaded lab PC in a 13-process launch, past launch's 5 s SIGTERM on a busy machine; by
    then the handlers are gone and SIGTERM kills the process mid-exit (exit code -15). Every
    file the node owns was closed by ``close``/``destroy_node`` above.
    """
    exit_now(code)
