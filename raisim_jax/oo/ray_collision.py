"""RaiSim's RayCollisionList / RayCollisionItem: the host-side result of World.rayTest.

RaiSim stores only the closest hit, so a list holds zero or one item.
"""

import numpy as np


class RayCollisionItem:
  """One ray hit (raisim::RayCollisionItem)."""

  def __init__(self, world_object, position, normal, distance, local_body_index=0):
    self._object = world_object
    self._position = np.array(position, np.float64)
    self._normal = np.array(normal, np.float64)
    self._distance = float(distance)
    self._local_body_index = int(local_body_index)

  def getPosition(self):
    """Hit point, world frame (numpy (3,))."""
    return self._position.copy()

  def getObject(self):
    """The hit object (the world's object view)."""
    return self._object

  def getLocalBodyIndex(self) -> int:
    """Local body index of the hit (0 for single bodies)."""
    return self._local_body_index

  def getNormal(self):
    """Extra: world unit surface normal at the hit (-direction for a ray starting inside)."""
    return self._normal.copy()

  def getDistance(self) -> float:
    """Extra: distance from the ray start along the unit direction."""
    return self._distance

  def __repr__(self):
    return (f"<RayCollisionItem object={self._object!r} position={self._position} "
            f"distance={self._distance:.6g}>")


class RayCollisionList:
  """The ray collision list (raisim::RayCollisionList): size(), len(), indexing, iteration."""

  def __init__(self, items=()):
    self._items = list(items)

  def size(self) -> int:
    return len(self._items)

  def __len__(self):
    return len(self._items)

  def __getitem__(self, index):
    return self._items[index]

  def __iter__(self):
    return iter(self._items)

  def __bool__(self):
    return bool(self._items)

  def __repr__(self):
    return f"RayCollisionList({self._items!r})"
