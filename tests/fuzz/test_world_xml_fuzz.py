"""Property-based fuzzing of the world-file loader (issue #9): random RaiSim world files
(settings, materials, <params> with @@names and {expressions}, every primitive, compounds,
<array> loops, an articulated system with state and PD, refused and unknown elements) with
random numbers in every attribute (mostly sensible, some NaN / inf / negative / huge /
malformed), sometimes truncated or garbled. `World(path)` must either build a world that steps
100 times with a finite state, or raise the project's own errors: ValueError naming the file
and the line, or DivergenceError naming the object. Nothing else, and never a silent NaN."""

import os
import re
import tempfile
import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import raisim_jax as rj
from tests.fuzz.strategies import (FUZZ, Numbers, assert_every_outcome, damaged,
                                   stepped_or_diverged)

PENDULUM = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "rsc", "urdf",
                                        "pendulum.urdf"))
MATERIALS = ["steel", "rubber", "copper"]


def vector(n, size, value):
  """`size` numbers from `value` (a Numbers method), or a wrong count of them."""
  count = n.pick([size], [size - 1, size + 1])
  return " ".join(value() for _ in range(count))


def state(n, z):
  quat = n.pick(["1 0 0 0", "0.7071 0 0.7071 0", "0.5 0.5 0.5 0.5"], ["0 0 0 0", "1 0 0"])
  return (f'<state pos="{n.signed()} {n.signed()} {z}" quat="{quat}" '
          f'lin_vel="{vector(n, 3, n.signed)}" angVel="{vector(n, 3, n.signed)}"/>')


def dim(n, kind):
  names = {"sphere": ("radius",), "box": ("x", "y", "z"), "cylinder": ("radius", "height"),
           "capsule": ("radius", "height"), "cone": ("radius", "height")}[kind]
  return "<dim " + " ".join(f'{name}="{n.positive()}"' for name in names) + "/>"


def primitive(n, draw, k):
  kind = n.pick(["sphere", "box", "cylinder", "capsule", "cone"], ["teapot", "mesh", "wire"])
  if kind in ("teapot", "mesh", "wire"):
    return f"<{kind}/>"
  extras = ""
  if draw(st.booleans()):
    extras += (f'<inertia xx="{n.positive()}" xy="{n.pick(["0"], ["nan", "5"])}" xz="0" '
               f'yy="{n.positive()}" yz="0" zz="{n.positive()}"/>')
  attributes = f' mass="{n.positive()}" material="{draw(st.sampled_from(MATERIALS))}"'
  if draw(st.booleans()):
    attributes += f' com="{vector(n, 3, n.signed)}"'
  if draw(st.booleans()):
    attributes += f' body_type="{n.pick(["dynamic", "static", "kinematic"], ["floating"])}"'
  if draw(st.booleans()):
    group = n.pick(["collision[1]", "2", "collision[0|3]"], ["collision[64]", "x"])
    attributes += f' collision_group="{group}" collisionMask="{n.pick(["-1", "3"], ["y"])}"'
  z = n.pick([f"{0.3 + 0.6 * k:.2f}", "@@height", "{@@height+0.5}"], ["@@nowhere", "{1+}"])
  return (f"<{kind} name=\"body{k}\"{attributes}>{dim(n, kind)}{extras}{state(n, z)}"
          f"</{kind}>")


def compound(n):
  second = n.pick(["box", "capsule"], ["cone"])
  return (f'<compound name="dumbbell" mass="{n.positive()}" com="0 0 0">'
          f'<inertia xx="{n.positive()}" xy="0" xz="0" yy="{n.positive()}" yz="0" '
          f'zz="{n.positive()}"/><children>'
          f'<sphere material="rubber">{dim(n, "sphere")}<state pos="0.2 0 0"/></sphere>'
          f'<{second} material="steel"><dim x="0.4" y="0.05" z="0.05" radius="0.03" '
          f'height="0.3"/><state pos="0 0 0" quat="{n.pick(["1 0 0 0"], ["0 0 0 0"])}"/>'
          f'</{second}></children>{state(n, "1.5")}</compound>')


def array(n):
  count = n.pick(["2", "3"], ["-1", "1e300", "abc", "1.5"])
  return (f'<array idx="@@i" start="0" end="{count}" increment="{n.pick(["1"], ["0"])}">'
          f'<sphere name="ball_@@i" mass="1"><dim radius="{{0.05+0.01*@@i}}"/>'
          f'<state pos="{{0.3*@@i}} 1 {{@@height+0.2*@@i}}"/></sphere></array>')


def articulated(n):
  qpos = n.pick(["0.3", "-0.2"], ["nan", "1 2", "1e300"])
  return (f'<articulated_system name="pendulum" urdf_path="{PENDULUM}">'
          f'<state qpos="{qpos}" qvel="{n.signed()}"/>'
          f'<pd p_gain="{n.positive()}" d_gain="{n.positive()}" p_target="{n.signed()}" '
          f'd_target="0"/></articulated_system>')


@st.composite
def world_file(draw):
  n = Numbers(draw)
  parts = [f'<params><height value="{n.pick(["0.5", "1.0", "{0.2*3}"], ["nan", "abc"])}"/>'
           f'</params>']
  if draw(st.booleans()):
    parts.append(f'<timeStep value="{n.pick(["0.001", "0.002", "5e-4"], ["0", "-1", "nan"])}"/>')
  if draw(st.booleans()):
    gravity = n.pick(["0 0 -9.81", "0.5 0 -9.81", "0 0 -1"],
                     ["0 0", "0 0 nan", "0 0 -1e300", "0 0 -inf", "0, 0, abc"])
    parts.append(f'<gravity value="{gravity}"/>')
  if draw(st.booleans()):
    parts.append(f'<erp erp="{n.positive()}" erp2="{n.pick(["0"], ["0.1"])}"/>')
  if draw(st.booleans()):
    pairs = [f'<default friction="{n.positive()}" restitution="{n.pick(["0", "0.5"], ["2"])}" '
             f'restitution_threshold="{n.positive()}"/>']
    for _ in range(draw(st.integers(0, 2))):
      first, second = draw(st.sampled_from(MATERIALS)), draw(st.sampled_from(MATERIALS))
      pairs.append(f'<pair_prop name1="{first}" name2="{second}" friction="{n.positive()}" '
                   f'restitution="{n.pick(["0", "0.3", "0.8"], ["nan", "-0.5"])}" '
                   f'restitution_threshold="{n.positive()}"/>')
    parts.append("<material>" + "".join(pairs) + "</material>")
  objects = [f'<ground name="floor" height="{n.signed()}" '
             f'material="{draw(st.sampled_from(MATERIALS))}"/>']
  for k in range(draw(st.integers(0, 3))):
    objects.append(primitive(n, draw, k))
  extra = draw(st.sampled_from(["none"] * 5 + ["array", "compound", "articulated"]))
  if extra == "array":
    objects.append(array(n))
  elif extra == "compound":
    objects.append(compound(n))
  elif extra == "articulated":
    objects.append(articulated(n))
  parts.append("<objects>\n" + "\n".join(objects) + "\n</objects>")
  text = '<?xml version="1.0"?>\n<raisim version="1.0">\n' + "\n".join(parts) + "\n</raisim>\n"
  return damaged(draw, text)


OUTCOMES = {"stepped": 0, "rejected": 0, "diverged": 0}


def _body_states(world):
  for obj in world.getObjList():
    if hasattr(obj, "getGeneralizedCoordinate"):
      yield obj.getGeneralizedCoordinate()
      yield obj.getGeneralizedVelocity()
    else:
      yield obj.getPosition()
      yield obj.getQuaternion()
      yield obj.getLinearVelocity()
      yield obj.getAngularVelocity()


@FUZZ
@given(text=world_file())
def test_random_world_file_builds_a_finite_world_or_raises_a_located_error(text):
  with tempfile.TemporaryDirectory() as directory:
    path = os.path.join(directory, "fuzz.xml")
    with open(path, "w") as f:
      f.write(text)
    try:
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        world = rj.World(path)
    except ValueError as error:
      assert re.search(r"fuzz\.xml.*line \d+", str(error)), str(error)
      OUTCOMES["rejected"] += 1
      return
  if not stepped_or_diverged(world, OUTCOMES):
    return
  assert all(np.all(np.isfinite(x)) for x in _body_states(world))
  OUTCOMES["stepped"] += 1


def test_the_fuzzer_reached_every_outcome_it_should():
  """Runs after the property (file order): the generated cases must not all be rejected."""
  assert_every_outcome(OUTCOMES, "world xml")
