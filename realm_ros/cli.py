"""The ``realm-ros`` command: one entry point, one subcommand per job.

Subcommands register themselves in :data:`COMMANDS` as ``name -> (module, help)``; each module
has ``add_arguments(parser)`` and ``run(args) -> int``, imported only when chosen so that
``realm-ros metrics`` never loads MuJoCo or rclpy.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from typing import NoReturn

from realm_ros.commands.stopping import CtrlC
from realm_ros.core.errors import RealmError

COMMANDS: dict[str, tuple[str, str]] = {
    'doctor': ('realm_ros.commands.doctor', 'check this install: rclpy, DDS, MuJoCo, rendering'),
    'paired-eval': ('realm_ros.commands.paired_eval', 'run paired episodes in the real world and '
                    'the twin; write episodes.jsonl, summary.json, report.html'),
    'demo': ('realm_ros.commands.demo', 'the embedded default end to end: evaluate, identify the '
             'twin, evaluate again, compare'),
    'metrics': ('realm_ros.commands.metrics', 'agreement metrics (Pearson r, MMRV, gap) for a CSV '
                'of policy, real, sim [, group]'),
    'perturbations': ('realm_ros.commands.perturbations', 'one image per REALM perturbation of '
                      'a task and a contact sheet'),
    'serve': ('realm_ros.commands.serve', 'serve a policy to openpi websocket clients'),
    'urdf': ('realm_ros.commands.urdf', 'generate urdf/panda_droid.urdf(.xacro) from core + twin'),
    'gap': ('realm_ros.commands.gap', 'joint tracking gap between the twin and the digital real'),
    'franka-config': ('realm_ros.commands.franka_config', 'print the franka_ros2 controller YAML'),
    'sysid': ('realm_ros.commands.sysid', 'record excitation bags and fit friction/armature'),
    'episode': ('realm_ros.commands.episode', 'run one episode in the twin and print its score'),
    'ladder': ('realm_ros.commands.ladder', 'success rates of the scripted policy ladder'),
    'sweep': ('realm_ros.commands.sweep', 'a perturbation x seed grid of whole episodes of a '
              'task, on CPU or batched on the GPU (MJX)'),
    'docs-params': ('realm_ros.commands.docs_params', 'write docs/parameters.md from the config '
                    'schemas (--check: is it current?)'),
    'usd': ('realm_ros.commands.usd', 'export a task scene to USD authored for PhysX/Isaac Sim'),
    'dataset': ('realm_ros.commands.dataset', 'demonstrations of the scripted expert in the twin '
                'with cameras, written as a LeRobot v3.0 (or v2.1) dataset'),
    'train': ('realm_ros.commands.train', 'train the learned visuomotor policy (images + '
              'instruction + joints -> action chunks) on a LeRobot dataset'),
    'cameras': ('realm_ros.commands.cameras', 'contact sheet of every camera of the twin, per '
                'task (check a camera rig)'),
    'bag': ('realm_ros.commands.bag', 'check and repair rosbag2/MCAP bags cut short by a crash'),
    'score': ('realm_ros.commands.score', "episodes' progress from their videos, by a VLM behind "
              "an OpenAI-compatible endpoint or realm_ros's learned scorer (beside the rubric, "
              'never mixed); train / eval the learned scorer'),
    'arena': ('realm_ros.commands.arena', 'blind A/B judging of episode videos in a browser '
              '(serve) and the Bradley-Terry ranking of the answers (rank)'),
}


class OneLineParser(argparse.ArgumentParser):
    """A parser whose refusal is one line naming the flag (argparse's message), exit 2, as for a
    :class:`RealmError`; the usage is one ``--help`` away. Its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (PROG --help: the options)`` and exit 2."""
        self.exit(2, f'{self.prog}: error: {message} ({self.prog} --help: the options)\n')


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand's arguments."""
    parser = OneLineParser(
        prog='realm-ros', description='Paired real and simulated evaluation on a Franka Panda.')
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    for name, (module_name, text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        child = sub.add_parser(name, help=text, description=text)
        module.add_arguments(child)
        child.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``realm-ros``; a :class:`RealmError` prints one clear line and exits 2."""
    import threading

    own = threading.current_thread() is threading.main_thread()
    previous = CtrlC.install() if own else {}
    try:
        return _main(argv)
    finally:
        if own:
            CtrlC.landed()
        if own and argv is not None:  # called in process (a test): as it was
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        elif own:
            # The run is done: a Ctrl-C now must not kill the exit (Python's finalisation
            # puts SIGINT back to SIG_DFL, which would end the process as killed by it).
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while the commands load: nothing has run yet
        CtrlC.landed()
        print('\ninterrupted: before the command started; re-run the same command',
              file=sys.stderr, flush=True)
        return 130
    CtrlC.repeat = hasattr(args._module, 'interrupted')
    if CtrlC.came and not CtrlC.repeat:
        CtrlC.landed()
    try:
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        return _interrupted(args, argv)
    except Exception as err:  # noqa: BLE001 - sorted by _failed; a bug is re-raised there
        if CtrlC.came:  # the interrupt surfaced as another error: it is still Ctrl-C
            return _interrupted(args, argv)
        return _failed(args, err)


def _failed(args: argparse.Namespace, err: Exception) -> int:
    """``err`` as one line and exit 2 where it is a known kind; a bug is raised again."""
    if isinstance(err, ImportError):  # BackendUnavailable included: name what to install
        from realm_ros.console import missing_package
        line = missing_package(f'realm-ros {args.command}: error', err)
        if line is None:
            raise err
        print(line, file=sys.stderr)
        return 2
    if isinstance(err, RealmError):
        print(f'realm-ros {args.command}: error: {err}', file=sys.stderr)
        return 2
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        # A path the user gave that cannot be read or written (--json in a folder that is a
        # file, an --out on a read-only disk): the path and why, as for any bad flag.
        print(f'realm-ros {args.command}: error: {err.filename}: {err.strerror}',
              file=sys.stderr)
        return 2
    raise err  # a bug: its traceback


def _interrupted(args: argparse.Namespace, argv: list[str] | None) -> int:
    """Ctrl-C: the command has cleaned up on the way here; one line, no traceback. A command
    that can resume says how (its ``interrupted(args)``)."""
    CtrlC.landed()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    say = getattr(args._module, 'interrupted', None)
    print('\n' + say(args) if say else f'realm-ros {args.command}: interrupted',
          file=sys.stderr, flush=True)
    if argv is None and say is not None:
        # Such a command has cleaned up (its files closed): a thread it could not stop (a
        # node callback still waiting, a worker's pipe) must not hold the exit or abort it in
        # the interpreter's teardown.
        from realm_ros.console import exit_now
        exit_now(130)
    return 130


if __name__ == '__main__':
    sys.exit(main())
