"""Collision bodies: the rigid bodies that carry collision shapes, in one index space.

Index k < num_bodies is single-body object k (its pose is its COM and orientation); the
bodies of articulated system s follow at `CollisionModel.articulated_body_offset[s] + b` (their
pose is body b's frame: the parent joint frame after the joint motion). A shape's
`position_body` is relative to its collision body's pose, so both kinds are placed alike.
Contacts store collision-body indices in `body_a` / `body_b`.
"""

import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.dynamics import system_groups
from raisim_jax.math import quaternion as quat
from raisim_jax.types import BodyType, Model, State


def collision_body_poses(model: Model, state: State):
  """World poses of every collision body: (positions (NB, 3), rotations (NB, 3, 3))."""
  poses = system_groups.map_systems(
      lambda system_model, system: kin_lib.body_poses(system_model,
                                                      system.generalized_coordinate)[:2],
      model.articulated, state.articulated)
  positions = [state.bodies.position] + [pose[0] for pose in poses]
  rotations = [quat.to_matrix(state.bodies.quaternion)] + [pose[1] for pose in poses]
  return jnp.concatenate(positions), jnp.concatenate(rotations)


def collision_body_types(model: Model):
  """(NB,) int32 BodyType of every collision body: single bodies from the model leaf; the
  links of articulated systems are DYNAMIC except the root of a fixed-base system (STATIC)."""
  link_types = []
  for system_model in model.articulated:
    types = np.full(system_model.num_bodies, int(BodyType.DYNAMIC), np.int32)
    if system_model.fixed_base:
      types[0] = int(BodyType.STATIC)
    link_types.append(types)
  if not link_types:
    return model.bodies.body_type
  return jnp.concatenate([model.bodies.body_type, jnp.asarray(np.concatenate(link_types))])


def body_owner_tables(model: Model):
  """Static numpy tables over collision bodies: (system (NB,) -1 for single bodies,
  local body index (NB,): the single-body row or the body index inside its system)."""
  n = model.num_bodies
  system = [-1] * n
  local = list(range(n))
  for s, system_model in enumerate(model.articulated):
    system += [s] * system_model.num_bodies
    local += list(range(system_model.num_bodies))
  return np.asarray(system, np.int32), np.asarray(local, np.int32)
