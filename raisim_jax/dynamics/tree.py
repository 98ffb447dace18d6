"""Compile an `ArticulatedDescription` into the `ArticulatedModel` pytree (types.py).

Static metadata (hashable tuples) holds the topology; every physical number is an array leaf,
so a batch of models can be vmapped (domain randomization) and differentiated.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from raisim_jax import validation
from raisim_jax.host_arrays import device_array
from raisim_jax.io.articulated_description import ArticulatedDescription
from raisim_jax.types import (JOINT_DIMS, JOINT_FLOATING, JOINT_PRISMATIC,
                              JOINT_REVOLUTE, JOINT_SPHERICAL, ArticulatedModel)


def compile_articulated(description: ArticulatedDescription, dtype=None) -> ArticulatedModel:
  """Build the `ArticulatedModel` of a description (dtype default: jnp default float)."""
  if dtype is None:
    dtype = jnp.zeros(()).dtype
  bodies = description.bodies
  nb = len(bodies)
  parent = tuple(int(b.parent) for b in bodies)
  for i, p in enumerate(parent):
    if p >= i:
      raise ValueError(f"{description.source}: body '{bodies[i].name}' precedes its parent")
  jtype = tuple(int(b.joint_type) for b in bodies)
  gc_dim = tuple(JOINT_DIMS[t][0] for t in jtype)
  gv_dim = tuple(JOINT_DIMS[t][1] for t in jtype)
  gc_offset = tuple(int(x) for x in np.concatenate([[0], np.cumsum(gc_dim)[:-1]]))
  gv_offset = tuple(int(x) for x in np.concatenate([[0], np.cumsum(gv_dim)[:-1]]))
  nq, nv = sum(gc_dim), sum(gv_dim)
  depth = []
  for i, p in enumerate(parent):
    depth.append(0 if p < 0 else depth[p] + 1)
  levels = tuple(tuple(i for i in range(nb) if depth[i] == d) for d in range(max(depth) + 1))
  dof_body = tuple(i for i in range(nb) for _ in range(gv_dim[i]))

  def per_dof(attr):
    return np.array([getattr(bodies[i], attr) for i in dof_body], dtype=float).reshape(nv)

  # URDF effort and velocity limits; 0 (what files write for "unspecified") means no limit.
  effort = per_dof("effort_limit")
  effort = np.where(effort > 0, effort, np.inf)
  velocity_limit = per_dof("velocity_limit")
  velocity_limit = np.where(velocity_limit > 0, velocity_limit, np.inf)
  spring = np.zeros(nq)
  lower, upper = np.full(nq, -np.inf), np.full(nq, np.inf)
  for i, b in enumerate(bodies):
    o = gc_offset[i]
    if jtype[i] in (JOINT_REVOLUTE, JOINT_PRISMATIC):
      if b.spring_mount is not None:
        spring[o] = float(np.ravel(b.spring_mount)[0])
      lower[o], upper[o] = b.lower, b.upper
    elif jtype[i] == JOINT_SPHERICAL:
      spring[o:o + 4] = (np.ravel(b.spring_mount)[:4] if b.spring_mount is not None
                         and np.size(b.spring_mount) >= 4 else [1.0, 0.0, 0.0, 0.0])
      if validation.cone_angle_problem(b.upper):
        raise ValueError(f"joint '{b.joint_name}': {validation.cone_angle_problem(b.upper)}")
      upper[o] = b.upper  # cone angle (RaiSim's spherical limit {angle, NOT_USED})
    elif jtype[i] == JOINT_FLOATING:
      spring[o + 3] = 1.0
  frames = description.frames

  def arr(values, *shape):
    """`values` as a `dtype` device array, reshaped to `shape` when one is given."""
    values = np.asarray(values, dtype=float)
    return device_array(values.reshape(shape) if shape else values, dtype)

  return ArticulatedModel(
      joint_pos=arr([b.joint_pos for b in bodies], nb, 3),
      joint_rot=arr([b.joint_rot for b in bodies], nb, 3, 3),
      joint_axis=arr([b.axis for b in bodies], nb, 3),
      mass=arr([b.mass for b in bodies]),
      com=arr([b.com for b in bodies], nb, 3),
      inertia=arr([b.inertia for b in bodies], nb, 3, 3),
      rotor_inertia=arr(per_dof("rotor_inertia")),
      damping=arr(per_dof("damping")),
      stiffness=arr(per_dof("stiffness")),
      spring_mount=arr(spring),
      joint_lower=arr(lower), joint_upper=arr(upper),
      velocity_limit=arr(velocity_limit),
      actuation_lower=arr(-effort), actuation_upper=arr(effort),
      p_gain=arr(np.zeros(nv)), d_gain=arr(np.zeros(nv)), pd_enabled=arr(0.0),
      frame_pos=arr([f.pos for f in frames], len(frames), 3),
      frame_rot=arr([f.rot for f in frames], len(frames), 3, 3),
      num_bodies=nb, num_gc=nq, num_gv=nv, fixed_base=bool(description.fixed_base),
      parent=parent, joint_type=jtype, gc_offset=gc_offset, gv_offset=gv_offset,
      gc_dim=gc_dim, gv_dim=gv_dim, levels=levels, dof_body=dof_body,
      frame_body=tuple(int(f.body) for f in frames),
      body_names=tuple(b.name for b in bodies),
      joint_names=tuple(b.joint_name for b in bodies),
      frame_names=tuple(f.name for f in frames))


# ---- static index tables (NumPy, cached on the static topology) ------------------------------

@functools.lru_cache(maxsize=256)
def subtree_matrix(parent: tuple) -> np.ndarray:
  """A[i, j] = 1 if body j is in the subtree of body i (j == i or j a descendant)."""
  nb = len(parent)
  a = np.eye(nb)
  for j in range(nb):
    p = parent[j]
    while p >= 0:
      a[p, j] = 1.0
      p = parent[p]
  return a


@functools.lru_cache(maxsize=256)
def dof_support(parent: tuple, dof_body: tuple) -> np.ndarray:
  """K[i, a] = 1 if generalized velocity a moves body i (its body is i or an ancestor)."""
  a = subtree_matrix(parent)
  return a[np.asarray(dof_body, dtype=int), :].T.copy() if dof_body else np.zeros((len(parent), 0))


@functools.lru_cache(maxsize=256)
def elimination_levels(parent: tuple, dof_body: tuple) -> tuple:
  """Static elimination order of the mass matrix's dofs, as levels of dofs that can be
  eliminated at once (`math.dense.spd_inverse`): tuple of tuples of dof indices.

  M[a, b] is zero unless one of the dofs a, b supports the other (crba). In the dof tree (a
  body's dofs chained in order, its first dof hanging from the last dof of the nearest
  ancestor body that has dofs) level k holds the dofs whose subtrees are k dofs deep: a dof
  comes after all of its descendants, and two dofs of one level lie in disjoint subtrees,
  so M stays zero between them until both are eliminated (no fill-in outside the ancestor
  pattern). A quadruped (floating base, four 3-dof legs): 9 levels for 18 dofs; a chain
  gets one dof per level."""
  nv = len(dof_body)
  # compile_articulated's order: parents before children, each body's dofs contiguous.
  assert all(p < i for i, p in enumerate(parent)), parent
  assert list(dof_body) == sorted(dof_body), dof_body
  last_dof = {}                     # body -> its last dof
  dof_parent = []
  for a, body in enumerate(dof_body):
    if a > 0 and dof_body[a - 1] == body:
      dof_parent.append(a - 1)
    else:
      ancestor = parent[body]
      while ancestor >= 0 and ancestor not in last_dof:
        ancestor = parent[ancestor]
      dof_parent.append(last_dof[ancestor] if ancestor >= 0 else -1)
    last_dof[body] = a
  height = [0] * nv
  for a in reversed(range(nv)):     # parents come before their children
    if dof_parent[a] >= 0:
      height[dof_parent[a]] = max(height[dof_parent[a]], height[a] + 1)
  return tuple(tuple(a for a in range(nv) if height[a] == h)
               for h in range(max(height, default=-1) + 1))


@functools.lru_cache(maxsize=256)
def dof_tables(model_key):
  """Per level: (bodies, parents, padded dof table (n, nd_max), pad mask) with pad index nv."""
  parent, gv_offset, gv_dim, levels, nv = model_key
  out = []
  for level in levels:
    idx = np.asarray(level, dtype=int)
    par = np.asarray([parent[i] for i in level], dtype=int)
    nd = max(gv_dim[i] for i in level)
    table = np.full((len(level), nd), nv, dtype=int)
    for r, i in enumerate(level):
      table[r, :gv_dim[i]] = np.arange(gv_offset[i], gv_offset[i] + gv_dim[i])
    out.append((idx, par, table, (table == nv).astype(float)))
  return tuple(out)


def level_tables(model: ArticulatedModel):
  return dof_tables((model.parent, model.gv_offset, model.gv_dim, model.levels, model.num_gv))
