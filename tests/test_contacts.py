"""Contacts between single bodies against closed-form physics (float64 unless noted)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from tests import world_steps
from raisim_jax import contact_heads
from raisim_jax.collision import detection
from raisim_jax.description import BroadphaseSettings
from raisim_jax.math import rotation
from raisim_jax.types import BroadphaseType
from tests import jaxpr_walk

G = 9.81


def _roll(world, seconds):
  model, state = world.compile()
  steps = int(round(seconds / float(model.time_step)))
  final, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, steps)
  world.setState(final)
  return trajectory


# ---- restitution (the spec's materials example) ----------------------------------------------

def test_materials_example_bounce_heights_follow_the_restitution_law():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround(0, "steel")
  restitution = {"steel": 0.95, "rubber": 0.15, "copper": 0.65}
  balls = {}
  for k, material in enumerate(restitution):
    ball = world.addSphere(0.5, 1.0, material)
    ball.setPosition(-2 + 2 * k, 0, 5)
    balls[material] = ball
  for material, e in restitution.items():
    world.setMaterialPairProp("steel", material, 0.8, e, 0.001)
  trajectory = _roll(world, 2.5)
  z = np.asarray(trajectory.bodies.position[:, 1:4, 2])
  vz = np.asarray(trajectory.bodies.linear_velocity[:, 1:4, 2])
  for k, (material, e) in enumerate(restitution.items()):
    first_contact = np.argmax(vz[:, k] > 0)            # first step moving up
    impact_speed = -vz[first_contact - 1, k] + G * 1e-3  # speed entering that step
    release_height = z[first_contact, k]
    apex = z[first_contact:, k].max()
    bounce = e * (impact_speed - 0.001)
    predicted = release_height + bounce**2 / (2 * G)
    assert apex == pytest.approx(predicted, rel=0.02), material
    # and the apex of the COM against the drop height, the way a user reads the example
    assert apex == pytest.approx(0.5 + e**2 * 4.5, rel=0.02), material


def test_no_bounce_below_the_restitution_threshold():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround(0, "steel")
  ball = world.addSphere(0.5, 1.0, "steel")
  ball.setPosition(0, 0, 0.6)  # impact at about 1.4 m/s
  world.setMaterialPairProp("steel", "steel", 0.8, 0.9, 2.0)
  trajectory = _roll(world, 1.0)
  vz = np.asarray(trajectory.bodies.linear_velocity[:, 1, 2])
  assert vz.max() < 0.05
  assert float(trajectory.bodies.position[-1, 1, 2]) == pytest.approx(0.5, abs=1e-3)


# ---- friction on an incline ------------------------------------------------------------------

def _box_on_incline(theta, mu, static_mu=None, static_velocity=None, dtype=jnp.float64):
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  # The incline: a flat ground with gravity tilted by theta about y (x points downhill).
  world.setGravity([G * np.sin(theta), 0, -G * np.cos(theta)])
  world.addGround(0, "floor")
  box = world.addBox(0.4, 0.3, 0.2, 2.0, "block")
  box.setPosition(0, 0, 0.1)
  if static_mu is None:
    world.setMaterialPairProp("floor", "block", mu, 0.0, 0.0)
  else:
    world.setMaterialPairProp("floor", "block", mu, 0.0, 0.0, static_mu, static_velocity)
  return world, box


def test_box_sticks_when_tan_theta_below_mu():
  world, box = _box_on_incline(np.arctan(0.5), mu=0.6)
  _roll(world, 2.0)
  drift = np.linalg.norm(box.getPosition()[:2])
  assert drift < 1e-4
  assert abs(box.getPosition()[2] - 0.1) < 1e-3


def test_box_slides_with_acceleration_g_sin_minus_mu_cos():
  theta, mu = np.arctan(0.8), 0.5
  world, box = _box_on_incline(theta, mu=mu)
  trajectory = _roll(world, 1.0)
  expected = G * (np.sin(theta) - mu * np.cos(theta))
  v = np.asarray(trajectory.bodies.linear_velocity[:, 1, 0])
  acceleration = (v[-1] - v[499]) / 0.5
  assert acceleration == pytest.approx(expected, rel=0.01)
  assert abs(float(trajectory.bodies.linear_velocity[-1, 1, 1])) < 1e-9


def test_static_friction_holds_below_mu_static_and_releases_above_the_velocity_threshold():
  theta = np.arctan(0.7)  # between mu = 0.5 and mu_static = 0.9
  world, box = _box_on_incline(theta, mu=0.5, static_mu=0.9, static_velocity=0.05)
  _roll(world, 1.0)
  assert np.linalg.norm(box.getPosition()[:2]) < 1e-4  # held by static friction
  box.setLinearVelocity([0.5, 0, 0])                  # kick it above v_static
  trajectory = _roll(world, 0.5)
  v = np.asarray(trajectory.bodies.linear_velocity[:, 1, 0])
  expected = G * (np.sin(theta) - 0.5 * np.cos(theta))
  assert (v[-1] - v[199]) / 0.3 == pytest.approx(expected, rel=0.01)


# ---- momentum --------------------------------------------------------------------------------

@pytest.mark.parametrize("offset", [0.0, 0.35], ids=["head-on", "oblique"])
def test_sphere_sphere_collisions_conserve_momentum(offset):
  world = rj.World()
  world.setGravity([0, 0, 0])
  world.setTimeStep(1e-3)
  a = world.addSphere(0.2, 1.0)
  b = world.addSphere(0.3, 2.5)
  a.setPosition(-1, offset, 0)
  b.setPosition(1, 0, 0)
  a.setLinearVelocity([3.0, 0, 0])
  b.setLinearVelocity([-1.0, 0.2, 0])
  world.setDefaultMaterial(0.5, 0.7, 0.0)
  momentum0 = a.getLinearMomentum() + b.getLinearMomentum()
  trajectory = _roll(world, 1.0)
  assert np.asarray(trajectory.contacts.active).any()  # they did collide
  momentum = a.getLinearMomentum() + b.getLinearMomentum()
  np.testing.assert_allclose(momentum, momentum0, rtol=0, atol=1e-9 * np.abs(momentum0).max())
  # The collision did exchange momentum (it is not a trivial pass-through).
  assert not np.allclose(a.getLinearVelocity(), [3.0, 0, 0], atol=1e-3)


# ---- collision groups and masks --------------------------------------------------------------

def test_collision_group_and_mask_table_of_the_spec():
  world = rj.World()
  world.setGravity([0, 0, 0])
  spheres = [
      world.addSphere(1, 1, "default", rj.COLLISION(0), rj.COLLISION(0) | rj.COLLISION(1)),
      world.addSphere(1, 1, "default", rj.COLLISION(1), rj.COLLISION(0) | rj.COLLISION(1)),
      world.addSphere(1, 1, "default", rj.COLLISION(2), rj.COLLISION(1)),
      world.addSphere(1, 1, "default", rj.COLLISION(3), -1),
  ]
  for k, sphere in enumerate(spheres):
    sphere.setPosition(0.1 * k, 0, 0)  # all overlapping
  world.integrate1()
  touching = {tuple(sorted(c.getCollisionBodyA()[0:1] + c.getCollisionBodyB()[0:1]))
              for c in world.getContactProblem()}
  assert touching == {(0, 1)}
  # Changing the filter between steps (no recompile): sphere 1 now accepts every group, so it
  # also touches sphere 2 (which accepts group 1) and sphere 3 (which accepts all).
  world.setObjectCollisionFilter(spheres[1], rj.COLLISION(1), -1)
  world.integrate1()
  touching = {tuple(sorted(c.getCollisionBodyA()[0:1] + c.getCollisionBodyB()[0:1]))
              for c in world.getContactProblem()}
  assert touching == {(0, 1), (1, 2), (1, 3)}


LEGGED_SLAB = """<?xml version="1.0"?>
<robot name="legged_slab">
  <link name="slab">
    <inertial><mass value="2.0"/>
      <inertia ixx="0.03" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.05"/></inertial>
    <collision><geometry><box size="0.4 0.4 0.1"/></geometry></collision>
  </link>
  <joint name="hinge" type="revolute"><parent link="slab"/><child link="foot"/>
    <origin xyz="1 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="0" velocity="0"/></joint>
  <link name="foot">
    <inertial><mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
</robot>"""


def _touching_ground(world, obj, body_of):
  world.integrate1()
  return sorted({body_of(c) for c in obj.getContacts() if not c.skip()})


def test_collision_filter_of_one_local_body_of_a_compound_and_a_system():
  """setObjectCollisionFilter(obj, group, mask, localIdx) filters only that local body's
  shapes (RaiSim: "for all collision bodies on an object, or for a specific local body"):
  a mask without group 63 takes that body off the ground; localIdx -1 sets the whole object
  again. No recompile."""
  world = rj.World()
  world.addGround()
  children = [rj.CompoundObjectChild(rj.ObjectType.SPHERE, [0.1, 0, 0, 0],
                                     trans=rj.Transformation(pos=[x, 0, 0]))
              for x in (-0.5, 0.5)]
  dumbbell = world.addCompound(children, 1.0, [0, 0, 0], np.diag([0.01, 0.1, 0.1]))
  dumbbell.setPosition(0, 0, 0.095)
  robot = world.addArticulatedSystem(LEGGED_SLAB)
  robot.setGeneralizedCoordinate([0, 3, 0.045, 1, 0, 0, 0, 0])
  child_x = lambda c: int(np.sign(c.getPosition()[0]) > 0)
  body = lambda c: c.getlocalBodyIndex()
  assert _touching_ground(world, dumbbell, child_x) == [0, 1]
  assert _touching_ground(world, robot, body) == [0, 1]
  compiled = world_steps.compiled()
  no_ground = rj.COLLISION(0) | rj.COLLISION(1)
  assert world.setObjectCollisionFilter(dumbbell, rj.COLLISION(1), no_ground, 1)
  assert world.setObjectCollisionFilter(robot, rj.COLLISION(1), no_ground, 0)
  assert _touching_ground(world, dumbbell, child_x) == [0]
  assert _touching_ground(world, robot, body) == [1]
  world.setObjectCollisionFilter(dumbbell, rj.COLLISION(1), -1)
  world.setObjectCollisionFilter(robot, rj.COLLISION(1), -1, -1)
  assert _touching_ground(world, dumbbell, child_x) == [0, 1]
  assert _touching_ground(world, robot, body) == [0, 1]
  world.setObjectCollisionFilter(robot, rj.COLLISION(1), no_ground)
  assert _touching_ground(world, robot, body) == []
  assert world_steps.compiled() == compiled
  for bad, match in ((2, "localIdx' = 2 is out of range: there are 2 collision shapes"),
                     (1.0, "localIdx' must be an index")):
    with pytest.raises(ValueError, match=match):
      world.setObjectCollisionFilter(dumbbell, 1, -1, bad)
  with pytest.raises(ValueError, match="localIdx' = 2 is out of range: there are 2 bodies"):
    world.setObjectMaterial(robot, "default", 2)
  with pytest.raises(ValueError, match="collisionMask' must be an integer"):
    world.setObjectCollisionFilter(robot, 1, 2.5)


def test_single_body_local_indices_are_checked():
  """A single body has one local body, 0: other indices, floats and bools are refused, not
  ignored or truncated (getContactPointVel's pointId likewise)."""
  world = rj.World()
  world.addGround()
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(0, 0, 0.099)
  world.integrate1()
  assert ball.getMass(0) == 1.0
  for call in (lambda: ball.getMass(1), lambda: ball.getBodyType(True),
               lambda: ball.setExternalForce(1, [0, 0, 1]),
               lambda: ball.setExternalTorque(0.0, [0, 0, 1]),
               lambda: ball.getPosition(2, [0, 0, 0]), lambda: ball.getOrientation(-1)):
    with pytest.raises(ValueError, match="localIdx"):
      call()
  assert len(ball.getContacts()) == 1
  with pytest.raises(ValueError, match="'pointId' must be an index"):
    ball.getContactPointVel(0.7)
  with pytest.raises(ValueError, match="'pointId' = 1 is out of range: there are 1 contacts"):
    ball.getContactPointVel(1)


def test_static_objects_are_in_group_63_and_collide_with_everything():
  world = rj.World()
  ground = world.addGround()
  assert ground.getCollisionGroup() == rj.COLLISION(63)
  ball = world.addSphere(0.5, 1.0, "default", rj.COLLISION(5), rj.COLLISION(63))
  ball.setPosition(0, 0, 0.45)
  world.integrate1()
  assert len(ball.getContacts()) == 1
  world.setObjectCollisionFilter(ball, rj.COLLISION(5), rj.COLLISION(5))
  world.integrate1()
  assert ball.getContacts() == []


# ---- broadphase ------------------------------------------------------------------------------

def _random_world(broadphase, bodies=200):
  world = rj.World()
  world.addGround()
  rng = np.random.default_rng(7)
  for k in range(bodies):  # closed-form pairs (the overlap pairs compile slowly; same broadphase)
    kind = k % 3
    if kind == 0:
      body = world.addSphere(rng.uniform(0.1, 0.4), 1.0)
    elif kind == 1:
      body = world.addBox(*rng.uniform(0.1, 0.6, 3), 1.0)
    else:
      body = world.addCapsule(rng.uniform(0.05, 0.2), rng.uniform(0.1, 0.5), 1.0)
    body.setPosition(*rng.uniform([-3, -3, -0.2], [3, 3, 2.5]))
    q = rng.normal(size=4)
    body.setOrientation(q / np.linalg.norm(q))
  settings = BroadphaseSettings(type=int(broadphase), mbpWorldMin=(-4, -4, -1),
                                mbpWorldMax=(4, 4, 4), mbpCellSize=(0.7, 0.7, 0.7))
  world.setBroadphaseSettings(settings)
  world.setContactCapacity(4096)
  return world


def _random_scene(broadphase, bodies=200):
  world = _random_world(broadphase, bodies)
  world.integrate1()
  assert not world.getContactOverflow()
  return {(c.getCollisionBodyA(), c.getCollisionBodyB(), tuple(np.round(c.getPosition(), 9)))
          for c in world.getContactProblem()}


def test_three_broadphase_types_give_identical_contacts_on_200_random_bodies():
  reference = _random_scene(BroadphaseType.None_)
  assert len(reference) > 50
  assert _random_scene(BroadphaseType.Sap3Axis) == reference
  assert _random_scene(BroadphaseType.MultiBoxPrune) == reference


def _sorts_in_detection(world):
  model, state = world.compile()
  jaxpr = jax.make_jaxpr(detection.detect_contacts)(model, state)
  return sum(eqn.primitive.name == "sort" for eqn in jaxpr_walk.equations(jaxpr))


def test_sap_whose_window_reaches_every_shape_tests_the_pairs_directly():
  """Sap3Axis looks at the next `sap_window` (64) shapes of each: in a world of at most 65
  shape slots its verdict is every pair's AABB overlap, so the sort is left out, and the
  contacts equal brute force's (the 200-body world above still sweeps)."""
  reference = _random_scene(BroadphaseType.None_, bodies=30)
  assert len(reference) > 5
  assert _random_scene(BroadphaseType.Sap3Axis, bodies=30) == reference
  small, large = (_random_world(BroadphaseType.Sap3Axis, n) for n in (30, 200))
  assert len(small.compile()[0].collision.shapes.shape_type) <= 65
  assert _sorts_in_detection(small) == 0
  assert _sorts_in_detection(large) >= 1


def test_a_batch_without_contacts_gets_the_empty_buffer():
  """Where no world of the batch has a contact, detection skips its compaction
  (`detect_contacts`' switch over the buffer's heads takes the zero head): every world gets
  `empty_contacts`, the documented empty buffer. In a batch
  where one world touches, each world's buffer equals its own unbatched detection (the other
  one empty)."""
  world = rj.World()
  world.addGround()
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  box.setPosition(0.0, 0.0, 1.0)
  model, air = world.compile()
  box.setPosition(0.0, 0.0, 0.099)
  touching = world.compile()[1]
  capacity = air.contacts.active.shape[0]
  empty = detection.empty_contacts(capacity, model.dtype)
  detect = jax.jit(jax.vmap(lambda s: detection.detect_contacts(model, s)))
  stack = lambda *states: jax.tree.map(lambda *x: jnp.stack(x), *states)
  world_k = lambda batch, k: jax.tree.map(lambda x: x[k], batch)
  equal = lambda got, want: jax.tree.map(
      lambda g, w: np.testing.assert_array_equal(np.asarray(g), np.asarray(w)), got, want)
  in_air = detect(stack(air, air))
  for k in range(2):
    equal(world_k(in_air, k), empty)
  mixed = detect(stack(air, touching))
  assert int(np.sum(np.asarray(mixed.active[1]))) == 4
  for k, state in enumerate((air, touching)):
    equal(world_k(mixed, k), jax.jit(detection.detect_contacts)(model, state))


def _heads_and_whole_buffer(monkeypatch, model, states, batched):
  """Forward-only detection of every state of `states` (a dict) alone and of the batch of
  states `batched` (keys of `states`), with the buffer's heads, then with them turned off
  (the whole-buffer compaction): (with heads, whole), each (dict of Contacts, batched
  Contacts)."""
  detect = lambda s: detection.detect_contacts(model, s)
  batch = jax.tree.map(lambda *x: jnp.stack(x), *(states[k] for k in batched))
  with_heads = ({k: jax.jit(detect)(s) for k, s in states.items()},
                jax.jit(jax.vmap(detect))(batch))
  with monkeypatch.context() as patch:
    patch.setattr(contact_heads, "head_sizes", lambda capacity: ())
    whole = ({k: jax.jit(detect)(s) for k, s in states.items()},
             jax.jit(jax.vmap(detect))(batch))
  return with_heads, whole


def _assert_equal_trees(got, want):
  jax.tree.map(lambda g, w: np.testing.assert_array_equal(np.asarray(g), np.asarray(w)),
               got, want)


def test_detection_compacts_into_the_smallest_head_and_equals_the_whole_buffer(monkeypatch):
  """Forward-only detection compacts into the smallest head of the buffer that holds every
  world's contacts (`contact_heads.head_sizes`: 0, 4, 8, 24 slots here). With 0, 1, 2, 4 and
  8 of 8 boxes resting (0, 4, 8, 16, 32 contacts: one count per head and one past them),
  alone and in a batch whose worlds need different heads, every buffer equals the
  whole-buffer compaction (the heads turned off), overflow flag included."""
  world = rj.World()
  world.addGround()
  boxes = [world.addBox(0.2, 0.2, 0.2, 1.0) for _ in range(8)]
  world.setContactSolverDifferentiable(False)
  states = {}
  for resting in (0, 1, 2, 4, 8):
    for k, box in enumerate(boxes):
      box.setPosition(float(k), 0.0, 0.099 if k < resting else 1.0)
    model, states[resting] = world.compile()
  capacity = states[0].contacts.active.shape[0]
  assert contact_heads.head_sizes(capacity) == (0, 4, 8, 24) and capacity > 32
  with_heads, whole = _heads_and_whole_buffer(monkeypatch, model, states, (1, 4, 0, 2))
  for resting in states:
    assert int(np.sum(np.asarray(with_heads[0][resting].active))) == 4 * resting
  _assert_equal_trees(with_heads, whole)


def test_small_heads_gather_contacts_of_every_narrowphase_group(monkeypatch):
  """The small heads gather each contact from its own narrowphase group's candidate points
  (`detection.detect_contacts.flat_at`, selecting by slot range), the larger ones from the
  groups' concatenation. Bodies of five groups (sphere on sphere, the first group; box,
  sphere and capsule on the ground; a sphere on the box) rest in eight combinations whose 1
  to 9 contacts come from the first, last, middle or several groups: every buffer, alone and
  batched, equals the whole-buffer compaction, and each holds the contacts the closed forms
  count."""
  world = rj.World()
  world.addGround()
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  sphere = world.addSphere(0.1, 1.0)
  capsule = world.addCapsule(0.05, 0.3, 1.0)
  top = world.addSphere(0.05, 0.2)          # on the box when the box rests
  ball = world.addSphere(0.05, 0.2)         # on the sphere when the sphere rests
  world.setContactSolverDifferentiable(False)
  capsule.setOrientation(np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0)   # (w, x, y, z): lying on y
  # Each body's (resting pose, contacts there); in the air all are far above the ground.
  resting = {box: ((0.0, 0.0, 0.099), 4), sphere: ((2.0, 0.0, 0.099), 1),
             capsule: ((4.0, 0.0, 0.049), 2), top: ((0.0, 0.0, 0.248), 1),
             ball: ((2.0, 0.0, 0.248), 1)}
  combos = {"none": (), "sphere": (sphere,), "capsule": (capsule,), "box": (box,),
            "sphere+capsule": (sphere, capsule), "box+top": (box, top),
            "sphere+ball": (sphere, ball), "all": (box, sphere, capsule, top, ball)}
  states, expected = {}, {}
  for name, down in combos.items():
    for k, (body, (pose, _)) in enumerate(resting.items()):
      body.setPosition(*(pose if body in down else (2.0 * k, 5.0, 3.0)))
    model, states[name] = world.compile()
    expected[name] = sum(resting[body][1] for body in down)
  capacity = states["none"].contacts.active.shape[0]
  groups = model.collision.groups
  assert len(groups) >= 5 and contact_heads.head_sizes(capacity)[1:3] == (4, 8)
  with_heads, whole = _heads_and_whole_buffer(
      monkeypatch, model, states, ("sphere", "box+top", "none", "sphere+ball", "all"))
  for name, count in expected.items():
    assert int(np.sum(np.asarray(with_heads[0][name].active))) == count, name
  # The sphere on the sphere is a contact of the first group, gathered by the small head.
  contacts = with_heads[0]["sphere+ball"]
  pairs = np.asarray(contacts.key)[np.asarray(contacts.active)] // detection.KEY_STRIDE
  assert np.isin(pairs, np.asarray(groups[0].pair_index)).any()
  _assert_equal_trees(with_heads, whole)


@pytest.mark.parametrize("n", [1, 7, 32, 414, 1000])
def test_first_valid_lists_the_first_true_entries_in_order(n):
  """detection.first_valid against NumPy's flatnonzero: for every head size (a top_k where
  the head is small, jnp.nonzero otherwise), alone and under vmap, with no, few, many and all
  entries valid; slots past the valid count are not looked at."""
  rng = np.random.default_rng(n)
  masks = np.stack([np.zeros(n, bool), rng.uniform(size=n) < 3 / n, rng.uniform(size=n) < 0.5,
                    np.ones(n, bool)])
  for size in sorted({1, 2, 8, n // 4, n // 2, n} - {0}):
    one = jax.jit(lambda v, size=size: detection.first_valid(v, size))
    batched = np.asarray(jax.jit(jax.vmap(one))(masks))
    for k, mask in enumerate(masks):
      want = np.flatnonzero(mask)[:size]
      got = np.asarray(one(mask))
      assert got.shape == (size,) and got.dtype == np.int32
      np.testing.assert_array_equal(got[:want.size], want, err_msg=f"size {size}, mask {k}")
      np.testing.assert_array_equal(batched[k, :want.size], want)


def test_capacity_overflow_is_reported():
  world = rj.World()
  world.addGround()
  for k in range(6):
    world.addBox(0.3, 0.3, 0.3, 1.0).setPosition(k, 0, 0.14)
  world.setContactCapacity(8)
  with pytest.warns(UserWarning, match=r"more contacts were found than the contact buffer "
                                       r"holds \(8\).*setContactCapacity"):
    world.integrate1()
  assert world.getContactOverflow()
  assert len(world.getContactProblem()) == 8


# ---- batching and gradients ------------------------------------------------------------------

@pytest.mark.xla_optimized
def test_vmap_over_256_contact_worlds_equals_sequential():
  world = rj.World()
  world.setTimeStep(2e-3)
  world.addGround()
  world.addBox(0.4, 0.3, 0.2, 1.0)
  world.addSphere(0.1, 1.0)
  model, state = world.compile()
  n = 256
  rng = np.random.default_rng(1)
  rows = model.num_bodies   # ground, box, sphere, then the World's padding rows
  position = np.zeros((n, rows, 3))
  position[:, 1] = rng.uniform([-0.1, -0.1, 0.095], [0.1, 0.1, 0.105], (n, 3))
  position[:, 2] = rng.uniform([0.3, -0.1, 0.09], [0.5, 0.1, 0.11], (n, 3))
  velocity = np.zeros((n, rows, 3))
  velocity[:, 1:3] = rng.normal(scale=0.3, size=(n, 2, 3))
  batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), state)
  batch = batch.replace(bodies=batch.bodies.replace(
      position=jnp.asarray(position), linear_velocity=jnp.asarray(velocity)))
  run = jax.jit(lambda s: rj.rollout(model, s, 10)[0])
  batched = jax.jit(jax.vmap(run))(batch)
  # Every world finite, not only the compared ones (unguarded CG divisions once left 45 of
  # 1,024 worlds NaN: island_block._conjugate_gradients).
  assert np.all(np.isfinite(np.asarray(batched.bodies.position)))
  # The batched and the one-world programs vectorize differently, so they round differently,
  # and ten steps of contacts amplify that: 9.6e-12 m on an AVX2 CPU (AMD EPYC; below 1e-12
  # on the AVX-512 machine the tolerance was set on). A solve decision that hangs on rounding
  # (the island block move taken in one and not the other) moved worlds by 1e-6 m.
  for i in range(0, n, 9):
    one = run(jax.tree.map(lambda x: x[i], batch))
    np.testing.assert_allclose(batched.bodies.position[i], one.bodies.position, rtol=1e-12,
                               atol=5e-11)
    # Impulses to the solver's threshold (1e-8, the largest change of the last sweep): where
    # rounding decides that one more sweep runs, they differ by up to that (3.3e-9 on AVX2).
    np.testing.assert_allclose(batched.contacts.impulse[i], one.contacts.impulse, rtol=1e-10,
                               atol=1e-8)


def test_grad_through_200_steps_of_a_bouncing_ball_matches_finite_differences():
  world = rj.World()
  world.setTimeStep(2e-3)
  world.addGround(0, "floor")
  ball = world.addSphere(0.1, 1.0, "ball")
  world.setMaterialPairProp("floor", "ball", 0.8, 0.6, 0.0)
  ball.setPosition(0, 0, 0.3)
  ball.setLinearVelocity([0.5, 0, 0])
  model, state = world.compile()

  def final_height(drop_height):
    s = state.replace(bodies=state.bodies.replace(
        position=state.bodies.position.at[1, 2].set(drop_height)))
    final, _ = rj.rollout(model, s, 200)
    return final.bodies.position[1, 2]

  value_and_grad = jax.jit(jax.value_and_grad(final_height))   # one program for both
  value, grad = value_and_grad(0.3)
  assert np.isfinite(grad) and np.isfinite(value)
  eps = 1e-7
  fd = (value_and_grad(0.3 + eps)[0] - value_and_grad(0.3 - eps)[0]) / (2 * eps)
  assert float(grad) == pytest.approx(float(fd), rel=1e-4, abs=1e-6)


# ---- integrateNoContactDetection -------------------------------------------------------------

@pytest.mark.xla_optimized
def test_fast_solver_mode_is_forward_differentiable_and_agrees_with_the_default():
  world = rj.World()
  world.setTimeStep(2e-3)
  world.addGround()
  world.addSphere(0.1, 1.0).setPosition(0, 0, 0.099)
  model, state = world.compile()

  def height(vz):
    s = state.replace(bodies=state.bodies.replace(
        linear_velocity=state.bodies.linear_velocity.at[1, 2].set(vz)))
    return rj.rollout(model, s, 5)[0].bodies.position[1, 2]

  # Jitted: one program each (eagerly, the rollout's surroundings ran op by op).
  reverse = jax.jit(jax.grad(height))(-0.1)     # default: fixed-length scan
  world.setContactSolverDifferentiable(False)   # while_loop early exit
  model, _ = world.compile()
  forward = jax.jit(jax.jacfwd(height))(-0.1)
  assert np.isfinite(forward) and float(forward) == pytest.approx(float(reverse), abs=1e-12)
  with pytest.raises(ValueError, match="Reverse-mode"):
    jax.jit(jax.grad(height))(-0.1)


def test_integrate_no_contact_detection_lets_a_ball_pass_the_ground():
  world = rj.World()
  world.setTimeStep(1e-2)
  world.addGround()
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(0, 0, 0.1)
  for _ in range(30):  # falls 9.81 * 0.01^2 * 30 * 31 / 2 = 0.46 m
    world.integrateNoContactDetection()
  assert ball.getPosition()[2] < -0.3
  assert world.getContactProblem() == []


def test_empty_contact_slot_frame_is_the_frame_of_an_up_normal():
  """An empty slot's normal is +z: its frame's x axis is e_x x e_z = -e_y (e_x is the first of
  the axes least aligned with +z), y = z x x = e_x."""
  empty = detection.empty_contacts(3, jnp.float64)
  expected = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
  np.testing.assert_array_equal(np.asarray(empty.frame), np.broadcast_to(expected, (3, 3, 3)))


def test_contact_frame_is_built_from_the_axis_least_aligned_with_the_normal():
  """numpy oracle: x = normalize(e x n) for the first world axis e of smallest |n_i|, y = n x x,
  rows (x, y, n); random normals, axis-aligned ones and exact ties between components."""
  rng = np.random.default_rng(3)
  normals = rng.normal(size=(200, 3))
  normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
  tie = np.sqrt(0.5)
  special = np.array([[0, 0, 1], [0, 0, -1], [1, 0, 0], [0, -1, 0], [tie, tie, 0], [0, tie, -tie],
                      [tie, 0, tie], [1, 1, 1] / np.sqrt(3), [0.6, 0, 0.8], [0, 0.6, 0.8]])
  normals = np.concatenate([normals, special])
  helper = np.eye(3)[np.argmin(np.abs(normals), axis=-1)]
  x_axis = np.cross(helper, normals)
  x_axis /= np.linalg.norm(x_axis, axis=-1, keepdims=True)
  expected = np.stack([x_axis, np.cross(normals, x_axis), normals], axis=-2)
  frame = np.asarray(rotation.contact_frame(jnp.asarray(normals)))
  np.testing.assert_allclose(frame, expected, rtol=0, atol=1e-15)
  np.testing.assert_allclose(frame @ np.swapaxes(frame, -1, -2),
                             np.broadcast_to(np.eye(3), frame.shape), atol=1e-14)
  np.testing.assert_allclose(np.linalg.det(frame), 1.0, atol=1e-14)
  # A zero normal (an empty slot before masking) gives a zero frame, and finite gradients.
  grad = jax.grad(lambda n: jnp.sum(rotation.contact_frame(n) ** 2))(jnp.zeros(3))
  assert np.all(np.isfinite(np.asarray(grad)))


def _warm_start_oracle(previous, current):
  """numpy: for each active current slot, the normal impulse of the first active previous
  slot with the same key (zero if none); tangential components zero."""
  out = np.zeros((len(current["key"]), 3))
  for i, (key, active) in enumerate(zip(current["key"], current["active"])):
    match = [j for j, k in enumerate(previous["key"]) if active and previous["active"][j]
             and k == key]
    if match:
      out[i, 2] = previous["impulse"][match[0], 2]
  return out


def test_warm_start_matches_keys_on_the_head_of_the_buffers_as_on_the_whole():
  """Forward-only mode compares only the leading slots of the two contact buffers (the
  smallest head past which no world has an active slot; contact_dynamics.warm_start_impulse);
  the oracle is a plain per-slot key search over whole buffers. Batches whose furthest active
  slot falls in each head and past every head, with a buffer that is not active-first (an
  active slot past an inactive one), with no active slot at all (the zero head), and a batch
  of worlds that need different heads."""
  from raisim_jax.dynamics import contact_dynamics
  world = rj.World()
  world.addGround()
  for k in range(12):
    world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(k, 0, 1)
  model, state = world.compile()
  capacity = state.contacts.active.shape[0]
  heads = contact_heads.head_sizes(capacity)
  assert len(heads) == 4 and heads[0] == 0, heads
  rng = np.random.default_rng(3)

  def buffer(extent):
    """Random keys (some shared with the other buffer); active slots scattered over the
    first `extent` slots, the last of them active."""
    empty = detection.empty_contacts(capacity, jnp.float64)
    active = np.zeros(capacity, bool)
    active[:extent] = rng.random(extent) < 0.7
    if extent:
      active[extent - 1] = True
    return empty.replace(active=jnp.asarray(active),
                         key=jnp.asarray(rng.integers(0, 12, capacity), jnp.int32),
                         impulse=jnp.asarray(rng.normal(size=(capacity, 3))))

  forward = model.replace(solver=model.solver.replace(differentiable=False))
  run = jax.jit(jax.vmap(contact_dynamics.warm_start_impulse, in_axes=(None, 0, 0)))
  extents = [(0, 0), (3, 2), (heads[1] + 2, 1), (heads[2] + 3, 5), (heads[3], heads[3] - 1),
             (capacity, 2)]
  for batch in [[extent] for extent in extents] + [extents]:
    pairs = [(buffer(a), buffer(b)) for a, b in batch]
    previous, current = (jax.tree.map(lambda *x: jnp.stack(x), *side) for side in zip(*pairs))
    for m in (forward, model):
      result = np.asarray(run(m, previous, current))
      for k, (p, c) in enumerate(pairs):
        as_numpy = lambda b: {f: np.asarray(getattr(b, f)) for f in ("key", "active", "impulse")}
        np.testing.assert_array_equal(result[k], _warm_start_oracle(as_numpy(p), as_numpy(c)))
