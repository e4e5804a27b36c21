"""One registry for every domain that looks things up by name: tasks, skills, perturbations,
world backends, fit strategies, agreement metrics, policies, scorers.

A :class:`Registry` is a ``dict`` (name -> the registered thing, or the ``'module:attribute'``
target of one imported on first use), so reading it is reading a dict; what it adds is the two
acts every domain wrote for itself::

    TASKS: Registry[TaskDef] = Registry('task')
    TASKS.add('pick_spoon', task)    # another thing under a taken name: an error (or replaced)
    TASKS.lookup('pick_spon')        # ConfigError: unknown task 'pick_spon'; choose one of [...]

Each domain keeps its own ``register``/``get`` functions (their checks, their names); they read
and write through these.
"""

from __future__ import annotations

from typing import Mapping, TypeVar

from realm_ros.core.errors import ConfigError, RealmError

T = TypeVar('T')


class Registry(dict[str, T]):
    """Things of one kind by name.

    Args:
        kind: what a thing is, as the errors name it ('task', 'world backend').
        entries: the first entries (name -> thing).
        lead: the words before the known names in the unknown-name error.
        ordered: list the known names in registration order (else sorted).
        replace: a second thing under a taken name replaces the first (else it is
            ``duplicate``; a ``'module:attribute'`` target is always replaced by the thing).
        duplicate: the error a taken name raises.
    """

    def __init__(self, kind: str, entries: Mapping[str, T] | None = None, *,
                 lead: str = 'choose one of', ordered: bool = False, replace: bool = False,
                 duplicate: type[RealmError] = ConfigError) -> None:
        super().__init__(entries or {})
        self.kind = kind
        self.lead = lead
        self.ordered = ordered
        self.replace = replace
        self.duplicate = duplicate

    def add(self, name: str, thing: T) -> T:
        """Register ``thing`` as ``name`` and return it.

        Raises:
            RealmError: (``duplicate``) another thing has the name, unless ``replace``.
        """
        known = super().get(name)
        if (not self.replace and known is not None and known is not thing
                and not isinstance(known, str)):
            raise self.duplicate(f'{self.kind} {name!r} is already registered')
        self[name] = thing
        return thing

    def lookup(self, name: str) -> T:
        """Return the thing registered as ``name``.

        Raises:
            ConfigError: no such name; the one line lists the known names.
        """
        try:
            return self[name]
        except KeyError:
            raise ConfigError(f'unknown {self.kind} {name!r}; {self.lead} {self.names()}'
                              ) from None

    def names(self) -> list[str]:
        """The registered names (sorted, or in registration order where ``ordered``)."""
        return list(self) if self.ordered else sorted(self)


__all__ = ['Registry']
