"""Signed penetration depth of two convex shapes: the minimum support overlap.

For shapes A and B with support functions h_A, h_B (h(n) = max_{x in shape} x . n), the support
overlap along a unit normal n (pointing from B to A) is

    f(n) = h_B(n) + h_A(-n).

Moving A by f(n) n separates the pair along n, so min_n f(n) is the penetration depth (the
minimum translational distance) when the shapes overlap and minus their distance when they are
apart (min_n f = -dist(0, B - A) by the separating-hyperplane theorem). The minimiser n* is the
contact normal, and the points of A and B whose difference is f(n*) n* are the contact's two
surface points.

The shapes: box, cylinder, cone, sphere, capsule and convex mesh (a hull: max over its vertices,
smoothed below by a homogeneous log-sum-exp; its face normals serve as starting and snapping
normals; its edges are not stored, so an edge-edge contact's normal is the smoothed
minimiser's, within eps R log V of the exact one).

f is piecewise smooth: box support functions have kinks on the great circles n . u_i = 0
(face and edge contacts sit on them), cylinders and cones on n . a = 0, at n = +-a and on the
cone's side-normal circle. A local minimum on a kink is where Newton's method stalls, so the
minimisation runs on a smoothed overlap f_eps in which every |x| is sqrt(x^2 + eps^2) and every
max(x, y) is (x + y)/2 + sqrt(((x - y)/2)^2 + eps^2). Each smoothing lies above the exact term by
at most eps times its coefficient, so f <= f_eps <= f + C eps (C = sum of the shapes' half
sizes): the exact overlap at the smoothed minimiser is within C eps of the true minimum,
whatever the kinks. eps is lowered geometrically (continuation) while damped Newton steps
follow the minimiser, from the best few of a fixed set of starting normals (both shapes' face
and axis directions, their cross products, the centre line and a Fibonacci sphere), because f
has several local minima when the shapes overlap (one per face of a box): every start follows
the coarse levels, the best REFINED_STARTS the fine ones. Finally a nearby kink normal (a face
normal, an edge or side normal) replaces the smoothed minimiser where its exact f is as low,
so face contacts get the exact face normal even in float32, where eps stops at 1e-4.

The two contact points are the gradients of the smoothed support functions at the final normal
(points of the shapes: on the support feature, and for a face the point facing the other
shape's support point). The search runs under stop_gradient; the points move with their bodies
and the depth's derivative is that of n . (x_b - x_a) at the fixed normal.
"""

import math

import jax
import jax.numpy as jnp

from raisim_jax.collision.shapes import ShapeType, bounding_radius
from raisim_jax.math import dense, safe

# The Newton step's tiny products, under vmap over starts and worlds, as elementwise
# multiplies and adds (XLA:CPU's dot kernel per 3 x 3 product costs more than the product).
_mv, _mm = dense.unrolled_matvec, dense.unrolled_matmul

STEPS_PER_LEVEL = 6
EPS_START = 1e-2
EPS_RATIO = 0.1
FIBONACCI_STARTS = 40
NEWTON_STARTS = 6
COARSE_LEVELS = 2   # levels every start follows
REFINED_STARTS = 2  # starts that go on to the fine levels
FINAL_STEPS = 8
_LINE_SEARCH = tuple(0.25 ** k for k in range(0, 13)) + (0.0,)
_COARSE_LINE_SEARCH = tuple(0.25 ** k for k in range(0, 6)) + (0.0,)


def final_eps(dtype):
  """The smoothing's last continuation level in `dtype`."""
  return 1e-8 if jnp.dtype(dtype) == jnp.float64 else 1e-4


def num_levels(dtype):
  """Static number of continuation levels from EPS_START down to the dtype's final eps."""
  return int(round(math.log(final_eps(dtype) / EPS_START) / math.log(EPS_RATIO))) + 1


def _soft_abs(x, eps):
  return jnp.sqrt(x * x + eps * eps)


def shape_scale(shape_type, size):
  """A length of the shape for tolerances: the sum of its size entries (a box's side
  lengths, a cylinder's r + h, ...), a hull's diameter bound (twice its radius)."""
  if ShapeType(shape_type) == ShapeType.MESH:
    return 2.0 * bounding_radius(shape_type, size)
  return jnp.sum(size[:3])


def smoothed_support_value(shape_type, size, v, eps):
  """Smoothed support function h_eps(v) of a shape in its own frame (v (3,), any length).

  h <= h_eps <= h + eps * (sum of the half sizes); eps = 0 gives the exact support function
  (then with the kinks of |x|). Shapes: BOX, CYLINDER, CONE (RaiSim's objectParam `size`),
  SPHERE and CAPSULE (smooth but for the capsule's |v_z|), MESH (`size` a shapes.Hull: the
  max over its vertices smoothed as tau log sum exp(x_i . v / tau), tau = eps R |v| with R
  its radius, so h_eps <= h + eps R log V; eps must be the Python float 0.0 for the exact
  max). SPHERE, CAPSULE and MESH are written positively homogeneous in v.
  """
  t = ShapeType(shape_type)
  if t == ShapeType.SPHERE:
    return size[0] * jnp.sqrt(jnp.dot(v, v))
  if t == ShapeType.CAPSULE:
    norm2 = jnp.dot(v, v)
    return size[0] * jnp.sqrt(norm2) + 0.5 * size[1] * jnp.sqrt(v[2] * v[2] + eps * eps * norm2)
  if t == ShapeType.MESH:
    # Padding rows repeat a vertex: the max needs no mask, and the sum leaves them out by
    # weight 0 (a -inf mask would make the derivatives of -inf / tau(v) NaN).
    projections = dense.unrolled_matvec(size.vertices[:, :3], v)
    if isinstance(eps, float) and eps == 0.0:
      return jnp.max(projections)
    tau = eps * bounding_radius(t, size) * jnp.sqrt(jnp.dot(v, v))
    return tau * jax.nn.logsumexp(projections / tau, b=size.vertices[:, 3])
  if t == ShapeType.BOX:
    return jnp.sum(0.5 * size[:3] * _soft_abs(v, eps))
  radial = jnp.sqrt(v[0] * v[0] + v[1] * v[1] + eps * eps)
  r, h = size[0], size[1]
  if t == ShapeType.CYLINDER:
    return r * radial + 0.5 * h * _soft_abs(v[2], eps)
  if t == ShapeType.CONE:
    apex = 0.75 * h * v[2]
    rim = -0.25 * h * v[2] + r * radial
    return 0.5 * (apex + rim) + _soft_abs(0.5 * (apex - rim), eps)
  raise ValueError(f"no smoothed support function for {t!r}")


def _sqrt_quadratic(Q, v):
  """sqrt(v^T Q v) (Q positive definite), its gradient and Hessian in v."""
  Qv = Q @ v
  value = jnp.sqrt(jnp.dot(v, Qv))
  grad = Qv / value
  return value, grad, (Q - jnp.outer(grad, grad)) / value


def smoothed_support_derivatives(shape_type, size, v, eps):
  """(h_eps(v), gradient (3,), Hessian (3, 3)) of the smoothed support function, shape frame.

  The same function as `smoothed_support_value` at |v| = 1, written with eps^2 |v|^2 so that it
  is positively homogeneous (the sphere chart's derivatives follow from the 3-D ones); closed
  forms, so a Newton step costs a few dozen flops per term instead of an autodiff Hessian.
  """
  t = ShapeType(shape_type)
  dtype = v.dtype
  if t == ShapeType.MESH:
    return _hull_support_derivatives(size, v, eps)
  if t in (ShapeType.SPHERE, ShapeType.CAPSULE):   # by autodiff
    value = lambda w: smoothed_support_value(t, size, w, eps)
    return value(v), jax.grad(value)(v), jax.hessian(value)(v)
  e2 = eps * eps * jnp.eye(3, dtype=dtype)
  basis = jnp.eye(3, dtype=dtype)
  if t == ShapeType.BOX:
    value, grad, hess = 0.0, jnp.zeros(3, dtype), jnp.zeros((3, 3), dtype)
    for i in range(3):
      s, g, h = _sqrt_quadratic(jnp.outer(basis[i], basis[i]) + e2, v)
      value, grad, hess = value + 0.5 * size[i] * s, grad + 0.5 * size[i] * g, hess + 0.5 * size[i] * h
    return value, grad, hess
  r, height = size[0], size[1]
  radial_q = jnp.diag(jnp.array([1.0, 1.0, 0.0], dtype)) + e2
  rho, g_rho, h_rho = _sqrt_quadratic(radial_q, v)
  if t == ShapeType.CYLINDER:
    s, g, h = _sqrt_quadratic(jnp.outer(basis[2], basis[2]) + e2, v)
    half = 0.5 * height
    return r * rho + half * s, r * g_rho + half * g, r * h_rho + half * h
  if t == ShapeType.CONE:
    # max(apex, rim) smoothed: (g1 + g2)/2 + sqrt(w^2 + eps^2 |v|^2), w = (g1 - g2)/2 with
    # g1 = 3h/4 v_z (apex), g2 = -h/4 v_z + r rho (rim).
    ez = basis[2]
    w = 0.5 * (height * v[2] - r * rho)
    g_w = 0.5 * (height * ez - r * g_rho)
    h_w = -0.5 * r * h_rho
    big_s = jnp.sqrt(w * w + eps * eps * jnp.dot(v, v))
    g_s = (w * g_w + eps * eps * v) / big_s
    h_s = (jnp.outer(g_w, g_w) + w * h_w + e2 - jnp.outer(g_s, g_s)) / big_s
    value = 0.5 * (0.5 * height * v[2] + r * rho) + big_s
    grad = 0.5 * (0.5 * height * ez + r * g_rho) + g_s
    hess = 0.5 * r * h_rho + h_s
    return value, grad, hess
  raise ValueError(f"no smoothed support function for {t!r}")


def _hull_support_derivatives(hull, v, eps):
  """Closed-form (h, gradient, Hessian) of a hull's smoothed support h = tau L (v (3,) shape
  frame), tau = c |v| with c = eps R, L = log sum_i b_i exp(s_i / tau), s_i = x_i . v. With w
  the softmax weights, x_bar = sum w x, C = sum w (x - x_bar)(x - x_bar)^T,
  E = L - x_bar . v / tau and P = I - u u^T (u = v / |v|): gradient x_bar + c E u, Hessian
  P C P / tau + c E P / |v| (h is positively homogeneous, so the Hessian maps v to 0).
  Autodiff of the value gives the same (1e-16 for box-mesh depths) at ~20% more per pair."""
  points, weight = hull.vertices[:, :3], hull.vertices[:, 3]
  norm = jnp.sqrt(jnp.dot(v, v))
  c = eps * bounding_radius(ShapeType.MESH, hull)
  tau = c * norm
  scaled = dense.unrolled_matvec(points, v) / tau
  log_sum = jax.nn.logsumexp(scaled, b=weight)
  w = weight * jnp.exp(scaled - log_sum)
  mean = w @ points
  centred = points - mean
  covariance = (w[:, None] * centred).T @ centred
  entropy = log_sum - jnp.dot(mean, v) / tau
  u = v / norm
  project = jnp.eye(3, dtype=v.dtype) - jnp.outer(u, u)
  hessian = project @ covariance @ project / tau + (c * entropy / norm) * project
  return tau * log_sum, mean + c * entropy * u, hessian


def _feature_axes(shape_type, size, R):
  """World directions of the shape's faces and kinks: (k, 3) (zero rows: none). A box's
  axes, a cylinder's, cone's or capsule's axis, a hull's face normals; a sphere has none."""
  t = ShapeType(shape_type)
  if t == ShapeType.BOX:
    return R.T
  if t == ShapeType.SPHERE:
    return jnp.zeros((1, 3), R.dtype)
  if t == ShapeType.MESH:
    return size.planes[:, :3] @ R.T
  return R[:, 2][None]


def _face_normals(type_a, axes_a, type_b, axes_b):
  """Contact normals (from B to A) of a face of either shape: (k, 3). A hull's face normal
  counts with one sign (a face of B: its outward normal; of A: the opposite), halving the
  starts and snap candidates of a hull of F faces; other shapes' axes with both (a box's
  faces and a cylinder's caps come in opposite pairs)."""
  rows = []
  for axes, shape_type, sign in ((axes_a, type_a, -1.0), (axes_b, type_b, 1.0)):
    rows += [sign * axes] if ShapeType(shape_type) == ShapeType.MESH else [axes, -axes]
  return jnp.concatenate(rows)


def _edge_axes(shape_type, feature_axes):
  """World directions of the shape's straight edges and kink circles' poles, whose pairwise
  cross products are edge-edge normals: its `feature_axes`, but none for a hull (its edges
  are not stored: an edge-edge contact of a hull is the smoothed minimiser's, within the
  smoothing's bound)."""
  if ShapeType(shape_type) == ShapeType.MESH:
    return jnp.zeros((1, 3), feature_axes.dtype)
  return feature_axes


def _fibonacci(count, dtype):
  i = jnp.arange(count, dtype=dtype) + 0.5
  phi = jnp.arccos(1.0 - 2.0 * i / count)
  theta = math.pi * (1.0 + math.sqrt(5.0)) * i
  return jnp.stack([jnp.cos(theta) * jnp.sin(phi), jnp.sin(theta) * jnp.sin(phi), jnp.cos(phi)], 1)


def tangent_basis(n):
  """Two unit vectors completing the unit n (3,) to an orthonormal frame."""
  ex = jnp.array([1.0, 0.0, 0.0], n.dtype)
  ey = jnp.array([0.0, 1.0, 0.0], n.dtype)
  t1 = safe.normalize(jnp.cross(n, jnp.where(jnp.abs(n[0]) < 0.6, ex, ey)))
  return t1, jnp.cross(n, t1)


def minimum_overlap(type_a, size_a, R_a, p_a, type_b, size_b, R_b, p_b):
  """Minimiser of the support overlap f(n) = h_B(n) + h_A(-n) over unit n.

  Returns (normal (3,) unit, from B to A; depth f(normal), positive when penetrating, minus the
  distance when apart; x_a (3,) point of A; x_b (3,) point of B) with x_b - x_a = depth normal
  at the minimum. Types static (BOX, CYLINDER, CONE, SPHERE, CAPSULE, MESH); world frame.
  """
  dtype = p_a.dtype
  levels = num_levels(dtype)
  scale = shape_scale(type_a, size_a) + shape_scale(type_b, size_b)
  eps_final = final_eps(dtype)

  def overlap(n, eps):
    n = safe.normalize(n)
    h_b = jnp.dot(n, p_b) + smoothed_support_value(type_b, size_b, _mv(R_b.T, n), eps)
    h_a = -jnp.dot(n, p_a) + smoothed_support_value(type_a, size_a, -_mv(R_a.T, n), eps)
    return h_a + h_b

  # Starting normals: feature axes of both shapes and their cross products (face and
  # edge-edge normals), the centre line and a Fibonacci sphere; both signs.
  axes_a, axes_b = _feature_axes(type_a, size_a, R_a), _feature_axes(type_b, size_b, R_b)
  edges_a, edges_b = _edge_axes(type_a, axes_a), _edge_axes(type_b, axes_b)
  crosses = jnp.cross(edges_a[:, None, :], edges_b[None, :, :]).reshape(-1, 3)
  centre = (p_a - p_b)[None]
  if ShapeType.MESH in (ShapeType(type_a), ShapeType(type_b)):
    base = jnp.concatenate([crosses, centre])
    starts = jnp.concatenate([_face_normals(type_a, axes_a, type_b, axes_b), base, -base,
                              _fibonacci(FIBONACCI_STARTS, dtype)])
  else:
    base = jnp.concatenate([axes_a, axes_b, crosses, centre])
    starts = jnp.concatenate([base, -base, _fibonacci(FIBONACCI_STARTS, dtype)])
  norms = jnp.sqrt(jnp.sum(starts * starts, axis=1))
  starts = safe.normalize(starts)
  values = jax.vmap(lambda n: overlap(n, 0.0))(starts)
  values = jnp.where(norms > 1e-9, values, jnp.inf)  # parallel axes: no cross product
  _, best = jax.lax.top_k(-values, NEWTON_STARTS)
  starts = starts[best]

  def step(k, n, fractions=_LINE_SEARCH):
    eps = EPS_START * EPS_RATIO ** jnp.minimum(k // STEPS_PER_LEVEL, levels - 1).astype(dtype)
    t1, t2 = tangent_basis(n)
    phi = lambda u: overlap(n + u[0] * t1 + u[1] * t2, eps)
    # Derivatives of phi(u) = F(n + U u) / |n + U u| at u = 0 for the homogeneous smoothed
    # overlap F: U^T grad F and U^T hess F U - F I.
    h_b, g_b, hess_b = smoothed_support_derivatives(type_b, size_b, _mv(R_b.T, n), eps)
    h_a, g_a, hess_a = smoothed_support_derivatives(type_a, size_a, -_mv(R_a.T, n), eps)
    value = jnp.dot(n, p_b - p_a) + h_b + h_a
    grad3 = (p_b - p_a) + _mv(R_b, g_b) - _mv(R_a, g_a)
    hess3 = _mm(_mm(R_b, hess_b), R_b.T) + _mm(_mm(R_a, hess_a), R_a.T)
    frame = jnp.stack([t1, t2])
    g = _mv(frame, grad3)
    hess = _mm(_mm(frame, hess3), frame.T) - value * jnp.eye(2, dtype=dtype)
    # Levenberg shift: positive definite with the smallest eigenvalue >= tiny * trace.
    half_tr = 0.5 * (hess[0, 0] + hess[1, 1])
    det = hess[0, 0] * hess[1, 1] - hess[0, 1] * hess[1, 0]
    lam_min = half_tr - jnp.sqrt(jnp.maximum(half_tr * half_tr - det, 0.0))
    shift = jnp.maximum(0.0, 1e-12 * jnp.abs(half_tr) + 1e-30 - lam_min)
    a, b, c = hess[0, 0] + shift, hess[0, 1], hess[1, 1] + shift
    det_s = a * c - b * b
    du = -jnp.stack([c * g[0] - b * g[1], a * g[1] - b * g[0]]) / det_s
    du = du * jnp.minimum(1.0, 0.3 / jnp.maximum(jnp.sqrt(jnp.sum(du * du)), 1e-30))
    fractions = jnp.asarray(fractions, dtype)
    trials = jax.vmap(lambda s: phi(s * du))(fractions)
    # The largest step within round-off of the best: near the minimum the stiff (kink)
    # directions need steps whose decrease is below f's resolution.
    tol = 64.0 * jnp.finfo(dtype).eps * (jnp.abs(trials[-1]) + scale)
    s = fractions[jnp.argmax(trials <= jnp.min(trials) + tol)]
    return safe.normalize(n + s * du[0] * t1 + s * du[1] * t2)

  # Every start follows the coarse levels; the best few (by exact f) go on to the fine ones.
  coarse_steps = min(COARSE_LEVELS, levels) * STEPS_PER_LEVEL
  total_steps = levels * STEPS_PER_LEVEL + FINAL_STEPS
  coarse_step = lambda k, n: step(k, n, _COARSE_LINE_SEARCH)
  coarse = jax.vmap(lambda n: jax.lax.fori_loop(0, coarse_steps, coarse_step, n))(
      jax.lax.stop_gradient(starts))
  _, best = jax.lax.top_k(-jax.vmap(lambda n: overlap(n, 0.0))(coarse), REFINED_STARTS)
  finals = jax.vmap(lambda n: jax.lax.fori_loop(coarse_steps, total_steps, step, n))(coarse[best])
  exact = jax.vmap(lambda n: overlap(n, 0.0))(finals)
  best_final = jnp.argmin(exact)
  smoothed_normal = jax.lax.stop_gradient(finals[best_final])
  # Contact points: gradients of the smoothed support functions at the smoothed minimiser
  # (there the two points face each other along the normal).
  x_b = p_b + R_b @ jax.grad(lambda v: smoothed_support_value(type_b, size_b, v, eps_final))(
      R_b.T @ smoothed_normal)
  x_a = p_a + R_a @ jax.grad(lambda v: smoothed_support_value(type_a, size_a, v, eps_final))(
      -(R_a.T @ smoothed_normal))
  normal = jax.lax.stop_gradient(_snap_to_kinks(
      lambda n: overlap(n, 0.0), smoothed_normal, exact[best_final], type_a, size_a, R_a,
      type_b, size_b, R_b, crosses, 64.0 * jnp.finfo(dtype).eps * scale))
  # Derivatives: the contact points move with their bodies (local coordinates fixed) and the
  # depth's derivative is that of n . (x_b - x_a) at the fixed normal. This is the envelope
  # theorem's derivative where f is smooth in the poses, and the right one where the minimum
  # sits on a kink of f (a rim on a cylinder's side: |v_z| at v_z = 0), where differentiating
  # f(n) itself would pick an arbitrary side. The value stays the exact f(n).
  local_a = jax.lax.stop_gradient(R_a.T @ (x_a - p_a))
  local_b = jax.lax.stop_gradient(R_b.T @ (x_b - p_b))
  x_a, x_b = p_a + R_a @ local_a, p_b + R_b @ local_b
  gap = jnp.dot(normal, x_b - x_a)
  depth = jax.lax.stop_gradient(overlap(normal, 0.0)) + gap - jax.lax.stop_gradient(gap)
  return normal, depth, x_a, x_b


def _cone_side_normal(size, axis, direction):
  """The cone's side normal (world) at the azimuth of `direction`."""
  r, h = size[0], size[1]
  radial = safe.normalize(direction - jnp.dot(direction, axis) * axis)
  return (h * radial + r * axis) / jnp.sqrt(r * r + h * h)


def _snap_to_kinks(exact_overlap, n, overlap_at_n, type_a, size_a, R_a, type_b, size_b, R_b,
                   crosses, tol):
  """The smoothed minimiser sits within O(eps) of a kink of f when the contact is a face or an
  edge (e.g. a cylinder standing on a box: n is the box's face normal). Nearby kink normals
  (feature axes, n projected onto the kink great circles, cross products, cone side normals)
  replace it where their exact overlap is as low: the face normal comes out exact, also in
  float32 where eps cannot be small."""
  axes_a, axes_b = _feature_axes(type_a, size_a, R_a), _feature_axes(type_b, size_b, R_b)
  axes = jnp.concatenate([axes_a, axes_b])
  edges = (axes if ShapeType.MESH not in (ShapeType(type_a), ShapeType(type_b))
           else jnp.concatenate([_edge_axes(type_a, axes_a), _edge_axes(type_b, axes_b)]))
  projected = n[None] - jnp.einsum("kj,j->k", edges, n)[:, None] * edges
  if ShapeType.MESH in (ShapeType(type_a), ShapeType(type_b)):
    candidates = [_face_normals(type_a, axes_a, type_b, axes_b), projected, crosses, -crosses]
  else:
    candidates = [axes, -axes, projected, crosses, -crosses]
  if ShapeType(type_a) == ShapeType.CONE:
    candidates.append(-_cone_side_normal(size_a, R_a[:, 2], -n)[None])
  if ShapeType(type_b) == ShapeType.CONE:
    candidates.append(_cone_side_normal(size_b, R_b[:, 2], n)[None])
  candidates = safe.normalize(jnp.concatenate(candidates))
  values = jax.vmap(exact_overlap)(candidates)
  near = jnp.sum((candidates - n[None]) ** 2, axis=1) <= 1e-4
  values = jnp.where(near, values, jnp.inf)
  k = jnp.argmin(values)
  return jnp.where(values[k] <= overlap_at_n + tol, candidates[k], n)
