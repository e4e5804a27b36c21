"""What made a record: the settings that change an episode, and the rule for re-running.

Every episode record carries ``made_by``: the settings that made it (the policy's spec, the
parameter files *by content*, max steps, control settings, the realm_ros version, ...), as a
flat ``{setting: value}`` map built by the command that runs it. A file setting is
:func:`file_setting`'s ``{'file': path, 'sha256': digest}`` and compares by content alone, so
the same file moved compares equal and an edited file in place does not.

A re-run into the same folder is reconciled with :func:`reconcile`: a record whose settings
differ from what this run would use for the same episode is *changed*. Changed records are
refused with one line naming the setting (:class:`~realm_ros.core.errors.ConfigError`, exit 2),
or, when the caller asks (``--rerun-changed``), forgotten so that their episodes run again
into the same folder (the file is append-only: the old lines stay, and a later run with the
old settings finds them again). A run-level settings file (a dataset's, the vision demo's) is
checked by :func:`check_run_file`, the same comparison on one map.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pathlib
from typing import Any, Callable, Iterable, Mapping, Sequence

from realm_ros.core.errors import ConfigError

#: The record field holding the settings that made it.
MADE_BY = 'made_by'
#: The flag that runs changed episodes into the same folder instead of refusing.
RERUN_FLAG = '--rerun-changed'


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The realm_ros version that made a record (``realm_ros <version>``, as installed)."""
    from importlib import metadata
    try:
        return f'realm_ros {metadata.version("realm_ros")}'
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return 'realm_ros (not installed)'


def file_setting(path: str | pathlib.Path | None) -> dict[str, str] | str:
    """A file setting: ``''`` when unset, else its path and its content's SHA-256.

    Raises:
        ConfigError: the file cannot be read.
    """
    if not path:
        return ''
    file = pathlib.Path(path).expanduser()
    try:
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError as err:
        raise ConfigError(f'{path}: cannot read it: {err.strerror}') from None
    return {'file': str(file), 'sha256': digest}


def dir_setting(path: str | pathlib.Path | None) -> dict[str, str] | str:
    """A folder setting (a ``cameras match`` folder): ``''`` when unset, else its path and one
    SHA-256 over every file's relative name and content."""
    if not path:
        return ''
    folder = pathlib.Path(path).expanduser()
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob('*') if p.is_file()):
        digest.update(str(file.relative_to(folder)).encode() + b'\0')
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return {'file': str(folder), 'sha256': digest.hexdigest()}


def config_settings(config: Any) -> dict[str, Any]:
    """A config dataclass (a ``WorldConfig``) as settings: every field, a ``*_file`` field by
    its file's content (:func:`file_setting`) and a ``*_dir`` field by its folder's
    (:func:`dir_setting`), so an edited appearance, rig or dynamics file changes them."""
    out: dict[str, Any] = {}
    for item in dataclasses.fields(config):
        value = getattr(config, item.name)
        if item.name.endswith('_file'):
            value = file_setting(value)
        elif item.name.endswith('_dir'):
            value = dir_setting(value)
        out[item.name] = value
    return out


def digest(settings: Mapping[str, Any] | None) -> str:
    """One SHA-256 of a ``made_by`` map (files by content): what a derived record (an
    episode's score) names its episode by."""
    text = json.dumps({k: _comparable(v) for k, v in (settings or {}).items()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def policy_setting(name: str, args: Mapping[str, Any]) -> str:
    """A policy entry's spec as a setting: ``name:key=value,...`` (keys sorted), so two
    spellings of one policy compare equal and a changed argument does not."""
    if not args:
        return name
    return name + ':' + ','.join(f'{k}={args[k]}' for k in sorted(args))


def _comparable(value: Any) -> Any:
    """What a setting is compared by: a file by its content, anything else as JSON."""
    if isinstance(value, Mapping) and 'sha256' in value:
        return value['sha256']
    return json.loads(json.dumps(value))  # tuples and lists alike


def describe(value: Any) -> str:
    """A setting's value in a message: a file as its path and digest, '' as none."""
    if value is None:
        return 'not recorded'
    if value == '':
        return 'none'
    if isinstance(value, Mapping) and 'sha256' in value:
        return f'{value["file"]} (sha256 {value["sha256"][:12]})'
    return repr(value)


def difference(was: Mapping[str, Any] | None, now: Mapping[str, Any]
               ) -> tuple[str, Any, Any] | None:
    """The first setting (in ``now``'s order) that differs, as (setting, was, now); None if
    the same. A record without ``made_by`` differs in every setting."""
    before = was or {}
    for key in (*now, *(k for k in before if k not in now)):
        if _comparable(before.get(key)) != _comparable(now.get(key)):
            return key, before.get(key), now.get(key)
    return None


#: Settings every command names alike in its messages (a command's ``flags`` add to these).
FLAGS = {'policy': '--policies (this label)', 'code': 'realm_ros version'}


def flag_name(setting: str, flags: Mapping[str, str]) -> str:
    """The flag that sets ``setting`` (``flags`` and :data:`FLAGS` map the exceptions; else
    ``--max-steps`` for ``max_steps``)."""
    return {**FLAGS, **flags}.get(setting, '--' + setting.replace('_', '-'))


@dataclasses.dataclass(frozen=True)
class Changed:
    """An episode whose records were made with other settings than this run's."""

    key: Any  # (pair_id, world)
    setting: str
    was: Any
    now: Any


def reconcile(log: Any, expected: Callable[[Mapping[str, Any]], Mapping[str, Any] | None],
              rerun_changed: bool, where: str, flags: Mapping[str, str] | None = None
              ) -> list[Changed]:
    """Keep the records of ``log`` made with this run's settings; refuse or forget the others.

    Args:
        log: the :class:`~realm_ros.core.evaluation.EpisodeLog` of the folder.
        expected: ``record -> made_by`` this run gives the record's episode; None for an
            episode outside this run's plan (its records are left alone).
        rerun_changed: forget changed episodes (they run again) instead of refusing.
        where: the folder, for the message.
        flags: setting -> flag name, where not ``--<setting>``.

    Returns:
        The changed episodes (empty when every record matches).

    Raises:
        ConfigError: a changed episode without ``rerun_changed``: one line naming the setting.
    """
    changed, stale = sort_out(log.records, log.key, expected)
    if changed and not rerun_changed:
        refuse(changed, where, flags)
    if stale:
        log.forget(lambda r: id(r) in stale)
    return changed


def sort_out(records: Iterable[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Any],
             expected: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
             ) -> tuple[list[Changed], set[int]]:
    """Return the changed episodes among ``records`` (grouped by ``key``) and the ``id`` of
    every record that does not count for this run: made with other settings than
    ``expected`` gives its episode, where that episode has no record that matches."""
    by_key: dict[Any, list[Mapping[str, Any]]] = {}
    for record in records:
        by_key.setdefault(key(record), []).append(record)
    changed: list[Changed] = []
    stale: set[int] = set()
    for group_key, group in by_key.items():
        now = expected(group[-1])
        if now is None:
            continue
        diffs = [difference(r.get(MADE_BY), now) for r in group]
        stale.update(id(r) for r, d in zip(group, diffs) if d is not None)
        if all(d is not None for d in diffs):
            setting, was, new = diffs[-1]  # type: ignore[misc]  # the latest record says
            changed.append(Changed(group_key, setting, was, new))
    return changed, stale


def refuse(changed: Sequence[Changed], where: str, flags: Mapping[str, str] | None = None,
           unit: str = 'episode') -> None:
    """Raise the one-line :class:`ConfigError` for ``changed`` (naming the first setting)."""
    first = changed[0]
    example = ' '.join(str(part) for part in reversed(first.key)) \
        if isinstance(first.key, tuple) else str(first.key)
    flag = flag_name(first.setting, flags or {})
    what = (f'has records that do not say their {flag} (made before records named their '
            f'settings), this run uses {describe(first.now)}' if first.was is None else
            f'was run with {flag} {describe(first.was)}, not {describe(first.now)}')
    raise ConfigError(
        f'{where} {what} ({len(changed)} {unit}(s), e.g. {example}); use the same settings '
        f'to resume, {RERUN_FLAG} to run the changed {unit}s into this folder, or a new --out')


def rerun_line(changed: Sequence[Changed], flags: Mapping[str, str] | None = None) -> str:
    """The line a run prints when it runs changed episodes again (``--rerun-changed``)."""
    counts: dict[str, int] = {}
    for c in changed:
        counts[flag_name(c.setting, flags or {})] = counts.get(
            flag_name(c.setting, flags or {}), 0) + 1
    what = ', '.join(f'{n} by {flag}' for flag, n in counts.items())
    return (f'{RERUN_FLAG}: running {len(changed)} changed episode(s) again into the same '
            f'folder ({what}); their old records stay in episodes.jsonl, unused')


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The settings ``records`` were run with (``summary.json``'s ``made_by``): per setting
    its value, or the list of values when the records differ (policies, worlds)."""
    values: dict[str, list[Any]] = {}
    for record in records:
        for key, value in (record.get(MADE_BY) or {}).items():
            seen = values.setdefault(key, [])
            if all(_comparable(v) != _comparable(value) for v in seen):
                seen.append(value)
    return {k: v[0] if len(v) == 1 else v for k, v in values.items()}


def check_run_file(path: pathlib.Path, settings: Mapping[str, Any], where: str,
                   flags: Mapping[str, str] | None = None,
                   defaults: Mapping[str, Any] | None = None, grows: Sequence[str] = ()) -> None:
    """Refuse to resume a folder whose run-settings file says other settings (the caller
    writes this run's once its folder is open).

    Args:
        path: the settings file (JSON) of the folder (``run.json``, ``meta/realm_run.json``).
        settings: this run's.
        where: the folder, for the message.
        flags: setting -> flag name, where not ``--<setting>``.
        defaults: what a setting was when a file written before it existed lacks it (a key
            absent with no default is not compared: the file predates that setting).
        grows: settings that may change between runs (e.g. an episode count that grows).

    Raises:
        ConfigError: one line naming the first setting that differs.
    """
    if path.is_file():
        before = {**(defaults or {}), **json.loads(path.read_text())}
        for key, value in settings.items():
            if key in grows or key not in before:
                continue
            if _comparable(before[key]) != _comparable(value):
                raise ConfigError(
                    f'{where} was run with {flag_name(key, flags or {})} '
                    f'{describe(before[key])}, not {describe(value)}; use the same settings '
                    'to resume, or a new --out')


__all__ = ['FLAGS', 'MADE_BY', 'RERUN_FLAG', 'Changed', 'check_run_file', 'code_version',
           'config_settings', 'describe', 'difference', 'digest', 'dir_setting', 'file_setting',
           'flag_name', 'policy_setting', 'reconcile', 'refuse', 'rerun_line', 'sort_out',
           'summarize']
