"""RaiSim's Contact class: a read-only view of one slot of the contact buffer, seen from one of
its two objects. Vectors are numpy arrays; the numbers come from the pure state."""

import numpy as np

from raisim_jax.types import BodyType
from raisim_jax.oo.precision import in_world_precision


@in_world_precision
class Contact:
  """One contact point (RaiSim's raisim::Contact API)."""

  def __init__(self, world, slot, is_object_a, index_in_object, pair_index_in_pair_object,
               problem_index, data, skip=False):
    self._world = world
    self._slot = slot
    self._is_object_a = is_object_a
    self._index_in_object = index_in_object
    self._pair_index = pair_index_in_pair_object
    self._problem_index = problem_index
    self._data = data  # dict of numpy arrays for this slot
    self._skip = skip

  def getPosition(self):
    """Contact point, world frame."""
    return self._data["position"].copy()

  def getNormal(self):
    """Unit normal pointing to object A, world frame."""
    return self._data["normal"].copy()

  def getContactFrame(self):
    """The TRANSPOSE of the contact frame (rows are its x, y, z axes; z = normal)."""
    return self._data["frame"].copy()

  def getImpulse(self):
    """Impulse on object A in the contact frame (N s; divide by dt for a force)."""
    return self._data["impulse"].copy()

  getImpulsePtr = getImpulse

  def getDepth(self) -> float:
    """Penetration depth (negative: a gap inside the speculative margin)."""
    return float(self._data["depth"])

  def isObjectA(self) -> bool:
    return self._is_object_a

  def getPairObjectIndex(self) -> int:
    """World index of the other object."""
    return int(self._data["object_b"] if self._is_object_a else self._data["object_a"])

  def getPairObjectBodyType(self) -> BodyType:
    return self._world.getObject(self.getPairObjectIndex()).getBodyType()

  def getPairContactIndexInPairObject(self) -> int:
    """This contact's index in the pair object's getContacts() (static objects store none:
    -1 then, as RaiSim leaves it undefined)."""
    return self._pair_index

  def getIndexContactProblem(self) -> int:
    """Index in World.getContactProblem()."""
    return self._problem_index

  def getIndexInObjectContactList(self) -> int:
    return self._index_in_object

  def getInvInertia(self):
    """Inverse apparent inertia G_ii = J M^-1 J^T at the contact, contact frame."""
    return self._data["inverse_apparent_inertia"].copy()

  def getlocalBodyIndex(self) -> int:
    """Body index, inside this object, of the body in contact (0 for single bodies; an
    articulated system's body / joint index)."""
    return int(self._data["local_a"] if self._is_object_a else self._data["local_b"])

  def isSelfCollision(self) -> bool:
    """True when both sides are bodies of the same articulated system."""
    return bool(self._data["self_collision"])

  def skip(self) -> bool:
    """True for the second view of a self-collision (the system lists the contact once per
    side; iterate over contacts whose skip() is False to see each contact once)."""
    return self._skip

  def getCollisionBodyA(self):
    """(world index, local body index, shape row) of object A's collision body."""
    return (int(self._data["object_a"]), int(self._data["local_a"]),
            int(self._data["shape_a"]))

  def getCollisionBodyB(self):
    return (int(self._data["object_b"]), int(self._data["local_b"]),
            int(self._data["shape_b"]))

  def __repr__(self):
    return (f"<Contact pos={np.round(self.getPosition(), 4)} normal="
            f"{np.round(self.getNormal(), 4)} depth={self.getDepth():.2e} "
            f"impulse={np.round(self.getImpulse(), 6)}>")
