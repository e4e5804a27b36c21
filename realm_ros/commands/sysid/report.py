"""What ``realm-ros sysid fit`` writes: PARAMS.yaml, the report folder, the console table."""

from __future__ import annotations

import argparse
import json
import pathlib
from typing import Any, Sequence

import numpy as np
import yaml

from realm_ros.core import sysid
from realm_ros.core.config import DynamicsParams, sim_params_latency


def write_params(out: pathlib.Path, params: DynamicsParams, latency_s: float, source: str,
                 bags: list[pathlib.Path], args: argparse.Namespace,
                 intervals: Sequence[float] | None = None) -> None:
    """Write the identified parameters (``DynamicsParams.from_yaml`` and ``sim_params_file``).

    ``intervals`` (a least-squares fit's :attr:`sysid.FitResult.intervals`): written as the
    metadata key ``confidence_95`` (relative half-widths per joint; the twin ignores it).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f'# Identified by realm-ros sysid fit ({args.method}, seed {args.seed}, latency '
              f'{source}) from {len(bags)} bags (held-out bags excluded).\n'
              '# friction: dry joint friction, N m (MuJoCo frictionloss); armature: kg m^2. '
              'Joint order panda_joint1..7.\n'
              '# latency_s: actuation delay, s, as MujocoWorld replays it (a target acts '
              'round(latency_s * physics_hz) - 1 physics steps late).\n')
    body = {'friction': [round(v, 6) for v in params.friction],
            'armature': [round(v, 6) for v in params.armature],
            'latency_s': round(float(latency_s), 6)}
    if intervals is not None:
        header += ('# confidence_95: 95 % half-widths relative to each value (0.01 = +- 1 %), '
                   'from the least-squares Jacobian; they assume independent residuals (so are '
                   'optimistic) and collapse to ~0 on noise-free data.\n')
        body['confidence_95'] = {
            'friction': [float(f'{v:.3g}') for v in intervals[:7]],
            'armature': [float(f'{v:.3g}') for v in intervals[7:]]}
    out.write_text(header + yaml.safe_dump(body, default_flow_style=None, sort_keys=False))
    DynamicsParams.from_yaml(out)  # what we wrote must load
    sim_params_latency(out)


def write_report(report: pathlib.Path, result: sysid.FitResult, rmse: dict, sets: dict,
                 sims: dict, fit_s: float, truth: DynamicsParams | None, latency_s: float = 0.0,
                 searches: list | None = None,
                 residual: sysid.ResidualAnalysis | None = None) -> None:
    """Write loss per generation (CSV + PNG), RMSE (JSON) and trajectory overlays (PNG); with
    ``residual`` (the held-out residual's analysis) its figures in ``rmse.json``'s
    ``residual`` and ``residual.png`` (:func:`plot_residual`)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    report.mkdir(parents=True, exist_ok=True)
    hist = np.array(result.history)
    header = 'generation,evaluations,best_loss,median_loss,estimate_loss,elapsed_s'
    np.savetxt(report / 'loss.csv', hist, delimiter=',', header=header, comments='',
               fmt=['%d', '%d', '%.9g', '%.9g', '%.9g', '%.3f'])
    fig, ax = plt.subplots(figsize=(6, 4))
    if result.intervals is not None:  # least squares: one loss per iteration, fixed windows
        ax.semilogy(hist[:, 0], hist[:, 4], 'o-', label='estimate (fixed residual windows)')
        ax.set_xlabel('LM iteration')
    else:
        ax.semilogy(hist[:, 0], hist[:, 2], label='best candidate (minibatch)')
        ax.semilogy(hist[:, 0], hist[:, 3], label='median candidate (minibatch)', alpha=0.5)
        ax.semilogy(hist[:, 0], hist[:, 4], label='current estimate (minibatch)')
        ax.set_xlabel('generation')
    ax.set_ylabel('loss per window step, rad$^2$')
    ax.legend()
    fig.tight_layout()
    fig.savefig(report / 'loss.png', dpi=100)
    plt.close(fig)
    summary: dict[str, Any] = {
        'rmse_rad': rmse, 'fit_seconds': fit_s, 'stop_reason': result.stop_reason,
        'timing_s': result.timing, 'params': {'friction': list(result.params.friction),
                                              'armature': list(result.params.armature),
                                              'latency_s': latency_s},
        'latency_searches': [{'candidates_s': s.candidates_s, 'loss_per_step_rad2': s.losses,
                              'best_s': s.latency_s, 'seconds': s.seconds}
                             for s in searches or []]}
    if result.intervals is not None:
        summary['confidence_95_relative'] = {'friction': list(result.intervals[:7]),
                                             'armature': list(result.intervals[7:])}
    if truth is not None:
        summary['relative_error'] = relative_errors(result.params, truth)
    if residual is not None:
        summary['residual'] = residual.as_dict()
        label = 'holdout' if 'holdout' in sets else 'train'
        plot_residual(report / 'residual.png', residual, sets[label], sims[label], label)
    (report / 'rmse.json').write_text(json.dumps(summary, indent=2))
    for label, group in sets.items():
        traj, sim = group[0], sims[label][0]
        fig, axes = plt.subplots(7, 2, figsize=(12, 12), sharex=True)
        t = np.arange(1, traj.steps + 1) * traj.dt
        for j in range(7):
            ax, err = axes[j]
            ax.plot(t, traj.measured[:, j], 'k', lw=1.5, label='real (recorded)')
            ax.plot(t, sim[0][:, j], 'r--', lw=1, label='twin, defaults')
            ax.plot(t, sim[1][:, j], 'b:', lw=1.5, label='twin, identified')
            ax.set_ylabel(f'q{j + 1}, rad')
            # The differences are milliradians: they only show as errors, not as overlays.
            err.plot(t, 1e3 * (sim[0][:, j] - traj.measured[:, j]), 'r', lw=1,
                     label='twin defaults - real')
            err.plot(t, 1e3 * (sim[1][:, j] - traj.measured[:, j]), 'b', lw=1,
                     label='twin identified - real')
            err.set_ylabel('error, mrad')
        axes[0, 0].legend(loc='upper right', fontsize=7)
        axes[0, 1].legend(loc='upper right', fontsize=7)
        axes[0, 0].set_title(f'{label}: {traj.name}')
        axes[-1, 0].set_xlabel('time, s')
        axes[-1, 1].set_xlabel('time, s')
        fig.tight_layout()
        fig.savefig(report / f'overlay_{label}.png', dpi=80)
        plt.close(fig)


def plot_residual(path: pathlib.Path, a: sysid.ResidualAnalysis, trajs: list,
                  sim: list, label: str, names: tuple[str, str] = ('defaults', 'identified')
                  ) -> None:
    """Write the residual figure ``path`` (``sysid fit``'s ``residual.png``, ``gap --plot``):
    per joint, the RMSE of twin ``names[0]`` and ``names[1]`` with 95 % intervals and the
    noise floor; the residual of ``names[1]`` against velocity and acceleration; its
    autocorrelation with the white-noise band."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    res = 1e3 * np.concatenate([s[1] - t.measured for s, t in zip(sim, trajs)])
    vel = np.concatenate([t.measured_dq for t in trajs])
    acc = np.concatenate([np.gradient(t.measured_dq, t.dt, axis=0) for t in trajs])
    fig = plt.figure(figsize=(14, 13))
    grid = fig.add_gridspec(8, 3, height_ratios=[1.6] + [1] * 7)
    top = fig.add_subplot(grid[0, :])
    x = np.arange(7)
    for k, (when, colour) in enumerate((('before', 'tab:red'), ('after', 'tab:blue'))):
        value = 1e3 * np.array(getattr(a, f'rmse_{when}'))
        ci = 1e3 * np.array(getattr(a, f'rmse_{when}_ci'))
        top.bar(x + (k - 0.5) * 0.38, value, 0.38, color=colour, alpha=0.7,
                yerr=[value - ci[:, 0], ci[:, 1] - value], capsize=3,
                label=f'twin {names[k]}')
    top.step(np.r_[x - 0.5, 6.5], 1e3 * np.r_[a.noise_floor, a.noise_floor[-1]], where='post',
             color='k', ls='--', label='noise floor')
    top.set_yscale('log')
    top.set_xticks(x, [f'q{j + 1}' for j in x])
    top.set_ylabel(f'{label} RMSE, mrad')
    top.set_title(f'{label} residual (twin - real), RMSE with 95 % block-bootstrap intervals',
                  fontsize=9)
    top.legend(fontsize=8, loc='upper left', ncol=3)
    top.set_ylim(top=top.get_ylim()[1] * 4)  # room for the legend above the bars
    fig.text(0.01, 0.005, '\n'.join(f'- {f}' for f in a.findings), fontsize=7.5, va='bottom')
    lags = np.arange(1, len(a.autocorrelation[0]) + 1)
    band = 1.96 / np.sqrt(a.steps)
    for j in range(7):
        ax_v, ax_a, ax_c = (fig.add_subplot(grid[j + 1, c]) for c in range(3))
        ax_v.scatter(vel[:, j], res[:, j], s=2, alpha=0.4)
        ax_v.set_ylabel(f'q{j + 1}, mrad')
        ax_v.text(0.02, 0.8, f'r(sign v) {a.corr_velocity_sign[j]:+.2f}',
                  transform=ax_v.transAxes, fontsize=7)
        ax_a.scatter(acc[:, j], res[:, j], s=2, alpha=0.4, color='tab:green')
        ax_a.text(0.02, 0.8, f'r(a) {a.corr_acceleration[j]:+.2f}', transform=ax_a.transAxes,
                  fontsize=7)
        ax_c.bar(lags, a.autocorrelation[j], color='tab:purple')
        ax_c.axhspan(-band, band, color='0.85')
        ax_c.set_ylim(-1, 1)
        ax_c.text(0.5, 0.8, f'Ljung-Box {a.ljung_box[j]:.0f} (white < {a.ljung_box_95:.1f})',
                  transform=ax_c.transAxes, fontsize=7)
    fig.axes[-3].set_xlabel('joint velocity, rad/s')
    fig.axes[-2].set_xlabel('joint acceleration, rad/s$^2$')
    fig.axes[-1].set_xlabel('lag, control steps')
    fig.tight_layout(rect=(0, 0.012 * (len(a.findings) + 1), 1, 1))
    fig.savefig(path, dpi=80)
    plt.close(fig)


def print_residual(a: sysid.ResidualAnalysis, label: str) -> None:
    """Print the residual's per-joint figures and what lies outside the twin's model."""
    print(f'{label} residual after the fit (what it could not fit):')
    rows = (('RMSE 95 % CI, mrad', [f'{1e3 * lo:.2f}-{1e3 * hi:.2f}'
                                    for lo, hi in a.rmse_after_ci]),
            ('noise floor, mrad', [f'{1e3 * v:.3f}' for v in a.noise_floor]),
            ('r(res, sign v)', [f'{v:+.2f}' for v in a.corr_velocity_sign]),
            ('r(res, accel)', [f'{v:+.2f}' for v in a.corr_acceleration]),
            ('bias / RMSE', [f'{v:+.2f}' for v in a.bias]),
            ('lag-1 autocorr.', [f'{v[0]:+.2f}' for v in a.autocorrelation]))
    for name, values in rows:
        print(f'{name:<22}' + ' '.join(f'{v:>11}' for v in values))
    for line in a.findings:
        print(f'  - {line}')


def relative_errors(params: DynamicsParams,
                    truth: DynamicsParams) -> dict[str, list[float | None]]:
    """Return |identified - true| / true per joint for friction and armature; None where the
    true value is 0 (a structural arm's dry friction is all in its sigmoid: no ratio)."""
    return {name: [abs(p - t) / t if t > 1e-9 else None
                   for p, t in zip(getattr(params, name), getattr(truth, name))]
            for name in ('friction', 'armature')}


def print_table(rmse: dict, result: sysid.FitResult, fit_s: float,
                truth: DynamicsParams | None) -> None:
    """Print per-joint RMSE before/after (mrad) and, with a truth file, recovery errors."""
    unit = 'LM iterations' if result.intervals is not None else 'generations'
    print(f'fit: {fit_s:.1f} s, {len(result.history)} {unit}, stop: {result.stop_reason}')
    print('timing, s: ' + ', '.join(f'{k} {v:.2f}' for k, v in result.timing.items()))
    cols = ' '.join(f'{f"q{j + 1}":>7}' for j in range(7))
    print(f'{"joint RMSE, mrad":<22}{cols} {"mean":>7}')
    for label, values in rmse.items():
        for when in ('before', 'after'):
            row = np.array(values[when]) * 1e3
            print(f'{label + " " + when:<22}' + ' '.join(f'{v:7.3f}' for v in row)
                  + f' {row.mean():7.3f}')
        ratio = np.mean(values['before']) / max(np.mean(values['after']), 1e-12)
        print(f'{label + " improvement":<22}{ratio:7.1f}x')
    p = result.params
    print(f'{"friction, N m":<22}' + ' '.join(f'{v:7.4f}' for v in p.friction))
    print(f'{"armature, kg m^2":<22}' + ' '.join(f'{v:7.4f}' for v in p.armature))
    if result.intervals is not None:
        ci = 100 * np.asarray(result.intervals)
        print(f'{"friction 95 % CI, +-%":<22}' + ' '.join(f'{v:7.2f}' for v in ci[:7]))
        print(f'{"armature 95 % CI, +-%":<22}' + ' '.join(f'{v:7.2f}' for v in ci[7:]))
    if truth is not None:
        errors = relative_errors(p, truth)
        for name in ('friction', 'armature'):
            print(f'{name + " error, %":<22}'
                  + ' '.join(f'{100 * v:7.1f}' if v is not None else f'{"n/a":>7}'
                             for v in errors[name]))
