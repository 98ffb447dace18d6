"""Inertia of uniform-density primitives about their COM, in the shape frame (host, numpy).

Shape frames follow RaiSim: the origin is the COM; cylinders, capsules and cones have their
axis along z. A cone's base disc is at z = -h/4 and its apex at z = +3h/4.
"""

import numpy as np


def sphere_inertia(mass, radius):
  return np.eye(3) * (0.4 * mass * radius**2)


def box_inertia(mass, x, y, z):
  return np.diag([mass * (y * y + z * z), mass * (x * x + z * z), mass * (x * x + y * y)]) / 12.0


def cylinder_inertia(mass, radius, height):
  lateral = mass * (3 * radius**2 + height**2) / 12.0
  return np.diag([lateral, lateral, 0.5 * mass * radius**2])


def cone_inertia(mass, radius, height):
  lateral = 3.0 / 20.0 * mass * radius**2 + 3.0 / 80.0 * mass * height**2
  return np.diag([lateral, lateral, 0.3 * mass * radius**2])


def capsule_inertia(mass, radius, height):
  """Solid capsule (cylinder of length `height` plus two hemispheres), uniform density."""
  volume_cylinder = np.pi * radius**2 * height
  volume_spheres = 4.0 / 3.0 * np.pi * radius**3
  density = mass / (volume_cylinder + volume_spheres)
  m_cyl = density * volume_cylinder
  m_hemi = 0.5 * density * volume_spheres
  axial = 0.5 * m_cyl * radius**2 + 2 * (0.4 * m_hemi * radius**2)
  # A hemisphere's COM is 3r/8 from its flat face; its inertia about the flat face's diameter
  # is 2/5 m r^2; shift to the capsule centre with the parallel-axis theorem.
  hemi_about_com = 0.4 * m_hemi * radius**2 - m_hemi * (3 * radius / 8) ** 2
  offset = height / 2 + 3 * radius / 8
  lateral = (m_cyl * (3 * radius**2 + height**2) / 12.0
             + 2 * (hemi_about_com + m_hemi * offset**2))
  return np.diag([lateral, lateral, axial])
