"""Property-based fuzzing of the URDF loader (issue #9): random robot trees with random numbers
in every attribute (mostly sensible, some NaN / inf / negative / huge / malformed), sometimes
truncated or garbled. The loader must either build a world that steps 100 times with a finite
state, or raise the project's own errors: ValueError naming the source (and the line where the
file has one), or DivergenceError naming the object. Nothing else, and never a silent NaN."""

import re
import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import raisim_jax as rj
from tests.fuzz.strategies import (FUZZ, Numbers, assert_every_outcome, damaged,
                                   stepped_or_diverged)


def geometry(n):
  kind = n.pick(["sphere", "box", "capsule", "cylinder", "none"], ["cone", "mesh"])
  if kind == "sphere":
    shape = f'<sphere radius="{n.positive()}"/>'
  elif kind == "box":
    shape = f'<box size="{n.positive()} {n.positive()} {n.positive()}"/>'
  elif kind == "capsule":
    shape = f'<capsule radius="{n.positive()}" height="{n.positive()}"/>'
  elif kind == "cylinder":
    shape = f'<cylinder radius="{n.positive()}" length="{n.positive()}"/>'
  elif kind == "none":
    return ""
  else:
    shape = f"<{kind}/>"
  return f'<collision><origin xyz="0 0 {n.signed()}"/><geometry>{shape}</geometry></collision>'


def link(n, name):
  inertial = ""
  if n.pick([True, True, True, True, False], [False]):
    inertial = (f'<inertial><origin xyz="0 0 {n.signed()}"/><mass value="{n.positive()}"/>'
                f'<inertia ixx="{n.positive()}" iyy="{n.positive()}" izz="{n.positive()}" '
                f'ixy="{n.pick(["0"], ["nan", "5"])}" ixz="0" iyz="0"/></inertial>')
  return f'<link name="{name}">{inertial}{geometry(n)}</link>'


def joint(n, name, parent, child):
  jtype = n.pick(["revolute", "continuous", "prismatic", "fixed", "spherical"],
                 ["floating", "bogus"])
  axis = n.pick(["1 0 0", "0 1 0", "0 0 1"], ["0 0 0", "nan 0 1"])
  limit = ""
  if n.draw(st.booleans()):
    low = n.signed()
    limit = (f'<limit lower="{low}" upper="{n.pick(["1.0", "2.0"], [n.signed()])}" '
             f'effort="{n.positive()}" velocity="{n.positive()}"/>')
  dynamics = ""
  if n.draw(st.booleans()):
    dynamics = f'<dynamics damping="{n.positive()}" rotor_inertia="{n.positive()}"/>'
  return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
          f'<child link="{child}"/><origin xyz="0 0 {n.signed()}"/><axis xyz="{axis}"/>'
          f'{limit}{dynamics}</joint>')


@st.composite
def robot(draw):
  n = Numbers(draw)
  count = draw(st.integers(1, 3))
  parts = []
  if draw(st.booleans()):
    parts += ['<link name="world"/>',
              '<joint name="base_joint" type="fixed"><parent link="world"/>'
              '<child link="l0"/><origin xyz="0 0 1"/></joint>']
  for i in range(count):
    parts.append(link(n, f"l{i}"))
    if i:
      parts.append(joint(n, f"j{i}", f"l{draw(st.integers(0, i - 1))}", f"l{i}"))
  text = '<?xml version="1.0"?>\n<robot name="fuzz">\n' + "\n".join(parts) + "\n</robot>\n"
  return damaged(draw, text)


OUTCOMES = {"stepped": 0, "rejected": 0, "diverged": 0}


@FUZZ
@given(text=robot())
def test_random_urdf_builds_a_finite_world_or_raises_a_located_error(text):
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      robot_view = world.addArticulatedSystem(text)
  except ValueError as error:
    assert re.search(r"<string>|line \d+|not found", str(error)), str(error)
    OUTCOMES["rejected"] += 1
    return
  gc = robot_view.getGeneralizedCoordinate()
  if not stepped_or_diverged(world, OUTCOMES):
    return
  assert gc.shape == robot_view.getGeneralizedCoordinate().shape
  assert np.all(np.isfinite(robot_view.getGeneralizedCoordinate()))
  assert np.all(np.isfinite(robot_view.getGeneralizedVelocity()))
  OUTCOMES["stepped"] += 1


def test_the_fuzzer_reached_every_outcome_it_should():
  """Runs after the property (file order): the generated cases must not all be rejected."""
  assert_every_outcome(OUTCOMES, "urdf")
