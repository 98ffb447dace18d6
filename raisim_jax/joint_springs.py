"""Extra joint springs (RaiSim's SpringElement, ArticulatedSystem::addSpring / getSprings) and
their projection into the model's spring leaves.

A SpringElement pulls joint `childBodyId` (the joint whose child is that body) towards
`mount` with stiffness k: generalized force k (mount (-) q), integrated implicitly like the
URDF's `<dynamics stiffness spring_mount>` spring of the same joint. Springs on one joint add
up: for a revolute / prismatic joint, k = k_urdf + sum k_i and mount = (k_urdf m_urdf +
sum k_i m_i) / k (exactly the sum of the forces); a spherical joint's springs must share one
mount quaternion (their sum is then one spring on it; different mounts raise, the combined
rotation-vector spring is not modelled). The floating base takes no spring.

The element is a view-like value: once added, assigning `stiffness` or `mount` re-projects the
leaves (no recompile). The system's entry keeps the list (one source of truth).
"""

import numpy as np

from raisim_jax import validation
from raisim_jax.types import (JOINT_PRISMATIC, JOINT_REVOLUTE,
                              JOINT_SPHERICAL)


class SpringElement:
  """RaiSim's SpringElement: childBodyId, stiffness (>= 0), mount ((1,) or quaternion (4,))."""

  def __init__(self, childBodyId=0, stiffness=0.0, mount=None):
    self._owner = None
    self._child = int(childBodyId)
    self._stiffness = validation.non_negative(stiffness, "stiffness")
    self._mount = None if mount is None else np.asarray(mount, np.float64).reshape(-1)

  @property
  def childBodyId(self) -> int:
    return self._child

  @property
  def stiffness(self) -> float:
    return self._stiffness

  @stiffness.setter
  def stiffness(self, value):
    self._stiffness = validation.non_negative(value, "stiffness")
    self._changed()

  @property
  def mount(self):
    mount = np.array(self._mount)
    mount.flags.writeable = False
    return mount

  @mount.setter
  def mount(self, value):
    previous = self._mount
    self._mount = np.asarray(value, np.float64).reshape(-1)
    try:
      self._changed()
    except ValueError:
      self._mount = previous
      raise

  def _changed(self):
    if self._owner is not None:
      self._owner._springs_changed()

  def __repr__(self):
    return (f"SpringElement(childBodyId={self._child}, stiffness={self._stiffness}, "
            f"mount={None if self._mount is None else self._mount.tolist()})")


def check_spring(description, spring):
  """ValueError naming the problem when `spring` does not fit the system `description`."""
  bodies = description.bodies
  if not 0 <= spring.childBodyId < len(bodies):
    raise ValueError(f"SpringElement.childBodyId must be a body index < {len(bodies)}, got "
                     f"{spring.childBodyId}")
  body = bodies[spring.childBodyId]
  if body.joint_type not in (JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_SPHERICAL):
    raise ValueError(f"SpringElement on joint '{body.joint_name}': only revolute, prismatic and "
                     "spherical joints take springs")
  length = 4 if body.joint_type == JOINT_SPHERICAL else 1
  if spring._mount is None or spring._mount.shape != (length,):
    raise ValueError(f"SpringElement.mount of joint '{body.joint_name}' must have {length} "
                     f"value(s), got {spring._mount}")
  if length == 4:
    validation.unit_quaternion(spring._mount, "SpringElement.mount")
  elif not np.isfinite(spring._mount[0]):
    raise ValueError(f"SpringElement.mount must be finite, got {spring._mount}")


def spring_leaves(model, description, springs):
  """(stiffness (nv,), spring_mount (nq,)) numpy leaves: the URDF springs of `model` (an
  ArticulatedModel) with `springs` added (see the module docstring)."""
  stiffness = np.array(model.stiffness, np.float64)
  mount = np.array(model.spring_mount, np.float64)
  for body, _ in enumerate(description.bodies):
    added = [s for s in springs if s.childBodyId == body and s.stiffness > 0]
    if not added:
      continue
    v, c = model.gv_offset[body], model.gc_offset[body]
    k0 = stiffness[v]
    if model.joint_type[body] == JOINT_SPHERICAL:
      mounts = [s._mount / np.linalg.norm(s._mount) for s in added]
      if k0 > 0:
        mounts.append(mount[c:c + 4])
      reference = mounts[0]
      for other in mounts[1:]:
        if min(np.abs(other - reference).max(), np.abs(other + reference).max()) > 1e-12:
          raise ValueError(f"springs on spherical joint '{description.bodies[body].joint_name}'"
                           " with different mounts are not supported (give them one mount)")
      stiffness[v:v + 3] = k0 + sum(s.stiffness for s in added)
      mount[c:c + 4] = reference
    else:
      total = k0 + sum(s.stiffness for s in added)
      mount[c] = (k0 * mount[c] + sum(s.stiffness * s._mount[0] for s in added)) / total
      stiffness[v] = total
  return stiffness, mount
