"""System identification of the twin's per-joint friction and armature, and its latency.

ROS-free and simulator-free; a backend supplies the simulator (:class:`BatchEvaluator`). Read
the parts in this order:

1. :mod:`.excitation`: the safe multisine trajectories the arm executes.
2. :mod:`.space`: the 14 searched parameters and their log-scaled unit cube.
3. :mod:`.data`: recorded runs, the short windows cut from them (multiple shooting), the loss.
4. :mod:`.lsq`: the least-squares fit (Levenberg-Marquardt on a fixed residual, confidence
   intervals), ``realm-ros sysid fit``'s default.
5. :mod:`.optimise`: the fit, by least squares, CMA-ES or simulated annealing.
6. :mod:`.latency`: the whole-step latency search and the latency profile of fits, one
   function with a per-method :class:`Fitter`; :mod:`.parallel`: a fit at every latency at
   once.
7. :mod:`.strategies`: the one entry point, :func:`profiled_fit`, over registered
   :class:`FitStrategy` s (``fast``, ``full``, ``parallel``, a backend's ``device``).
8. :mod:`.residual`: what the fit could not fit, the held-out residual's structure.

Everything is re-exported here: ``from realm_ros.core import sysid; sysid.fit(...)``.
"""

from realm_ros.core.sysid.data import BatchEvaluator, Trajectory, joint_rmse, loss, windows
from realm_ros.core.sysid.excitation import (
    ExcitationSpec,
    Workspace,
    check_trajectory,
    end_effector_points,
    excitation_trajectory,
)
from realm_ros.core.sysid.latency import (
    FITTERS,
    Fitter,
    IdentifyResult,
    LatencyEstimate,
    LeastSquaresFitter,
    PopulationFitter,
    ProfileOptions,
    estimate_latency,
    identify,
    latency_candidates,
    score,
    scoring_windows,
)
from realm_ros.core.sysid.lsq import (
    LeastSquaresOptions,
    least_squares_fit,
    residual_windows,
    windows_for_interval,
)
from realm_ros.core.sysid.optimise import (
    METHODS,
    Anneal,
    CmaEs,
    FitOptions,
    FitResult,
    Generation,
    fit,
    on_plateau,
)
from realm_ros.core.sysid.residual import ResidualAnalysis, analyse_residual
from realm_ros.core.sysid.space import ParamSpace
from realm_ros.core.sysid.strategies import STRATEGIES, FitRequest, FitStrategy, profiled_fit
from realm_ros.core.sysid.strategies import get as fit_strategy
from realm_ros.core.sysid.strategies import register as register_strategy

__all__ = [
    'Anneal', 'BatchEvaluator', 'check_trajectory', 'CmaEs', 'end_effector_points',
    'estimate_latency', 'excitation_trajectory', 'ExcitationSpec', 'fit', 'fit_strategy',
    'FitOptions', 'FitRequest', 'FitResult', 'Fitter', 'FitStrategy', 'FITTERS', 'Generation',
    'identify', 'IdentifyResult', 'joint_rmse', 'latency_candidates', 'LatencyEstimate',
    'least_squares_fit', 'LeastSquaresFitter', 'LeastSquaresOptions', 'loss', 'METHODS',
    'on_plateau', 'ParamSpace', 'PopulationFitter', 'profiled_fit', 'ProfileOptions',
    'register_strategy', 'ResidualAnalysis', 'analyse_residual', 'residual_windows', 'score',
    'scoring_windows', 'STRATEGIES',
    'Trajectory', 'windows', 'windows_for_interval', 'Workspace',
]
