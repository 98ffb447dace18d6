"""Host-side argument checks shared by the loaders, the compiler and the OO layer.

Each raises ValueError naming the argument and the bad value before anything is traced.
"""

import warnings

import numpy as np

UNIT_QUATERNION_TOLERANCE = 1e-6
# Speeds (m/s, rad/s) beyond this are no motion a rigid-body simulation can represent: their
# squares (kinetic energy, Coriolis terms) overflow float32 from about 1.8e19 on.
MAX_SPEED = 1e8
# Time steps above this (s) are accepted, as RaiSim does, with a warning: contacts, PD and
# integrators are built for steps of 1e-4 .. 1e-2 s.
LARGE_TIME_STEP = 0.05


def vector(value, length: int, name: str, allow_infinite: bool = False) -> np.ndarray:
  """`value` as a float64 array of shape (length,); ValueError naming `name` otherwise.
  With allow_infinite, +-inf entries (a bound that is absent) pass; NaN never does."""
  try:
    array = np.asarray(value, dtype=np.float64)
  except (TypeError, ValueError) as error:
    raise ValueError(f"argument '{name}' must be {length} numbers, got {value!r}") from error
  if array.shape != (length,):
    raise ValueError(f"argument '{name}' must have {length} elements, got shape {array.shape}")
  if allow_infinite and np.any(np.isnan(array)):
    raise ValueError(f"argument '{name}' must not contain NaN, got {array}")
  if not allow_infinite and not np.all(np.isfinite(array)):
    raise ValueError(f"argument '{name}' must be finite, got {array}")
  return array


def velocity(value, length: int, name: str) -> np.ndarray:
  """`vector(value, length, name)` whose entries are at most MAX_SPEED in magnitude."""
  array = vector(value, length, name)
  if np.any(np.abs(array) > MAX_SPEED):
    raise ValueError(f"argument '{name}' has a speed of {np.abs(array).max():.3g}, beyond "
                     f"{MAX_SPEED:.0e} (m/s or rad/s): no physical motion; its square would "
                     f"overflow the simulation")
  return array


def matrix3(value, name: str) -> np.ndarray:
  """`value` as a finite (3, 3) float64 array."""
  array = np.asarray(value, dtype=np.float64)
  if array.shape != (3, 3):
    raise ValueError(f"argument '{name}' must be a 3x3 matrix, got shape {array.shape}")
  if not np.all(np.isfinite(array)):
    raise ValueError(f"argument '{name}' must be finite, got {array}")
  return array


def unit_quaternion(value, name: str = "quaternion") -> np.ndarray:
  """A (w, x, y, z) quaternion of unit norm (within 1e-6); ValueError for zero or non-unit."""
  q = vector(value, 4, name)
  norm = np.linalg.norm(q)
  if abs(norm - 1.0) > UNIT_QUATERNION_TOLERANCE:
    raise ValueError(f"argument '{name}' must be a unit quaternion (w, x, y, z), got {q} "
                     f"with norm {norm:.6g}")
  return q / norm


def rotation_matrix(value, name: str = "rotation") -> np.ndarray:
  """A proper orthonormal 3x3 rotation matrix (within 1e-6)."""
  r = matrix3(value, name)
  if (np.abs(r @ r.T - np.eye(3)).max() > UNIT_QUATERNION_TOLERANCE
      or abs(np.linalg.det(r) - 1.0) > UNIT_QUATERNION_TOLERANCE):
    raise ValueError(f"argument '{name}' must be a rotation matrix (orthonormal, det +1)")
  return r


def whole_number(value) -> bool:
  """`value` is a count or index: an int, a NumPy integer or a finite float without fraction
  (2.0; not 2.5, NaN, a bool or a string). Callers check its range and name the argument."""
  return (isinstance(value, (int, np.integer, float, np.floating))
          and not isinstance(value, (bool, np.bool_)) and bool(np.isfinite(value))
          and float(value).is_integer())


def index(value, count: int, name: str, items: str) -> int:
  """`value` as an index into `count` things (`items` names them in the error): an int or a
  NumPy integer in [0, count). Floats are refused, not truncated (1.7 is not index 1)."""
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
    raise ValueError(f"argument '{name}' must be an index (int), got {value!r}")
  if not 0 <= value < count:
    raise ValueError(f"argument '{name}' = {value} is out of range: there are {count} {items}")
  return int(value)


def positive(value, name: str) -> float:
  """A finite number > 0."""
  x = float(value)
  if not np.isfinite(x) or x <= 0:
    raise ValueError(f"argument '{name}' must be positive, got {value!r}")
  return x


def cone_angle_problem(angle) -> str:
  """'' when `angle` is a valid spherical-joint cone limit (0 < angle < pi, or +inf for none),
  else what is wrong with it (callers add the file / joint / argument)."""
  angle = float(angle)
  if angle == np.inf or 0.0 < angle < np.pi:
    return ""
  return (f"a spherical joint's cone angle must be in (0, pi) (inf: no limit; the rotation "
          f"angle never exceeds pi), got {angle}")


def non_negative(value, name: str) -> float:
  """A finite number >= 0."""
  x = float(value)
  if not np.isfinite(x) or x < 0:
    raise ValueError(f"argument '{name}' must be non-negative, got {value!r}")
  return x


def inertia(value, name: str = "inertia") -> np.ndarray:
  """A symmetric positive-definite 3x3 inertia matrix."""
  i = matrix3(value, name)
  if np.abs(i - i.T).max() > 1e-9 * max(1.0, np.abs(i).max()):
    raise ValueError(f"argument '{name}' must be symmetric, got {i.tolist()}")
  moments = np.linalg.eigvalsh(i)
  if moments.min() <= 0:
    raise ValueError(f"argument '{name}' must be positive definite, got {i.tolist()}")
  # No rigid body has a principal moment above the sum of the other two (each is an integral
  # of two squared coordinates). RaiSim accepts such a matrix and so do we, but the motion it
  # gives is no real body's: say so.
  if moments[2] > (moments[0] + moments[1]) * (1 + 1e-6):
    warnings.warn(f"argument '{name}': principal moments {moments.tolist()} break the triangle "
                  f"inequality (largest > sum of the other two): no rigid body has this "
                  f"inertia; it is simulated as given", UserWarning, stacklevel=3)
  return i
