"""OO view of an articulated system (RaiSim's ArticulatedSystem API, camelCase).

The view holds its world and its ArticulatedEntry; getters evaluate the pure core
(kinematics, CRBA, RNEA, ABA, Jacobians) on the world's current state, setters write new state
leaves. No physics lives here.
"""

import numpy as np

from raisim_jax import validation
from raisim_jax.objects import Object
from raisim_jax.types import BodyType, ObjectType


def _np(x):
  return np.array(x, dtype=np.float64)


class ArticulatedSystem(Object):
  """A multi-body system loaded from URDF (or built from a `Child` tree)."""

  def __init__(self, world, entry):
    super().__init__(world, entry)
    self._entry = entry

  def getObjectType(self) -> ObjectType:
    return ObjectType.ARTICULATED_SYSTEM

  def getBodyType(self, bodyIdx: int = 0) -> BodyType:
    return BodyType.DYNAMIC

  def getContacts(self):
    """Contacts with articulated systems are not simulated yet: always empty."""
    return []

  # ---- dimensions --------------------------------------------------------------------------
  def getDOF(self) -> int:
    return self._entry.description.dof

  getGeneralizedVelocityDim = getDOF

  def getGeneralizedCoordinateDim(self) -> int:
    return self._entry.description.gc_dim

  # ---- state -------------------------------------------------------------------------------
  def _state(self):
    return self._world._articulated_state(self)

  def getGeneralizedCoordinate(self):
    return _np(self._state().generalized_coordinate)

  def getGeneralizedVelocity(self):
    return _np(self._state().generalized_velocity)

  def getGeneralizedAcceleration(self):
    return _np(self._state().generalized_acceleration)

  def setGeneralizedCoordinate(self, jointState):
    gc = validation.vector(jointState, self.getGeneralizedCoordinateDim(), "jointState")
    self._world._write_articulated_state(self, generalized_coordinate=gc)

  def setGeneralizedVelocity(self, jointVel):
    gv = validation.vector(jointVel, self.getDOF(), "jointVel")
    self._world._write_articulated_state(self, generalized_velocity=gv)

  def setGeneralizedForce(self, tau):
    tau = validation.vector(tau, self.getDOF(), "tau")
    self._world._write_articulated_state(self, feedforward_force=tau)

  def getFeedForwardGeneralizedForce(self):
    return _np(self._state().feedforward_force)

  def getState(self):
    """(generalized coordinate, generalized velocity)."""
    return self.getGeneralizedCoordinate(), self.getGeneralizedVelocity()

  def setState(self, genco, genvel):
    self.setGeneralizedCoordinate(genco)
    self.setGeneralizedVelocity(genvel)
