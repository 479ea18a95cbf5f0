"""Revision 5: what a lossy trial's forwarding rate says about the device's capacity.

A pass/fail bit is all revisions 1-4 take from a trial. But a trial at load L that loses
clearly more than a loss spike does lost about ``(L - C_t) * T`` frames: it *measured* that
trial's capacity, ``C_t ~ rx_fps``. A trial with no loss (or spike-sized loss) says only
``C_t >= L`` (a right-censored sample). From both kinds a censored-normal (Tobit) fit of
``ln C_t`` gives the capacity distribution's mean and spread, and the share of small-loss
trials among the censored ones estimates how often a spike fails a goal whose loss ratio
it exceeds. Together they predict P(trial at L is bad) for any L
(:meth:`CapacityModel.bad_probability`) with a standard error from the fit's information,
so a load near the crossing can be judged from every overload trial of the search, not
only from the pass/fail bits at that load.

It holds for a device whose overload loss is roughly the excess over what it forwards;
to keep a device that collapses under heavy overload (forwarding less than its capacity)
from dragging the estimate down, only trials within :data:`WINDOW` of the median measured
capacity enter the fit. It is a guide and an additional decision rule
(:mod:`.capacity_test`), never the only evidence for a reported bound.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

#: A trial whose loss ratio is above this lost more than a loss spike: it measured its
#: capacity (the simulator's spikes lose 1e-4; a real device's rare drops are of that order).
OVERLOAD_LOSS_RATIO = 5e-4
#: Trials whose load is within this relative distance of the median measured capacity
#: enter the fit (heavy overload may forward less than the capacity; far-below loads say
#: nothing about it).
WINDOW = 0.1
#: Measured (overloaded) trials the fit needs before it says anything.
MIN_MEASURED = 3
#: The spike rate is counted over the censored trials at least this many fitted standard
#: deviations below the mean capacity: nearer, a small loss is as likely a tiny overload,
#: and counting those as spikes biased P(bad) up by 0.04-0.10 at the crossing of the
#: benchmark's noisy models (and the NDRs down). Fewer than :data:`MIN_SPIKE_TRIALS`
#: there: all censored trials count (the conservative side).
SPIKE_CLEAR_SIGMAS = 1.5
MIN_SPIKE_TRIALS = 5
#: Floor of the fitted spread of ln C, so a hard edge (a clean device, a meter) keeps a
#: finite, honest uncertainty rather than a step function.
MIN_SIGMA = 5e-4
_NORMAL = statistics.NormalDist()


@dataclass(frozen=True)
class TrialLoss:
    """What the model needs of one full-length valid trial."""

    load_fps: float
    loss_ratio: float
    forwarding_fps: float


@dataclass(frozen=True)
class CapacityModel:
    """A fitted capacity distribution: ln C ~ N(mu, sigma), with its covariance, and the
    small-loss trials among the censored ones (``spikes`` of ``censored``)."""

    mu: float
    sigma: float
    cov: tuple[tuple[float, float], tuple[float, float]]  # of (mu, ln sigma)
    censored_loss_ratios: tuple[float, ...]

    def spike_rate(self, goal_loss_ratio: float) -> tuple[float, float]:
        """P(a trial the capacity passes still loses more than the goal allows), and its
        standard error, from the censored trials. No pseudo-count in the rate: half a
        spike added to a few dozen trials raised the 10 %-spike model's estimate to 0.145
        and put its NDRs low; the standard error keeps at least one trial's worth."""
        m = len(self.censored_loss_ratios)
        if m == 0:
            return 0.0, 0.5
        rate = sum(r > goal_loss_ratio for r in self.censored_loss_ratios) / m
        floor = 1.0 / (m + 1.0)
        return rate, math.sqrt(max(rate, floor) * (1.0 - min(rate, 1.0 - floor)) / m)

    def bad_probability(self, load_fps: float, goal_loss_ratio: float) -> tuple[float, float]:
        """P(trial at ``load_fps`` is bad for a goal of ``goal_loss_ratio``) and its standard
        error: bad when the capacity is under ``load * (1 - g)`` or a spike exceeds g."""
        w = (math.log(load_fps * (1.0 - goal_loss_ratio)) - self.mu) / self.sigma
        over = _NORMAL.cdf(w)
        density = _NORMAL.pdf(w)
        spike, spike_se = self.spike_rate(goal_loss_ratio)
        p = 1.0 - (1.0 - spike) * (1.0 - over)
        # d over / d mu = -density / sigma ; d over / d ln sigma = -density * w
        g_mu, g_ls = -density / self.sigma, -density * w
        (a, b), (_b, d) = self.cov
        var_over = g_mu * g_mu * a + 2 * g_mu * g_ls * b + g_ls * g_ls * d
        var = (1.0 - spike) ** 2 * var_over + (1.0 - over) ** 2 * spike_se ** 2
        return p, math.sqrt(max(var, 0.0))

    def crossing_fps(self, goal_loss_ratio: float, exceed_ratio: float) -> float | None:
        """The load at which P(bad) (:meth:`bad_probability`) equals ``exceed_ratio``: where
        the model puts the goal's answer. None when the spikes alone fail the goal that often."""
        spike, _se = self.spike_rate(goal_loss_ratio)
        if spike >= exceed_ratio:
            return None
        over = 1.0 - (1.0 - exceed_ratio) / (1.0 - spike)  # > 0 as spike < exceed_ratio
        w = _NORMAL.inv_cdf(min(max(over, 1e-12), 1.0 - 1e-12))
        return math.exp(self.mu + self.sigma * w) / (1.0 - goal_loss_ratio)

    def rise_per_step(self, load_fps: float, goal_loss_ratio: float, step_ratio: float) -> float:
        """How much P(bad) rises from one grid load to the next around ``load_fps`` (loads a
        factor ``step_ratio`` apart): what one more width changes in a trial's odds."""
        above, _ = self.bad_probability(load_fps * step_ratio, goal_loss_ratio)
        below, _ = self.bad_probability(load_fps / step_ratio, goal_loss_ratio)
        return (above - below) / 2.0


def fit_capacity(trials: list[TrialLoss]) -> CapacityModel | None:
    """The censored-normal fit of ln C over ``trials``, or None with too few measured ones."""
    measured = [t.forwarding_fps for t in trials if t.loss_ratio > OVERLOAD_LOSS_RATIO and t.forwarding_fps > 0]
    if len(measured) < MIN_MEASURED:
        return None
    centre = statistics.median(measured)
    near = [t for t in trials if abs(t.load_fps / centre - 1.0) <= WINDOW and t.forwarding_fps > 0]
    exact = [math.log(t.forwarding_fps) for t in near if t.loss_ratio > OVERLOAD_LOSS_RATIO]
    if len(exact) < MIN_MEASURED:
        return None
    # no loss: C >= L; spike-sized loss: C >= what it forwarded (a spike, or a tiny overload)
    censored = [math.log(t.load_fps if t.loss_ratio <= 0 else t.forwarding_fps)
                for t in near if t.loss_ratio <= OVERLOAD_LOSS_RATIO]
    mu, log_sigma = _maximise(exact, censored)
    cov = _covariance(exact, censored, mu, log_sigma)
    passed = [t for t in near if t.loss_ratio <= OVERLOAD_LOSS_RATIO]
    clear = [t for t in passed if math.log(t.load_fps) <= mu - SPIKE_CLEAR_SIGMAS * math.exp(log_sigma)]
    spikes = clear if len(clear) >= MIN_SPIKE_TRIALS else passed
    return CapacityModel(mu, math.exp(log_sigma), cov, tuple(t.loss_ratio for t in spikes))


def _gradient(exact: list[float], censored: list[float], mu: float, log_sigma: float) -> tuple[float, float]:
    """Gradient of the censored-normal log-likelihood in (mu, ln sigma)."""
    sigma = math.exp(log_sigma)
    g_mu = g_ls = 0.0
    for y in exact:
        z = (y - mu) / sigma
        g_mu += z / sigma
        g_ls += z * z - 1.0
    for c in censored:
        w = (c - mu) / sigma
        h = _inverse_mills(w)
        g_mu += h / sigma
        g_ls += h * w
    return g_mu, g_ls


def _inverse_mills(w: float) -> float:
    """pdf(w) / (1 - cdf(w)), stable in the far tail."""
    tail = 0.5 * math.erfc(w / math.sqrt(2.0))
    if tail < 1e-300 or w > 30.0:
        return w + 1.0 / w
    return _NORMAL.pdf(w) / tail


def _hessian(exact: list[float], censored: list[float], mu: float, log_sigma: float) -> list[list[float]]:
    """Negative Hessian (observed information) by central differences of the gradient."""
    eps_mu, eps_ls = 1e-6, 1e-5
    gp, gm = _gradient(exact, censored, mu + eps_mu, log_sigma), _gradient(exact, censored, mu - eps_mu, log_sigma)
    hp, hm = _gradient(exact, censored, mu, log_sigma + eps_ls), _gradient(exact, censored, mu, log_sigma - eps_ls)
    a = -(gp[0] - gm[0]) / (2 * eps_mu)
    d = -(hp[1] - hm[1]) / (2 * eps_ls)
    b = -0.5 * ((gp[1] - gm[1]) / (2 * eps_mu) + (hp[0] - hm[0]) / (2 * eps_ls))
    return [[a, b], [b, d]]


def _maximise(exact: list[float], censored: list[float]) -> tuple[float, float]:
    """Damped Newton from the measured samples' mean and spread; ln sigma floored."""
    mu = statistics.fmean(exact)
    spread = statistics.pstdev(exact) if len(exact) > 1 else 0.0
    floor = math.log(MIN_SIGMA)
    log_sigma = max(floor, math.log(spread) if spread > 0 else floor)
    for _ in range(50):
        g = _gradient(exact, censored, mu, log_sigma)
        (a, b), (_b, d) = _hessian(exact, censored, mu, log_sigma)
        det = a * d - b * b
        if a <= 0 or det <= 0:  # not concave here: a gradient step
            step_mu, step_ls = g[0] * MIN_SIGMA ** 2, g[1] * 0.01
        else:
            step_mu, step_ls = (d * g[0] - b * g[1]) / det, (a * g[1] - b * g[0]) / det
        step_ls = max(-1.0, min(1.0, step_ls))
        step_mu = max(-0.05, min(0.05, step_mu))
        mu += step_mu
        log_sigma = max(floor, log_sigma + step_ls)
        if abs(step_mu) < 1e-9 and abs(step_ls) < 1e-7:
            break
    return mu, log_sigma


def _covariance(exact: list[float], censored: list[float], mu: float,
                log_sigma: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """Inverse observed information; at the sigma floor, ln sigma is held fixed."""
    (a, b), (_b, d) = _hessian(exact, censored, mu, log_sigma)
    at_floor = log_sigma <= math.log(MIN_SIGMA) + 1e-9
    det = a * d - b * b
    if at_floor or det <= 0 or a <= 0:
        return ((1.0 / max(a, 1e-12), 0.0), (0.0, 0.0))
    return ((d / det, -b / det), (-b / det, a / det))
