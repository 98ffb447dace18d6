"""OO views of world objects, with RaiSim's method names (camelCase).

A view holds its world and its index; getters read the world's State/Model, setters write new
ones. No physics here: quantities such as energies come from the pure core.
"""

import jax
import numpy as np

from raisim_jax import validation
from raisim_jax.oo.precision import in_world_precision
from raisim_jax.dynamics import single_body
from raisim_jax.math import quaternion as quat_math
from raisim_jax.types import BodyType, ObjectType

# The core's functions behind the getters as one XLA call each: run eagerly on host values
# they cost ~0.4-0.6 ms of op-by-op dispatch per getter call.
_rotation_matrix = jax.jit(quat_math.to_matrix)
_CORE = {function: jax.jit(function) for function in (
    single_body.kinetic_energy, single_body.potential_energy, single_body.linear_momentum)}


def _np(x):
  return np.array(x, dtype=np.float64)


def read_only(x):
  """A float64 copy that raises on write: RaiSim's getters return references that scripts
  edit in place; here the setters are the edit path (writing the copy would do nothing)."""
  array = _np(x)
  array.flags.writeable = False
  return array


_DESCRIPTION_FIELD = {"mass": "mass", "inertia_body": "inertia",
                      "linear_damping": "linear_damping", "angular_damping": "angular_damping",
                      "body_type": "body_type"}


@in_world_precision
class Object:
  """Base of every world object: name and index in the world's object list."""

  def __init__(self, world, description):
    self._world = world
    self._description = description

  def getName(self) -> str:
    return self._description.name

  def setName(self, name: str):
    self._world._rename(self, str(name))

  def getIndexInWorld(self) -> int:
    return self._world._index_of(self)

  def getObjectType(self) -> ObjectType:
    return self._description.object_type

  def getContacts(self):
    """Contacts of this object from the last integrate1 (none for STATIC objects, as in
    RaiSim); each a Contact whose impulse is set by the following integrate2."""
    return self._world._object_contacts(self)

  def __repr__(self):
    return f"<{type(self).__name__} '{self.getName()}' index={self.getIndexInWorld()}>"


@in_world_precision
class SingleBodyObject(Object):
  """A rigid body with 6 DOF (RaiSim's SingleBodyObject API)."""

  # ---- state access -------------------------------------------------------------------
  def _row(self) -> int:
    """This body's row in the single-body arrays of Model/State."""
    return self._world._body_row(self)

  def _body_state(self, field):
    # Indexed on the host: indexing the device array is an XLA dispatch (~100 us).
    return _np(np.asarray(getattr(self._world._current_state().bodies, field))[self._row()])

  def _set_body_state(self, **fields):
    self._world._write_body_state(self, fields)

  def _body_model(self, field):
    """A physical parameter; the description is kept equal to the model leaf by every setter,
    so reading it needs no compile."""
    return read_only(getattr(self._description, _DESCRIPTION_FIELD[field]))

  # ---- pose -----------------------------------------------------------------------------
  def getPosition(self, *args):
    """getPosition() -> COM position; getPosition(localIdx) likewise;
    getPosition(localIdx, pos_b) -> world position of a body-frame point."""
    if args:
      _local_body(args[0])
    if len(args) == 2:
      point = validation.vector(args[1], 3, "pos_b")
      return self.getComPosition() + self.getRotationMatrix() @ point
    if len(args) > 2:
      raise TypeError("getPosition takes (), (localIdx) or (localIdx, pos_b)")
    return self._body_state("position")

  def getComPosition(self):
    return self._body_state("position")

  def getBodyToComPosition_rs(self):
    return read_only(self._description.com)

  def getQuaternion(self):
    return self._body_state("quaternion")

  def getRotationMatrix(self):
    return np.asarray(_rotation_matrix(self._body_state("quaternion")), np.float64)

  def getOrientation(self, *args):
    """getOrientation() or getOrientation(localIdx): the rotation matrix body -> world."""
    if len(args) > 1:
      raise TypeError("getOrientation takes () or (localIdx)")
    if args:
      _local_body(args[0])
    return self.getRotationMatrix()

  def setPosition(self, *args):
    """setPosition(vec3) or setPosition(x, y, z)."""
    position = validation.vector(args[0] if len(args) == 1 else args, 3, "position")
    self._set_body_state(position=position)

  def setOrientation(self, *args):
    """setOrientation(quat (w,x,y,z)), setOrientation(w, x, y, z) or setOrientation(R 3x3)."""
    self._set_body_state(quaternion=_orientation_argument(args))

  def setPose(self, position, orientation):
    """setPose(position, quaternion (w,x,y,z)) or setPose(position, rotation matrix)."""
    position = validation.vector(position, 3, "position")
    self._set_body_state(position=position, quaternion=_orientation_argument((orientation,)))

  # ---- velocity -------------------------------------------------------------------------
  def getLinearVelocity(self):
    return self._body_state("linear_velocity")

  def getAngularVelocity(self):
    return self._body_state("angular_velocity")

  def setVelocity(self, *args):
    """setVelocity(linear, angular) or setVelocity(dx, dy, dz, wx, wy, wz), world frame."""
    if len(args) == 2:
      linear = validation.velocity(args[0], 3, "linearVelocity")
      angular = validation.velocity(args[1], 3, "angularVelocity")
    else:
      values = validation.velocity(args, 6, "velocity")
      linear, angular = values[:3], values[3:]
    self._set_body_state(linear_velocity=linear, angular_velocity=angular)

  def setLinearVelocity(self, linear_velocity):
    self._set_body_state(linear_velocity=validation.velocity(linear_velocity, 3,
                                                             "linearVelocity"))

  def setAngularVelocity(self, angular_velocity):
    self._set_body_state(
        angular_velocity=validation.velocity(angular_velocity, 3, "angularVelocity"))

  # ---- inertia --------------------------------------------------------------------------
  def getMass(self, localIdx: int = 0) -> float:
    _local_body(localIdx)
    return float(self._body_model("mass"))

  def setMass(self, mass):
    if self.getBodyType() == BodyType.DYNAMIC:
      mass = validation.positive(mass, "mass")
    self._world._write_body_model(self, mass=float(mass))

  def getInertiaMatrix_B(self):
    return self._body_model("inertia_body")

  def getInertiaMatrix_W(self):
    rot = self.getRotationMatrix()
    return rot @ self.getInertiaMatrix_B() @ rot.T

  getInertiaMatrix_B_rs = getInertiaMatrix_B
  getInertiaMatrix_W_rs = getInertiaMatrix_W

  def setInertia(self, inertia):
    self._world._write_body_model(self, inertia=validation.inertia(inertia, "inertia"))

  def getCom(self):
    """The COM (3,) in the body frame, the frame the collision shapes are placed in
    (RaiSim's `getCom`; a read-only copy: edit with setCom)."""
    return read_only(self._description.com)

  def setCom(self, com):
    """Moves the centre of mass to `com` (body frame). The geometry stays where it is in the
    world; the body's position (its COM) moves by R (com - old com), and the body now
    rotates about the new COM."""
    com = validation.vector(com, 3, "com")
    shift = self.getRotationMatrix() @ (com - np.asarray(self._description.com, float))
    position = self.getPosition() + shift
    self._description.com = com
    self._set_body_state(position=position)
    self._world._collision_geometry_changed()

  # ---- energy and momentum (from the pure core) ----------------------------------------
  def _core(self, function, *args):
    world = self._world
    return np.asarray(_CORE[function](world._current_model(), world._current_state(), *args),
                      np.float64)[self._row()]

  def getKineticEnergy(self) -> float:
    return float(self._core(single_body.kinetic_energy))

  def getPotentialEnergy(self, gravity) -> float:
    gravity = validation.vector(gravity, 3, "gravity")
    return float(self._core(single_body.potential_energy, gravity))

  def getEnergy(self, gravity) -> float:
    return self.getKineticEnergy() + self.getPotentialEnergy(gravity)

  def getLinearMomentum(self):
    return self._core(single_body.linear_momentum)

  # ---- external loads -------------------------------------------------------------------
  def setExternalForce(self, localIdx, *args):
    """setExternalForce(localIdx, force) at the COM, or (localIdx, pos, force) at a world
    point; world frame; applied during the next integrate, then cleared."""
    _local_body(localIdx)
    if len(args) == 1:
      force = validation.vector(args[0], 3, "force")
      torque = np.zeros(3)
    elif len(args) == 2:
      point = validation.vector(args[0], 3, "pos")
      force = validation.vector(args[1], 3, "force")
      torque = np.cross(point - self.getComPosition(), force)
    else:
      raise TypeError("setExternalForce takes (localIdx, force) or (localIdx, pos, force)")
    self._world._add_external_load(self, force, torque)

  def setExternalTorque(self, localIdx, torque):
    _local_body(localIdx)
    torque = validation.vector(torque, 3, "torque")
    self._world._add_external_load(self, np.zeros(3), torque)

  def clearExternalForcesAndTorques(self):
    self._set_body_state(external_force=np.zeros(3), external_torque=np.zeros(3))

  def getExternalForce(self):
    """The force pending for the next step (world frame)."""
    return self._body_state("external_force")

  def getExternalTorque(self):
    return self._body_state("external_torque")

  def getContactPointVel(self, pointId):
    """World velocity of this body's material point at contact `pointId` (an index into
    getContacts())."""
    contacts = self.getContacts()
    contact = contacts[validation.index(pointId, len(contacts), "pointId", "contacts")]
    r = contact.getPosition() - self.getComPosition()
    return self.getLinearVelocity() + np.cross(self.getAngularVelocity(), r)

  # ---- damping, body type, collision filter, appearance ---------------------------------
  def setLinearDamping(self, damping):
    self._world._write_body_model(self, linear_damping=validation.non_negative(damping,
                                                                                "damping"))

  def setAngularDamping(self, damping):
    damping = validation.vector(damping, 3, "damping")
    if np.any(damping < 0):
      raise ValueError(f"argument 'damping' must be non-negative, got {damping}")
    self._world._write_body_model(self, angular_damping=damping)

  def getLinearDamping(self) -> float:
    return float(self._body_model("linear_damping"))

  def getAngularDamping(self):
    return self._body_model("angular_damping")

  def setBodyType(self, body_type):
    body_type = BodyType(int(body_type))
    if body_type == BodyType.DYNAMIC and not self._description.mass > 0:
      raise ValueError(f"object '{self.getName()}': a DYNAMIC body needs a positive 'mass', "
                       f"got {self._description.mass}")
    self._world._write_body_model(self, body_type=body_type)
    if body_type == BodyType.STATIC:
      self._set_body_state(linear_velocity=np.zeros(3), angular_velocity=np.zeros(3))

  def getBodyType(self, localIdx: int = 0) -> BodyType:
    _local_body(localIdx)
    return BodyType(int(self._body_model("body_type")))

  def getCollisionGroup(self) -> int:
    return self._description.collision_group

  def getCollisionMask(self) -> int:
    return self._description.collision_mask

  def setAppearance(self, appearance: str):
    self._description.appearance = str(appearance)

  def getAppearance(self) -> str:
    return self._description.appearance


def _local_body(localIdx) -> int:
  """RaiSim's localIdx of a single-body object: its one body, 0 (a compound is one body too)."""
  return validation.index(localIdx, 1, "localIdx", "bodies in a single-body object (use 0)")


def _orientation_argument(args):
  """A unit quaternion from (quat4,), (w, x, y, z) or (R,) arguments."""
  if len(args) == 4:
    return validation.unit_quaternion(args, "quaternion")
  if len(args) != 1:
    raise TypeError("orientation must be a quaternion (w, x, y, z) or a 3x3 rotation matrix")
  value = np.asarray(args[0], dtype=np.float64)
  if value.shape == (3, 3):
    rot = validation.rotation_matrix(value, "rotationMatrix")
    return np.asarray(quat_math.from_matrix(rot), np.float64)
  return validation.unit_quaternion(value, "quaternion")


@in_world_precision
class Sphere(SingleBodyObject):
  def getRadius(self) -> float:
    return float(self._description.size[0])


@in_world_precision
class Box(SingleBodyObject):
  def getDim(self):
    return _np(self._description.size[:3])


@in_world_precision
class Capsule(SingleBodyObject):
  def getRadius(self) -> float:
    return float(self._description.size[0])

  def getHeight(self) -> float:
    return float(self._description.size[1])


@in_world_precision
class Cylinder(Capsule):
  pass


@in_world_precision
class Cone(Capsule):
  pass


@in_world_precision
class Ground(SingleBodyObject):
  """The static half-space z <= height."""

  def getHeight(self) -> float:
    return float(self.getPosition()[2])

  def setPosition(self, *args):
    position = validation.vector(args[0] if len(args) == 1 else args, 3, "position")
    super().setPosition(np.array([0.0, 0.0, position[2]]))


@in_world_precision
class Compound(SingleBodyObject):
  """A rigid body made of several primitive collision shapes."""

  def getObjList(self):
    return list(self._world._compound_children[id(self._description)])


@in_world_precision
class Mesh(SingleBodyObject):
  """A rigid body colliding through the convex hulls of a mesh (World.addMesh): one hull
  (CONVEX_HULL) or one per CoACD part (CONVEXIFY). Its position is its COM's."""

  def getCoacdConvexParts(self):
    """CoACD's convex parts [(vertices (V, 3), faces (F, 3))], mesh frame, scaled; empty
    unless the mesh was added with MeshCollisionMode.CONVEXIFY."""
    return [(read_only(v), np.array(f)) for v, f in self._description.mesh.convex_parts]

  def getCollisionBodyCount(self) -> int:
    """Number of convex collision bodies: the CoACD parts, or 1 for a convex hull."""
    return len(self._description.shapes)

  def getMeshFileName(self) -> str:
    """The mesh file the object was made from (a raisim_jax extension)."""
    return self._description.mesh.file

  def getMeshScale(self) -> float:
    """The scale applied to the mesh file (a raisim_jax extension)."""
    return float(self._description.mesh.scale)

  def getCollisionMode(self):
    """The MeshCollisionMode the mesh collides with (a raisim_jax extension)."""
    return self._description.mesh.collision_mode


class CompoundObjectChild:
  """One primitive of a Compound (RaiSim's Compound::CompoundObjectChild).

  Attributes:
    objectType: ObjectType of the primitive.
    objectParam: (4,) size parameters (sphere r; box x, y, z; capsule/cylinder/cone r, h).
    material: contact material name.
    appearance: visual appearance.
    trans: Transformation with `pos` (3,) and `rot` (3, 3), compound frame -> child frame.
  """

  def __init__(self, objectType=ObjectType.SPHERE, objectParam=(0, 0, 0, 0),
               material="default", appearance="", trans=None):
    self.objectType = ObjectType(objectType)
    self.objectParam = np.asarray(objectParam, np.float64)
    self.material = material
    self.appearance = appearance
    self.trans = trans if trans is not None else Transformation()


class Transformation:
  """A rigid transformation with members `pos` (3,) and `rot` (3, 3)."""

  def __init__(self, pos=(0.0, 0.0, 0.0), rot=None):
    self.pos = np.asarray(pos, np.float64)
    self.rot = np.eye(3) if rot is None else np.asarray(rot, np.float64)
