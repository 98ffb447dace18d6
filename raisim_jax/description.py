"""Host-side, mutable description of a world: what the OO layer and the loaders build and
`compile` turns into (Model, State). Plain dataclasses with numpy arrays; no JAX here."""

import dataclasses

import numpy as np

from raisim_jax.types import BodyType, ObjectType

ALL_GROUPS = (1 << 64) - 1       # RaiSim's CollisionGroup(-1): collides with every group
STATIC_GROUP = 1 << 63           # RaiSim puts static objects (ground, heightmaps) in group 63


@dataclasses.dataclass
class CollisionShape:
  """One primitive collision shape rigidly attached to a body.

  Attributes:
    object_type: ObjectType of the primitive (SPHERE, BOX, CYLINDER, CONE, CAPSULE, HALFSPACE).
    size: (4,) RaiSim objectParam: sphere (r), box (x, y, z), capsule/cylinder/cone (r, h),
      halfspace (height).
    position: (3,) shape origin in the body frame, relative to the body's COM.
    rotation: (3, 3) shape frame -> body frame.
    material: contact material name.
  """
  object_type: ObjectType
  size: np.ndarray
  position: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  rotation: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))
  material: str = "default"


@dataclasses.dataclass
class SingleBodyDescription:
  """A single-body object: inertia, collision shapes, body type, collision filter and state."""
  name: str
  object_type: ObjectType
  size: np.ndarray
  mass: float
  inertia: np.ndarray
  com: np.ndarray
  shapes: list
  body_type: BodyType = BodyType.DYNAMIC
  position: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  quaternion: np.ndarray = dataclasses.field(default_factory=lambda: np.array([1.0, 0, 0, 0]))
  linear_velocity: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  angular_velocity: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  linear_damping: float = 0.0
  angular_damping: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  collision_group: int = 1
  collision_mask: int = ALL_GROUPS
  appearance: str = ""


@dataclasses.dataclass
class WorldDescription:
  """Everything needed to compile a world."""
  bodies: list = dataclasses.field(default_factory=list)
  gravity: np.ndarray = dataclasses.field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
  time_step: float = 0.005
  time: float = 0.0
