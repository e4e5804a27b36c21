"""Node logs of an in-process command: to files, with warnings and errors on the console.

``realm-ros paired-eval`` and ``sysid record`` run a whole graph in one process; every node's
``[INFO]`` line ("policy reset for task ...") used to land between redraws of the progress bar.
As ``ros2 launch`` users expect, node logs now go to ROS's log files, here in the run's folder
(``OUT/logs/``, unless ``ROS_LOG_DIR`` is set), and the console keeps one bar per phase, the
warnings and errors, and the tables:

    rclpy.init(args=logs.init_args(out, verbose))   # before the first rclpy.init
    runner.add(logs.ConsoleEcho(context))            # WARN and above, above the bar

:func:`init_args` turns rcutils' console output off (``--disable-stdout-logs``) and points
``ROS_LOG_DIR`` at the run folder; the file log (rcl_logging_spdlog) and ``/rosout`` are
untouched, so ``ros2 topic echo /rosout`` and the log files see every line. :class:`ConsoleEcho`
subscribes to ``/rosout`` and prints WARN, ERROR and FATAL lines through
:mod:`realm_ros.console`: every error, and the first of each kind of warning (a kind: the node
and the text with its numbers blanked, so 40 "command rejected ... moves 0.18 rad" lines are
one); when the node is destroyed it says how many of each kind it held back, and where the log
is. With ``verbose`` nothing changes: every node line on the console.
"""

from __future__ import annotations

import os
import pathlib
import re

from rcl_interfaces.msg import Log
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from realm_ros import console

# /rosout's publisher QoS (rcl's default for it): late joiners get what was logged before.
ROSOUT_QOS = QoSProfile(depth=1000, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                        reliability=ReliabilityPolicy.RELIABLE)
LEVELS = {Log.WARN: 'warning', Log.ERROR: 'error', Log.FATAL: 'fatal'}


def init_args(out: str | pathlib.Path | None, verbose: bool = False) -> list[str]:
    """``rclpy.init`` arguments for a command's process (call before the first init).

    Not verbose: node lines off the console, log files under ``out/logs`` (unless
    ``ROS_LOG_DIR`` is set; ``out`` None: ROS's default, ``~/.ros/log``). Returns the
    ``--ros-args`` list.
    """
    if verbose:
        return []
    if out is not None and 'ROS_LOG_DIR' not in os.environ:
        path = pathlib.Path(out).expanduser().resolve() / 'logs'
        path.mkdir(parents=True, exist_ok=True)
        os.environ['ROS_LOG_DIR'] = str(path)
    return ['--ros-args', '--disable-stdout-logs']


def log_dir() -> str:
    """Where this process's node log file is (``ROS_LOG_DIR``, else ROS's default)."""
    if 'ROS_LOG_DIR' in os.environ:
        return os.environ['ROS_LOG_DIR']
    home = os.environ.get('ROS_HOME', os.path.join(os.path.expanduser('~'), '.ros'))
    return os.path.join(home, 'log')


class ConsoleEcho(Node):
    """Print every node's WARN/ERROR/FATAL ``/rosout`` line on the console, above the bar.

    Only in a process whose console output is off (:func:`init_args` not verbose): with it on,
    rcutils already prints them. Lines of this node itself are not echoed.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__('console', use_global_arguments=False, **kwargs)
        self.lines: list[str] = []   # what was printed, for tests
        self.held: dict[tuple[str, str], int] = {}  # kind -> warnings not printed
        self.create_subscription(Log, '/rosout', self._on_log, ROSOUT_QOS)

    def _on_log(self, msg: Log) -> None:
        level = LEVELS.get(int.from_bytes(msg.level, 'little') if isinstance(msg.level, bytes)
                           else int(msg.level))
        if level is None or msg.name == self.get_name():
            return
        text = f'[{msg.name}] {msg.msg}'
        if level == 'warning':
            kind = (msg.name, re.sub(r'\d+(\.\d+)?', '#', msg.msg))
            if kind in self.held:
                self.held[kind] += 1
                return
            self.held[kind] = 0
            console.warn(text)
        else:
            console.error(text)
        self.lines.append(f'{level}: {text}')

    def summary(self) -> list[str]:
        """One line per kind of warning that repeated: how many more, and where they are."""
        return [f'[{name}] {count} more like "{kind[:60]}..." (node logs: {log_dir()})'
                for (name, kind), count in self.held.items() if count]

    def destroy_node(self) -> None:
        for text in self.summary():
            console.warn(text)
        self.held.clear()
        super().destroy_node()


__all__ = ['ConsoleEcho', 'init_args', 'log_dir']
