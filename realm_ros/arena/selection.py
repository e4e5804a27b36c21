"""Which pair a judge sees next: the pair of policies whose order is least certain first.

For every world (role) the judgments so far are fitted by Bradley-Terry with ties as half wins
and one virtual tie between *every* two policies (so the fit exists from the first judgment
on, before any pair has met), with the sandwich covariance of
:func:`realm_ros.core.preferences.fit_preferences`. A pair (i, j) is as uncertain as
``|theta_i - theta_j| / se(theta_i - theta_j)`` is small; among the judge's unanswered slots the
pair with the smallest ratio comes first (fewest judgments on that pair next, then at random),
and within that pair the matchup judged least often. Left and right are drawn at random.

A pair the judge skipped is offered again once the judge has no unskipped pair left (a pair
skipped :data:`MAX_SKIPS` times is left out); skips are counted apart from answers
(:func:`tally`) and never enter a fit.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from realm_ros.arena.catalog import MatchupKey, key_text
from realm_ros.core.preferences import Comparison, fit_preferences

OUTCOME = {'A': 1.0, 'B': 0.0, 'tie': 0.5}
#: A pair the judge skipped this often is not offered to that judge again.
MAX_SKIPS = 2

Slot = tuple[MatchupKey, str, str]


def _slot_of(judgment: Mapping[str, Any]) -> tuple[str, str, str]:
    return (judgment['matchup'], *sorted((judgment['a_policy'], judgment['b_policy'])))


def _judge_state(judgments: Iterable[Mapping[str, Any]], judge: str
                 ) -> tuple[set[tuple[str, str, str]], dict[tuple[str, str, str], int]]:
    """The judge's answered slots and skip count per slot (judgments that count)."""
    answered: set[tuple[str, str, str]] = set()
    skips: dict[tuple[str, str, str], int] = {}
    for j in judgments:
        if j['judge'] != judge:
            continue
        if j['choice'] in OUTCOME:
            answered.add(_slot_of(j))
        elif j['choice'] == 'skip':
            skips[_slot_of(j)] = skips.get(_slot_of(j), 0) + 1
    return answered, skips


def tally(judgments: Iterable[Mapping[str, Any]], judge: str) -> dict[str, int]:
    """Return the judge's ``answered`` pairs and ``skipped`` pairs (skipped, not yet answered)."""
    answered, skips = _judge_state(judgments, judge)
    return {'answered': len(answered), 'skipped': len(set(skips) - answered)}


def skipped_before(judgments: Iterable[Mapping[str, Any]], judge: str, matchup: str,
                   a_policy: str, b_policy: str) -> bool:
    """Whether ``judge`` skipped this pair before (it is being offered again)."""
    _, skips = _judge_state(judgments, judge)
    return (matchup, *sorted((a_policy, b_policy))) in skips


def uncertainty(policies: Sequence[str], judgments: Iterable[Mapping[str, Any]]
                ) -> dict[tuple[str, str], float]:
    """Return ``{(a, b): |d| / se(d)}`` for every pair of ``policies`` (a < b)."""
    comparisons = [Comparison(a, b, 0.5) for a, b in itertools.combinations(policies, 2)]
    comparisons += [Comparison(j['a_policy'], j['b_policy'], OUTCOME[j['choice']])
                    for j in judgments if j['choice'] in OUTCOME
                    and j['a_policy'] in policies and j['b_policy'] in policies]
    if len(policies) < 2:
        return {}
    fit = fit_preferences(comparisons, ties='half')
    index = {p: k for k, p in enumerate(fit.policies)}
    cov = np.array(fit.covariance)
    scores = fit.scores()
    out = {}
    for a, b in itertools.combinations(sorted(policies), 2):
        i, j = index[a], index[b]
        var = cov[i, i] + cov[j, j] - 2 * cov[i, j]
        out[(a, b)] = abs(scores[a] - scores[b]) / math.sqrt(max(var, 1e-12))
    return out


def choose(slots: Sequence[Slot], role_of: Mapping[MatchupKey, str],
           judgments: Sequence[Mapping[str, Any]], judge: str, rng: random.Random
           ) -> Slot | None:
    """Return the next slot ``(matchup, left policy, right policy)`` for ``judge``, or None.

    Slots the judge skipped come back only when no unskipped slot is left, fewest skips first.
    """
    answered, skips = _judge_state(judgments, judge)

    def ident(slot: Slot) -> tuple[str, str, str]:
        return (key_text(slot[0]), slot[1], slot[2])

    open_slots = [s for s in slots if ident(s) not in answered
                  and skips.get(ident(s), 0) < MAX_SKIPS]
    if not open_slots:
        return None
    fewest = min(skips.get(ident(s), 0) for s in open_slots)
    open_slots = [s for s in open_slots if skips.get(ident(s), 0) == fewest]
    counted = [j for j in judgments if j['choice'] in OUTCOME]
    per_pair: dict[tuple[str, str, str], int] = {}
    per_slot: dict[tuple[str, str, str], int] = {}
    for j in counted:
        a, b = sorted((j['a_policy'], j['b_policy']))
        per_pair[(j['role'], a, b)] = per_pair.get((j['role'], a, b), 0) + 1
        per_slot[(j['matchup'], a, b)] = per_slot.get((j['matchup'], a, b), 0) + 1
    ratios: dict[str, dict[tuple[str, str], float]] = {}
    for role in sorted({role_of[s[0]] for s in open_slots}):
        policies = sorted({p for s in slots if role_of[s[0]] == role for p in s[1:]})
        ratios[role] = uncertainty(policies, [j for j in counted if j['role'] == role])
    jitter = {s: rng.random() for s in open_slots}

    def rank(slot: Slot) -> tuple[float, int, int, float]:
        role = role_of[slot[0]]
        pair = (slot[1], slot[2])
        return (round(ratios[role].get(pair, 0.0), 6), per_pair.get((role, *pair), 0),
                per_slot.get((key_text(slot[0]), *pair), 0), jitter[slot])

    key, a, b = min(open_slots, key=rank)
    return (key, a, b) if rng.random() < 0.5 else (key, b, a)
