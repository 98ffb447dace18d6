"""Brute-force numpy references for the narrowphase tests (independent of the JAX code).

- Signed distance functions (closed forms in the style of I. Quilez) per shape.
- Penetration depth of two convex shapes as min over unit directions n of the overlap of the
  support extents, f(n) = h_B(n) + h_A(-n) (n from B to A): dense Fibonacci sampling refined by
  Nelder-Mead from the best samples. f(n*) is the signed penetration (negative: distance).
"""

import numpy as np
from scipy import optimize
from scipy.spatial.transform import Rotation

SPHERE, BOX, CYLINDER, CONE, CAPSULE, MESH, HALFSPACE = range(7)   # ShapeType codes
NAMES = {SPHERE: "sphere", BOX: "box", CYLINDER: "cylinder", CONE: "cone", CAPSULE: "capsule",
         MESH: "mesh", HALFSPACE: "halfspace"}


def support_local(t, size, d):
  """Support points of a shape for directions d (N, 3), shape frame. A MESH's `size` is its
  vertices (V, 3): the support point is the vertex farthest along d."""
  d = np.atleast_2d(d)
  if t == MESH:
    vertices = np.asarray(size)
    return vertices[np.argmax(d @ vertices.T, axis=1)]
  nd = np.linalg.norm(d, axis=1, keepdims=True)
  z = np.zeros_like(d)
  z[:, 2] = 1.0
  if t == SPHERE:
    return size[0] * d / nd
  if t == BOX:
    return 0.5 * np.asarray(size[:3]) * np.where(d >= 0, 1.0, -1.0)
  rho = np.linalg.norm(d[:, :2], axis=1, keepdims=True)
  radial = np.zeros_like(d)
  radial[:, :2] = np.where(rho > 0, d[:, :2] / np.where(rho > 0, rho, 1.0), [1.0, 0.0])
  sz = np.where(d[:, 2:] >= 0, 1.0, -1.0)
  r, h = size[0], size[1]
  if t == CAPSULE:
    return r * d / nd + sz * 0.5 * h * z
  if t == CYLINDER:
    return r * radial + sz * 0.5 * h * z
  if t == CONE:
    apex = 0.75 * h * z
    rim = r * radial - 0.25 * h * z
    better = np.sum(apex * d, 1, keepdims=True) >= np.sum(rim * d, 1, keepdims=True)
    return np.where(better, apex, rim)
  raise ValueError(t)


def support_value(t, size, R, p, dirs):
  """h(d) = max_x x . d for world directions (N, 3)."""
  dirs = np.atleast_2d(dirs)
  local = support_local(t, size, dirs @ R)
  return np.sum((local @ R.T + p) * dirs, axis=1)


def fibonacci(n):
  i = np.arange(n) + 0.5
  phi = np.arccos(1 - 2 * i / n)
  theta = np.pi * (1 + 5 ** 0.5) * i
  return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], 1)


def penetration(ta, sa, Ra, pa, tb, sb, Rb, pb, samples=6000, starts=6):
  """(min_n f(n), argmin n) with f(n) = h_B(n) + h_A(-n)."""
  f = lambda n: support_value(tb, sb, Rb, pb, n) + support_value(ta, sa, Ra, pa, -n)
  dirs = fibonacci(samples)
  vals = f(dirs)
  best_val, best_n = np.inf, None
  for k in np.argsort(vals)[:starts]:
    n0 = dirs[k]
    t1 = np.cross(n0, [1.0, 0, 0] if abs(n0[0]) < 0.9 else [0, 1.0, 0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n0, t1)
    g = lambda ab: f((n0 + ab[0] * t1 + ab[1] * t2) / np.linalg.norm(n0 + ab[0] * t1 + ab[1] * t2))[0]
    res = optimize.minimize(g, np.zeros(2), method="Nelder-Mead",
                            options=dict(xatol=1e-13, fatol=1e-14, maxiter=4000,
                                         initial_simplex=[[0, 0], [0.03, 0], [0, 0.03]]))
    if res.fun < best_val:
      n = n0 + res.x[0] * t1 + res.x[1] * t2
      best_val, best_n = res.fun, n / np.linalg.norm(n)
  return best_val, best_n


def _segment_distance_2d(x, a, b):
  ab = b - a
  t = np.clip(np.dot(x - a, ab) / np.dot(ab, ab), 0, 1)
  return np.linalg.norm(x - (a + t * ab))


def _cross2(a, b):
  return a[0] * b[1] - a[1] * b[0]


def sdf(t, size, R, p, x):
  """Signed distance of world point x to the shape (negative inside)."""
  if t == HALFSPACE:
    return x[2] - size[0]
  q = R.T @ (np.asarray(x) - p)
  if t == SPHERE:
    return np.linalg.norm(q) - size[0]
  if t == BOX:
    d = np.abs(q) - 0.5 * np.asarray(size[:3])
    return np.linalg.norm(np.maximum(d, 0)) + min(d.max(), 0.0)
  r, h = size[0], size[1]
  if t == CAPSULE:
    qz = np.clip(q[2], -0.5 * h, 0.5 * h)
    return np.linalg.norm(q - [0, 0, qz]) - r
  w = np.array([np.hypot(q[0], q[1]), q[2]])
  if t == CYLINDER:
    d = np.abs(w) - [r, 0.5 * h]
    return min(d.max(), 0.0) + np.linalg.norm(np.maximum(d, 0))
  if t == CONE:  # symmetric triangle cross-section
    tri = np.array([[-r, -0.25 * h], [r, -0.25 * h], [0, 0.75 * h]])
    dist = min(_segment_distance_2d(w, tri[i], tri[(i + 1) % 3]) for i in range(3))
    cr = [_cross2(tri[(i + 1) % 3] - tri[i], w - tri[i]) for i in range(3)]
    inside = all(c >= 0 for c in cr)
    return -dist if inside else dist
  raise ValueError(t)


def capsule_axis_depth(tx, sx, Rx, px, size_cap, R_cap, p_cap):
  """Deepest penetration of a capsule's sphere-swept axis into shape X: r - min_t sd_X."""
  e0 = p_cap - 0.5 * size_cap[1] * R_cap[:, 2]
  e1 = p_cap + 0.5 * size_cap[1] * R_cap[:, 2]
  g = lambda s: sdf(tx, sx, Rx, px, e0 + s * (e1 - e0))
  grid = np.linspace(0, 1, 2001)
  vals = np.array([g(s) for s in grid])
  k = np.argmin(vals)
  res = optimize.minimize_scalar(g, bounds=(grid[max(k - 1, 0)], grid[min(k + 1, 2000)]),
                                 method="bounded", options=dict(xatol=1e-12))
  return size_cap[0] - min(vals[k], res.fun)


def segment_distance(a0, a1, b0, b1):
  g = lambda st: np.linalg.norm(a0 + st[0] * (a1 - a0) - b0 - st[1] * (b1 - b0))
  best = np.inf
  for s0 in (0.0, 0.5, 1.0):
    for t0 in (0.0, 0.5, 1.0):
      res = optimize.minimize(lambda st: g(st) ** 2, [s0, t0], bounds=[(0, 1), (0, 1)],
                              method="L-BFGS-B", options=dict(ftol=1e-16, gtol=1e-12))
      best = min(best, g(res.x))
  return best


def random_size(t, rng):
  if t == SPHERE:
    return np.array([rng.uniform(0.2, 0.8), 0, 0, 0])
  if t == BOX:
    return np.array([*rng.uniform(0.3, 1.5, 3), 0])
  if t == HALFSPACE:
    return np.array([rng.uniform(-0.5, 0.5), 0, 0, 0])
  return np.array([rng.uniform(0.2, 0.7), rng.uniform(0.3, 1.5), 0, 0])


def random_pose_pair(ta, tb, rng, scale_range=(0.6, 1.1)):
  """Random sizes/poses with A placed along a random direction near touching B."""
  sa, sb = random_size(ta, rng), random_size(tb, rng)
  Ra = Rotation.random(random_state=rng).as_matrix()
  if tb == HALFSPACE:
    Rb, pb = np.eye(3), np.zeros(3)
    u = np.array([0.0, 0, 1])
  else:
    Rb = Rotation.random(random_state=rng).as_matrix()
    pb = rng.uniform(-1, 1, 3)
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
  reach = support_value(ta, sa, Ra, np.zeros(3), -u)[0]
  reach_b = sb[0] if tb == HALFSPACE else support_value(tb, sb, Rb, pb, u)[0]
  s = rng.uniform(*scale_range)
  # Place A so that its extreme point along -u sits at a fraction of B's extent along u.
  base = reach_b - (pb @ u if tb != HALFSPACE else 0.0)
  pa = pb + u * (base + reach) * s if tb != HALFSPACE else np.array(
      [*rng.uniform(-1, 1, 2), sb[0] + reach * s + (s - 1.0) * 0.2])
  return sa, Ra, pa, sb, Rb, pb
