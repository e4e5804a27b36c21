"""Predict a policy's real mean progression from its twin episodes alone (docs/evaluation.md).

Agreement figures (Pearson r, MMRV) say how well the twin ranks policies; a lab deciding
whether a *new* policy needs real episodes at all wants a number with an interval. Here a
calibration map twin -> real is fitted on the policies that have episodes in both worlds and
applied to a policy's twin mean, with a prediction interval:

* **The map** is a line through the per-policy means, real = a + b * twin (ordinary least
  squares), when the fit has at least :data:`LINEAR_MIN` policies; with fewer, a shift, real =
  twin + c (one parameter, so that two or three policies still leave a residual degree of
  freedom). ``model=`` forces either.
* **The interval** is the textbook prediction interval of a new observation::

      half = q * sqrt(s2 * (1 + 1/n + (x0 - mean(x))^2 / Sxx))      (line)
      half = q * sqrt(s2 * (1 + 1/n))                                (shift)

  ``s2``, the residual variance about the map, carries everything that moves a policy off
  it: the twin's structural error for that policy *and* the sampling error of its real and
  twin means (so the held-out policy's own twin sampling error is in it too); ``1/n`` and
  the leverage term are the map's own uncertainty. ``q`` is Student t's quantile on the
  fit's residual degrees of freedom (n - 2 for the line, n - 1 for the shift). A policy with
  fewer twin episodes than the fitted ones had adds the excess of its twin sampling variance
  over theirs, ``b^2 (se2(x0) - mean se2(x))``, under the root.
* **Few policies, conservative**: with 1 to 3 degrees of freedom ``s2`` is a rough
  estimate, and three policies that happen to fall on a line would give a zero-width
  interval. So the half-width is at least the normal quantile times the sampling spread
  alone, ``s2`` replaced by the mean sampling variance of the fitted policies' means
  (``se2(real) + b^2 se2(twin)``: estimated from every episode, hence the normal quantile).
  A sampling variance is computed with one 0 and one 1 added to the episodes (the plus-two
  rule for outcomes in [0, 1]), so a policy that scored 0 in every episode is not taken as
  known exactly. By simulation (:func:`simulated_coverage`) the 90 % intervals hold the
  observed real mean in 90-97 % of leave-one-out predictions over ladders of 4 to 10
  policies with 10-40 episodes each (docs/evaluation.md): conservative, and wide (0.6-0.7)
  for a ladder of 4 to 6 policies with 10 episodes, which is the honest answer there.
* Progression lies in [0, 1]: the prediction and the interval are clipped to it.

What is predicted is the policy's real mean progression *as measured* with about as many
episodes as the fitted policies had (their real sampling error is in ``s2``), not the
policy's true mean. The map assumes the new policy relates to the twin as the fitted policies
do: a policy whose success depends on something the fitted ones ignore (the picture, where
they act on their joints) is outside the map, and a leave-one-policy-out check
(:func:`report`) is how a ladder shows whether that happens.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from realm_ros.core.errors import DataError

#: The prediction interval's default level.
LEVEL = 0.90
#: Policies a fit needs for the line (fewer: the shift); the line then keeps 2 residual
#: degrees of freedom.
LINEAR_MIN = 4
#: The maps :func:`predict` knows (``auto``: the line from :data:`LINEAR_MIN` policies on).
MODELS = ('auto', 'linear', 'shift')


@dataclasses.dataclass(frozen=True, slots=True)
class Prediction:
    """One policy's predicted real mean progression from its twin episodes.

    ``real`` is the observed real mean (None for a policy run in the twin only);
    ``fitted_on`` the policies the map was fitted on (never this one).
    """

    policy: str
    twin: float
    predicted: float
    low: float
    high: float
    level: float
    model: str
    dof: int
    fitted_on: tuple[str, ...]
    real: float | None = None

    @property
    def width(self) -> float:
        """The interval's width (progression units)."""
        return self.high - self.low

    @property
    def covered(self) -> bool | None:
        """Whether the observed real mean lies in the interval (None: no real episodes)."""
        return None if self.real is None else bool(self.low <= self.real <= self.high)

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (with ``width`` and ``covered``)."""
        out = dataclasses.asdict(self)
        out['fitted_on'] = list(self.fitted_on)
        out['width'] = self.width
        out['covered'] = self.covered
        return out


def _episodes(values: ArrayLike, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size == 0:
        raise DataError(f'{name}: no episodes')
    if not np.all(np.isfinite(v)):
        raise DataError(f'{name} contains NaN or inf')
    return v


def mean_and_variance(episodes: ArrayLike, name: str = 'episodes') -> tuple[float, float]:
    """Return the mean of episode scores in [0, 1] and the sampling variance of that mean.

    The variance is the plus-two rule's: the sample variance of the episodes with one 0 and
    one 1 added, over ``m + 2`` (never 0, even for one episode or identical ones).
    """
    v = _episodes(episodes, name)
    padded = np.concatenate([v, [0.0, 1.0]])
    return float(v.mean()), float(padded.var(ddof=1) / padded.size)


def predict(fit_twin: Sequence[ArrayLike], fit_real: Sequence[ArrayLike], twin: ArrayLike,
            level: float = LEVEL, model: str = 'auto') -> tuple[float, float, float, str, int]:
    """Predict a policy's real mean progression from its twin episodes.

    Args:
        fit_twin, fit_real: per fitted policy, its twin and its real episode scores (in [0, 1]).
        twin: the new policy's twin episode scores.
        level: the prediction interval's level, in (0, 1).
        model: ``linear``, ``shift`` or ``auto`` (the module's docstring).

    Returns:
        ``(predicted, low, high, model, dof)``, clipped to [0, 1].

    Raises:
        DataError: fewer than 2 fitted policies (3 for ``linear``), a policy without episodes,
            NaN, a level outside (0, 1) or an unknown model.
    """
    if not 0.0 < level < 1.0:
        raise DataError(f'level must be in (0, 1), got {level}')
    if model not in MODELS:
        raise DataError(f'model must be one of {list(MODELS)}, got {model!r}')
    if len(fit_twin) != len(fit_real):
        raise DataError(f'fit_twin and fit_real must pair up: {len(fit_twin)} vs '
                        f'{len(fit_real)} policies')
    n = len(fit_twin)
    if n < 2:
        raise DataError(f'a calibration map needs at least 2 policies with both worlds, got {n}')
    xs = [mean_and_variance(t, 'twin') for t in fit_twin]
    ys = [mean_and_variance(r, 'real') for r in fit_real]
    x, vx = np.array([m for m, _ in xs]), np.array([v for _, v in xs])
    y, vy = np.array([m for m, _ in ys]), np.array([v for _, v in ys])
    x0, vx0 = mean_and_variance(twin, 'twin')
    sxx = float(np.sum((x - x.mean()) ** 2))
    if model == 'auto':
        model = 'linear' if n >= LINEAR_MIN else 'shift'
    if model == 'linear' and n < 3:
        raise DataError(f'the linear map needs at least 3 policies, got {n}')
    if model == 'linear' and sxx < 1e-12:
        model = 'shift'  # every fitted policy has the same twin mean: no slope to fit
    if model == 'linear':
        b = float(np.sum((x - x.mean()) * (y - y.mean())) / sxx)
        centre = float(y.mean() - b * x.mean()) + b * x0
        dof = n - 2
        residual = y - y.mean() - b * (x - x.mean())
        spread = 1.0 + 1.0 / n + (x0 - x.mean()) ** 2 / sxx
        floor = float(np.mean(vy + b * b * vx))
    else:
        b = 1.0  # real = twin + c
        centre = x0 + float(np.mean(y - x))
        dof = n - 1
        residual = y - x - float(np.mean(y - x))
        spread = 1.0 + 1.0 / n
        floor = float(np.mean(vy + vx))
    from scipy.stats import norm
    from scipy.stats import t as student_t

    # The residual variance is estimated on `dof` degrees of freedom (Student t); the floor
    # from every fitted episode (many: the normal quantile). The wider of the two.
    # s2 holds a twin sampling variance like the fitted policies'; a policy with fewer twin
    # episodes than they had adds the excess of its own.
    excess = b * b * max(0.0, vx0 - float(np.mean(vx)))
    s2 = float(np.sum(residual ** 2) / dof)
    q = 0.5 + level / 2.0
    half = max(float(student_t.ppf(q, dof)) * math.sqrt(s2 * spread + excess),
               float(norm.ppf(q)) * math.sqrt(floor * spread + excess))
    clip = lambda v: float(min(1.0, max(0.0, v)))  # noqa: E731
    return clip(centre), clip(centre - half), clip(centre + half), model, dof


def report(scores: Mapping[str, tuple[ArrayLike, ArrayLike | None]], level: float = LEVEL,
           model: str = 'auto') -> dict[str, Any]:
    """Return leave-one-policy-out and twin-only predictions for a paired evaluation.

    ``scores``: per policy label (in the table's order), its twin episode scores and its real
    ones (None or empty: the policy was run in the twin only). Each policy with real episodes
    is predicted from a map fitted on the *other* policies with real episodes, and compared
    with its observed real mean (``leave_one_out``, ``coverage``: how many intervals hold the
    observed mean, and their mean width); each twin-only policy from a map fitted on all of
    them (``twin_only``). A prediction that cannot be made (too few policies to fit) is left
    out and ``note`` says why.
    """
    def has_real(real: ArrayLike | None) -> bool:
        return real is not None and np.asarray(real).size > 0

    both: dict[str, tuple[ArrayLike, ArrayLike]] = {
        p: (t, r) for p, (t, r) in scores.items() if r is not None and has_real(r)}
    only = [p for p, (_, r) in scores.items() if not has_real(r)]
    out: dict[str, Any] = {'level': level, 'model': model, 'leave_one_out': [],
                           'twin_only': [], 'note': ''}

    def one(policy: str, fit: Sequence[str], real: float | None) -> Prediction | None:
        try:
            centre, low, high, used, dof = predict(
                [both[p][0] for p in fit], [both[p][1] for p in fit], scores[policy][0],
                level, model)
        except DataError as err:
            out['note'] = str(err)
            return None
        twin_mean, _ = mean_and_variance(scores[policy][0], 'twin')
        return Prediction(policy=policy, twin=twin_mean, predicted=centre, low=low, high=high,
                          level=level, model=used, dof=dof, fitted_on=tuple(fit), real=real)

    loo = []
    for policy in both:
        real_mean, _ = mean_and_variance(both[policy][1], 'real')
        found = one(policy, [p for p in both if p != policy], real_mean)
        if found is not None:
            loo.append(found)
    measured = {p: mean_and_variance(both[p][1], 'real')[0] for p in both}
    for policy in only:
        found = one(policy, list(both), None)
        if found is not None:
            out['twin_only'].append({**found.as_dict(), **placement(found, measured)})
    out['leave_one_out'] = [p.as_dict() for p in loo]
    out['coverage'] = coverage(loo)
    return out


def placement(found: Prediction, measured: Mapping[str, float]) -> dict[str, Any]:
    """Where a twin-only policy's interval puts it among the policies measured on the real
    side: ``above`` / ``below`` (their observed real means lie wholly below / above the
    interval), ``overlaps`` (inside it), and ``action``: what a lab does with the prediction.

    A policy whose interval clears every measured one it is compared with is placed by the
    twin alone; where the interval holds a measured policy's mean, only real episodes can
    order the two (and a wide interval says the map is too loose to place it at all).
    """
    above = [p for p, m in measured.items() if m < found.low]
    below = [p for p, m in measured.items() if m > found.high]
    overlaps = [p for p in measured if p not in above and p not in below]
    if not overlaps:
        where = '; '.join(f'{side} {", ".join(names)}' for side, names in
                          (('above', above), ('below', below)) if names)
        level = round(100 * found.level)
        action = (f'the twin places it {where} (its {level} % interval clears their real '
                  'means): no real episodes needed to rank it among them')
    else:
        action = ('run it on the real arm to order it against ' + ', '.join(overlaps)
                  + ' (their real means lie inside its interval)')
    return {'above': above, 'below': below, 'overlaps': overlaps, 'action': action}


def coverage_interval(covered: int, policies: int, confidence: float = 0.95
                      ) -> tuple[float, float] | None:
    """Clopper-Pearson (exact binomial) interval of a coverage rate ``covered / policies``
    (None without any policy): 5 of 5 is [0.55, 1.00] at 95 %, not a rate of 1."""
    if policies <= 0:
        return None
    from scipy.stats import beta

    alpha = 1.0 - confidence
    low = 0.0 if covered == 0 else float(beta.ppf(alpha / 2, covered, policies - covered + 1))
    high = 1.0 if covered == policies else float(
        beta.ppf(1 - alpha / 2, covered + 1, policies - covered))
    return low, high


def coverage(predictions: Sequence[Prediction]) -> dict[str, Any]:
    """How many leave-one-out intervals hold the observed real mean (with the rate's exact
    binomial 95 % interval, ``coverage_ci95``), and their mean width (None without any)."""
    checked = [p for p in predictions if p.covered is not None]
    covered = sum(1 for p in checked if p.covered)
    ci = coverage_interval(covered, len(checked))
    return {'covered': covered, 'policies': len(checked),
            'coverage': covered / len(checked) if checked else None,
            'coverage_ci95': list(ci) if ci else None,  # a list: as JSON gives it back
            'mean_width': float(np.mean([p.width for p in checked])) if checked else None}


def format_lines(section: Mapping[str, Any], indent: str = '  ') -> list[str]:
    """Plain-text lines of a :func:`report` (for the commands' tables)."""
    level = round(100 * float(section['level']))
    lines = []
    cov = section.get('coverage') or {}
    if cov.get('policies'):
        ci = cov.get('coverage_ci95')
        rate = f' (coverage 95 % CI [{ci[0]:.2f}, {ci[1]:.2f}])' if ci else ''
        lines.append(f'{indent}leave-one-policy-out: {cov["covered"]} of {cov["policies"]} '
                     f'{level} % intervals hold the observed mean{rate}, mean width '
                     f'{cov["mean_width"]:.2f}')
    elif section.get('note'):
        lines.append(f'{indent}leave-one-policy-out: none ({section["note"]})')
    for p in section.get('leave_one_out', ()):
        lines.append(f'{indent}  {p["policy"]:<16} twin {p["twin"]:.3f} -> real '
                     f'{p["predicted"]:.3f} [{p["low"]:.2f}, {p["high"]:.2f}] ({p["model"]}, '
                     f'{p["dof"]} dof); observed {p["real"]:.3f}'
                     + ('' if p['covered'] else '  OUTSIDE'))
    for p in section.get('twin_only', ()):
        lines.append(f'{indent}twin only: {p["policy"]:<16} twin {p["twin"]:.3f} -> real '
                     f'{p["predicted"]:.3f} [{p["low"]:.2f}, {p["high"]:.2f}] ({level} % '
                     f'prediction interval; map ({p["model"]}) fitted on '
                     f'{", ".join(p["fitted_on"])})')
        if p.get('action'):
            lines.append(f'{indent}  -> {p["action"]}')
    return lines


def synthetic_ladder(rng: np.random.Generator, policies: int, episodes: int, spread: float,
                     outlier: int | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A ladder to check the intervals on, as :func:`report` takes it: true twin means
    uniform in [0.05, 0.95], true real means ``0.1 + 0.8 twin + N(0, spread)`` (clipped to
    [0.02, 0.98]), ``episodes`` episodes per policy and world of a four-stage task (stages
    reached ~ binomial(4, mean), progression = stages / 4). ``outlier``: that policy gets
    twin 0.9 and real 0 (outside the map, as a policy the twin over-predicts)."""
    twin = rng.uniform(0.05, 0.95, policies)
    real = np.clip(0.1 + 0.8 * twin + rng.normal(0.0, spread, policies), 0.02, 0.98)
    if outlier is not None:
        twin[outlier], real[outlier] = 0.9, 0.0
    return {f'p{i}': (rng.binomial(4, twin[i], episodes) / 4.0,
                      rng.binomial(4, real[i], episodes) / 4.0) for i in range(policies)}


def simulated_coverage(policies: int, episodes: int, spread: float, ladders: int = 200,
                       level: float = LEVEL, seed: int = 0) -> dict[str, float]:
    """The leave-one-policy-out intervals' coverage and mean width over ``ladders``
    :func:`synthetic_ladder` draws (docs/evaluation.md quotes it)."""
    rng = np.random.default_rng(seed)
    covered: list[bool] = []
    widths: list[float] = []
    for _ in range(ladders):
        for p in report(synthetic_ladder(rng, policies, episodes, spread), level)[
                'leave_one_out']:
            covered.append(bool(p['covered']))
            widths.append(float(p['width']))
    return {'coverage': float(np.mean(covered)), 'mean_width': float(np.mean(widths)),
            'predictions': len(covered)}
