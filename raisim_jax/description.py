"""Host-side, mutable description of a world: what the OO layer and the loaders build and
`compile` turns into (Model, State). Plain dataclasses with numpy arrays; no JAX here."""

import dataclasses
from typing import Optional

import numpy as np

from raisim_jax.types import BodyType, MeshCollisionMode, ObjectType

ALL_GROUPS = (1 << 64) - 1       # RaiSim's CollisionGroup(-1): collides with every group
STATIC_GROUP = 1 << 63           # RaiSim puts static objects (ground, heightmaps) in group 63


@dataclasses.dataclass
class CollisionShape:
  """One primitive collision shape rigidly attached to a body.

  Attributes:
    object_type: ObjectType of the primitive (SPHERE, BOX, CYLINDER, CONE, CAPSULE, HALFSPACE)
      or MESH (a convex hull).
    size: (4,) RaiSim objectParam: sphere (r), box (x, y, z), capsule/cylinder/cone (r, h),
      halfspace (height); zeros for a mesh.
    position: (3,) shape origin in the body frame (a single body's frame: its `com` is the
      COM's position in it; an articulated link's frame: the joint frame).
    rotation: (3, 3) shape frame -> body frame.
    material: contact material name.
    collision_group, collision_mask: this shape's own collision bits
      (setObjectCollisionFilter with a localIdx); None: its object's.
    hull: a MESH's io.collision_mesh.ConvexHull (shape frame); None for the primitives.
  """
  object_type: ObjectType
  size: np.ndarray
  position: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  rotation: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))
  material: str = "default"
  collision_group: Optional[int] = None
  collision_mask: Optional[int] = None
  hull: Optional[object] = None


@dataclasses.dataclass(frozen=True)
class MeshSource:
  """Where a Mesh object's collision shapes came from (World.addMesh).

  Attributes:
    file: the mesh file's path as given.
    scale: the uniform scale applied to it.
    collision_mode: types.MeshCollisionMode (CONVEX_HULL or CONVEXIFY).
    coacd_options: the io.convex_decomposition.CoacdOptions of a CONVEXIFY mesh, else None.
    convex_parts: CoACD's parts [(vertices (V, 3), faces (F, 3))], mesh frame, scaled; empty
      for CONVEX_HULL. Each part collides as one MESH shape (its convex hull).
  """
  file: str
  scale: float
  collision_mode: MeshCollisionMode
  coacd_options: Optional[object] = None
  convex_parts: tuple = ()


@dataclasses.dataclass
class SingleBodyDescription:
  """A single-body object: inertia, collision shapes, body type, collision filter and state.

  `com` is the centre of mass in the body frame (the frame the shapes are placed in); the
  state (`position`, ...) is the COM's, so the shapes sit at position + R (shape - com)."""
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
  external_force: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  external_torque: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  linear_damping: float = 0.0
  angular_damping: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  collision_group: int = 1
  collision_mask: int = ALL_GROUPS
  appearance: str = ""
  mesh: Optional[MeshSource] = None   # a Mesh object's source (World.addMesh)


@dataclasses.dataclass
class MaterialPairProperties:
  """RaiSim's MaterialPairProperties: friction, restitution and static friction of a pair.

  The static coefficient defaults to the dynamic one (no static-friction effect)."""
  c_f: float = 0.8          # coefficient of (dynamic) friction
  c_r: float = 0.0          # coefficient of restitution
  r_th: float = 0.0         # restitution threshold: slower impacts do not bounce
  c_static_f: float = 0.8   # static friction coefficient (>= c_f)
  v_static: float = 0.0     # below this relative speed, friction blends towards c_static_f

  def as_row(self):
    return [self.c_f, self.c_r, self.r_th, self.c_static_f, self.v_static]


@dataclasses.dataclass
class BroadphaseSettings:
  """RaiSim's contact::BroadphaseSettings (field names as in the spec)."""
  type: int = 1  # BroadphaseType.Sap3Axis
  mbpWorldMin: tuple = (-100.0, -100.0, -100.0)
  mbpWorldMax: tuple = (100.0, 100.0, 100.0)
  mbpCellSize: tuple = (1.0, 1.0, 1.0)
  mbpPadding: float = 0.5
  mbpMaxCellsPerAxis: int = 128
  mbpMaxCellsPerObject: int = 64
  mbpUseWorldBounds: bool = True


@dataclasses.dataclass
class ContactSettings:
  """RaiSim's contact::ContactSettings with the spec's defaults.

  The GJK/EPA fields and swept CCD have no counterpart here (the narrowphase uses closed
  forms, SAT and an exact minimum overlap, docs/narrowphase.md; no swept CCD): other values
  than the defaults are rejected (compile.check_contact_settings)."""
  gjkMaxIterations: int = 32
  gjkTolerance: float = 1e-6
  epaMaxIterations: int = 64
  epaTolerance: float = 1e-4
  maxContactsPerPair: int = 8
  sweptCcdEnabled: bool = False
  sweptCcdMinSpeed: float = 0.0
  sweptCcdSpeculativeMargin: float = 1e-4
  broadphase: BroadphaseSettings = dataclasses.field(default_factory=BroadphaseSettings)


@dataclasses.dataclass
class SolverSettings:
  """Contact solver parameters (setContactSolverParam, setERP, iteration order)."""
  max_iterations: int = 150
  threshold: float = 1e-8
  erp: float = 0.2
  reverse_order: bool = False
  differentiable: bool = True
  gradient: str = "unrolled"


@dataclasses.dataclass
class SleepSettings:
  """Sleeping islands (World::setSleepingEnabled, setSleepingParameters); RaiSim's defaults."""
  enabled: bool = True
  linear_threshold: float = 0.002
  angular_threshold: float = 0.01
  quiet_steps: int = 2


@dataclasses.dataclass
class ArticulatedEntry:
  """An articulated system in a world: its loaded description and its current state.

  Attributes:
    name: object name.
    description: io.articulated_description.ArticulatedDescription.
    generalized_coordinate, generalized_velocity: (nq,), (nv,) float64.
    feedforward_force: (nv,).
    collision_group, collision_mask: 64-bit collision bits.
    source: the URDF path, or '' for a URDF string or a Child.
    urdf_text: the URDF as loaded when it is not the plain file at `source` (URDF text, a
      preprocessed template), '' otherwise (exportToXml writes it out).
    res_path: resource directory.
    p_target, d_target: (nq,), (nv,) PD targets (None: the initial configuration, zero).
    do_not_collide_with_parent: ArticulatedSystemOption.doNotCollideWithParent: a body and its
      parent body never collide.
    ignored_body_pairs: set of sorted (body, body) index pairs that never collide
      (ignoreCollisionBetween).
    integration_scheme: IntegrationScheme code (types.IntegrationScheme; the position update
      is in dynamics/articulated_integrate.py).
    p_gain, d_gain: (nv,) PD gains (None: zero).
    control_mode: 0 FORCE_AND_TORQUE, 1 PD_PLUS_FEEDFORWARD_TORQUE.
    actuation_lower, actuation_upper: (nv,) generalized-force bounds (None: from the URDF's
      effort limits, +-effort).
    springs: [joint_springs.SpringElement] added with addSpring (on top of the URDF's).
    allowed_internal_contacts: contacts kept per pair of collision bodies of this system
      (setAllowedNumberOfInternalContactsBetweenTwoBodies; RaiSim's default 1).
  """
  name: str
  description: object
  generalized_coordinate: np.ndarray
  generalized_velocity: np.ndarray
  feedforward_force: np.ndarray
  collision_group: int = 1
  collision_mask: int = ALL_GROUPS
  source: str = ""
  res_path: str = ""
  urdf_text: str = ""
  p_target: np.ndarray | None = None
  d_target: np.ndarray | None = None
  do_not_collide_with_parent: bool = True
  ignored_body_pairs: set = dataclasses.field(default_factory=set)
  integration_scheme: int = 1   # IntegrationScheme.SEMI_IMPLICIT
  p_gain: np.ndarray | None = None
  d_gain: np.ndarray | None = None
  control_mode: int = 0
  actuation_lower: np.ndarray | None = None
  actuation_upper: np.ndarray | None = None
  springs: list = dataclasses.field(default_factory=list)
  allowed_internal_contacts: int = 1


@dataclasses.dataclass
class WorldDescription:
  """Everything needed to compile a world.

  `material_pairs` maps a sorted (name, name) tuple to MaterialPairProperties; pairs not in it
  get `default_material`. `contact_capacity` None sizes the contact buffer automatically."""
  bodies: list = dataclasses.field(default_factory=list)
  articulated: list = dataclasses.field(default_factory=list)
  gravity: np.ndarray = dataclasses.field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
  time_step: float = 0.005
  time: float = 0.0
  material_pairs: dict = dataclasses.field(default_factory=dict)
  default_material: MaterialPairProperties = dataclasses.field(
      default_factory=MaterialPairProperties)
  contact_settings: ContactSettings = dataclasses.field(default_factory=ContactSettings)
  solver: SolverSettings = dataclasses.field(default_factory=SolverSettings)
  sleeping: SleepSettings = dataclasses.field(default_factory=SleepSettings)
  contact_capacity: int | None = None
