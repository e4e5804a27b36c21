"""The committed figures of a round of issue 42 decided by ``bench/scorer_cameras.py``'s
``bar_rule`` (a held-out-family set and a fresh-looks set, candidates against a bar), and the
checks each such round's rule test makes on them: each condition decides as written, of
several passing the one shipped is the rule's, the targets are the measured ones, and what
ships is the verdict's.

A round's test builds one :class:`BarRound` and calls these checks, then adds what is its own
(its rows, its columns, what ships)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
import hashlib
import json
import pathlib
from typing import Any, Callable

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')


@dataclass
class BarRound:
    """One round: its rule, the names it decides between, its margins and its committed files.

    ``sep`` follows a candidate's name in its column (``'name (sha...)'``, or round 11's
    ``'name monotone(1) (...)'`` read by ``'name('``)."""

    rule: Callable[[dict, dict], dict]
    files: tuple[str, str, str]
    bar: str
    candidates: tuple[str, ...]
    ships_as: dict[str, str]
    nothing: str
    margin: float
    looks_stage_margin: float
    sep: str = ' ('
    ladder: dict = field(init=False)
    looks: dict = field(init=False)
    verdict: dict = field(init=False)

    def __post_init__(self) -> None:
        self.ladder, self.looks, self.verdict = (json.loads((REPO / p).read_text())
                                                 for p in self.files)

    @classmethod
    def of(cls, n: int, margin: str = 'MARGIN', sep: str = ' (',
           looks_stage_margin: float | None = None) -> BarRound:
        """Round ``n``'s constants (``ROUND{n}_*``) and ``round{n}_rule``."""
        def const(name: str) -> Any:
            return getattr(bench, f'ROUND{n}_{name}')
        m = const(margin)
        return cls(rule=getattr(bench, f'round{n}_rule'), files=const('FILES'), bar=const('BAR'),
                   candidates=tuple(const('CANDIDATES')), ships_as=const('SHIPS_AS'),
                   nothing=const('NOTHING_SHIPS'), margin=m,
                   looks_stage_margin=m if looks_stage_margin is None else looks_stage_margin,
                   sep=sep)

    def column(self, figures: dict, name: str) -> dict:
        """The figures (the measurement's own dict) of reading ``name`` in a set's first row."""
        return bench.checkpoint_figures(figures[next(iter(figures))], f'{name}{self.sep}')

    def bar_figures(self) -> tuple[float, float, float, float]:
        """The bar's r and stage accuracy on the held-out family, then on the looks."""
        ladder = bench.checkpoint_figures(self.ladder[next(iter(self.ladder))], f'{self.bar} (')
        looks = bench.checkpoint_figures(self.looks[next(iter(self.looks))], f'{self.bar} (')
        return (ladder['pearson_r'], ladder['stage_accuracy'], looks['pearson_r'],
                looks['stage_accuracy'])

    def with_figures(self, name: str, r: float, stage: float, looks_r: float,
                     looks_stage: float, ladder: dict | None = None, looks: dict | None = None
                     ) -> tuple[dict, dict]:
        """The measurements (copies of the committed ones unless given) with candidate
        ``name``'s r and stage accuracy on the held-out family and on the looks set."""
        ladder = copy.deepcopy(self.ladder) if ladder is None else ladder
        looks = copy.deepcopy(self.looks) if looks is None else looks
        mine = self.column(ladder, name)
        mine['pearson_r'], mine['stage_accuracy'] = r, stage
        theirs = self.column(looks, name)
        theirs['pearson_r'], theirs['stage_accuracy'] = looks_r, looks_stage
        return ladder, looks

    def set_targets(self, figures: dict, name: str, met: bool) -> None:
        """Candidate ``name``'s three targets in ``figures``' first row all ``met`` or not."""
        column = self.column(figures, name)
        column['targets'] = {key: met for key in column['targets']}

    def recomputed(self) -> dict:
        """The rule's verdict on the committed figures, as the committed JSON stores it."""
        return json.loads(json.dumps(self.rule(self.ladder, self.looks), default=float))


def check_committed_verdict(rnd: BarRound, rows: list[str], readings: set[str],
                            episodes: tuple[int, int] = (192, 144)) -> None:
    """The committed verdict is the rule's on the committed figures, deciding its one
    candidate on ``rows`` (the held-out family's, the looks'); each set's columns are exactly
    ``readings`` (each measured checkpoint with the decoder it carries: the bar and the
    candidate among them), each over that set's ``episodes``."""
    verdict = rnd.recomputed()
    assert verdict == rnd.verdict
    (name,) = rnd.candidates
    assert set(verdict['candidates']) == {name} and verdict['candidates'][name] is not None
    assert verdict['rows'] == rows
    assert {rnd.bar, name} <= readings
    for table, row, n in ((rnd.ladder, rows[0], episodes[0]), (rnd.looks, rows[1], episodes[1])):
        assert {c.split(' (')[0] for c in table[row]} == readings
        assert {c['episodes'] for c in table[row].values()} == {n}


def check_each_condition_decides(rnd: BarRound) -> None:
    """The first candidate just inside every margin passes and ships (the others failing);
    moved just outside any one condition, nothing passes and nothing ships."""
    r, stage, looks_r, looks_stage = rnd.bar_figures()
    name, *others = rnd.candidates
    ladder, looks = copy.deepcopy(rnd.ladder), copy.deepcopy(rnd.looks)
    for other in others:  # the others fail: only ``name`` decides
        ladder, looks = rnd.with_figures(other, -1.0, 0.0, -1.0, 0.0, ladder, looks)
    inside = rnd.looks_stage_margin - 0.01 if rnd.looks_stage_margin else 0.0
    outside = rnd.looks_stage_margin + 0.01 if rnd.looks_stage_margin else 0.001
    ladder, looks = rnd.with_figures(name, r - (rnd.margin - 0.01), stage + 0.001,
                                     looks_r - (rnd.margin - 0.01), looks_stage - inside,
                                     ladder, looks)
    verdict = rnd.rule(ladder, looks)
    assert verdict['passing'] == [name] and verdict['ships'].startswith(name)
    assert rnd.ships_as[name] in verdict['ships']
    for figures, key, value in (
            (ladder, 'stage_accuracy', stage),  # a tie in held-out stage accuracy fails
            (ladder, 'pearson_r', r - (rnd.margin + 0.01)),  # past the r margin, held out
            (looks, 'pearson_r', looks_r - (rnd.margin + 0.01)),  # past it on the looks
            (looks, 'stage_accuracy', looks_stage - outside)):  # past the looks' stage margin
        column = rnd.column(figures, name)
        kept, column[key] = column[key], value
        verdict = rnd.rule(ladder, looks)
        assert verdict['passing'] == [], key
        assert verdict['ships'] == rnd.nothing
        column[key] = kept
    assert rnd.rule(ladder, looks)['passing'] == [name]


def check_shipping_order(rnd: BarRound) -> None:
    """Of two passing (any others failing): more targets met ships, then the higher held-out
    stage accuracy, then the first."""
    r, stage, looks_r, looks_stage = rnd.bar_figures()
    first, second, *others = rnd.candidates
    ladder, looks = rnd.with_figures(first, r, stage + 0.05, looks_r, looks_stage)
    ladder, looks = rnd.with_figures(second, r, stage + 0.02, looks_r, looks_stage, ladder,
                                     looks)
    for other in others:
        ladder, looks = rnd.with_figures(other, -1.0, 0.0, -1.0, 0.0, ladder, looks)
    for figures in (ladder, looks):
        rnd.set_targets(figures, first, False)
        rnd.set_targets(figures, second, False)
    rnd.set_targets(looks, second, True)  # three targets more: it ships, its lower stage acc.
    verdict = rnd.rule(ladder, looks)
    assert verdict['passing'] == [first, second] and verdict['ships'].startswith(second)
    assert verdict['candidates'][second]['targets_met'] == 3
    rnd.set_targets(looks, first, True)  # as many targets: the higher held-out stage accuracy
    assert rnd.rule(ladder, looks)['ships'].startswith(first)
    rnd.column(ladder, second)['stage_accuracy'] = stage + 0.05  # a full tie: the first
    assert rnd.rule(ladder, looks)['ships'].startswith(first)


def check_targets_are_measured(rnd: BarRound) -> None:
    """The verdict's targets are each column's measured ones, stage accuracy's read off its
    figure, and each candidate's count of targets met is the sum over both sets."""
    verdict = rnd.rule(rnd.ladder, rnd.looks)
    tables = ((verdict['rows'][0], rnd.ladder), (verdict['rows'][1], rnd.looks))
    for row, table in tables:
        for column, figures in table[row].items():
            assert verdict['targets'][row][column] == figures['targets']
            assert figures['targets']['stage_accuracy>=0.8'] == (figures['stage_accuracy']
                                                                 >= 0.8)
    for name, mine in verdict['candidates'].items():
        assert mine['targets_met'] == sum(
            sum(rnd.column({row: table[row]}, name)['targets'].values())
            for row, table in tables)


def digest(path: pathlib.Path) -> str:
    """A file's digest as the measurements' column names carry it (``name (...@digest)``)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:8]


def check_what_ships(rnd: BarRound, bar_checkpoint: pathlib.Path, constant: str,
                     shipped: Callable[[pathlib.Path], None] | None = None) -> None:
    """The bar read is ``bar_checkpoint`` (by digest). If the rule passed its one candidate,
    the file it ships is ``learned.<constant>`` and is the reading measured on both sets (by
    digest; ``shipped`` checks what else the round says of it); otherwise nothing ships: no
    file under the name it would have had and no ``constant``."""
    from realm_ros.scorers import learned
    (name,) = rnd.candidates
    rows = rnd.verdict['rows']
    bar = next(c for c in rnd.ladder[rows[0]] if c.startswith(f'{rnd.bar} ('))
    assert bar.endswith(f'@{digest(bar_checkpoint)})')
    path = learned.DEFAULT_CHECKPOINT.with_name(rnd.ships_as[name])
    if rnd.verdict['passing']:
        assert rnd.verdict['ships'] == f'{name} as realm_ros/data/{rnd.ships_as[name]}'
        assert path == getattr(learned, constant) and path.is_file()
        for table, row in ((rnd.ladder, rows[0]), (rnd.looks, rows[1])):
            column = next(c for c in table[row] if c.startswith(f'{name}{rnd.sep}'))
            assert column.endswith(f'@{digest(path)})')
        if shipped is not None:
            shipped(path)
    else:
        assert rnd.verdict['passing'] == [] and rnd.verdict['ships'] == rnd.nothing
        assert not path.exists()
        assert not hasattr(learned, constant)
