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

from raisim_jax.math import rotation
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


class MeshCollisionMode(enum.IntEnum):
  """How `World.addMesh` collides a mesh (RaiSim's MeshCollisionMode): ORIGINAL_MESH the
  non-convex triangle mesh (not simulated by raisim_jax: refused), CONVEX_HULL one convex
  hull, CONVEXIFY a CoACD convex decomposition (the default)."""
  ORIGINAL_MESH = 0
  CONVEX_HULL = 1
  CONVEXIFY = 2


# ---- articulated systems ----------------------------------------------------------------------

JOINT_FIXED = 0
JOINT_FLOATING = 1
JOINT_REVOLUTE = 2
JOINT_PRISMATIC = 3
JOINT_SPHERICAL = 4

#: (num generalized coordinates, num generalized velocities) per joint type.
JOINT_DIMS = {
    JOINT_FIXED: (0, 0),
    JOINT_FLOATING: (7, 6),
    JOINT_REVOLUTE: (1, 1),
    JOINT_PRISMATIC: (1, 1),
    JOINT_SPHERICAL: (4, 3),
}


@dataclass
class ArticulatedModel:
  """A kinematic tree of `num_bodies` movable bodies, body i with parent joint i.

  Leaves (B = num_bodies, nv = num_gv, nq = num_gc, F = number of frames):
    joint_pos (B, 3), joint_rot (B, 3, 3): joint frame in the parent body frame (world for 0).
    joint_axis (B, 3): unit axis in the joint frame (revolute / prismatic).
    mass (B,), com (B, 3) body frame, inertia (B, 3, 3) about the COM in the body frame.
    rotor_inertia (nv,), damping (nv,), stiffness (nv,): per generalized velocity.
    spring_mount (nq,): spring rest configuration (angle / position / quaternion w,x,y,z).
    joint_lower (nq,), joint_upper (nq,) position limits (inf where absent); a spherical
      joint's cone angle sits in joint_upper at its first coordinate (URDF <limit upper>);
    velocity_limit (nv,): |u| bound per dof (inf where absent or 0), enforced after the solve
      by impulses at the joints (`articulated_integrate.limit_velocity`).
    actuation_lower (nv,), actuation_upper (nv,): bounds on feed-forward + PD generalized
      force (+-inf where absent or 0; URDF `effort` gives -effort / +effort).
    p_gain (nv,), d_gain (nv,): PD gains (setPdGains), used when pd_enabled is 1.
    pd_enabled (): 1.0 in PD_PLUS_FEEDFORWARD_TORQUE mode, 0.0 in FORCE_AND_TORQUE mode (a
      float, so jax.grad w.r.t. the model works).
    frame_pos (F, 3), frame_rot (F, 3, 3): frame pose in its body frame.
  Static:
    parent: parent body per body (-1 for the root); joint_type: JOINT_* code per body;
    gc_offset/gv_offset, gc_dim/gv_dim per body; levels: body indices per tree depth;
    dof_body: body of each generalized velocity; frame_body: body of each frame; names;
    integration_scheme: IntegrationScheme code of the position update
      (dynamics/articulated_integrate.py).
  """
  joint_pos: jax.Array
  joint_rot: jax.Array
  joint_axis: jax.Array
  mass: jax.Array
  com: jax.Array
  inertia: jax.Array
  rotor_inertia: jax.Array
  damping: jax.Array
  stiffness: jax.Array
  spring_mount: jax.Array
  joint_lower: jax.Array
  joint_upper: jax.Array
  velocity_limit: jax.Array
  actuation_lower: jax.Array
  actuation_upper: jax.Array
  p_gain: jax.Array
  d_gain: jax.Array
  pd_enabled: jax.Array
  frame_pos: jax.Array
  frame_rot: jax.Array
  num_bodies: int = static_field()
  num_gc: int = static_field()
  num_gv: int = static_field()
  fixed_base: bool = static_field()
  parent: tuple = static_field()
  joint_type: tuple = static_field()
  gc_offset: tuple = static_field()
  gv_offset: tuple = static_field()
  gc_dim: tuple = static_field()
  gv_dim: tuple = static_field()
  levels: tuple = static_field()
  dof_body: tuple = static_field()
  frame_body: tuple = static_field()
  body_names: tuple = static_field()
  joint_names: tuple = static_field()
  frame_names: tuple = static_field()
  integration_scheme: int = static_field(default=1)

  @property
  def dtype(self):
    return self.mass.dtype

  def frame_index(self, name: str) -> int:
    return self.frame_names.index(name)

  def body_index(self, name: str) -> int:
    return self.body_names.index(name)


# ---- single bodies -----------------------------------------------------------------------------

@dataclass
class SingleBodyModel:
  """Inertial and damping parameters of the single-body objects, one row per body.

  Attributes:
    mass: (n,) kg. Ignored (may be 0) for STATIC and KINEMATIC bodies.
    inertia_body: (n, 3, 3) inertia about the COM, body frame.
    linear_damping: (n,) N s/m, drag force -c v (world frame).
    angular_damping: (n, 3) N m s, drag torque -diag(c) Omega (body frame).
    body_type: (n,) int32 BodyType codes (a leaf: setBodyType needs no recompile).
  """
  mass: jax.Array
  inertia_body: jax.Array
  linear_damping: jax.Array
  angular_damping: jax.Array
  body_type: jax.Array


class IntegrationScheme(enum.IntEnum):
  """RaiSim's IntegrationScheme of an articulated system's position update (the velocity is
  always the implicit, contact-solved end-of-step velocity u+):
  TRAPEZOID q += dt (u + u+)/2; SEMI_IMPLICIT (default, single bodies use it too) q += dt u+;
  EULER q += dt u; RUNGE_KUTTA_4: classical RK4 of the contact-free dynamics, used in steps
  where the system has no contact or joint-limit row (SEMI_IMPLICIT otherwise)."""
  TRAPEZOID = 0
  SEMI_IMPLICIT = 1
  EULER = 2
  RUNGE_KUTTA_4 = 3


class ControlMode(enum.IntEnum):
  """RaiSim's ControlMode of an articulated system."""
  FORCE_AND_TORQUE = 0
  PD_PLUS_FEEDFORWARD_TORQUE = 1


class BroadphaseType(enum.IntEnum):
  """RaiSim's contact::BroadphaseType."""
  None_ = 0
  Sap3Axis = 1
  MultiBoxPrune = 2


@dataclass
class StepVelocity:
  """Velocities of the single bodies over one step, world frame.

  Attributes:
    linear: (n, 3) COM velocity used to move the bodies (contact impulses add to it).
    angular: (n, 3) midpoint angular velocity used to rotate the bodies.
    gyroscopic_correction: (n, 3) end-of-step minus midpoint angular velocity (world frame at
      the start of the step), zero for spheres and non-dynamic bodies.
  """
  linear: jax.Array
  angular: jax.Array
  gyroscopic_correction: jax.Array


# ---- collision ---------------------------------------------------------------------------------

@dataclass
class ContactPoints:
  position: jax.Array  # (K, 3) world, midway between the surfaces
  normal: jax.Array    # (K, 3) world unit vector pointing to object A
  depth: jax.Array     # (K,) penetration depth, > 0 when penetrating
  valid: jax.Array     # (K,) bool

  def flip(self):
    """The same contacts with A and B exchanged (normals reversed)."""
    return self.replace(normal=-self.normal)


@dataclass
class ShapeModel:
  """Collision shapes, one row per shape (a compound has several per body).

  Attributes:
    size: (ns, 4) RaiSim objectParam (sphere r; box x, y, z; capsule/cylinder/cone r, h).
    position_body: (ns, 3) shape origin relative to its body's COM, body frame.
    rotation_body: (ns, 3, 3) shape frame -> body frame.
    material: (ns,) int32 material ids (rows of MaterialModel.pair_table).
    collision_group: (ns, 2) uint32 low/high words of the 64-bit group bits.
    collision_mask: (ns, 2) uint32 low/high words of the 64-bit mask bits.
    body: (ns,) int32 collision-body index of each shape (a leaf: a shape may change body
      without a recompile, e.g. when the OO world fills a padded shape row).
    hull_vertices: (nh, V, 4) the convex hulls of the MESH shapes, in shape order
      (`collision.shapes.hull_rows`), shape frame: xyz, and 1 for a vertex, 0 for padding
      (a repeated vertex); (0, 1, 4) without meshes.
    hull_planes: (nh, F, 4) their face planes (n, c), solid where n . x + c <= 0; padding
      (0, 0, 0, -1).
    hull_triangles: (nh, T, 3) int32 their boundary triangles (rows of `hull_vertices`);
      padding (0, 0, 0); (0, 1, 3) without meshes.
    shape_type: static tuple of collision.shapes.ShapeType codes (single-body rows come in
      blocks of one type; articulated link rows follow in link order).
  """
  size: jax.Array
  position_body: jax.Array
  rotation_body: jax.Array
  material: jax.Array
  collision_group: jax.Array
  collision_mask: jax.Array
  body: jax.Array
  hull_vertices: jax.Array
  hull_planes: jax.Array
  hull_triangles: jax.Array
  shape_type: tuple = static_field()


@dataclass
class PairGroup:
  """Candidate shape pairs of one (type_a, type_b) combination; A is the first shape.

  Attributes:
    shape_a, shape_b: (P,) int32 shape indices.
    pair_index: (P,) int32 index of each pair in the world's pair list (warm-start key).
    enabled: (P,) bool, False for pairs that never collide: shapes of one body, a body and
      its parent (doNotCollideWithParent), ignoreCollisionBetween pairs.
    type_a, type_b: static ShapeType codes.
    points: static contact slots per pair (min of the pair's manifold size and
      maxContactsPerPair).
    point_limit: (P,) int32 contacts kept per pair (the deepest first): `points`, or for a
      pair of two bodies of one articulated system its
      setAllowedNumberOfInternalContactsBetweenTwoBodies count (RaiSim's default 1).
    limited: static, some pair of the group is internal to a system and `points` > 1, so
      detection ranks points by depth against `point_limit` (other groups skip that work).
  """
  shape_a: jax.Array
  shape_b: jax.Array
  pair_index: jax.Array
  point_limit: jax.Array
  enabled: jax.Array
  type_a: int = static_field()
  type_b: int = static_field()
  points: int = static_field()
  limited: bool = static_field(default=False)


@dataclass
class CollisionModel:
  """Everything collision detection needs.

  Attributes:
    shapes: ShapeModel.
    groups: tuple of PairGroup, one per type combination present.
    pair_lookup: (ns, ns) int32 pair index of a shape pair (-1 if not a candidate).
    mbp_world_min, mbp_world_max, mbp_cell_size: (3,) MultiBoxPrune grid; mbp_padding ().
    margin: () speculative contact margin (m): pairs closer than this report a contact.
    broadphase: static BroadphaseType.
    articulated_body_offset: static, the collision-body index of each articulated system's
      body 0 (collision/collision_bodies.py).
    sap_window: static neighbours examined per shape by Sap3Axis.
    mbp_max_cells_per_axis: static.
    contact_capacity: static size of the contact buffer.
  """
  shapes: ShapeModel
  groups: tuple
  pair_lookup: jax.Array
  mbp_world_min: jax.Array
  mbp_world_max: jax.Array
  mbp_cell_size: jax.Array
  mbp_padding: jax.Array
  margin: jax.Array
  broadphase: int = static_field()
  articulated_body_offset: tuple = static_field()
  sap_window: int = static_field()
  mbp_max_cells_per_axis: int = static_field()
  contact_capacity: int = static_field()


@dataclass
class SolverModel:
  """Contact solver settings (World::setContactSolverParam, setERP, iteration order).

  Attributes:
    threshold: () early-exit tolerance on the largest impulse change of a sweep.
    erp: () error-reduction fraction: each step removes erp * depth of a penetration, at the
      position level (no velocity is added).
    pair_table: (nm, nm, 5) material pair properties [mu, restitution, restitution
      threshold, static mu, static-friction velocity threshold].
    max_iterations: () int32 sweep count limit (RaiSim default 150); a leaf, so changing it
      reuses the compiled step as long as it stays <= iteration_capacity.
    reverse_order: () int32, 1 sweeps the contacts last to first (a leaf).
    iteration_capacity: static length of the differentiable solver's sweep scan (sweeps past
      max_iterations or after convergence are skipped); 150 * 2^k >= max_iterations.
    differentiable: static; True (default): reverse and forward mode work, differentiated
      as `gradient` says; False: forward-only programs (a while_loop over the active slots
      stopping at the threshold, on the leading contact slots that hold every world's
      contacts; forward-mode autodiff only).
    block_move: static; how the solve runs the island block move (dynamics/island_block.py,
      tried after `gauss_seidel.BLOCK_SWEEP` sweeps where islands of single bodies have
      not converged): "compact" (default): in differentiable mode on the active rows
      gathered into `island_block.compact_size` slots wherever every world's rows fit (a
      second traced move, for batched solves), else on every row; "every_row": on every
      row (one traced move: ~2 s less XLA compile); "off": never (plain Gauss-Seidel
      sweeps; ~40% less XLA compile for a world of single bodies, but stacks and piles
      take many more sweeps). The OO World steps with "off" until a solve needs more than
      `oo.world.PLAIN_SWEEP_LIMIT` sweeps, then with "every_row".
    gradient: static, used when `differentiable`: "unrolled" (default): a fixed-length scan
      whose converged sweeps are skipped by cond, differentiated through the sweeps run;
      "implicit": the solve stops at its threshold (a while_loop) and its converged
      impulses carry the fixed point's derivative (implicit function theorem; reverse mode
      stores one sweep's linearization; not the simulation's derivative where statically
      indeterminate contacts slide) (`gauss_seidel.GRADIENTS`; docs/contact_solver.md,
      Gradients).
  """
  threshold: jax.Array
  erp: jax.Array
  pair_table: jax.Array
  max_iterations: jax.Array
  reverse_order: jax.Array
  iteration_capacity: int = static_field(default=150)
  differentiable: bool = static_field(default=True)
  block_move: str = static_field(default="compact")
  gradient: str = static_field(default="unrolled")


@dataclass
class SleepingModel:
  """Sleeping islands (World::setSleepingEnabled, setSleepingParameters): an island of dynamic
  single bodies connected by contacts, resting on static bodies, sleeps once every body in it
  stayed below both velocity thresholds for `quiet_steps` consecutive steps.

  Attributes:
    enabled: () bool (a leaf: toggling it needs no recompile).
    linear_threshold: () m/s, largest COM speed of a quiet body (RaiSim default 0.002).
    angular_threshold: () rad/s, largest angular speed of a quiet body (default 0.01).
    quiet_steps: () int32 consecutive quiet steps before an island sleeps (default 2).
  """
  enabled: jax.Array
  linear_threshold: jax.Array
  angular_threshold: jax.Array
  quiet_steps: jax.Array


@dataclass
class Model:
  """Everything constant while stepping.

  Attributes:
    bodies: SingleBodyModel of the single-body objects (world index order).
    collision: CollisionModel.
    solver: SolverModel.
    gravity: (3,) m/s^2, world frame.
    time_step: () s.
    articulated: tuple of ArticulatedModel, one per articulated system, in
      world order.
    joint_limits: JointLimitModel (the limited joints of every system).
    pins: PinModel (closed-loop pin constraints of every system).
    sleeping: SleepingModel, or None (never sleeps).
    num_bodies: static count of single-body objects.
    gyroscopic_iterations: static fixed-point iterations of the implicit-midpoint rotation
      update (error shrinks like (dt |omega|)^k; 4 is round-off for dt |omega| < 1e-2).
  """
  bodies: SingleBodyModel
  collision: CollisionModel
  solver: SolverModel
  gravity: jax.Array
  time_step: jax.Array
  articulated: tuple = ()
  joint_limits: "JointLimitModel" = None
  pins: "PinModel" = None
  sleeping: SleepingModel = None
  num_bodies: int = static_field(default=0)
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
    quiet_steps: (n,) int32 consecutive steps the body ended below the sleeping thresholds
      (capped at Model.sleeping.quiet_steps); a user edit of the body sets it to 0 (wakes it).
    sleeping: (n,) bool, the body's island slept through the last step (isObjectSleeping).
  """
  position: jax.Array
  quaternion: jax.Array
  linear_velocity: jax.Array
  angular_velocity: jax.Array
  external_force: jax.Array
  external_torque: jax.Array
  quiet_steps: jax.Array
  sleeping: jax.Array


@dataclass
class Contacts:
  """The contact buffer: `capacity` slots, active ones first, in a deterministic order.

  Attributes:
    active: (C,) bool.
    position: (C, 3) contact point, world frame (midway between the surfaces).
    normal: (C, 3) unit normal pointing to object A, world frame.
    depth: (C,) penetration depth (negative: a gap within the speculative margin).
    shape_a, shape_b, body_a, body_b: (C,) int32 indices (-1 in empty slots).
    key: (C,) int32 pair index * 8 + point index: the warm-start key.
    impulse: (C, 3) impulse on A in the contact frame (N s), set by integrate2.
    inverse_apparent_inertia: (C, 3, 3) G_ii = J_i M^-1 J_i^T in the contact frame.
    overflow: () bool, True when the pair or contact capacity was exceeded this step.
  """
  active: jax.Array
  position: jax.Array
  normal: jax.Array
  depth: jax.Array
  shape_a: jax.Array
  shape_b: jax.Array
  body_a: jax.Array
  body_b: jax.Array
  key: jax.Array
  impulse: jax.Array
  inverse_apparent_inertia: jax.Array
  overflow: jax.Array

  @property
  def frame(self):
    """(C, 3, 3) RaiSim's transposed contact frame: rows are the frame's x, y, z axes in world
    coordinates (z = normal), so impulse_world = frame.T @ impulse (`rotation.contact_frame`).

    Derived from `normal` where it is read, not stored: a stored copy was written into every
    slot of the buffer each step (a standing quadruped's 168 slots, 4 of them in contact)."""
    return rotation.contact_frame(self.normal)


@dataclass
class ArticulatedState:
  """State of one articulated system (RaiSim conventions).

  Attributes:
    generalized_coordinate: (nq,) [base pos, base quat (w,x,y,z), joints] for a floating base.
    generalized_velocity: (nv,) [base lin vel (world), base ang vel (world), joints].
    generalized_acceleration: (nv,) du/dt of the last step.
    feedforward_force: (nv,) generalized force set by the user; kept until changed.
    external_wrench: (nbody, 6) [force; torque about the body origin], world frame, applied
      during the next integrate2 and then cleared.
    p_target: (nq,) PD position target (setPdTarget; quaternions for spherical/floating).
    d_target: (nv,) PD velocity target.
    generalized_force: (nv,) feed-forward + PD + passive generalized force of the last step,
      evaluated at the end-of-step state (the implicit PD's actual force; getGeneralizedForce).
  """
  generalized_coordinate: jax.Array
  generalized_velocity: jax.Array
  generalized_acceleration: jax.Array
  feedforward_force: jax.Array
  external_wrench: jax.Array
  p_target: jax.Array
  d_target: jax.Array
  generalized_force: jax.Array


@dataclass
class State:
  """Everything that changes while stepping.

  Attributes:
    bodies: SingleBodyState.
    contacts: Contacts found by the last integrate1 (impulses from the last integrate2).
    time: () world time in s, advanced by integrate2.
    solver_iterations: () int32 sweeps used by the last contact solve.
    articulated: tuple of ArticulatedState, one per articulated system.
    joint_limits: JointLimitState of the last step (rows of Model.joint_limits).
    pins: PinState of the last step (rows of Model.pins).
    finite: () bool, every pose and velocity stayed finite; sticky: False from the step that
      produced a NaN or inf on (per world under vmap; the OO layer raises DivergenceError).
  """
  bodies: SingleBodyState
  contacts: Contacts
  time: jax.Array
  solver_iterations: jax.Array
  articulated: tuple = ()
  joint_limits: "JointLimitState" = None
  pins: "PinState" = None
  finite: jax.Array = None


@dataclass
class JointLimitModel:
  """Joint position limits, one row per limited joint (all articulated systems of the world):
  revolute and prismatic joints, and spherical joints' cone limits. Solved as unilateral rows
  of the contact problem.

  Attributes:
    system: static tuple, articulated system of each row.
    dof: static tuple, generalized-velocity index of the joint inside its system.
    coordinate: static tuple, generalized-coordinate index of the joint inside its system.
    cone: static tuple of bool, the row is a spherical joint's cone limit (three dofs from
      `dof`, angle in joint_upper[coordinate]) rather than a revolute / prismatic limit.
  """
  system: tuple = static_field(default=())
  dof: tuple = static_field(default=())
  coordinate: tuple = static_field(default=())
  cone: tuple = static_field(default=())

  @property
  def count(self) -> int:
    return len(self.system)


@dataclass
class JointLimitState:
  """Joint-limit rows of the last step (RaiSim's getJointLimitViolations).

  Attributes:
    active: (L,) bool, the row was in the contact problem (joint at or near a limit).
    upper: (L,) bool, the row acted at the upper limit (else the lower one).
    impulse: (L,) generalized impulse of the row along the joint, signed: positive pushes
      the joint coordinate up (away from the lower limit).
    violation: (L,) how far past the limit the joint was at the start of the step (>= 0).
  """
  active: jax.Array
  upper: jax.Array
  impulse: jax.Array
  violation: jax.Array


@dataclass
class PinModel:
  """Closed-loop pin constraints (URDF `<constraints><pin/>`) of every system: point
  `anchor1` of body `body1` and point `anchor2` of body `body2` (body frames) stay at the same
  world position. Solved as bilateral 3-D rows of the contact problem.

  Attributes:
    system: static tuple, articulated system of each pin.
    body1, body2: static tuples, body indices inside the system.
    anchor1, anchor2: (P, 3) anchors in the body frames.
  """
  anchor1: jax.Array
  anchor2: jax.Array
  system: tuple = static_field(default=())
  body1: tuple = static_field(default=())
  body2: tuple = static_field(default=())

  @property
  def count(self) -> int:
    return len(self.system)


@dataclass
class PinState:
  """Pin rows of the last step.

  Attributes:
    impulse: (P, 3) world-frame impulse on body1 (the warm start of the next step).
    error: (P, 3) anchor1 - anchor2, world frame, at the start of the last step (m).
  """
  impulse: jax.Array
  error: jax.Array


@dataclass
class ArticulatedControl:
  """Per-step action of one articulated system. Given in a Control, it replaces the
  state's PD targets and feed-forward force for that step (and stays in the state, as
  RaiSim's setters do).

  Attributes:
    p_target: (nq,) PD position target.
    d_target: (nv,) PD velocity target.
    feedforward_force: (nv,) generalized force added to the PD force.
  """
  p_target: jax.Array
  d_target: jax.Array
  feedforward_force: jax.Array


@dataclass
class Control:
  """Per-step inputs: single-body loads added to the state's pending external loads (world
  frame), and articulated actions.

  Attributes:
    body_force: (n, 3) force at each single body's COM.
    body_torque: (n, 3) torque on each single body.
    articulated: () to keep every system's targets and feed-forward force from the state, or
      one ArticulatedControl per articulated system (world order).
  """
  body_force: jax.Array
  body_torque: jax.Array
  articulated: tuple = ()

  @classmethod
  def zeros(cls, model: Model) -> "Control":
    """No single-body loads; articulated systems keep the state's targets."""
    zeros = jnp.zeros((model.num_bodies, 3), model.dtype)
    return cls(body_force=zeros, body_torque=zeros)

  @classmethod
  def from_state(cls, model: Model, state: "State") -> "Control":
    """No single-body loads; every articulated system's current targets and feed-forward
    force, as a starting point for a policy's action."""
    zeros = jnp.zeros((model.num_bodies, 3), model.dtype)
    return cls(body_force=zeros, body_torque=zeros, articulated=tuple(
        ArticulatedControl(p_target=s.p_target, d_target=s.d_target,
                           feedforward_force=s.feedforward_force) for s in state.articulated))
