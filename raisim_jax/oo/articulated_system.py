"""OO view of an articulated system (RaiSim's ArticulatedSystem API, camelCase).

The view holds its world and its ArticulatedEntry; getters evaluate the pure core
(kinematics, CRBA, RNEA, ABA, Jacobians) on the world's current state, setters write new state
or model leaves. No physics lives here.

Conventions (RaiSim's, see the spec's ArticulatedSystem API):
- Every vector is in the WORLD frame unless the name says otherwise (`_B` body frame, `_P`
  parent frame). A body's pose is its parent joint frame after the joint transformation.
- Methods whose C++ form fills out-parameters return the value instead
  (`getFramePosition(frameId) -> (3,)`, `getDenseJacobian(bodyIdx, point_W) -> (3, nv)`,
  `getBodyPose(bodyIdx) -> (R, p)`, `getState() -> (gc, gv)`).
- "Sparse" Jacobians are returned dense, (3, nv), zero in the columns that do not move the
  body: a NumPy array has no use for RaiSim's SparseJacobian index list.
- Kinematics are evaluated on demand from the current state: `updateKinematics` is a no-op
  and composite quantities never go stale. `updateMassInfo` applies in-place edits of the
  arrays getMass() / getInertia() / getBodyCOM_B() returned (RaiSim's edit pattern).
- Index arguments are validated: a bad index raises ValueError naming the argument, an
  unknown body / frame / joint name raises KeyError (RaiSim returns size_t(-1)).
"""

import dataclasses
import enum
import os

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import joint_springs, validation
from raisim_jax.oo import articulated_collision, visual_objects
from raisim_jax.dynamics import aba, crba, energy, jacobian, rnea
from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.dynamics.tree import compile_articulated
from raisim_jax.math import quaternion as quat_math
from raisim_jax.oo.objects import Object, read_only
from raisim_jax.oo.precision import in_world_precision
from raisim_jax.types import (JOINT_FIXED, JOINT_FLOATING, JOINT_PRISMATIC, JOINT_REVOLUTE,
                              JOINT_SPHERICAL, BodyType, ControlMode, IntegrationScheme,
                              ObjectType)


def _np(x):
  return np.array(x, dtype=np.float64)


def _normalized_quaternions(model, gc, name):
  """gc with the quaternions of spherical joints and the floating base normalised; a zero
  quaternion raises ValueError naming the argument."""
  gc = np.array(gc, np.float64)
  for body, joint_type in enumerate(model.joint_type):
    start = model.gc_offset[body] + (3 if joint_type == JOINT_FLOATING else 0)
    if joint_type in (JOINT_FLOATING, JOINT_SPHERICAL):
      norm = np.linalg.norm(gc[start:start + 4])
      if not norm > 1e-12:
        raise ValueError(f"argument '{name}': the quaternion of joint {body} "
                         f"(entries {start}..{start + 3}) is zero")
      gc[start:start + 4] /= norm
  return gc


class JointType(enum.IntEnum):
  """RaiSim's Joint::Type."""
  FIXED = JOINT_FIXED
  FLOATING = JOINT_FLOATING
  REVOLUTE = JOINT_REVOLUTE
  PRISMATIC = JOINT_PRISMATIC
  SPHERICAL = JOINT_SPHERICAL


class Frame(enum.IntEnum):
  """RaiSim's Frame (the frame a vector argument is expressed in)."""
  WORLD_FRAME = 0
  PARENT_FRAME = 1
  BODY_FRAME = 2


@dataclasses.dataclass
class CoordinateFrame:
  """RaiSim's CoordinateFrame: a frame rigidly attached to body `parentId`.

  position (3,) and orientation (3, 3): the frame's pose in its body frame. Frames returned by
  getFrameByName & co. are copies: editing them changes nothing in the system (in RaiSim
  frames affect neither kinematics nor dynamics either). A user-made CoordinateFrame can be
  passed to getFramePosition / Orientation / Velocity / AngularVelocity / Acceleration.
  """
  name: str = ""
  parentId: int = 0
  parentName: str = ""
  position: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))
  orientation: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))
  jointType: JointType = JointType.FIXED
  childLink: str = ""
  parentLink: str = ""

  @property
  def currentBodyId(self) -> int:
    return self.parentId


# One jit per pure function, shared by all views (the cache keys on the model's structure).
_forward_kinematics = jax.jit(kin_lib.forward_kinematics)
_mass_matrix = jax.jit(crba.mass_matrix_from_kinematics)
_nonlinearities = jax.jit(rnea.nonlinearities)
_inverse_mass_matrix = jax.jit(aba.inverse_mass_matrix)
_joint_wrenches = jax.jit(rnea.joint_wrenches)
# The Jacobian getters as one XLA call each (`body` traced: one program per structure);
# run eagerly they cost ~0.6 ms of op-by-op dispatch per call.
_dense_point_jacobian = jax.jit(jacobian.point_jacobian)
_dense_point_jacobian_dot = jax.jit(jacobian.point_jacobian_dot)
_dense_rotational_jacobian = jax.jit(jacobian.rotational_jacobian)
_dense_rotational_jacobian_dot = jax.jit(jacobian.rotational_jacobian_dot)
# Likewise the energy, momentum and composite-body getters (~0.5 ms each run eagerly).
_kinetic_energy = jax.jit(energy.kinetic_energy)
_potential_energy = jax.jit(energy.potential_energy)
_linear_momentum = jax.jit(energy.linear_momentum)
_angular_momentum = jax.jit(energy.angular_momentum)
_composite_mass_com = jax.jit(kin_lib.composite_mass_com)
_composite_inertia = jax.jit(kin_lib.composite_inertia)
_center_of_mass = jax.jit(kin_lib.center_of_mass)


@dataclasses.dataclass
class ArticulatedSystemOption:
  """RaiSim's ArticulatedSystemOption (addArticulatedSystem's `options`).

  doNotCollideWithParent: a body never collides with its parent body (default True).
  convexifyCollisionMeshes: collision meshes collide as their convex hulls (True, the
    default); False (the original triangle meshes) is refused for a system with collision
    meshes, as unsupported."""
  doNotCollideWithParent: bool = True
  convexifyCollisionMeshes: bool = True


@dataclasses.dataclass
class JointLimitViolation:
  """One joint-limit row of the last step (RaiSim's Single3DContactProblem of a joint limit).

  jointId: joint / body index; dof: generalized-velocity index (a spherical joint's first);
  impulse: generalized impulse along the joint (N s or N m s; positive pushes the coordinate
  up, so an upper stop gives a negative one; for a spherical joint's cone limit the angular
  impulse (>= 0) that turns the joint back towards the cone's axis); imp_i: (3,)
  [impulse, 0, 0] as RaiSim's imp_i; isUpper: the upper limit (always for a cone);
  violation: how far past the limit the joint was at the start of the step (>= 0; radians of
  rotation angle for a cone)."""
  jointId: int
  dof: int
  impulse: float
  isUpper: bool
  violation: float

  @property
  def imp_i(self):
    return np.array([self.impulse, 0.0, 0.0])


@in_world_precision
class ArticulatedSystem(Object):
  """A multi-body system loaded from URDF (or built from a `Child` tree)."""

  def __init__(self, world, entry):
    super().__init__(world, entry)
    self._entry = entry
    self._kin_cache = None   # see _kin_entry
    self._compute_inverse_dynamics = False
    self._mass_edits = {}   # pending in-place edits: field -> array handed out by a getter

  def getObjectType(self) -> ObjectType:
    return ObjectType.ARTICULATED_SYSTEM

  def getBodyType(self, bodyIdx=None) -> BodyType:
    """DYNAMIC, except body 0 of a fixed-base system (STATIC), as in RaiSim."""
    if bodyIdx is None:
      return BodyType.DYNAMIC
    body = self._body(bodyIdx)
    if body == 0 and self._entry.description.fixed_base:
      return BodyType.STATIC
    return BodyType.DYNAMIC

  def getContacts(self):
    """Contacts of this system's bodies from the last integrate1 (getlocalBodyIndex names
    the body; a self-collision is listed once per side, the second with skip() True)."""
    return self._world._object_contacts(self)

  # ---- core access ---------------------------------------------------------------------------
  def _state(self):
    return self._world._articulated_state(self)

  def _model(self):
    return self._world._articulated_model(self)

  def _kin(self):
    """Kinematics at the current state (device arrays: the core's jitted functions take it)."""
    return self._kin_entry()[2]

  def _host_kin(self):
    """The same Kinematics as host (numpy) arrays, for the getters that read one body's row:
    indexing the device arrays is an XLA dispatch per read (~100 us)."""
    entry = self._kin_entry()
    if entry[3] is None:
      entry[3] = jax.tree.map(np.asarray, entry[2])
    return entry[3]

  def _kin_entry(self):
    """[model, state, Kinematics, its host copy or None], cached until the state or model
    changes (both are immutable pytrees, so identity is the cache key)."""
    model, state = self._model(), self._state()
    entry = self._kin_cache
    if entry is None or entry[0] is not model or entry[1] is not state:
      kin = _forward_kinematics(model, state.generalized_coordinate, state.generalized_velocity)
      entry = self._kin_cache = [model, state, kin, None]
    return entry

  def _gravity(self, gravity):
    if gravity is None:
      return np.asarray(self._world._current_model().gravity, np.float64)
    return validation.vector(gravity, 3, "gravity")

  # ---- index validation --------------------------------------------------------------------
  def _body(self, bodyIdx, name="bodyIdx") -> int:
    return validation.index(bodyIdx, self._entry.description.num_bodies, name,
                            "bodies in the system")

  def _frame(self, frame, name="frameId"):
    """A frame index from an index or a name (KeyError for an unknown name), or a
    CoordinateFrame passed through."""
    if isinstance(frame, CoordinateFrame):
      return frame
    if isinstance(frame, str):
      return self.getFrameIdxByName(frame)
    if isinstance(frame, (bool, np.bool_)) or not isinstance(frame, (int, np.integer)):
      raise ValueError(f"argument '{name}' must be a frame index or name, got {frame!r}")
    return validation.index(frame, len(self._entry.description.frames), name,
                            "frames in the system")

  def _frame_offset(self, frame):
    """(body, pos_B (3,), rot_B (3, 3)) of a frame index or CoordinateFrame."""
    if isinstance(frame, CoordinateFrame):
      return (self._body(frame.parentId, "frame.parentId"),
              validation.vector(frame.position, 3, "frame.position"),
              validation.matrix3(frame.orientation, "frame.orientation"))
    f = self._entry.description.frames[frame]
    model = self._model()
    return (int(f.body), _np(np.asarray(model.frame_pos)[frame]),
            _np(np.asarray(model.frame_rot)[frame]))

  # ---- dimensions --------------------------------------------------------------------------
  def getDOF(self) -> int:
    return self._entry.description.dof

  getGeneralizedVelocityDim = getDOF

  def getGeneralizedCoordinateDim(self) -> int:
    return self._entry.description.gc_dim

  def getNumberOfJoints(self) -> int:
    """Number of joints (= number of bodies, the root joint included)."""
    return self._entry.description.num_bodies

  # ---- state -------------------------------------------------------------------------------
  def getGeneralizedCoordinate(self):
    return _np(self._state().generalized_coordinate)

  def getGeneralizedVelocity(self):
    return _np(self._state().generalized_velocity)

  def getGeneralizedAcceleration(self):
    """du/dt of the last step (zeros before the first step)."""
    return _np(self._state().generalized_acceleration)

  def setGeneralizedCoordinate(self, jointState):
    """Sets gc; quaternions (floating base, spherical joints) are normalised, a zero one
    raises."""
    gc = validation.vector(jointState, self.getGeneralizedCoordinateDim(), "jointState")
    gc = _normalized_quaternions(self._model(), gc, "jointState")
    self._world._write_articulated_state(self, generalized_coordinate=gc)

  def setGeneralizedVelocity(self, jointVel):
    gv = validation.velocity(jointVel, self.getDOF(), "jointVel")
    self._world._write_articulated_state(self, generalized_velocity=gv)

  def setGeneralizedForce(self, tau):
    tau = validation.vector(tau, self.getDOF(), "tau")
    self._world._write_articulated_state(self, feedforward_force=tau)

  def getFeedForwardGeneralizedForce(self):
    return _np(self._state().feedforward_force)

  def getGeneralizedForce(self):
    """Feed-forward + PD generalized force (nv,). FORCE_AND_TORQUE mode: the feed-forward
    force bounded by the actuation limits (what the next step applies). PD mode: what the
    last step applied, the implicit PD evaluated at the end-of-step state (RaiSim notes the
    same small difference from an explicit PD)."""
    if self._entry.control_mode == ControlMode.PD_PLUS_FEEDFORWARD_TORQUE:
      return _np(self._state().generalized_force)
    model = self._model()
    return np.clip(self.getFeedForwardGeneralizedForce(), _np(model.actuation_lower),
                   _np(model.actuation_upper))

  # ---- control (PD_PLUS_FEEDFORWARD_TORQUE: RaiSim's stable implicit PD) ----------------------
  def setControlMode(self, mode):
    """ControlMode.FORCE_AND_TORQUE or ControlMode.PD_PLUS_FEEDFORWARD_TORQUE."""
    try:
      mode = ControlMode(int(mode))
    except ValueError:
      raise ValueError(f"argument 'mode' must be ControlMode.FORCE_AND_TORQUE (0) or "
                       f"ControlMode.PD_PLUS_FEEDFORWARD_TORQUE (1), got {mode!r}") from None
    self._entry.control_mode = int(mode)
    self._write_model(pd_enabled=float(mode == ControlMode.PD_PLUS_FEEDFORWARD_TORQUE))

  def getControlMode(self) -> "ControlMode":
    return ControlMode(self._entry.control_mode)

  def setPdGains(self, pgain, dgain):
    """Proportional and derivative gains (nv,) each (generalized-velocity dimension)."""
    self.setPGains(pgain)
    self.setDGains(dgain)

  def setPGains(self, pgain):
    self._write_gain(pgain, "pgain", "p_gain")

  def setDGains(self, dgain):
    self._write_gain(dgain, "dgain", "d_gain")

  def _write_gain(self, values, name, field):
    """Validates a non-negative (nv,) gain and writes the entry and the model leaf `field`."""
    values = validation.vector(values, self.getDOF(), name)
    for value in values:
      validation.non_negative(value, name)
    setattr(self._entry, field, values)
    self._write_model(**{field: values})

  def getPdGains(self):
    """(pgain (nv,), dgain (nv,))."""
    model = self._model()
    return _np(model.p_gain), _np(model.d_gain)

  def setPdTarget(self, posTarget, velTarget):
    """Position target (nq,: quaternions for spherical joints and the floating base) and
    velocity target (nv,). Kept until changed. Both are checked before either is written,
    and written in one call."""
    self._world._write_articulated_state(self, p_target=self._p_target(posTarget),
                                         d_target=self._d_target(velTarget))

  def setPTarget(self, posTarget):
    self._world._write_articulated_state(self, p_target=self._p_target(posTarget))

  def setDTarget(self, velTarget):
    self._world._write_articulated_state(self, d_target=self._d_target(velTarget))

  def _p_target(self, posTarget):
    target = validation.vector(posTarget, self.getGeneralizedCoordinateDim(), "posTarget")
    return _normalized_quaternions(self._model(), target, "posTarget")

  def _d_target(self, velTarget):
    return validation.vector(velTarget, self.getDOF(), "velTarget")

  def getPdTarget(self):
    """(position target (nq,), velocity target (nv,))."""
    state = self._state()
    return _np(state.p_target), _np(state.d_target)

  def setIntegrationScheme(self, scheme):
    """IntegrationScheme.SEMI_IMPLICIT (default), TRAPEZOID or EULER (see
    types.IntegrationScheme). RUNGE_KUTTA_4 raises: it is not implemented."""
    try:
      scheme = IntegrationScheme(int(scheme))
    except ValueError:
      raise ValueError(f"argument 'scheme' must be an IntegrationScheme, got {scheme!r}") from None
    if scheme == IntegrationScheme.RUNGE_KUTTA_4:
      raise ValueError("IntegrationScheme.RUNGE_KUTTA_4 is not supported yet; supported: "
                       "SEMI_IMPLICIT (default), TRAPEZOID, EULER")
    if scheme != self._entry.integration_scheme:
      self._entry.integration_scheme = int(scheme)
      self._world._structure_changed()

  def getIntegrationScheme(self) -> "IntegrationScheme":
    return IntegrationScheme(self._entry.integration_scheme)

  def getState(self):
    """(generalized coordinate, generalized velocity)."""
    return self.getGeneralizedCoordinate(), self.getGeneralizedVelocity()

  def setState(self, genco, genvel):
    gc = _normalized_quaternions(
        self._model(), validation.vector(genco, self.getGeneralizedCoordinateDim(), "genco"),
        "genco")
    gv = validation.velocity(genvel, self.getDOF(), "genvel")
    self._world._write_articulated_state(self, generalized_coordinate=gc,
                                         generalized_velocity=gv)

  def updateKinematics(self):
    """No-op: kinematics are evaluated on demand from the current state."""

  # ---- base ----------------------------------------------------------------------------------
  def _floating(self) -> bool:
    return self._entry.description.bodies[0].joint_type == JOINT_FLOATING

  def _require_floating(self, method):
    if not self._floating():
      raise ValueError(f"{method} needs a floating-base system; "
                       f"'{self._entry.description.name}' has a fixed base")

  def getBasePosition(self):
    """Position (3,) of body 0 (the floating base or the body fixed to the world)."""
    return _np(self._host_kin().body_pos[0])

  def getBaseOrientation(self):
    """Rotation matrix (3, 3) of body 0."""
    return _np(self._host_kin().body_rot[0])

  def getBaseQuaternion(self):
    """Quaternion (w, x, y, z) of body 0 (the getBaseOrientation(Vec<4>&) overload)."""
    if self._floating():
      q = self.getGeneralizedCoordinate()[3:7]
      return q / np.linalg.norm(q)
    return _np(quat_math.from_matrix(jnp.asarray(self.getBaseOrientation())))

  def setBasePos(self, pos):
    """Floating base: writes the base position of the generalized coordinate. Fixed base:
    moves the placement of the body fixed to the world (RaiSim's jointPos_P[0])."""
    pos = validation.vector(pos, 3, "pos")
    if self._floating():
      gc = self.getGeneralizedCoordinate()
      gc[:3] = pos
      self._world._write_articulated_state(self, generalized_coordinate=gc)
    else:
      self._entry.description.bodies[0].joint_pos = pos.copy()
      model = self._model()
      self._world._write_articulated_model(
          self, model.replace(joint_pos=model.joint_pos.at[0].set(pos)))

  setBasePos_e = setBasePos

  def setBaseOrientation(self, orientation):
    """Rotation matrix (3, 3) or quaternion (w, x, y, z). Fixed base: re-orients the body
    fixed to the world (RaiSim's jointOrientation_P[0])."""
    arr = np.asarray(orientation, dtype=np.float64)
    if arr.shape == (3, 3):
      rot = validation.rotation_matrix(arr, "rot")
      quat = _np(quat_math.from_matrix(jnp.asarray(rot)))
    else:
      quat = validation.unit_quaternion(arr, "quat")
      rot = _np(quat_math.to_matrix(jnp.asarray(quat)))
    if self._floating():
      gc = self.getGeneralizedCoordinate()
      gc[3:7] = quat
      self._world._write_articulated_state(self, generalized_coordinate=gc)
    else:
      self._entry.description.bodies[0].joint_rot = rot.copy()
      model = self._model()
      self._world._write_articulated_model(
          self, model.replace(joint_rot=model.joint_rot.at[0].set(rot)))

  setBaseOrientation_e = setBaseOrientation

  def setBaseVelocity(self, vel):
    """Linear velocity of the floating base (world frame); ValueError for a fixed base."""
    self._require_floating("setBaseVelocity")
    vel = validation.vector(vel, 3, "vel")
    gv = self.getGeneralizedVelocity()
    gv[:3] = vel
    self._world._write_articulated_state(self, generalized_velocity=gv)

  def setBaseAngularVelocity(self, vel):
    """Angular velocity of the floating base (world frame); ValueError for a fixed base."""
    self._require_floating("setBaseAngularVelocity")
    vel = validation.vector(vel, 3, "vel")
    gv = self.getGeneralizedVelocity()
    gv[3:6] = vel
    self._world._write_articulated_state(self, generalized_velocity=gv)

  # ---- dynamics ------------------------------------------------------------------------------
  def getMassMatrix(self):
    """M(q) (nv, nv) by CRBA, rotor inertia on the diagonal (RaiSim convention)."""
    return _np(_mass_matrix(self._model(), self._kin()))

  def getNonlinearities(self, gravity=None):
    """h(q, u) (nv,): Coriolis, centrifugal and gravity terms (gravity default: the world's)."""
    state = self._state()
    return _np(_nonlinearities(self._model(), state.generalized_coordinate,
                               state.generalized_velocity, jnp.asarray(self._gravity(gravity))))

  def getInverseMassMatrix(self):
    """RaiSim's *damped* inverse mass matrix (M + diag(dt d + dt^2 k))^-1 with the joint
    damping d and stiffness k of the implicit integration (dt: the world's time step)."""
    model = self._model()
    dt = self._world._current_model().time_step
    armature = model.rotor_inertia + dt * model.damping + dt * dt * model.stiffness
    return _np(_inverse_mass_matrix(model, self._state().generalized_coordinate, armature))

  def _implicit_armature_diagonal(self):
    """dt d + dt^2 k (nv,): what the implicit damping / springs add to diag(M)."""
    model = self._model()
    dt = float(self._world._current_model().time_step)
    return _np(dt * model.damping + dt * dt * model.stiffness)

  def computeSparseInverse(self, M):
    """(M + diag(dt d + dt^2 k))^-1 of a given mass matrix (nv, nv), as RaiSim's damped
    inverse (dense solve; RaiSim exploits the tree sparsity)."""
    nv = self.getDOF()
    m = np.asarray(M, dtype=np.float64)
    if m.shape != (nv, nv) or not np.all(np.isfinite(m)):
      raise ValueError(f"argument 'M' must be a finite ({nv}, {nv}) matrix, got shape {m.shape}")
    return np.linalg.inv(m + np.diag(self._implicit_armature_diagonal()))

  def massMatrixVecMul(self, vec1):
    """M vec1 (nv,) at the current configuration."""
    vec = validation.vector(vec1, self.getDOF(), "vec1")
    return self.getMassMatrix() @ vec

  def getGeneralizedMomentum(self):
    """M u (nv,)."""
    return self.getMassMatrix() @ self.getGeneralizedVelocity()

  # ---- mass properties -------------------------------------------------------------------------
  def getCompositeCOM(self):
    """(B, 3) COM of the subtree of each body (world); row 0 is the whole system's COM."""
    return _np(_composite_mass_com(self._model(), self._kin())[1])

  def getCompositeMass(self):
    """(B,) mass of the subtree of each body."""
    return _np(_composite_mass_com(self._model(), self._kin())[0])

  def getCompositeInertia(self):
    """(B, 3, 3) rotational inertia of each body's subtree about the subtree's COM, world
    frame (from the core's composite spatial inertia about the world origin)."""
    model, kin = self._model(), self._kin()
    ic = _np(_composite_inertia(model, kin))              # (B, 6, 6)
    mass, com = (_np(x) for x in _composite_mass_com(model, kin))
    # angular block about the origin = I_com + m ([c]x^T [c]x) = I_com + m (|c|^2 1 - c c^T)
    shift = mass[:, None, None] * (np.einsum("bi,bi->b", com, com)[:, None, None] * np.eye(3)
                                   - np.einsum("bi,bj->bij", com, com))
    return ic[:, 3:, 3:] - shift

  def getCOM(self):
    """COM (3,) of the whole system, world frame."""
    return _np(_center_of_mass(self._model(), self._kin()))

  def getTotalMass(self) -> float:
    return float(np.sum(_np(self._model().mass)))

  # ---- mass properties: RaiSim's edit-in-place getters + updateMassInfo() -------------------
  # getMass() / getInertia() / getBodyCOM_B() hand out an edit buffer (a copy of the model's
  # values, kept until the next updateMassInfo() or mass setter); writing into it and calling
  # updateMassInfo() applies the edits, as in RaiSim. The description and the model leaf stay
  # the only stored values; the buffers are pending edits.
  def _mass_buffer(self, field):
    if field not in self._mass_edits:
      self._mass_edits[field] = _np(getattr(self._model(), field))
    return self._mass_edits[field]

  def getMass(self, bodyIdx=None):
    """getMass() -> (B,) body masses, editable in place (apply with updateMassInfo());
    getMass(bodyIdx) -> float."""
    if bodyIdx is None:
      return self._mass_buffer("mass")
    return float(_np(self._model().mass)[self._body(bodyIdx)])

  def getInertia(self):
    """(B, 3, 3) inertia of each body about its COM, body frame; editable in place (apply
    with updateMassInfo())."""
    return self._mass_buffer("inertia")

  def getBodyCOM_B(self):
    """(B, 3) COM of each body in its body frame; editable in place (apply with
    updateMassInfo())."""
    return self._mass_buffer("com")

  def updateMassInfo(self):
    """Applies in-place edits of getMass() / getInertia() / getBodyCOM_B() arrays (checked
    like the setters); composite quantities are computed on demand from them."""
    edits, self._mass_edits = self._mass_edits, {}
    if not edits:
      return
    model = self._model()
    bodies = self._entry.description.bodies
    checks = {"mass": lambda v, name: validation.positive(v, name),
              "inertia": lambda v, name: validation.inertia(v, name),
              "com": lambda v, name: validation.vector(v, 3, name)}
    getter = {"mass": "getMass()", "inertia": "getInertia()", "com": "getBodyCOM_B()"}
    leaves = {}
    for field, values in edits.items():
      values = np.asarray(values, np.float64)
      current = _np(getattr(model, field))
      for b in range(len(bodies)):   # edited entries are checked like the setters' arguments
        if not np.array_equal(values[b], current[b]):
          checks[field](values[b], f"{getter[field]}[{b}]")
      leaves[field] = values
    for field, values in leaves.items():
      for b, body in enumerate(bodies):
        setattr(body, field, float(values[b]) if field == "mass" else values[b].copy())
    self._write_model(**leaves)

  def _write_model(self, **leaves):
    model = self._model()
    self._world._write_articulated_model(self, model.replace(**{
        k: jnp.asarray(v, model.dtype) for k, v in leaves.items()}))

  def _set_body_mass_property(self, field, body, value):
    """Writes one body's mass, inertia or COM (description and model leaf); pending
    in-place edits of that field are dropped (the setter wins)."""
    self._mass_edits.pop(field, None)
    values = _np(getattr(self._model(), field))
    values[body] = value
    setattr(self._entry.description.bodies[body], field,
            float(value) if field == "mass" else np.array(value, np.float64))
    self._write_model(**{field: values})

  def setMass(self, bodyIdx, value):
    """Mass of one body; takes effect at once (the next step uses it)."""
    self._set_body_mass_property("mass", self._body(bodyIdx),
                                 validation.positive(value, "value"))

  def setInertia(self, bodyIdx, inertia):
    """Inertia (3, 3) about the COM, body frame, of one body."""
    self._set_body_mass_property("inertia", self._body(bodyIdx),
                                 validation.inertia(inertia, "inertia"))

  def setBodyCOM_B(self, bodyIdx, com):
    """COM (3,) of one body in its body frame."""
    self._set_body_mass_property("com", self._body(bodyIdx), validation.vector(com, 3, "com"))

  def getBodyCOM_W(self):
    """(B, 3) COM of each body, world frame."""
    return _np(self._kin().com_pos)

  # ---- energy and momentum ---------------------------------------------------------------------
  def getKineticEnergy(self) -> float:
    """1/2 u^T M u (rotor inertia included)."""
    return float(_kinetic_energy(self._model(), self._kin(),
                                 self._state().generalized_velocity))

  def getPotentialEnergy(self, gravity=None) -> float:
    """-sum m_i g . c_i (zero at the world origin); gravity default: the world's."""
    return float(_potential_energy(self._model(), self._kin(), self._gravity(gravity)))

  def getEnergy(self, gravity=None) -> float:
    return self.getKineticEnergy() + self.getPotentialEnergy(gravity)

  def getLinearMomentum(self):
    return _np(_linear_momentum(self._model(), self._kin()))

  def getAngularMomentum(self, referencePoint):
    """Angular momentum (3,) about a world point."""
    ref = validation.vector(referencePoint, 3, "referencePoint")
    return _np(_angular_momentum(self._model(), self._kin(), ref))

  # ---- names and indices -----------------------------------------------------------------------
  def getBodyNames(self):
    return list(self._entry.description.body_names)

  def getMovableJointNames(self):
    """Joint names in the joint (body) order, the root joint included."""
    return list(self._entry.description.movable_joint_names)

  def getFrameNames(self):
    return list(self._entry.description.frame_names)

  def printOutBodyNamesInOrder(self):
    print("\n".join(self.getBodyNames()))

  def printOutMovableJointNamesInOrder(self):
    print("\n".join(self.getMovableJointNames()))

  def printOutFrameNamesInOrder(self):
    print("\n".join(self.getFrameNames()))

  def getBodyIdx(self, nm: str) -> int:
    """Index of the body named `nm` (the link owning the body frame); KeyError if absent."""
    names = self._entry.description.body_names
    if nm not in names:
      raise KeyError(f"argument 'nm': no body named '{nm}' (bodies: {names})")
    return names.index(nm)

  def getGeneralizedVelocityIndex(self, name: str) -> int:
    """First generalized velocity index of the joint named `name`; KeyError if absent."""
    names = self._entry.description.movable_joint_names
    if name not in names:
      raise KeyError(f"argument 'name': no joint named '{name}' (joints: {names})")
    return int(self._model().gv_offset[names.index(name)])

  def getMappingFromBodyIndexToGeneralizedVelocityIndex(self):
    """First gv index of each body's joint (a fixed root maps to 0, where the next starts)."""
    return [int(x) for x in self._model().gv_offset]

  def getMappingFromBodyIndexToGeneralizedCoordinateIndex(self):
    """First gc index of each body's joint (a fixed root maps to 0, where the next starts)."""
    return [int(x) for x in self._model().gc_offset]

  def getParentVector(self):
    """parent[i]: parent body of body i (-1 for the root)."""
    return [int(p) for p in self._model().parent]

  # ---- frames ---------------------------------------------------------------------------------
  def getFrameIdxByName(self, nm: str) -> int:
    names = self._entry.description.frame_names
    if nm not in names:
      raise KeyError(f"argument 'nm': no frame named '{nm}' (frames: {names})")
    return names.index(nm)

  def getFrameIdxByLinkName(self, name: str) -> int:
    """Index of the frame of the joint whose child link is `name`; KeyError if absent."""
    for index, f in enumerate(self._entry.description.frames):
      if f.child_link == name:
        return index
    raise KeyError(f"argument 'name': no frame has the child link '{name}'")

  def getFrameByIdx(self, idx) -> CoordinateFrame:
    index = self._frame(idx, "idx")
    f = self._entry.description.frames[index]
    model = self._model()
    return CoordinateFrame(
        name=f.name, parentId=int(f.body),
        parentName=self._entry.description.bodies[f.body].name,
        position=_np(model.frame_pos[index]), orientation=_np(model.frame_rot[index]),
        jointType=JointType(f.joint_type), childLink=f.child_link, parentLink=f.parent_link)

  def getFrameByName(self, nm: str) -> CoordinateFrame:
    return self.getFrameByIdx(self.getFrameIdxByName(nm))

  def getFrameByLinkName(self, name: str) -> CoordinateFrame:
    return self.getFrameByIdx(self.getFrameIdxByLinkName(name))

  def getFrames(self):
    return [self.getFrameByIdx(i) for i in range(len(self._entry.description.frames))]

  def getFramePosition(self, frameId):
    """World position (3,) of a frame (index, name or CoordinateFrame)."""
    return self.getPositionInFrame(frameId, np.zeros(3))

  def getPositionInFrame(self, frameId, localPos):
    """World position (3,) of a point given in the frame's coordinates."""
    frame = self._frame(frameId)
    local = validation.vector(localPos, 3, "localPos")
    body, pos_b, rot_b = self._frame_offset(frame)
    kin = self._host_kin()
    rot = _np(kin.body_rot[body])
    return _np(kin.body_pos[body]) + rot @ (pos_b + rot_b @ local)

  def getFrameOrientation(self, frameId):
    """Rotation matrix (3, 3) frame -> world."""
    body, _, rot_b = self._frame_offset(self._frame(frameId))
    return _np(self._host_kin().body_rot[body]) @ rot_b

  def getFrameVelocity(self, frameId):
    """Linear velocity (3,) of the frame origin, world frame."""
    frame = self._frame(frameId)
    body = self._frame_offset(frame)[0]
    return self._point_velocity(body, self.getFramePosition(frame))

  def getFrameAngularVelocity(self, frameId):
    body = self._frame_offset(self._frame(frameId))[0]
    return _np(self._host_kin().body_ang_vel[body])

  def getFrameAcceleration(self, frameId):
    """d/dt of the frame origin's world velocity: J du/dt + Jdot u at the current state, with
    du/dt the last step's generalized acceleration (getGeneralizedAcceleration). Valid with
    or without setComputeInverseDynamics(True)."""
    frame = self._frame(frameId)
    body = self._frame_offset(frame)[0]
    point = self.getFramePosition(frame)
    u, du = self.getGeneralizedVelocity(), self.getGeneralizedAcceleration()
    return (self._point_jacobian(body, point) @ du
            + self._point_jacobian_dot(body, point) @ u)

  # ---- body kinematics ----------------------------------------------------------------------
  def getPosition(self, bodyIdx, point_B=None):
    """getPosition(bodyIdx) -> body (joint) position; getPosition(bodyIdx, point_B) ->
    world position of a point given in the body frame."""
    body = self._body(bodyIdx)
    kin = self._host_kin()
    if point_B is None:
      return _np(kin.body_pos[body])
    point = validation.vector(point_B, 3, "point_B")
    return _np(kin.body_pos[body]) + _np(kin.body_rot[body]) @ point

  getBodyPosition = getPosition

  def getOrientation(self, bodyIdx):
    """Rotation matrix (3, 3) body -> world."""
    return _np(self._host_kin().body_rot[self._body(bodyIdx)])

  getBodyOrientation = getOrientation

  def getBodyPose(self, bodyIdx):
    """(orientation (3, 3), position (3,)) of the body: its parent joint after the joint
    transformation (the C++ out-parameter order)."""
    return self.getOrientation(bodyIdx), self.getPosition(bodyIdx)

  def getPositionInBodyCoordinate(self, bodyIdx, pos_W):
    """A world point expressed in the body frame."""
    body = self._body(bodyIdx)
    pos = validation.vector(pos_W, 3, "pos_W")
    kin = self._host_kin()
    return _np(kin.body_rot[body]).T @ (pos - _np(kin.body_pos[body]))

  def _point_velocity(self, body, point_w):
    v = _np(self._host_kin().body_velocity[body])
    return v[:3] + np.cross(v[3:], point_w)

  def getVelocity(self, bodyIdx, posInBodyFrame=None):
    """getVelocity(bodyIdx) -> velocity of the body origin; getVelocity(bodyIdx, pos_B) ->
    velocity of a body point given in the body frame; getVelocity(jacobian (3, nv)) ->
    jacobian @ u. World frame."""
    if np.ndim(bodyIdx) == 2:
      jaco = np.asarray(bodyIdx, np.float64)
      if jaco.shape != (3, self.getDOF()):
        raise ValueError(f"argument 'jaco' must be (3, {self.getDOF()}), got {jaco.shape}")
      return jaco @ self.getGeneralizedVelocity()
    body = self._body(bodyIdx)
    if posInBodyFrame is None:
      return _np(self._host_kin().body_lin_vel[body])
    return self._point_velocity(body, self.getPosition(body, posInBodyFrame))

  def getAngularVelocity(self, bodyIdx):
    return _np(self._host_kin().body_ang_vel[self._body(bodyIdx)])

  # ---- Jacobians -----------------------------------------------------------------------------
  def _point_world(self, body, args, method):
    """Point in world coordinates from (point_W) or (frame, point)."""
    if len(args) == 1:
      return validation.vector(args[0], 3, "point_W")
    if len(args) == 2:
      frame, point = args
      point = validation.vector(point, 3, "point")
      if frame == Frame.WORLD_FRAME:
        return point
      if frame == Frame.BODY_FRAME:
        return self.getPosition(body, point)
      raise ValueError(f"{method}: argument 'frame' must be Frame.WORLD_FRAME or "
                       f"Frame.BODY_FRAME, got {frame!r}")
    raise TypeError(f"{method} takes (bodyIdx, point_W) or (bodyIdx, frame, point)")

  def _point_jacobian(self, body, point_w):
    return _np(_dense_point_jacobian(self._model(), self._kin(), body, np.asarray(point_w)))

  def _point_jacobian_dot(self, body, point_w):
    return _np(_dense_point_jacobian_dot(self._model(), self._kin(), body,
                                         np.asarray(point_w)))

  def getDenseJacobian(self, bodyIdx, *args):
    """Positional Jacobian (3, nv) of a point fixed on the body, given in world coordinates
    (or (bodyIdx, frame, point) with Frame.WORLD_FRAME / BODY_FRAME): v = J u."""
    body = self._body(bodyIdx)
    return self._point_jacobian(body, self._point_world(body, args, "getDenseJacobian"))

  getSparseJacobian = getDenseJacobian

  def getDenseRotationalJacobian(self, bodyIdx):
    """Rotational Jacobian (3, nv): angular velocity = J u (world frame)."""
    return _np(_dense_rotational_jacobian(self._model(), self._kin(), self._body(bodyIdx)))

  getSparseRotationalJacobian = getDenseRotationalJacobian

  def getDenseFrameJacobian(self, frameIdx):
    """Positional Jacobian (3, nv) of a frame origin (index, name or CoordinateFrame)."""
    frame = self._frame(frameIdx, "frameIdx")
    return self._point_jacobian(self._frame_offset(frame)[0], self.getFramePosition(frame))

  def getDenseFrameRotationalJacobian(self, frameIdx):
    frame = self._frame(frameIdx, "frameIdx")
    return self.getDenseRotationalJacobian(self._frame_offset(frame)[0])

  def getTimeDerivativeOfSparseJacobian(self, bodyIdx, *args):
    """dJ/dt (3, nv) of the positional Jacobian of a point fixed on the body ((bodyIdx,
    point_W) or (bodyIdx, frame, point)): a = dJ u + J du/dt. Dense."""
    body = self._body(bodyIdx)
    return self._point_jacobian_dot(
        body, self._point_world(body, args, "getTimeDerivativeOfSparseJacobian"))

  def getTimeDerivativeOfSparseRotationalJacobian(self, bodyIdx):
    """dJ_rot/dt (3, nv): angular acceleration = dJ u + J du/dt. Dense."""
    return _np(_dense_rotational_jacobian_dot(self._model(), self._kin(),
                                              self._body(bodyIdx)))

  @staticmethod
  def convertSparseJacobianToDense(sparseJaco):
    """Identity: "sparse" Jacobians are already dense arrays here."""
    return np.array(sparseJaco, dtype=np.float64)

  # ---- joints ---------------------------------------------------------------------------------
  def getJointPos_P(self):
    """(B, 3) joint position in its parent body frame (world for body 0); a read-only copy
    (the joint placement is structure: it changes with setBasePos for a fixed base)."""
    return read_only(self._model().joint_pos)

  def getJointOrientation_P(self):
    """(B, 3, 3) joint frame orientation in its parent body frame."""
    return _np(self._model().joint_rot)

  def getJointAxis_P(self):
    """(B, 3) joint axis expressed in the parent body frame (joint_rot @ axis)."""
    model = self._model()
    return np.einsum("bij,bj->bi", _np(model.joint_rot), _np(model.joint_axis))

  def getJointAxis(self, idx):
    """Joint axis (3,) of joint `idx` in the world frame."""
    body = self._body(idx, "idx")
    axis = np.asarray(self._model().joint_axis)[body]
    return _np(self._host_kin().joint_frame_rot[body]) @ _np(axis)

  def getJointType(self, jointIndex) -> JointType:
    return JointType(self._entry.description.bodies[self._body(jointIndex, "jointIndex")]
                     .joint_type)

  def _per_dof_write(self, values, name, leaf, attr, check=validation.non_negative,
                     allow_inf=False):
    """Writes a per-dof model leaf and the per-body description attribute. A body's dofs
    share one description value, so a multi-dof joint must get equal values."""
    values = validation.vector(values, self.getDOF(), name, allow_infinite=allow_inf)
    for v in values:
      check(v, name)
    model = self._model()
    description = self._entry.description
    for body in range(description.num_bodies):
      o, n = model.gv_offset[body], model.gv_dim[body]
      if n == 0:
        continue
      chunk = values[o:o + n]
      if np.any(chunk != chunk[0]):
        raise ValueError(f"argument '{name}': the {n} dofs of joint "
                         f"'{description.bodies[body].joint_name}' must share one value, "
                         f"got {chunk}")
    for body in range(description.num_bodies):
      if model.gv_dim[body]:
        setattr(description.bodies[body], attr, float(values[model.gv_offset[body]]))
    self._write_model(**{leaf: values})

  def setJointDamping(self, dampingCoefficient):
    """Viscous damping (nv,) per dof, applied implicitly by the integrator."""
    self._per_dof_write(dampingCoefficient, "dampingCoefficient", "damping", "damping")

  def getJointDamping(self):
    return _np(self._model().damping)

  def getRotorInertia(self):
    return _np(self._model().rotor_inertia)

  def setRotorInertia(self, rotorInertia):
    """Reflected rotor inertia (nv,), added to diag(M)."""
    self._per_dof_write(rotorInertia, "rotorInertia", "rotor_inertia", "rotor_inertia")

  def addSpring(self, spring):
    """Adds a joint spring (joint_springs.SpringElement) on top of the URDF's; it acts from
    the next step (no recompile). Editing the element's stiffness / mount later applies too."""
    if not isinstance(spring, joint_springs.SpringElement):
      raise ValueError(f"argument 'spring' must be a SpringElement, got {type(spring).__name__}")
    if spring._owner is not None:
      raise ValueError("argument 'spring': this SpringElement was already added to a system")
    self._entry.springs.append(spring)
    spring._owner = self
    try:
      self._springs_changed()
    except ValueError:
      self._entry.springs.pop()
      spring._owner = None
      raise

  def getSprings(self):
    """The SpringElements added with addSpring (the live elements: assign their stiffness or
    mount to change them)."""
    return list(self._entry.springs)

  def _springs_changed(self):
    """Checks every added spring and re-projects the URDF springs plus the added ones into
    the stiffness / mount leaves."""
    for spring in self._entry.springs:
      joint_springs.check_spring(self._entry.description, spring)
    urdf_springs = compile_articulated(self._entry.description, jnp.float64)
    stiffness, mount = joint_springs.spring_leaves(urdf_springs, self._entry.description,
                                                   self._entry.springs)
    self._write_model(stiffness=stiffness, spring_mount=mount)

  def getJointLimits(self):
    """(nv, 2) [lower, upper] per dof: the position limits of revolute / prismatic joints;
    for a spherical joint its first dof's row is RaiSim's {angle, NOT_USED} (the cone angle,
    inf when unlimited; NOT_USED reads inf), its other rows and a floating base's read
    (-inf, inf)."""
    model = self._model()
    lower, upper = _np(model.joint_lower), _np(model.joint_upper)
    out = np.tile([-np.inf, np.inf], (self.getDOF(), 1))
    for body, jt in enumerate(model.joint_type):
      if jt in (JOINT_REVOLUTE, JOINT_PRISMATIC):
        out[model.gv_offset[body]] = lower[model.gc_offset[body]], upper[model.gc_offset[body]]
      elif jt == JOINT_SPHERICAL:
        out[model.gv_offset[body]] = upper[model.gc_offset[body]], np.inf
    return out

  def setJointLimits(self, jointLimits):
    """(nv, 2) per dof, as getJointLimits returns: [lower, upper] for revolute / prismatic
    dofs; {angle, NOT_USED} in a spherical joint's first dof row (0 < angle < pi caps the
    joint's rotation angle: a cone limit; inf removes it; NOT_USED and the joint's other rows are not
    read). A floating base takes no finite limits. The limits are hard stops solved with the
    contacts (dynamics/joint_limits.py); making a limit finite or infinite changes the
    problem's rows and recompiles the step."""
    limits = np.asarray(jointLimits, dtype=np.float64)
    nv = self.getDOF()
    if limits.shape != (nv, 2):
      raise ValueError(f"argument 'jointLimits' must be ({nv}, 2), got shape {limits.shape}")
    model = self._model()
    lower, upper = _np(model.joint_lower), _np(model.joint_upper)
    description = self._entry.description
    for body, jt in enumerate(model.joint_type):
      rows = limits[model.gv_offset[body]:model.gv_offset[body] + model.gv_dim[body]]
      name = description.bodies[body].joint_name
      c = model.gc_offset[body]
      if jt in (JOINT_REVOLUTE, JOINT_PRISMATIC):
        if np.any(np.isnan(rows[0])) or rows[0, 0] > rows[0, 1]:
          raise ValueError(f"argument 'jointLimits': joint '{name}' needs [lower, upper] with "
                           f"lower <= upper, got {rows[0].tolist()}")
        lower[c], upper[c] = rows[0]
        description.bodies[body].lower, description.bodies[body].upper = map(float, rows[0])
      elif jt == JOINT_SPHERICAL:
        angle = rows[0, 0]
        if np.isnan(angle) or validation.cone_angle_problem(angle):
          raise ValueError(f"argument 'jointLimits', spherical joint '{name}': "
                           + validation.cone_angle_problem(np.nan_to_num(angle, nan=-1.0)))
        upper[c] = angle
        description.bodies[body].upper = float(angle)
      elif np.any(np.isfinite(rows)):
        raise ValueError(f"argument 'jointLimits': joint '{name}' ({JointType(jt).name}) "
                         "takes no finite limits")
    rows_before = np.isfinite(_np(model.joint_lower)) | np.isfinite(_np(model.joint_upper))
    self._write_model(joint_lower=lower, joint_upper=upper)
    if np.any(rows_before != (np.isfinite(lower) | np.isfinite(upper))):
      self._world._structure_changed()

  # ---- visual objects ------------------------------------------------------------------------
  def getVisOb(self):
    """[VisObject] of the visual shapes (URDF <visual>s, MJCF geoms), in body order."""
    count = len(visual_objects.geometries(self._entry.description, collision=False))
    return [visual_objects.VisObject(self, False, k) for k in range(count)]

  def getVisColOb(self):
    """[VisObject] of the collision bodies drawn as shapes (getCollisionBodies' order)."""
    count = len(visual_objects.geometries(self._entry.description, collision=True))
    return [visual_objects.VisObject(self, True, k) for k in range(count)]

  def getVisObPose(self, visObjIdx):
    """(orientation (3, 3), position (3,)) in the world of getVisOb()[visObjIdx]."""
    return self._vis_pose(visObjIdx, collision=False, name="visObjIdx")

  def getVisColObPose(self, visColObjIdx):
    """(orientation (3, 3), position (3,)) in the world of getVisColOb()[visColObjIdx]."""
    return self._vis_pose(visColObjIdx, collision=True, name="visColObjIdx")

  def _vis_pose(self, index, collision, name):
    entries = visual_objects.geometries(self._entry.description, collision)
    if not validation.whole_number(index) or not 0 <= index < len(entries):
      raise ValueError(f"argument '{name}' must be an index < {len(entries)}, got {index}")
    body, geometry = entries[int(index)]
    rot, pos = self.getBodyPose(body)
    return rot @ geometry.rot, pos + rot @ geometry.pos

  # ---- collision bodies ----------------------------------------------------------------------
  def getCollisionBodies(self):
    """[CollisionDefinition] of every collision body, in body order (see
    raisim_jax/articulated_collision.py): views, so assigning an offset or a material through
    one changes the simulation."""
    count = len(articulated_collision.collision_geometries(self._entry.description))
    return [articulated_collision.CollisionDefinition(self, k) for k in range(count)]

  def getCollisionBody(self, name):
    """The CollisionDefinition named "LINK_NAME/INDEX" (e.g. "base/0"); KeyError otherwise."""
    geometries = articulated_collision.collision_geometries(self._entry.description)
    for k, (_, geometry) in enumerate(geometries):
      if geometry.name == name:
        return articulated_collision.CollisionDefinition(self, k)
    known = ", ".join(g.name for _, g in geometries) or "none"
    raise KeyError(f"no collision body '{name}' in '{self.getName()}' (it has: {known})")

  def _collision_geometry(self, id_):
    geometries = articulated_collision.collision_geometries(self._entry.description)
    if not validation.whole_number(id_) or not 0 <= id_ < len(geometries):
      hint = (f" (a name: getCollisionBody({id_!r}) finds the body; getCollisionBodies() "
              f"lists them in index order)" if isinstance(id_, str) else "")
      raise ValueError(f"argument 'id' must be a collision body index < {len(geometries)}, "
                       f"got {id_!r}{hint}")
    geometry = geometries[int(id_)][1]
    articulated_collision.require_simulated(geometry)
    return geometry

  def setCollisionBodyShapeParameters(self, id, params):  # noqa: A002 (RaiSim's name)
    """Shape parameters of collision body `id`: sphere {radius}, cylinder / capsule
    {radius, length}, box {x, y, z} (extra entries of RaiSim's Vec<4> are not read). Applies
    at the next step without recompiling."""
    articulated_collision.set_shape_parameters(self._collision_geometry(id), params)
    self._world._collision_geometry_changed()

  def setCollisionBodyPositionOffset(self, id, posOffset):  # noqa: A002
    """Position of collision body `id` in its body frame (the parent joint frame)."""
    geometry = self._collision_geometry(id)
    geometry.pos = validation.vector(posOffset, 3, "posOffset")
    self._world._collision_geometry_changed()

  def setCollisionBodyOrientationOffset(self, id, oriOffset):  # noqa: A002
    """Orientation (3, 3 rotation matrix) of collision body `id` in its body frame."""
    geometry = self._collision_geometry(id)
    geometry.rot = validation.rotation_matrix(oriOffset, "oriOffset")
    self._world._collision_geometry_changed()

  def getContactPointVel(self, pointId):
    """World velocity of this system's material point at contact `pointId` (an index into
    getContacts(); the point moves with the contact's body, getlocalBodyIndex())."""
    contacts = self.getContacts()
    contact = contacts[validation.index(pointId, len(contacts), "pointId", "contacts")]
    return self._point_velocity(contact.getlocalBodyIndex(), contact.getPosition())

  # ---- self-collision ---------------------------------------------------------------------
  def ignoreCollisionBetween(self, bodyIdx1, bodyIdx2):
    """The two bodies of this system never collide with each other (recompiles the step)."""
    a, b = self._body(bodyIdx1, "bodyIdx1"), self._body(bodyIdx2, "bodyIdx2")
    if a == b:
      raise ValueError(f"arguments 'bodyIdx1' and 'bodyIdx2' name the same body ({a})")
    pair = (min(a, b), max(a, b))
    if pair not in self._entry.ignored_body_pairs:
      self._entry.ignored_body_pairs.add(pair)
      self._world._structure_changed()

  def getAllowedNumberOfInternalContactsBetweenTwoBodies(self) -> int:
    """Contacts kept per pair of this system's collision bodies (default 1)."""
    return int(self._entry.allowed_internal_contacts)

  def setAllowedNumberOfInternalContactsBetweenTwoBodies(self, count):
    """Keeps at most `count` (>= 1) contacts, the deepest, between two collision bodies of
    this system (self-collision); applies from the next step without recompiling (up to the
    pair's manifold size)."""
    if not validation.whole_number(count) or count < 1:
      raise ValueError(f"argument 'count' must be an integer >= 1, got {count}")
    self._entry.allowed_internal_contacts = int(count)
    self._world._collision_geometry_changed()

  def updateSelfCollisionCache(self, world=None):
    """No-op: ignoreCollisionBetween already updates the world's pair table."""

  def getOptions(self) -> ArticulatedSystemOption:
    return ArticulatedSystemOption(doNotCollideWithParent=self._entry.do_not_collide_with_parent)

  def getJointLimitViolations(self):
    """Joint-limit rows of this system that acted in the last step (RaiSim's
    getJointLimitViolations): one JointLimitViolation per joint held at (or pushed back from)
    a limit, with its generalized impulse along the joint. Not listed in getContacts()."""
    model = self._world._current_model()
    limits = model.joint_limits
    state = jax.tree.map(np.asarray, self._world._current_state().joint_limits)
    row_of_system = self._world._articulated_row(self)
    out = []
    for row, (system, dof) in enumerate(zip(limits.system, limits.dof)):
      if system != row_of_system or not state.active[row]:
        continue
      if state.impulse[row] == 0.0 and state.violation[row] <= 0.0:
        continue
      out.append(JointLimitViolation(
          jointId=int(model.articulated[system].dof_body[dof]), dof=int(dof),
          impulse=float(state.impulse[row]), isUpper=bool(state.upper[row]),
          violation=float(state.violation[row])))
    return out

  def getJointVelocityLimits(self):
    return _np(self._model().velocity_limit)

  def setJointVelocityLimits(self, velLimits):
    """(nv,) velocity limit per dof (inf: none): after each step's contact solve, impulses at
    the dofs past their limit hold them at it (joint torques: the rest of the system responds,
    a floating robot keeps its momentum; `articulated_integrate.limit_velocity`)."""
    def check(value, name):
      if not value > 0:
        raise ValueError(f"argument '{name}' must be positive (or inf), got {value!r}")
    self._per_dof_write(velLimits, "velLimits", "velocity_limit", "velocity_limit",
                        check=check, allow_inf=True)

  def getActuationUpperLimits(self):
    return _np(self._model().actuation_upper)

  def getActuationLowerLimits(self):
    return _np(self._model().actuation_lower)

  def setActuationLimits(self, upper, lower):
    """Bounds (nv,) on feed-forward + PD generalized force, enforced every step (a dof on a
    bound gets the bound as a constant force that step; articulated_integrate.py)."""
    upper = validation.vector(upper, self.getDOF(), "upper", allow_infinite=True)
    lower = validation.vector(lower, self.getDOF(), "lower", allow_infinite=True)
    if np.any(lower > upper):
      raise ValueError("argument 'lower' must not exceed 'upper'")
    self._entry.actuation_lower, self._entry.actuation_upper = lower.copy(), upper.copy()
    self._write_model(actuation_lower=lower, actuation_upper=upper)

  # ---- external loads -----------------------------------------------------------------------
  def _add_wrench(self, body, force, torque_about_origin):
    wrench = _np(self._state().external_wrench)
    wrench[body, :3] += force
    wrench[body, 3:] += torque_about_origin
    self._world._write_articulated_state(self, external_wrench=wrench)

  def setExternalForce(self, *args):
    """World-frame force for the next step only (accumulates until then):
      setExternalForce(bodyIdx, force): at the body's COM;
      setExternalForce(bodyIdx, pos_B, force): at a point given in the BODY frame (spec);
      setExternalForce(frame_name, force): at the origin of a frame;
      setExternalForce(bodyIdx, frameOfForce, force, frameOfPos, pos): Frame.WORLD_FRAME or
        Frame.BODY_FRAME for each."""
    if len(args) == 2 and isinstance(args[0], str):
      frame = self.getFrameIdxByName(args[0])
      force = validation.vector(args[1], 3, "force")
      body = self._frame_offset(frame)[0]
      point = self.getFramePosition(frame)
    elif len(args) == 2:
      body = self._body(args[0])
      force = validation.vector(args[1], 3, "force")
      point = _np(self._host_kin().com_pos[body])
    elif len(args) == 3:
      body = self._body(args[0])
      point = self.getPosition(body, validation.vector(args[1], 3, "pos"))
      force = validation.vector(args[2], 3, "force")
    elif len(args) == 5:
      body = self._body(args[0])
      frame_of_force, force, frame_of_pos, pos = args[1:]
      force = validation.vector(force, 3, "force")
      pos = validation.vector(pos, 3, "pos")
      rot = self.getOrientation(body)
      for name, frame in (("frameOfForce", frame_of_force), ("frameOfPos", frame_of_pos)):
        if frame not in (Frame.WORLD_FRAME, Frame.BODY_FRAME):
          raise ValueError(f"argument '{name}' must be Frame.WORLD_FRAME or Frame.BODY_FRAME, "
                           f"got {frame!r}")
      if frame_of_force == Frame.BODY_FRAME:
        force = rot @ force
      point = self.getPosition(body, pos) if frame_of_pos == Frame.BODY_FRAME else pos
    else:
      raise TypeError("setExternalForce takes (bodyIdx, force), (bodyIdx, pos_B, force), "
                      "(frame_name, force) or (bodyIdx, frameOfForce, force, frameOfPos, pos)")
    origin = _np(self._host_kin().body_pos[body])
    self._add_wrench(body, force, np.cross(point - origin, force))

  def setExternalTorque(self, bodyIdx, torque_in_world_frame):
    body = self._body(bodyIdx)
    torque = validation.vector(torque_in_world_frame, 3, "torque_in_world_frame")
    self._add_wrench(body, np.zeros(3), torque)

  def setExternalTorqueInBodyFrame(self, bodyIdx, torque_in_body_frame):
    body = self._body(bodyIdx)
    torque = validation.vector(torque_in_body_frame, 3, "torque_in_body_frame")
    self._add_wrench(body, np.zeros(3), self.getOrientation(body) @ torque)

  def clearExternalForcesAndTorques(self):
    nb = self._entry.description.num_bodies
    self._world._write_articulated_state(self, external_wrench=np.zeros((nb, 6)))

  def getExternalWrench(self):
    """(B, 6) pending [force; torque about the body origin], world frame (raisim_jax only)."""
    return _np(self._state().external_wrench)

  # ---- inverse dynamics ------------------------------------------------------------------------
  def setComputeInverseDynamics(self, flag: bool):
    """Kept for API compatibility: joint wrenches are computed on demand either way."""
    self._compute_inverse_dynamics = bool(flag)

  def getComputeInverseDynamics(self) -> bool:
    return self._compute_inverse_dynamics

  def _joint_wrenches(self):
    state = self._state()
    return _joint_wrenches(self._model(), state.generalized_coordinate,
                           state.generalized_velocity, state.generalized_acceleration,
                           self._world._current_model().gravity)

  def getForceAtJointInWorldFrame(self, jointId):
    """Force (3,) the joint transmits from the parent to the child subtree, world frame: RNEA
    at the current state with the last step's generalized acceleration (no external loads:
    those of the last step have been cleared)."""
    return _np(self._joint_wrenches()[0][self._body(jointId, "jointId")])

  def getTorqueAtJointInWorldFrame(self, jointId):
    """Torque (3,) about the joint position, same convention as getForceAtJointInWorldFrame."""
    return _np(self._joint_wrenches()[1][self._body(jointId, "jointId")])

  # ---- resources -----------------------------------------------------------------------------
  def getResourceDir(self) -> str:
    return self._entry.res_path

  def getRobotDescriptionFullPath(self) -> str:
    """Path of the URDF file ('' for a URDF string or a Child tree)."""
    return self._entry.source

  def getRobotDescriptionfFileName(self) -> str:
    return os.path.basename(self._entry.source) if self._entry.source else ""

  def getRobotDescriptionfTopDirName(self) -> str:
    return os.path.dirname(self._entry.source) if self._entry.source else ""
