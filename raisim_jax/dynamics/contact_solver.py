"""The local pieces of RaiSim's per-contact iteration solver (Hwangbo, Lee, Hutter, RA-L 2018).

The world's contact problem and its Gauss-Seidel sweeps live in `dynamics/contact_dynamics.py`
(`solve_contacts`, what the step calls). This module holds what one visit of a contact row
needs:

* `solve_single_contact(G_ii, c_prime, mu, target)`: the exact solution of one contact's 3-D
  problem v = G_ii lambda + c' with the other impulses fixed. In the contact frame (z = normal,
  pointing towards object A; lambda the impulse on A, v the velocity of A's contact point
  relative to B's at the end of the step) it enforces the hard-contact NCP
    - Signorini:  lambda_z >= 0, v_z >= target, lambda_z (v_z - target) = 0,
    - Coulomb:    |lambda_t| <= mu lambda_z (true circular cone),
    - maximum dissipation: sticking => v_t = 0; sliding => lambda on the cone boundary,
      v_z = target, and v_t anti-parallel to lambda_t,
  by cases: open / stick in closed form, slide by a fixed grid bracket + safeguarded Newton
  steps on the tangential direction of the cone-boundary point (fixed cost, no trigonometric
  calls).
* Its `jax.custom_jvp`, which differentiates the active mode's equations (open: 0; stick:
  -G^-1 b; slide: implicit function theorem on the two equations in (rho, theta)): correct
  inside each mode (not across mode switches) and finite everywhere.
* `single_contact_mode`: which case applies (tests and debugging).
* The material helpers `static_friction_coefficient` and `bounce_velocity`.

See docs/contact_solver.md.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from raisim_jax import batched_cond
from raisim_jax.math import dense, rotation
from raisim_jax.math.matmul_precision import full_precision

# Fixed cost of the slide case: number of angle cells scanned for a sign change, then
# safeguarded Newton steps inside the chosen cell from its regula-falsi estimate (cell width
# 2*pi/32 = 0.2 rad; the estimate is within ~1e-2 rad, and each step squares the error).
NUM_ANGLE_CELLS = 32
NEWTON_STEPS = 6
NEWTON_STEPS_FLOAT32 = 5

# Local-problem modes (returned by `single_contact_mode`).
MODE_OPEN = 0
MODE_STICK = 1
MODE_SLIDE = 2


# ----------------------------------------------------------------------------------------------
# Material helpers


def static_friction_coefficient(mu, mu_static, v_static, tangential_speed):
  """Effective friction coefficient for one contact, per the material system spec.

  mu_static at zero relative tangential speed, linear interpolation to the dynamic mu at
  `tangential_speed >= v_static`; v_static <= 0 means "no static friction" (returns mu).
  The speed is the pre-solve tangential speed (|c_t|) - an interpretation, see the docs.
  """
  v_static = jnp.asarray(v_static)
  use = v_static > 0
  safe_vs = jnp.where(use, v_static, 1.0)
  s = jnp.clip(tangential_speed / safe_vs, 0.0, 1.0)
  return jnp.where(use, mu_static + (mu - mu_static) * s, mu)


def bounce_velocity(restitution, threshold, impact_speed):
  """Target separation speed after impact: c_r * max(0, v_i - r_th).

  `impact_speed` is the approach speed, -c_z (positive when approaching). The spec writes
  "c_th (v_i - c_th)", evidently a typo; this reading (docs/contact_solver.md) is continuous
  in v_i (no jump at the threshold, good for gradients) and gives no bounce below the
  threshold. Change the interpretation here only.
  """
  return restitution * jnp.maximum(impact_speed - threshold, 0.0)


# ----------------------------------------------------------------------------------------------
# Local 3-D problem


def _slide_terms(G, b, mu, cs, sn):
  """For a cone-boundary point lambda = rho (mu cos t, mu sin t, 1) with v_z = 0.

  (cs, sn) = (cos t, sin t), any shape. Returns (D, F, E): D = G_z . w (rho = -b_z / D),
  F = D * (v_t . d_perp) (zero at the maximum-dissipation point), E = D * (v_t . d) (negative
  there: v_t opposes lambda_t). Multiplied through by D so no division happens here.
  """
  gx = mu * (G[0, 0] * cs + G[0, 1] * sn) + G[0, 2]
  gy = mu * (G[1, 0] * cs + G[1, 1] * sn) + G[1, 2]
  D = mu * (G[2, 0] * cs + G[2, 1] * sn) + G[2, 2]
  # D * v_t = -b_z Gw_t + D b_t
  vx = D * b[0] - b[2] * gx
  vy = D * b[1] - b[2] * gy
  return D, cs * vy - sn * vx, cs * vx + sn * vy


def _slide_slope(G, b, mu, cs, sn, E):
  """dF/dt of `_slide_terms`' F at the direction (cs, sn) = (cos t, sin t), given its E."""
  dgx = mu * (G[0, 1] * cs - G[0, 0] * sn)
  dgy = mu * (G[1, 1] * cs - G[1, 0] * sn)
  dD = mu * (G[2, 1] * cs - G[2, 0] * sn)
  dvx = dD * b[0] - b[2] * dgx
  dvy = dD * b[1] - b[2] * dgy
  return cs * dvy - sn * dvx - E


def _normalize2(x, y):
  n2 = x * x + y * y
  ok = n2 > 0
  inv = lax.rsqrt(jnp.where(ok, n2, 1.0))
  return jnp.where(ok, x * inv, 1.0), jnp.where(ok, y * inv, 0.0)


def _solve_single_primal(G, c_prime, mu, target):
  """Exact local solve by cases; returns (lambda, mode, rho, (cos theta, sin theta)).

  Open and stick are closed forms; the slide search runs under `lax.cond`, skipped when the
  contact opens or sticks (under vmap: when it does in every world of the batch).
  """
  dtype = c_prime.dtype
  b = c_prime - target * jnp.array([0.0, 0.0, 1.0], dtype)
  G_inv = rotation.inverse3(G)
  lam_stick = -dense.unrolled_matvec(G_inv, b)
  tangential_stick_sq = lam_stick[0] ** 2 + lam_stick[1] ** 2
  is_open = b[2] >= 0
  is_stick = (~is_open) & (lam_stick[2] >= 0) & (tangential_stick_sq <= (mu * lam_stick[2]) ** 2)

  def slide():
    c0, s0 = _normalize2(lam_stick[0], lam_stick[1])
    # Slide: bracket the root of F on a fixed grid of directions starting at the stick-impulse
    # direction d0, prefer the valid cell (D > 0, v_t opposing lambda_t) nearest d0, then refine
    # inside it. Directions are unit vectors (rotations by constants, steps by normalized
    # sums), so no trigonometric function is evaluated.
    K = NUM_ANGLE_CELLS
    h = 2.0 * math.pi / K
    ck = jnp.asarray([math.cos(h * k) for k in range(K)], dtype)
    sk = jnp.asarray([math.sin(h * k) for k in range(K)], dtype)
    grid_c = c0 * ck - s0 * sk
    grid_s = s0 * ck + c0 * sk
    D, F, _ = _slide_terms(G, b, mu, grid_c, grid_s)
    # Wrap around with the *same* value so that a root exactly at d0 is not lost to rounding.
    next_c, next_s, F_next = jnp.roll(grid_c, -1), jnp.roll(grid_s, -1), jnp.roll(F, -1)
    sign_change = (F * F_next) <= 0
    # Judge each candidate cell at its regula-falsi root estimate, not at its end points.
    denom = F_next - F
    t_est = jnp.clip(jnp.where(denom != 0, -F / jnp.where(denom != 0, denom, 1.0), 0.5), 0.0, 1.0)
    est_c, est_s = _normalize2(grid_c + t_est * (next_c - grid_c), grid_s + t_est * (next_s - grid_s))
    D_est, _, E_est = _slide_terms(G, b, mu, est_c, est_s)
    positive_D = D_est > 0
    valid = sign_change & positive_D & (E_est < 0)
    cells = jnp.arange(K)
    distance = jnp.minimum(cells, K - 1 - cells)
    big = 4 * K
    score = jnp.where(valid, distance,
                      jnp.where(sign_change & positive_D, big + distance, 2 * big + distance))
    score = score * K + cells                        # unique keys; min instead of argmin (a
    one_hot = (score == jnp.min(score)).astype(dtype)   # variadic reduce, slow on XLA CPU)
    pick = lambda x: jnp.sum(one_hot * x)
    lo_c, lo_s, F_lo = pick(grid_c), pick(grid_s), pick(F)
    hi_c, hi_s = pick(next_c), pick(next_s)

    steps = NEWTON_STEPS if jnp.finfo(dtype).bits > 32 else NEWTON_STEPS_FLOAT32

    def refine(_, state):
      # Safeguarded Newton on F along the circle: the step -F/F' taken from d along d_perp
      # (then normalized: the angle moves by atan(step), which keeps quadratic convergence);
      # where it leaves the bracket or F' = 0, the bracket's midpoint instead.
      lo_c, lo_s, F_lo, hi_c, hi_s, x_c, x_s = state
      _, F_x, E_x = _slide_terms(G, b, mu, x_c, x_s)
      slope = _slide_slope(G, b, mu, x_c, x_s, E_x)
      same = jnp.sign(F_x) * jnp.sign(F_lo) > 0   # F_lo == 0: shrink onto lo
      lo_c, lo_s, F_lo = (jnp.where(same, x_c, lo_c), jnp.where(same, x_s, lo_s),
                          jnp.where(same, F_x, F_lo))
      hi_c, hi_s = jnp.where(same, hi_c, x_c), jnp.where(same, hi_s, x_s)
      step = -F_x / jnp.where(slope != 0, slope, 1.0)
      new_c, new_s = _normalize2(x_c - step * x_s, x_s + step * x_c)
      # A converged step lands on the bracket's end it just moved: allow rounding outside.
      slack = -4 * jnp.finfo(dtype).eps
      inside = ((slope != 0) & (lo_c * new_s - lo_s * new_c >= slack)
                & (new_c * hi_s - new_s * hi_c >= slack))
      mid_c, mid_s = _normalize2(lo_c + hi_c, lo_s + hi_s)
      return (lo_c, lo_s, F_lo, hi_c, hi_s, jnp.where(inside, new_c, mid_c),
              jnp.where(inside, new_s, mid_s))

    # Starts at the chosen cell's regula-falsi estimate (~h^2 from the root). A loop, not
    # Python unrolling: unrolled, XLA's fusion duplicates the chain (~30x the flops).
    *_, d_c, d_s = lax.fori_loop(
        0, steps, refine, (lo_c, lo_s, F_lo, hi_c, hi_s, pick(est_c), pick(est_s)))
    D_d, _, _ = _slide_terms(G, b, mu, d_c, d_s)
    rho = -b[2] / jnp.where(D_d > 0, D_d, G[2, 2])
    rho = jnp.maximum(rho, 0.0)
    lam_slide = rho * jnp.stack([mu * d_c, mu * d_s, jnp.ones_like(d_c)])
    return lam_slide, rho, d_c, d_s

  def no_slide():
    zero = jnp.zeros((), dtype)
    return jnp.zeros(3, dtype), zero, zero + 1.0, zero

  # Most contacts of a resting scene stick or are open: for one world the search is skipped.
  # Decided on any world of a batch (batched_cond.any_world): a batched predicate would make
  # the cond a select that runs the search in every world at every visit, sliding or not
  # (standing quadrupeds at batch 64: the search was most of the solve). The search's result
  # is used only where the contact slides.
  lam_slide, rho, d_c, d_s = lax.cond(batched_cond.any_world(~(is_open | is_stick)), slide,
                                      no_slide)
  zero = jnp.zeros(3, dtype)
  lam = jnp.where(is_open, zero, jnp.where(is_stick, lam_stick, lam_slide))
  mode = jnp.where(is_open, MODE_OPEN, jnp.where(is_stick, MODE_STICK, MODE_SLIDE))
  return lam, mode, rho, (d_c, d_s)


def _slide_equations(x, G, c_prime, mu, target):
  """Slide-mode equations H(x; p) = 0 in x = (rho, theta), and lambda(x; p)."""
  rho, theta = x[0], x[1]
  b = c_prime - target * jnp.array([0.0, 0.0, 1.0], c_prime.dtype)
  cs, sn = jnp.cos(theta), jnp.sin(theta)
  lam = rho * jnp.stack([mu * cs, mu * sn, jnp.ones_like(cs)])
  v = dense.unrolled_matvec(G, lam) + b
  return jnp.stack([v[2], -sn * v[0] + cs * v[1]]), lam


@jax.custom_jvp
def solve_single_contact(G_ii, c_prime, mu, target):
  """Exact solution lambda (3,) of one contact's problem v = G_ii lambda + c_prime.

  G_ii: (3, 3) positive definite block; c_prime: (3,) velocity with this contact's own impulse
  removed; mu: friction coefficient; target: target normal velocity (v_z >= target).
  Cases: open (c'_z >= target -> 0), stick (-G^-1 (c' - target e_z) inside the cone), slide
  (maximum-dissipation point on the cone boundary with v_z = target).
  """
  return _solve_single_primal(G_ii, c_prime, mu, target)[0]


@solve_single_contact.defjvp
@full_precision   # traced when differentiated, after the step's own trace has returned
def _solve_single_contact_jvp(primals, tangents):
  G, c_prime, mu, target = primals
  dG, dc, dmu, dtarget = tangents
  lam, mode, rho, (d_c, d_s) = _solve_single_primal(G, c_prime, mu, target)
  theta = jnp.arctan2(d_s, d_c)
  dtype = c_prime.dtype

  # Stick: lambda = -G^-1 b, differentiated directly.
  def stick(G, c_prime, target):
    b = c_prime - target * jnp.array([0.0, 0.0, 1.0], dtype)
    return -rotation.inverse3(G) @ b

  _, dlam_stick = jax.jvp(stick, (G, c_prime, target), (dG, dc, dtarget))

  # Slide: implicit function theorem on H(x; p) = 0, x = (rho, theta).
  x = jnp.stack([rho, theta])
  H_x = jax.jacfwd(lambda x: _slide_equations(x, G, c_prime, mu, target)[0])(x)   # (2, 2)
  (_, _), (dH_p, dlam_p) = jax.jvp(
      lambda G, c, m, t: _slide_equations(x, G, c, m, t), (G, c_prime, mu, target),
      (dG, dc, dmu, dtarget))
  det = H_x[0, 0] * H_x[1, 1] - H_x[0, 1] * H_x[1, 0]
  ok = (mode == MODE_SLIDE) & (det != 0)
  safe_det = jnp.where(ok, det, 1.0)
  inv = jnp.array([[H_x[1, 1], -H_x[0, 1]], [-H_x[1, 0], H_x[0, 0]]]) / safe_det
  dx = -inv @ dH_p
  lam_x = jax.jacfwd(lambda x: _slide_equations(x, G, c_prime, mu, target)[1])(x)   # (3, 2)
  dlam_slide = jnp.where(ok, lam_x @ dx + dlam_p, 0.0)

  dlam = jnp.where(mode == MODE_OPEN, jnp.zeros(3, dtype),
                   jnp.where(mode == MODE_STICK, dlam_stick, dlam_slide))
  return lam, dlam


def single_contact_mode(G_ii, c_prime, mu, target):
  """Which case the local solver takes: MODE_OPEN, MODE_STICK or MODE_SLIDE (for tests/debug)."""
  return _solve_single_primal(G_ii, c_prime, mu, target)[1]
