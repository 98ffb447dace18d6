"""Island block correction for Gauss-Seidel: all contact rows between single bodies of an
island solved as one block.

A box resting on four corners has 12 contact rows and 6 degrees of freedom; a stack of five
boxes 60 rows and 30. Per-contact Gauss-Seidel converges slowly on such redundant sets: pushed
at 0.99 mu m g a box on the ground stopped each step with ~5e-8 m/s left and crept 5e-7 m in
10 s (float64); a 1:2:4:7:10 stack ran into the 150-sweep cap in 93% of its steps. Solved as
one block they stay put and converge within a sweep or two.

An island is a set of dynamic single bodies connected by contacts between them; contacts with
static or kinematic single bodies hold it. Once per solve (after a few sweeps, see
`gauss_seidel`), every island with at least `MIN_ROWS` contact rows, all between single bodies,
tries the block move "all these rows stick":
1. the bodies' twist change that cancels the rows' velocity errors e = v - target e_z in the
   least-squares sense, dxi = -(A^T A)^-1 A^T e (A: the rows' contact-frame velocities per unit
   body twist, (3R, 6N), sparse), and the wrenches it needs, w = A^T lambda + M dxi;
2. the impulses nearest the current ones that give those wrenches and lie in the friction
   cones: lambda(nu) = Proj_K(lambda + A nu) with A^T lambda(nu) = w, solved for the 6N
   multipliers nu by `NEWTON_STEPS` semismooth Newton steps (the cones' projection is closed
   form);
3. an island takes the move where that Newton solve converged (every body's wrench to sqrt(eps)
   of the island's largest) and its rows' velocity errors fall at least `CONTRACTION`-fold (an island that slides, an
   edge contact whose rows cannot hold all six motions, a wrench no impulses in the cones give:
   nothing happens, per-contact sweeps go on as before).
Both linear systems (A^T A and the Newton matrix A^T J A, J the projection's Jacobian) are
solved matrix-free by conjugate gradients preconditioned by their per-body 6x6 blocks: for a
one-body island the preconditioner is the exact inverse (one CG step), and the N-body
systems are never formed (a 216-sphere pile would need 1296 x 1296 dense solves).

The move only redistributes impulses among the rows of an island towards a solution of its
block, so the solutions of the iteration are unchanged; the sweeps after it keep solving
every row exactly. Islands touching a link (an articulated system) are left to per-contact
sweeps; joint-limit and pin rows never take part.
"""

import functools

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from raisim_jax import batched_cond
from raisim_jax.math import rotation
from raisim_jax.math.matmul_precision import full_precision

MIN_ROWS = 2          # a single contact's exact local solve is already its block solve
NEWTON_STEPS = 16     # semismooth Newton steps of the cone projection, at most (8 left some
                      # at 1e-5); they stop where nu stops moving (STALL_ULPS)
STALL_ULPS = 8        # a Newton step that changes no multiplier by more than this many ulps
                      # of its island's largest ends the solve
DAMPING = 1e-2        # Levenberg-Marquardt damping per unit of an island's relative residual
DIVERGED = 1e12       # |nu| at which a Newton solve stops: its wrench is not reachable
CONTRACTION = 1e-3    # largest error ratio (after / before) at which an island takes the move
CG_ITERATIONS = 60    # conjugate-gradient steps per linear solve, at most
CG_TOLERANCE_ULPS = 16  # relative residual at which CG stops, in ulps
NEWTON_ROOT = "island_block_newton_root"   # checkpoint name of the Newton solve's result
NEWTON_SCOPE = "island_block_newton"       # name scope of the Newton steps' while loop
# A `jax.checkpoint` policy that keeps that root, so a recompute does not rerun the Newton steps.
KEEP_NEWTON_ROOT = jax.checkpoint_policies.save_only_these_names(NEWTON_ROOT)


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


def _mass_matrices(problem, num_bodies, dtype):
  """(n + 1, 6, 6) mass and inverse mass about the COM (world frame), zero for static and
  kinematic bodies and for the dump slot n."""
  inv_mass = jnp.concatenate([problem["inv_mass"], jnp.zeros((1,), dtype)])
  inv_inertia = jnp.concatenate([problem["inv_inertia"], jnp.zeros((1, 3, 3), dtype)])
  dynamic = inv_mass > 0
  safe_inv_inertia = jnp.where(dynamic[:, None, None], inv_inertia, jnp.eye(3, dtype=dtype))
  inertia = jnp.where(dynamic[:, None, None], rotation.inverse3(safe_inv_inertia), 0.0)
  eye3 = jnp.eye(3, dtype=dtype)
  mass = jnp.zeros((num_bodies + 1, 6, 6), dtype)
  mass = mass.at[:, :3, :3].set(jnp.where(dynamic, 1.0 / jnp.where(dynamic, inv_mass, 1.0),
                                          0.0)[:, None, None] * eye3)
  mass = mass.at[:, 3:, 3:].set(inertia)
  inverse_mass = jnp.zeros((num_bodies + 1, 6, 6), dtype)
  inverse_mass = inverse_mass.at[:, :3, :3].set(inv_mass[:, None, None] * eye3)
  inverse_mass = inverse_mass.at[:, 3:, 3:].set(inv_inertia)
  return mass, inverse_mass, dynamic


def island_labels(side_body, num_bodies):
  """(n + 1,) int32 island of each body: the smallest body index it is connected to through
  rows whose two sides are both dynamic bodies (side_body (R, 2), n where a side is not one).
  Label propagation, one round per link of the longest chain (a while loop on integers only,
  so reverse-mode differentiation of the caller is unaffected)."""
  both = jnp.all(side_body < num_bodies, axis=-1)
  a = jnp.where(both, side_body[:, 0], num_bodies)
  b = jnp.where(both, side_body[:, 1], num_bodies)

  def spread(carry):
    label, _, rounds = carry
    low = jnp.minimum(label[a], label[b])
    new = label.at[a].min(low).at[b].min(low)
    return new, jnp.any(new != label), rounds + 1

  label0 = jnp.arange(num_bodies + 1, dtype=jnp.int32)
  label, _, _ = jax.lax.while_loop(lambda c: c[1] & (c[2] < num_bodies), spread,
                                   (label0, jnp.asarray(True), jnp.zeros((), jnp.int32)))
  return label


def prepare(problem, num_bodies):
  """Per-solve constants of the island correction (the geometry is fixed within a solve).

  `problem` needs `island_body` (R, 2) int32: the dynamic single body on side A and side B of
  each eligible row, an active contact between two single bodies (`num_bodies` where that
  side is static, kinematic, a link, or the row is not eligible), and the usual `frame`,
  `r_a`, `r_b`, `inv_mass`, `inv_inertia`, `weight_a`, `weight_b`, `index_a`, `index_b`,
  `row_active`.

  Returns a dict: `side_twist` (R, 2, 3, 6) contact-frame velocity of the row per unit twist
  (linear, angular; world frame) of the body on each side, `side_body` (R, 2), `label`
  (n + 1,) island of each body, `row_island` (R,) island of each row (n where none),
  `eligible` (R,) bool, `mass` and `inverse_mass` (n + 1, 6, 6) about the COM.
  """
  dtype = problem["frame"].dtype
  side_body = problem["island_body"]
  mass, inverse_mass, dynamic = _mass_matrices(problem, num_bodies, dtype)
  label = island_labels(side_body, num_bodies)
  on_side = side_body < num_bodies                                           # (R, 2)
  row_body = jnp.where(on_side[:, 0], side_body[:, 0], side_body[:, 1])
  row_island = label[row_body]
  eligible = jnp.any(on_side, axis=-1)
  # An island that also touches a link is left to per-contact sweeps: its block would be
  # solved with the link's impulses fixed (as bodies of a stack were before islands: 34 -> 139
  # sweeps per step on a uniform 5-box stack).
  coupled = jnp.zeros((num_bodies + 1,), jnp.int32)
  for side in ("a", "b"):
    touches = (problem["weight_" + side] > 0) & ~eligible & problem["row_active"]
    coupled = coupled.at[jnp.where(touches, problem["index_" + side], num_bodies)].add(1)
  segments = num_bodies + 1
  island_coupled = jax.ops.segment_max(coupled, label, num_segments=segments)
  island_rows = jax.ops.segment_sum(eligible.astype(jnp.int32), row_island,
                                    num_segments=segments)
  takes_part = dynamic & (island_rows[label] >= MIN_ROWS) & (island_coupled[label] == 0)
  takes_part = takes_part.at[num_bodies].set(False)
  on_side = on_side & takes_part[side_body]
  eligible = jnp.any(on_side, axis=-1)
  side_body = jnp.where(on_side, side_body, num_bodies)
  row_island = jnp.where(eligible, row_island, num_bodies)

  eye = jnp.broadcast_to(jnp.eye(3, dtype=dtype), side_body.shape[:1] + (3, 3))
  twists = []
  for k, (side, sign) in enumerate((("a", 1.0), ("b", -1.0))):
    world_twist = jnp.concatenate([eye, -rotation.skew(problem["r_" + side])], axis=-1)
    twists.append((sign * on_side[:, k].astype(dtype))[:, None, None]
                  * (problem["frame"] @ world_twist))
  return dict(side_twist=jnp.stack(twists, axis=1), side_body=side_body, label=label,
              row_island=row_island, eligible=eligible, mass=mass, inverse_mass=inverse_mass)


ROW_KEYS = ("island_body", "frame", "r_a", "r_b", "weight_a", "weight_b", "index_a", "index_b",
            "row_active", "friction", "target")   # the per-row entries of `problem` read here


def compact_size(rows):
  """Static number of rows the correction runs on when every world's active rows fit in it
  (`rows_subset`), or None where that would not save at least half of `rows`: a quarter of
  the rows, at least 16, a multiple of 8. Every row enters its 16 Newton steps and their
  conjugate-gradient iterations, active or not: 2 sliding boxes and 2 spheres (10 active rows
  in 96) spent 90% of their differentiable step in the move."""
  size = max(16, -(-rows // 32) * 8)
  return size if 2 * size <= rows else None


def rows_subset(problem, rows, valid, num_bodies):
  """`problem` restricted to the rows `rows` (K,) (the per-row entries `ROW_KEYS`; the bodies'
  entries whole), the slots where `valid` (K,) is False taking no part (inactive, eligible for
  nothing)."""
  subset = {key: problem[key][rows] for key in ROW_KEYS}
  subset["island_body"] = jnp.where(valid[:, None], subset["island_body"], num_bodies)
  subset["row_active"] = subset["row_active"] & valid
  return {**subset, "inv_mass": problem["inv_mass"], "inv_inertia": problem["inv_inertia"]}


def has_candidates(problem, num_bodies):
  """() bool: some dynamic body has at least MIN_ROWS active contact rows with single bodies
  (the cheap part of `prepare`'s test, decided before anything is built: a ball on the ground
  or a robot's feet never run the correction)."""
  side_body = problem["island_body"].reshape(-1)
  count = jax.ops.segment_sum(jnp.ones_like(side_body), side_body,
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


class _Operators:
  """The island rows' sparse maps between body twists (n + 1, 6) and row vectors (R, 3)."""

  def __init__(self, block, num_bodies):
    self.twist = block["side_twist"]                                        # (R, 2, 3, 6)
    self.body = block["side_body"]                                          # (R, 2)
    self.num_bodies = num_bodies

  def rows(self, x):
    """(R, 3) contact-frame row velocities A x of body twists x (n + 1, 6)."""
    return jnp.einsum("rskj,rsj->rk", self.twist, x[self.body])

  def bodies(self, y):
    """(n + 1, 6) body wrenches A^T y of row impulses y (R, 3); zero at the dump slot."""
    per_side = jnp.einsum("rskj,rk->rsj", self.twist, y)
    out = jax.ops.segment_sum(per_side.reshape(-1, 6), self.body.reshape(-1),
                              num_segments=self.num_bodies + 1)
    return out.at[self.num_bodies].set(0.0)

  def diagonal_blocks(self, weight):
    """(n + 1, 6, 6) per-body blocks of A^T W A, W (R, 3, 3) block-diagonal."""
    per_side = jnp.einsum("rski,rkl,rslj->rsij", self.twist, weight, self.twist)
    return jax.ops.segment_sum(per_side.reshape(-1, 6, 6), self.body.reshape(-1),
                               num_segments=self.num_bodies + 1)

  def _system(self, weight, dtype, damping=0.0):
    """(operator, preconditioner) of A^T W A + r: r a relative regularization of each
    per-body block's trace, plus `damping` (n + 1,) times it (the identity at the dump slot
    and for bodies without rows, so the system stays positive definite), the preconditioner
    the inverse per-body blocks."""
    blocks = self.diagonal_blocks(weight)
    scale = jnp.trace(blocks, axis1=-2, axis2=-1)
    regularization = ((_relative_regularization(dtype) + damping)
                      * jnp.where(scale > 0, scale, 1.0))
    regularization = regularization.at[self.num_bodies].set(1.0)
    eye6 = jnp.eye(6, dtype=dtype)
    inverse_blocks = inverse6(blocks + regularization[:, None, None] * eye6)

    def operator(x):
      return (self.bodies(jnp.einsum("rij,rj->ri", weight, self.rows(x)))
              + regularization[:, None] * x)

    return operator, lambda r: jnp.einsum("bij,bj->bi", inverse_blocks, r)

  def solve(self, weight, rhs, damping=0.0):
    """(n + 1, 6) x with (A^T W A + r) x = rhs (`_system`) by preconditioned conjugate
    gradients."""
    operator, preconditioner = self._system(weight, rhs.dtype, damping)
    return _conjugate_gradients(operator, rhs, preconditioner)

  def solve_with_residual(self, weight, rhs):
    """`solve`'s x and () |A^T W A x + r x - rhs| / |rhs|, the relative residual it reached
    (0 for a zero right-hand side; not differentiated)."""
    operator, preconditioner = self._system(weight, rhs.dtype)
    x = _conjugate_gradients(operator, rhs, preconditioner)
    x_value, rhs_value = jax.lax.stop_gradient((x, rhs))
    difference = operator(x_value) - rhs_value
    residual = jnp.sqrt(_dot(difference, difference))
    size = jnp.sqrt(_dot(rhs_value, rhs_value))
    return x, jnp.where(size > 0, residual / jnp.where(size > 0, size, 1.0), 0.0)

def _dot(x, y):
  return jnp.sum(x * y)


def _conjugate_gradients(operator, rhs, preconditioner):
  """x with operator(x) = rhs (symmetric positive definite, both (n + 1, 6)) by
  preconditioned conjugate gradients: at most CG_ITERATIONS steps, stopping at a relative
  residual of CG_TOLERANCE_ULPS ulps or at a breakdown (a zero or negative curvature p.Ap or
  r.z, which rounding produces once the residual is exhausted). `jax.scipy.sparse.linalg.cg`
  divides by both unguarded: with it, 45 of 1,024 vmapped worlds of the batched-contacts test
  (tests/test_contacts.py, then at 1,024 worlds) ended NaN, and
  so did a reverse-mode derivative through an aligned two-box stack.
  Differentiated implicitly (`lax.custom_linear_solve`): the tangent is one more solve."""
  dtype = rhs.dtype
  tolerance = (CG_TOLERANCE_ULPS * jnp.finfo(dtype).eps) ** 2

  def solve(matvec, b):
    goal = tolerance * _dot(b, b)

    def going(carry):
      _, r, _, gamma, k = carry
      return (_dot(r, r) > goal) & (gamma > 0) & (k < CG_ITERATIONS)

    def iterate(carry):
      x, r, p, gamma, k = carry
      ap = matvec(p)
      curvature = _dot(p, ap)
      alpha = jnp.where(curvature > 0, gamma / jnp.where(curvature > 0, curvature, 1.0), 0.0)
      x, r = x + alpha * p, r - alpha * ap
      z = preconditioner(r)
      gamma_next = jnp.where(curvature > 0, _dot(r, z), 0.0)
      beta = jnp.where(gamma > 0, gamma_next / jnp.where(gamma > 0, gamma, 1.0), 0.0)
      return x, r, z + beta * p, gamma_next, k + 1

    z = preconditioner(b)
    start = (jnp.zeros_like(b), b, z, _dot(b, z), jnp.zeros((), jnp.int32))
    return jax.lax.while_loop(going, iterate, start)[0]

  return jax.lax.custom_linear_solve(operator, rhs, solve, symmetric=True)


def _newton_step(operands, nu, num_bodies, damping_of=lambda residual: 0.0):
  """(next Newton iterate, residual f(nu) = A^T Proj(start + A nu) - w at nu), both
  (n + 1, 6), of the move's multipliers nu; `operands`: start (R, 3), mu (R,), wrench
  (n + 1, 6), side_twist, side_body (the block's) and eligible (R,). The projection's Jacobian
  J in the Newton matrix A^T J A is a value (no derivative); `damping_of(residual)` gives the
  (n + 1,) damping of its per-body blocks (`_Operators._system`), none by default."""
  ops = _Operators(operands, num_bodies)
  point, jac = project_to_cone(operands["start"] + ops.rows(nu), operands["mu"])
  residual = ops.bodies(point) - operands["wrench"]
  jac = jnp.where(operands["eligible"][:, None, None], jax.lax.stop_gradient(jac), 0.0)
  return nu - ops.solve(jac, residual, damping_of(residual)), residual


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _at_root(nu, operands, num_bodies):
  """`nu` (n + 1, 6), a root of the Newton solve computed without derivatives, differentiated
  as that root: the derivative of one more Newton step at a root nu*, nu* - G^-1 f(nu*), is
  the implicit one, -G^-1 df (f(nu*) = 0). Only the tangent takes that step; the value stays
  `nu` (a step from a rounding-level residual could jump to another active set), and a
  program without derivatives computes nothing here. Unrolled, reverse mode went back
  through all NEWTON_STEPS steps and their conjugate-gradient solves (with the move 90% of
  the differentiable step of 2 sliding boxes and 2 spheres, that was most of its
  gradient)."""
  del operands, num_bodies
  return nu


@_at_root.defjvp
@full_precision   # traced when differentiated, after the step's own trace has returned
def _at_root_jvp(num_bodies, primals, tangents):
  nu, operands = primals
  step, d_step = jax.jvp(lambda o: _newton_step(o, nu, num_bodies)[0], (operands,),
                         (tangents[1],))
  return nu, jnp.where(jnp.isfinite(step), d_step, 0.0)


def correction(block, problem, row_velocity, impulses, num_bodies):
  """(R, 3) impulse change of the islands whose contacts can all stick (zero elsewhere).

  row_velocity: (R, 3) the rows' contact-frame velocities now; impulses: (R, 3) now.
  """
  eligible = block["eligible"]
  label, row_island = block["label"], block["row_island"]
  dtype = impulses.dtype
  segments = num_bodies + 1
  mu = problem["friction"]
  ops = _Operators(block, num_bodies)
  bmv = lambda m, x: jnp.einsum("bij,bj->bi", m, x)
  identity = jnp.broadcast_to(jnp.eye(3, dtype=dtype), impulses.shape + (3,))
  identity = jnp.where(eligible[:, None, None], identity, 0.0)

  error = row_velocity - problem["target"][:, None] * jnp.asarray([0.0, 0.0, 1.0], dtype)
  error = jnp.where(eligible[:, None], error, 0.0)
  twist, twist_residual = ops.solve_with_residual(identity, ops.bodies(error))
  twist = -twist
  # The twist's CG did not converge (islands of spheres, whose spins about their contact
  # normals no row holds, are ill-conditioned in float32): the wrenches it asks for are not
  # the block's, so the Newton solve is not run and no island takes the move. In a settled
  # 216-sphere pile (float32) the 16 Newton steps' CG solves ran to their cap for nothing.
  least_squares = twist_residual <= jnp.sqrt(jnp.finfo(dtype).eps)
  start = jnp.where(eligible[:, None], impulses, 0.0)
  wrench = ops.bodies(start) + bmv(block["mass"], twist)

  def island_max(per_body):
    return jax.ops.segment_max(per_body, label, num_segments=segments)[label]

  def island_size(x):
    """(n + 1,) per body: the largest |entry| of x (n + 1, 6) over the body's island."""
    return island_max(jnp.max(jnp.abs(x), axis=-1))

  # Newton has reached the block's solution where every body's wrench is within sqrt(eps) of
  # the island's largest (a light box under a heavy one carries a small net wrench and large
  # impulses).
  wrench_size = island_size(wrench)
  wrench_tolerance = jnp.sqrt(jnp.finfo(dtype).eps) * wrench_size

  def island_converged(residual):
    """(n + 1,) per body: its island's wrench residual (n + 1, 6) is within tolerance."""
    return jax.lax.stop_gradient(island_size(residual) <= wrench_tolerance)

  operands = dict(start=start, mu=mu, wrench=wrench, side_twist=block["side_twist"],
                  side_body=block["side_body"], eligible=eligible)
  # The Newton steps run on values only (their inputs without derivatives, so that their
  # while loop is never differentiated); the root they reach is differentiated as a root
  # (`_at_root`). Islands whose Newton solve did not converge are rejected below, tangent
  # and all.
  values = jax.lax.stop_gradient(dict(operands=operands, tolerance=wrench_tolerance,
                                      wrench_size=jnp.where(wrench_size > 0, wrench_size, 1.0)))
  newton_ops = _Operators(values["operands"], num_bodies)

  def newton(nu):
    # Levenberg-Marquardt damping: each per-body block of the Newton matrix grows by DAMPING
    # times the island's relative residual (of its trace). The projection's Jacobian is zero
    # for rows outside their cone, so the undamped Newton matrix is blind to the rows a step
    # brings back into contact: on the statically indeterminate 10-sphere pyramid steps came
    # out ~1,000x too long, jumped between active sets, and from its ~250th time step on the
    # solve stopped converging (sweeps at their 150 cap on most steps after). The damping
    # vanishes at the root, where the solve converges as Newton's.
    def damping_of(residual):
      return DAMPING * jnp.minimum(island_size(residual) / values["wrench_size"], 1.0)

    step, residual = _newton_step(values["operands"], nu, num_bodies, damping_of)
    # An infeasible wrench sends nu off (1e11 after 16 steps); the island is held below
    # overflow so the rejected move's forward values and cotangents stay finite.
    diverged = island_size(step) >= DIVERGED
    # A converged island does not take a step that leaves the converged ball: the Newton
    # matrix of rows at a cone's edge or apex is nearly singular, and a step from a
    # rounding-level residual jumped to another active set (a 10-sphere pyramid: 2.5e-15 ->
    # 7e-6), so the solve ended unconverged, the move was rejected and the sweeps ran to their
    # cap (from its second step on). Steps within the ball are taken as before: freezing a
    # converged island, or rejecting any step that raised its residual, made the result hang
    # on rounding (a world of tests/test_contacts.py's 1,024 left the same world unbatched by
    # 7e-12 and 1e-11 m).
    point = project_to_cone(values["operands"]["start"] + newton_ops.rows(step),
                            values["operands"]["mu"])[0]
    residual_size = island_size(residual)
    step_size = island_size(newton_ops.bodies(point) - values["operands"]["wrench"])
    leaves = (residual_size <= values["tolerance"]) & ~(step_size <= values["tolerance"])
    return jnp.where((diverged | leaves)[:, None], nu, step)

  def newton_going(carry):
    _, moved, k = carry
    return moved & (k < NEWTON_STEPS)

  def newton_iteration(carry):
    """One Newton step; `moved`: some body's multipliers changed by more than
    STALL_ULPS ulps of its island's largest (a semismooth Newton solve at its root stops
    moving, so the steps up to NEWTON_STEPS would leave nu within rounding)."""
    nu, _, k = carry
    new = newton(nu)
    scale = island_size(new)
    moved = jnp.any(jnp.abs(new - nu) > STALL_ULPS * jnp.finfo(dtype).eps * scale[:, None])
    return new, moved, k + 1

  def newton_solve(nu):
    start_carry = (nu, jnp.asarray(True), jnp.zeros((), jnp.int32))
    with jax.named_scope(NEWTON_SCOPE):
      return jax.lax.while_loop(newton_going, newton_iteration, start_carry)[0]

  nu = checkpoint_name(jax.lax.stop_gradient(batched_cond.run_where(
      least_squares, newton_solve, jnp.zeros((segments, 6), dtype))), NEWTON_ROOT)
  nu = _at_root(nu, operands, num_bodies)
  new, _ = project_to_cone(start + ops.rows(nu), mu)
  delta = jnp.where(eligible[:, None], new - start, 0.0)
  predicted = error + ops.rows(bmv(block["inverse_mass"], ops.bodies(delta)))
  size = lambda x: jax.ops.segment_max(
      jnp.where(eligible, jnp.max(jnp.abs(x), axis=-1), 0.0), row_island, num_segments=segments)
  before, after = size(error), size(predicted)
  # Semismooth Newton either reaches the block's solution to rounding within NEWTON_STEPS or
  # is far from it (an infeasible wrench: an impact, a sliding body); a partly converged solve
  # is rejected, since its result (and so the move) hung on rounding (8 steps ended at 1e-5 in
  # a batched run and 7e-5 in the same world unbatched, and one took the move).
  converged = jax.ops.segment_max(   # per body -> per island label
      island_converged(ops.bodies(new) - wrench).astype(jnp.int32), label,
      num_segments=segments) > 0
  accept = ((after <= CONTRACTION * before) & (before > 0) & converged
            & least_squares).at[num_bodies].set(False)
  return jnp.where((eligible & accept[row_island])[:, None], delta, 0.0)
