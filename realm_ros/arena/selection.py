"""Which pair a judge sees next: the pair of policies whose order is least certain first.

For every world (role) the judgments so far are fitted by Bradley-Terry with ties as half wins
and one virtual tie between *every* two policies (so the fit exists from the first judgment
on, before any pair has met), with the sandwich covariance of
:func:`realm_ros.core.preferences.fit_preferences`. A pair (i, j) is as uncertain as
``|theta_i - theta_j| / se(theta_i - theta_j)`` is small; among the judge's unanswered slots the
pair with the smallest ratio comes first (fewest judgments on that pair next, then at random),
and within that pair the matchup judged least often. Left and right are drawn at random.
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


def choose(slots: Sequence[tuple[MatchupKey, str, str]], role_of: Mapping[MatchupKey, str],
           judgments: Sequence[Mapping[str, Any]], judge: str, rng: random.Random
           ) -> tuple[MatchupKey, str, str] | None:
    """Return the next slot ``(matchup, left policy, right policy)`` for ``judge``, or None."""
    answered = {(j['matchup'], *sorted((j['a_policy'], j['b_policy'])))
                for j in judgments if j['judge'] == judge}
    open_slots = [s for s in slots if (key_text(s[0]), s[1], s[2]) not in answered]
    if not open_slots:
        return None
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

    def rank(slot: tuple[MatchupKey, str, str]) -> tuple[float, int, int, float]:
        role = role_of[slot[0]]
        pair = (slot[1], slot[2])
        return (round(ratios[role].get(pair, 0.0), 6), per_pair.get((role, *pair), 0),
                per_slot.get((key_text(slot[0]), *pair), 0), jitter[slot])

    key, a, b = min(open_slots, key=rank)
    return (key, a, b) if rng.random() < 0.5 else (key, b, a)
