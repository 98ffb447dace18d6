"""The pytrees of the pure core: Model (what does not change while stepping), State (what
does), Control (per-step inputs), and the enums shared by the core and the OO layer.

Conventions (RaiSim's): quaternions (w, x, y, z) body -> world; positions, velocities, forces
in the world frame unless a name says `_body`; a single body's position is its centre of mass.
Static metadata (counts, type codes) is declared with `static_field()` and hashed into the jit
cache key; every physical number is an array leaf, so `vmap` over a batch of models works for
domain randomization and `grad` flows to it.
"""

import enum

import jax
import jax.numpy as jnp

from raisim_jax.struct import dataclass, static_field


class BodyType(enum.IntEnum):
  """RaiSim body types. STATIC never moves and has infinite mass; KINEMATIC moves with its set
  velocity and has infinite mass (a conveyor belt); DYNAMIC obeys Newton-Euler."""
  STATIC = 0
  KINEMATIC = 1
  DYNAMIC = 2


class ObjectType(enum.IntEnum):
  """RaiSim's object types, as returned by `getObjectType()`."""
  SPHERE = 0
  BOX = 1
  CYLINDER = 2
  CONE = 3
  CAPSULE = 4
  MESH = 5
  HALFSPACE = 6
  COMPOUND = 7
  HEIGHTMAP = 8
  ARTICULATED_SYSTEM = 9


@dataclass
class SingleBodyModel:
  """Inertial and damping parameters of the single-body objects, one row per body.

  Attributes:
    mass: (n,) kg. Ignored (may be 0) for STATIC and KINEMATIC bodies.
    inertia_body: (n, 3, 3) inertia about the COM, body frame.
    com_body: (n, 3) COM in the body (shape) frame; the state's position is the COM, so this
      only places collision shapes: shape origin = position - R @ com_body.
    linear_damping: (n,) N s/m, drag force -c v (world frame).
    angular_damping: (n, 3) N m s, drag torque -diag(c) Omega (body frame).
    body_type: (n,) int32 BodyType codes (a leaf: setBodyType needs no recompile).
  """
  mass: jax.Array
  inertia_body: jax.Array
  com_body: jax.Array
  linear_damping: jax.Array
  angular_damping: jax.Array
  body_type: jax.Array


@dataclass
class Model:
  """Everything constant while stepping.

  Attributes:
    bodies: SingleBodyModel of the single-body objects (world index order).
    gravity: (3,) m/s^2, world frame.
    time_step: () s.
    num_bodies: static count of single-body objects.
    gyroscopic_iterations: static fixed-point iterations of the implicit-midpoint rotation
      update (error shrinks like (dt |omega|)^k; 4 is round-off for dt |omega| < 1e-2).
  """
  bodies: SingleBodyModel
  gravity: jax.Array
  time_step: jax.Array
  num_bodies: int = static_field()
  gyroscopic_iterations: int = static_field(default=4)

  @property
  def dtype(self):
    return self.gravity.dtype


@dataclass
class SingleBodyState:
  """Kinematic state of the single bodies, world frame.

  Attributes:
    position: (n, 3) COM position.
    quaternion: (n, 4) orientation (w, x, y, z), body -> world.
    linear_velocity: (n, 3) COM velocity.
    angular_velocity: (n, 3) angular velocity, world frame.
    external_force: (n, 3) force at the COM, applied during the next integrate2 then cleared.
    external_torque: (n, 3) torque, same lifetime.
  """
  position: jax.Array
  quaternion: jax.Array
  linear_velocity: jax.Array
  angular_velocity: jax.Array
  external_force: jax.Array
  external_torque: jax.Array


@dataclass
class State:
  """Everything that changes while stepping.

  Attributes:
    bodies: SingleBodyState.
    time: () world time in s, advanced by integrate2.
  """
  bodies: SingleBodyState
  time: jax.Array


@dataclass
class Control:
  """Per-step inputs added to the state's pending external loads (world frame).

  Attributes:
    body_force: (n, 3) force at each single body's COM.
    body_torque: (n, 3) torque on each single body.
  """
  body_force: jax.Array
  body_torque: jax.Array

  @classmethod
  def zeros(cls, model: Model) -> "Control":
    zeros = jnp.zeros((model.num_bodies, 3), model.dtype)
    return cls(body_force=zeros, body_torque=zeros)
