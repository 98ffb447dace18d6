"""Rigid-body block correction for Gauss-Seidel: one body's redundant contacts solved at once.

A box resting on four corners has 12 contact rows and 6 degrees of freedom. Per-contact
Gauss-Seidel leaves such a body moving when friction is near its limit: pushed at
0.99 mu m g it stopped each step with ~5e-8 m/s left (the impulse change of a sweep was below
the 1e-8 threshold), and the box settled into a two-step rocking cycle whose corners took
turns unloading, creeping 5e-7 m in 10 s (float64). Solved to convergence it stays put
(1e-13 m): the creep is where the iteration stops, not the physics.

Once per solve (after a few sweeps, see `gauss_seidel`), every dynamic single body with at least two contact rows against static or
kinematic single bodies tries the block move "all these rows stick":
1. the twist change that cancels the rows' velocity errors e = v - target e_z in the least-
   squares sense, dxi = -B^-1 A^T e (A: (3P, 6) the rows' contact-frame velocities per unit
   body twist, B = A^T A), and the wrench it needs, w = A^T lambda + M dxi;
2. the impulses nearest the current ones that give that wrench and lie in the friction cones:
   lambda(nu) = Proj_K(lambda + A nu) with A^T lambda(nu) = w, solved for the 6 multipliers nu
   by `NEWTON_STEPS` semismooth Newton steps (the cones' projection is closed form);
3. the body takes the move where that Newton solve converged (to sqrt(eps) of the wrench) and
   its rows' velocity errors fall at least `CONTRACTION`-fold
   (a body that slides, an edge contact whose rows cannot hold all six motions, a wrench no
   impulses in the cones give: nothing happens, per-contact sweeps go on as before).
The move only redistributes impulses among the rows of one body towards a solution of its
block, so the solutions of the iteration are unchanged; the sweeps after it keep solving
every row exactly.

Only bodies whose every contact is with static or kinematic single bodies take part (a box
on the ground, not the boxes of a stack); contacts between two moving bodies, with links,
joint limits and pins stay per-contact.
"""

import jax
import jax.numpy as jnp

from raisim_jax.math import rotation

MIN_ROWS = 2          # a single contact's exact local solve is already its block solve
NEWTON_STEPS = 16     # semismooth Newton steps of the cone projection (8 left some at 1e-5)
DIVERGED = 1e12       # |nu| at which a Newton solve stops: its wrench is not reachable
CONTRACTION = 1e-3     # largest error ratio (after / before) at which a body takes the move


def _relative_regularization(dtype):
  return 1e-12 if jnp.finfo(dtype).bits > 32 else 1e-6


def inverse6(matrix):
  """Inverse of (..., 6, 6) symmetric positive definite matrices by their 3x3 blocks (Schur
  complement, cofactor 3x3 inverses): elementwise work, where a batched LAPACK call per body
  per world cost 3-6x the whole step under vmap."""
  p, q, r = matrix[..., :3, :3], matrix[..., :3, 3:], matrix[..., 3:, 3:]
  p_inverse = rotation.inverse3(p)
  p_inverse_q = p_inverse @ q
  qt = jnp.swapaxes(q, -1, -2)
  s_inverse = rotation.inverse3(r - qt @ p_inverse_q)
  upper_right = -p_inverse_q @ s_inverse
  upper_left = p_inverse - upper_right @ jnp.swapaxes(p_inverse_q, -1, -2)
  top = jnp.concatenate([upper_left, upper_right], axis=-1)
  bottom = jnp.concatenate([jnp.swapaxes(upper_right, -1, -2), s_inverse], axis=-1)
  return jnp.concatenate([top, bottom], axis=-2)


def prepare(problem, num_bodies):
  """Per-solve constants of the block correction (the geometry is fixed within a solve).

  `problem` needs `block_body` (R,) int32: the dynamic single body of each eligible contact row
  (`num_bodies` for rows not taken), `block_sign` (R,) +1 where that body is side A, -1 for
  side B, and the usual `frame`, `r_a`, `r_b`, `inv_mass`, `inv_inertia`.

  Returns a dict: `rows_twist` (R, 3, 6) contact-frame velocity per unit body twist (linear,
  angular; world frame), `b_inverse` (n + 1, 6, 6) regularized (A^T A)^-1, `mass` and
  `inverse_mass` (n + 1, 6, 6) about the COM (world frame), `eligible` (R,) bool.
  """
  body, sign = problem["block_body"], problem["block_sign"]
  dtype = problem["frame"].dtype
  eligible = body < num_bodies
  r = jnp.where((sign > 0)[:, None], problem["r_a"], problem["r_b"])
  eye = jnp.broadcast_to(jnp.eye(3, dtype=dtype), r.shape[:1] + (3, 3))
  world_twist = jnp.concatenate([eye, -rotation.skew(r)], axis=-1)          # (R, 3, 6)
  rows_twist = (sign * eligible.astype(dtype))[:, None, None] * (problem["frame"] @ world_twist)
  b = jax.ops.segment_sum(jnp.einsum("rki,rkj->rij", rows_twist, rows_twist), body,
                          num_segments=num_bodies + 1)
  count = jax.ops.segment_sum(eligible.astype(jnp.int32), body, num_segments=num_bodies + 1)
  trace = jnp.trace(b, axis1=-2, axis2=-1)
  scale = jnp.where(trace > 0, trace, 1.0)
  eye6 = jnp.eye(6, dtype=dtype)
  b_inverse = inverse6(b + (_relative_regularization(dtype) * scale)[:, None, None] * eye6)
  inv_mass = jnp.concatenate([problem["inv_mass"], jnp.zeros((1,), dtype)])
  inv_inertia = jnp.concatenate([problem["inv_inertia"], jnp.zeros((1, 3, 3), dtype)])
  dynamic = inv_mass > 0
  safe_inv_inertia = jnp.where(dynamic[:, None, None], inv_inertia, jnp.eye(3, dtype=dtype))
  inertia = jnp.where(dynamic[:, None, None], rotation.inverse3(safe_inv_inertia), 0.0)
  mass = jnp.zeros((num_bodies + 1, 6, 6), dtype)
  mass = mass.at[:, :3, :3].set(jnp.where(dynamic, 1.0 / jnp.where(dynamic, inv_mass, 1.0),
                                          0.0)[:, None, None] * jnp.eye(3, dtype=dtype))
  mass = mass.at[:, 3:, 3:].set(inertia)
  inverse_mass = jnp.zeros((num_bodies + 1, 6, 6), dtype)
  inverse_mass = inverse_mass.at[:, :3, :3].set(inv_mass[:, None, None] * jnp.eye(3, dtype=dtype))
  inverse_mass = inverse_mass.at[:, 3:, 3:].set(inv_inertia)
  # A body that also touches moving bodies or links is left to per-contact sweeps: its block
  # would be solved with the other bodies' impulses fixed, and in stacks (1:1:1:1:1 and
  # 1:10:1:10:1 masses) that slowed convergence (34 -> 139, 8 -> 124 sweeps per step).
  coupled = jnp.zeros((num_bodies + 1,), jnp.int32)
  for side in ("a", "b"):
    on_side = problem["weight_" + side] > 0
    coupled = coupled.at[jnp.where(on_side & ~eligible & problem["row_active"],
                                   problem["index_" + side], num_bodies)].add(1)
  takes_part = dynamic & (count >= MIN_ROWS) & (coupled == 0)
  eligible = eligible & takes_part[body]
  return dict(rows_twist=rows_twist, b_inverse=b_inverse, mass=mass,
              inverse_mass=inverse_mass, eligible=eligible)


def has_candidates(problem, num_bodies):
  """() bool: some body has at least MIN_ROWS active contact rows against static or kinematic
  single bodies (the cheap part of `prepare`'s test, decided before anything is built)."""
  count = jax.ops.segment_sum(jnp.ones_like(problem["block_body"]), problem["block_body"],
                              num_segments=num_bodies + 1)
  return jnp.any(count[:num_bodies] >= MIN_ROWS)


def project_to_cone(p, mu):
  """(R, 3) nearest points of the cones |lambda_t| <= mu lambda_z to p (R, 3), and the
  (R, 3, 3) Jacobians of that projection (contact frame, z normal)."""
  t, n = p[:, :2], p[:, 2]
  s2 = jnp.sum(t * t, axis=-1)
  s = jnp.sqrt(jnp.where(s2 > 0, s2, 1.0))
  inside = s2 <= (mu * n) ** 2
  inside &= n >= 0
  polar = (mu * s <= -n) & (s2 > 0) | ((s2 == 0) & (n < 0))
  k = 1.0 + mu * mu
  a = (mu * s + n) / k
  direction = t / s[:, None]
  boundary = jnp.concatenate([(a * mu)[:, None] * direction, a[:, None]], axis=-1)
  point = jnp.where(inside[:, None], p, jnp.where(polar[:, None], 0.0, boundary))
  eye2 = jnp.eye(2, dtype=p.dtype)
  outer = direction[:, :, None] * direction[:, None, :]
  dt_dt = (mu * mu / k)[:, None, None] * outer + (a * mu / s)[:, None, None] * (eye2 - outer)
  dt_dn = (mu / k)[:, None] * direction
  top = jnp.concatenate([dt_dt, dt_dn[:, :, None]], axis=-1)
  bottom = jnp.concatenate([dt_dn, (1.0 / k)[:, None]], axis=-1)[:, None, :]
  jac_boundary = jnp.concatenate([top, bottom], axis=1)
  eye3 = jnp.eye(3, dtype=p.dtype)
  jac = jnp.where(inside[:, None, None], eye3,
                  jnp.where(polar[:, None, None], 0.0, jac_boundary))
  return point, jac


def correction(block, problem, row_velocity, impulses, num_bodies):
  """(R, 3) impulse change of the bodies whose contacts can all stick (zero elsewhere).

  row_velocity: (R, 3) the rows' contact-frame velocities now; impulses: (R, 3) now.
  """
  body = problem["block_body"]
  eligible = block["eligible"]
  dtype = impulses.dtype
  segments = num_bodies + 1
  rows_twist = block["rows_twist"]
  mu = problem["friction"]
  to_body = lambda x: jax.ops.segment_sum(x, body, num_segments=segments)
  bmv = lambda m, x: jnp.einsum("bij,bj->bi", m, x)
  rmv = lambda m, x: jnp.einsum("rij,rj->ri", m, x)
  rows_t = lambda x: jnp.einsum("rki,rk->ri", rows_twist, x)            # A_i^T x_i (R, 6)

  error = row_velocity - problem["target"][:, None] * jnp.asarray([0.0, 0.0, 1.0], dtype)
  error = jnp.where(eligible[:, None], error, 0.0)
  twist = -bmv(block["b_inverse"], to_body(rows_t(error)))
  start = jnp.where(eligible[:, None], impulses, 0.0)
  wrench = to_body(rows_t(start)) + bmv(block["mass"], twist)

  regularization = _relative_regularization(dtype)

  def newton(nu, _):
    point, jac = project_to_cone(start + rmv(rows_twist, nu[body]), mu)
    residual = to_body(rows_t(point)) - wrench
    jac = jax.lax.stop_gradient(jac)
    normal = to_body(jnp.einsum("rki,rkl,rlj->rij", rows_twist, jac, rows_twist))
    scale = jnp.trace(normal, axis1=-2, axis2=-1)
    normal = normal + (regularization * jnp.where(scale > 0, scale, 1.0))[:, None, None] * (
        jnp.eye(6, dtype=dtype))
    step = nu - jnp.einsum("bij,bj->bi", inverse6(normal), residual)
    # An infeasible wrench sends nu off (1e11 after 16 steps); it is held below overflow so the
    # rejected move's forward values and cotangents stay finite.
    return jnp.where(jnp.max(jnp.abs(step), axis=-1, keepdims=True) < DIVERGED, step, nu), None

  nu, _ = jax.lax.scan(newton, jnp.zeros((segments, 6), dtype), None, length=NEWTON_STEPS)
  new, _ = project_to_cone(start + rmv(rows_twist, nu[body]), mu)
  delta = jnp.where(eligible[:, None], new - start, 0.0)
  achieved = bmv(block["inverse_mass"], to_body(rows_t(delta)))
  predicted = error + rmv(rows_twist, achieved[body])
  size = lambda x: jax.ops.segment_max(
      jnp.where(eligible, jnp.max(jnp.abs(x), axis=-1), 0.0), body, num_segments=segments)
  before, after = size(error), size(predicted)
  # Semismooth Newton either reaches the block's solution to rounding within NEWTON_STEPS or
  # is far from it (an infeasible wrench: an impact, a sliding body); a partly converged solve
  # is rejected, since its result (and so the move) hung on rounding (8 steps ended at 1e-5 in
  # a batched run and 7e-5 in the same world unbatched, and one took the move).
  residual = jnp.max(jnp.abs(to_body(rows_t(new)) - wrench), axis=-1)
  converged = residual <= jnp.sqrt(jnp.finfo(dtype).eps) * jnp.max(jnp.abs(wrench), axis=-1)
  accept = ((after <= CONTRACTION * before) & (before > 0) & converged).at[num_bodies].set(False)
  return jnp.where((eligible & accept[body])[:, None], delta, 0.0)
