"""Host-side description of an articulated system (plain Python + NumPy, no JAX).

Two layers:

- *Raw* URDF-level records (`LinkSpec`, `JointSpec`): one per `<link>` / `<joint>`, frames
  exactly as written in the file.
- The *merged* description (`ArticulatedDescription`): one `BodyDescription` per movable body
  (fixed joints merged into their parent body), in RaiSim's joint order, plus one
  `FrameDescription` per joint (fixed joints included).

Conventions (RaiSim):
- A body's frame is its parent joint's frame after the joint transformation (for URDF: the
  child link frame of its movable joint). Body 0 is the root: the floating base (joint type
  `floating`) or, for a root link named `world`, the link fixed to the world (type `fixed`).
- `joint_pos`/`joint_rot`: placement of the joint frame in the parent *body* frame
  (`p_child = p_parent + R_parent joint_pos`, `R_child = R_parent joint_rot R_joint(q)`); for
  body 0 they are relative to the world.
- `axis`: unit joint axis in the joint frame (revolute, prismatic).
- Spherical: q = quaternion (w, x, y, z) of the child relative to the joint frame, u = angular
  velocity expressed in the joint (parent) frame. Floating: q = [pos, quat(w,x,y,z)], u = [lin
  vel world, ang vel world].
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from raisim_jax.types import (JOINT_DIMS, JOINT_FIXED, JOINT_FLOATING, JOINT_PRISMATIC,
                              JOINT_REVOLUTE, JOINT_SPHERICAL)

JOINT_TYPE_NAMES = {
    JOINT_FIXED: "fixed",
    JOINT_FLOATING: "floating",
    JOINT_REVOLUTE: "revolute",
    JOINT_PRISMATIC: "prismatic",
    JOINT_SPHERICAL: "spherical",
}

def rpy_to_matrix(rpy) -> np.ndarray:
  """URDF roll-pitch-yaw to a rotation matrix Rz(yaw) Ry(pitch) Rx(roll) (NumPy)."""
  r, p, y = (float(v) for v in rpy)
  cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
  return np.array([
      [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
      [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
      [-sp, cp * sr, cp * cr],
  ])


def axis_angle_matrix(axis, angle) -> np.ndarray:
  """Rotation matrix by `angle` about `axis` (normalized here; must not be zero), Rodrigues'
  formula (NumPy)."""
  k = np.asarray(axis, float) / np.linalg.norm(axis)
  skew = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
  return np.eye(3) + np.sin(angle) * skew + (1.0 - np.cos(angle)) * skew @ skew


@dataclasses.dataclass
class Geometry:
  """A collision or visual shape.

  shape: 'box' (size = (x, y, z)), 'sphere' (radius), 'cylinder' (radius, length),
  'capsule' (radius, height = distance between the sphere centres), 'ellipsoid' (size = the
  three radii; MJCF only), 'mesh' (filename, or inline `vertices` (N, 3) of an MJCF mesh
  asset; scale).
  `pos`/`rot`: pose of the shape in its owner's frame (the link's while raw, the merged body's
  in a `BodyDescription`).
  """
  shape: str
  pos: np.ndarray
  rot: np.ndarray
  size: Optional[np.ndarray] = None
  radius: float = 0.0
  length: float = 0.0
  filename: str = ""
  scale: np.ndarray = dataclasses.field(default_factory=lambda: np.ones(3))
  vertices: Optional[np.ndarray] = None  # inline mesh vertices (MJCF), unscaled
  color: Optional[np.ndarray] = None  # (4,) RGBA of a visual, None where the file gives none
  material: str = ""          # contact material name (<material><contact name=.../>) if any
  collision_group: Optional[int] = None  # own collision bits (setObjectCollisionFilter with
  collision_mask: Optional[int] = None   # a localIdx); None: the system's
  name: str = ""              # RaiSim collision body name "LINK/INDEX"
  link: str = ""              # link the shape was declared in
  sourceline: Optional[int] = None  # line of its URDF element, for error messages


@dataclasses.dataclass
class Inertial:
  """Mass, COM (owner frame) and rotational inertia about the COM (owner frame)."""
  mass: float = 0.0
  com: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  inertia: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((3, 3)))


@dataclasses.dataclass
class LinkSpec:
  """One URDF `<link>` (frames as written)."""
  name: str
  inertial: Inertial = dataclasses.field(default_factory=Inertial)
  collisions: list = dataclasses.field(default_factory=list)
  visuals: list = dataclasses.field(default_factory=list)
  sourceline: Optional[int] = None
  sensors: list = dataclasses.field(default_factory=list)   # io.urdf_sensors.SensorSpec


@dataclasses.dataclass
class JointSpec:
  """One URDF `<joint>` (frames as written). `type` is a JOINT_* code."""
  name: str
  type: int
  parent: str
  child: str
  pos: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  rot: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))
  axis: np.ndarray = dataclasses.field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
  lower: float = -np.inf
  upper: float = np.inf
  velocity_limit: float = np.inf
  effort_limit: float = np.inf
  damping: float = 0.0
  friction: float = 0.0
  rotor_inertia: float = 0.0
  stiffness: float = 0.0
  spring_mount: Optional[np.ndarray] = None   # 1 value (revolute/prismatic) or quat (w,x,y,z)
  sourceline: Optional[int] = None


@dataclasses.dataclass
class BodyDescription:
  """One movable body (links merged through fixed joints) and its parent joint."""
  name: str                    # name of the link that owns the body frame
  joint_name: str
  joint_type: int
  parent: int                  # parent body index, -1 for the root
  joint_pos: np.ndarray        # (3,) joint frame origin in parent body frame
  joint_rot: np.ndarray        # (3, 3) joint frame orientation in parent body frame
  axis: np.ndarray             # (3,) unit axis in joint frame
  mass: float
  com: np.ndarray              # (3,) body frame
  inertia: np.ndarray          # (3, 3) about COM, body frame
  rotor_inertia: float = 0.0
  damping: float = 0.0
  friction: float = 0.0
  stiffness: float = 0.0
  spring_mount: Optional[np.ndarray] = None
  lower: float = -np.inf
  upper: float = np.inf
  velocity_limit: float = np.inf
  effort_limit: float = np.inf
  collisions: list = dataclasses.field(default_factory=list)   # Geometry in body frame
  visuals: list = dataclasses.field(default_factory=list)      # Geometry in body frame
  links: list = dataclasses.field(default_factory=list)        # names of merged links


@dataclasses.dataclass
class FrameDescription:
  """A frame per joint (fixed ones included), rigidly attached to body `body`.

  The frame is the joint frame *after* the joint transformation (the child link frame); for a
  movable joint that is the body frame itself (zero offset).
  """
  name: str
  body: int
  pos: np.ndarray              # (3,) in body frame
  rot: np.ndarray              # (3, 3) in body frame
  joint_type: int
  parent_link: str
  child_link: str


@dataclasses.dataclass
class PinSpec:
  """One closed-loop pin (URDF `<constraints><pin body1 body2 anchor/>`): the point `anchor`
  of link `body1` (in that link's frame) and the point of link `body2` that coincides with it
  at the constraints block's `nominal_config` stay at the same world position."""
  body1: str
  body2: str
  anchor: np.ndarray
  sourceline: Optional[int] = None


@dataclasses.dataclass
class ArticulatedDescription:
  """A merged kinematic tree in RaiSim's joint order (see module docstring)."""
  name: str
  bodies: list
  frames: list
  fixed_base: bool
  source: str = "<string>"
  links: list = dataclasses.field(default_factory=list)     # raw LinkSpec, file order
  joints: list = dataclasses.field(default_factory=list)    # raw JointSpec, file order
  pins: list = dataclasses.field(default_factory=list)      # PinSpec, closed loops
  nominal_config: Optional[np.ndarray] = None               # (nq,) of the constraints block

  @property
  def sensors(self):
    """Sensors of the links' sensor sets (io.urdf_sensors.SensorSpec), in link order."""
    return [sensor for link in self.links for sensor in link.sensors]

  @property
  def num_bodies(self) -> int:
    return len(self.bodies)

  @property
  def gc_dim(self) -> int:
    return sum(JOINT_DIMS[b.joint_type][0] for b in self.bodies)

  @property
  def dof(self) -> int:
    return sum(JOINT_DIMS[b.joint_type][1] for b in self.bodies)

  @property
  def body_names(self):
    return [b.name for b in self.bodies]

  @property
  def movable_joint_names(self):
    return [b.joint_name for b in self.bodies]

  @property
  def frame_names(self):
    return [f.name for f in self.frames]

  def link_placement(self, link: str):
    """(body index, (3,) position, (3, 3) rotation) of link `link`'s frame in its body's
    frame (fixed joints are merged, so a link may sit inside its parent's body)."""
    for index, body in enumerate(self.bodies):
      if body.name == link:
        return index, np.zeros(3), np.eye(3)
    for frame in self.frames:
      if frame.child_link == link:
        return frame.body, np.asarray(frame.pos, float), np.asarray(frame.rot, float)
    raise KeyError(link)

  def zero_configuration(self) -> np.ndarray:
    """(nq,) joint angles zero, unit quaternions identity (floating base and spherical)."""
    gc = np.zeros(self.gc_dim)
    offset = 0
    for body in self.bodies:
      if body.joint_type == JOINT_FLOATING:
        gc[offset + 3] = 1.0
      elif body.joint_type == JOINT_SPHERICAL:
        gc[offset] = 1.0
      offset += JOINT_DIMS[body.joint_type][0]
    return gc
