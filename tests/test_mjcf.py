"""The MJCF reader (#10 item 5) against MuJoCo on Gymnasium's models: body positions and the
mass matrix at random states agree to 1e-9 (float64), after the one mapping of coordinates
and velocities below (MuJoCo's slide/hinge qpos is ours plus the joint's `ref`; its free
joint's angular velocity is in the body frame, ours in the world frame)."""

import os
import warnings

import mujoco
import numpy as np
import pytest

import raisim_jax as rj

ASSETS = os.path.join(os.path.dirname(__import__("gymnasium").__file__), "envs", "mujoco",
                      "assets")
MODELS = ["hopper.xml", "walker2d_v5.xml", "ant.xml", "humanoid.xml"]


class Mapping:
  """Coordinates and velocities of one MuJoCo model <-> those of our articulated system."""

  def __init__(self, mj_model, robot):
    self.mj = mj_model
    self.robot = robot
    names = robot.getMovableJointNames()
    self.floating = mj_model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    self.order = []          # for each of our non-base joints: MuJoCo (qpos adr, dof adr, ref)
    for name in names:
      if name == "ROOT":
        continue
      j = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, name)
      assert j >= 0, name
      self.order.append((mj_model.jnt_qposadr[j], mj_model.jnt_dofadr[j],
                         mj_model.qpos0[mj_model.jnt_qposadr[j]]))

  def ours_from_mujoco(self, qpos):
    """(our gc, T) with our u = T MuJoCo's qvel."""
    nv = self.mj.nv
    t = np.zeros((nv, nv))
    gc = []
    row = 0
    if self.floating:
      gc += list(qpos[:7])
      rotation = np.zeros(9)
      mujoco.mju_quat2Mat(rotation, qpos[3:7])
      t[:3, :3] = np.eye(3)
      t[3:6, 3:6] = rotation.reshape(3, 3)
      row = 6
    for qadr, dadr, ref in self.order:
      gc.append(qpos[qadr] - ref)
      t[row, dadr] = 1.0
      row += 1
    return np.asarray(gc), t


def _load(name):
  """(World of Gymnasium's model `name`, its one articulated system, MuJoCo's MjModel)."""
  path = os.path.join(ASSETS, name)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    world = rj.World(path)
  robots = [o for o in world.getObjList()
            if o.getObjectType() == rj.ObjectType.ARTICULATED_SYSTEM]
  assert len(robots) == 1
  return world, robots[0], mujoco.MjModel.from_xml_path(path)


def _random_qpos(mj_model, floating, rng):
  """MuJoCo qpos: qpos0 + U(-0.5, 0.5), a random unit base quaternion when floating."""
  qpos = mj_model.qpos0 + rng.uniform(-0.5, 0.5, mj_model.nq)
  if floating:
    qpos[3:7] = rng.normal(size=4)
    qpos[3:7] /= np.linalg.norm(qpos[3:7])
  return qpos


def _full_mass_matrix(mj_model, data, out):
  """mj_fullM across MuJoCo versions (3.x: (m, dst, qM); 4.x: (m, d, dst))."""
  try:
    mujoco.mj_fullM(mj_model, data, out)
  except TypeError:
    mujoco.mj_fullM(mj_model, out, data.qM)


def _robot_geoms(mj_model):
  """{our visual name: MuJoCo geom id} of the geoms not on the worldbody (an unnamed geom is
  "<body>/<index of the geom in its body>")."""
  names, count = {}, {}
  for g in range(mj_model.ngeom):
    b = mj_model.geom_bodyid[g]
    if b == 0:
      continue
    body = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}"
    own = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_GEOM, g)
    names[own or f"{body}/{count.get(b, 0)}"] = g
    count[b] = count.get(b, 0) + 1
  return names


def _check_visual_poses(robot, mj_model, data, label):
  """getVisObPose of every visual equals MuJoCo's geom_xpos / geom_xmat (primitives)."""
  geoms = _robot_geoms(mj_model)
  visuals = robot.getVisOb()
  assert sorted(v.name for v in visuals) == sorted(geoms), label
  for k, visual in enumerate(visuals):
    g = geoms[visual.name]
    rot, pos = robot.getVisObPose(k)
    np.testing.assert_allclose(pos, data.geom_xpos[g], atol=1e-9, err_msg=f"{label} {g}")
    np.testing.assert_allclose(rot, data.geom_xmat[g].reshape(3, 3), atol=1e-9,
                               err_msg=f"{label} {g}")


@pytest.mark.parametrize("name", MODELS)
def test_visual_shapes_and_colors_match_mujoco(name):
  """Every geom of the robot is a VisObject with MuJoCo's size and the color MuJoCo draws it
  in (its rgba, or its material's where the rgba is MuJoCo's default)."""
  _, robot, mj_model = _load(name)
  geoms = _robot_geoms(mj_model)
  default = np.array([0.5, 0.5, 0.5, 1.0])
  for visual in robot.getVisOb():
    g = geoms[visual.name]
    matid = mj_model.geom_matid[g]
    expected = (mj_model.mat_rgba[matid] if matid >= 0
                and np.array_equal(mj_model.geom_rgba[g], default) else mj_model.geom_rgba[g])
    np.testing.assert_allclose(visual.color, expected, atol=1e-7, err_msg=visual.name)
    size = mj_model.geom_size[g]
    kind = mujoco.mjtGeom(mj_model.geom_type[g]).name[len("mjGEOM_"):].lower()
    assert visual.shape == kind, visual.name
    expected_params = {"sphere": [size[0], 0, 0, 0], "box": [*(2 * size), 0],
                       "ellipsoid": [*size, 0], "capsule": [size[0], 2 * size[1], 0, 0],
                       "cylinder": [size[0], 2 * size[1], 0, 0]}[kind]
    np.testing.assert_allclose(visual.visShapeParam, expected_params, atol=1e-12,
                               err_msg=visual.name)


@pytest.mark.parametrize("name", MODELS)
def test_body_positions_and_mass_matrix_match_mujoco(name):
  _, robot, mj_model = _load(name)
  data = mujoco.MjData(mj_model)
  mapping = Mapping(mj_model, robot)
  assert robot.getDOF() == mj_model.nv
  rng = np.random.default_rng(0)
  for _ in range(20):
    qpos = _random_qpos(mj_model, mapping.floating, rng)
    data.qpos[:] = qpos
    mujoco.mj_forward(mj_model, data)
    gc, t = mapping.ours_from_mujoco(qpos)
    robot.setGeneralizedCoordinate(gc)
    for b in range(1, mj_model.nbody):
      body = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}"
      frame = robot.getFrameIdxByLinkName(body)
      np.testing.assert_allclose(robot.getFramePosition(frame), data.xpos[b], atol=1e-9,
                                 err_msg=f"{name}: body {body}")
    _check_visual_poses(robot, mj_model, data, name)
    full = np.zeros((mj_model.nv, mj_model.nv))
    _full_mass_matrix(mj_model, data, full)
    ours = t.T @ robot.getMassMatrix() @ t
    np.testing.assert_allclose(ours, full, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", MODELS)
def test_joint_accelerations_without_contacts_match_mujoco(name):
  """qacc = M^-1 (passive - h) from our model (damping, stiffness and spring rest read from
  the file) equals MuJoCo's with contacts and joint limits disabled, at 20 random states."""
  _, robot, mj_model = _load(name)
  mj_model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
  data = mujoco.MjData(mj_model)
  mapping = Mapping(mj_model, robot)
  model = robot._model()
  damping, stiffness = np.asarray(model.damping), np.asarray(model.stiffness)
  mount = np.asarray(model.spring_mount)
  first = 6 if mapping.floating else 0
  rng = np.random.default_rng(1)
  for _ in range(20):
    qpos = _random_qpos(mj_model, mapping.floating, rng)
    qvel = rng.uniform(-1, 1, mj_model.nv)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(mj_model, data)
    gc, t = mapping.ours_from_mujoco(qpos)
    u = t @ qvel
    robot.setState(gc, u)
    passive = -damping * u
    offset = 7 if mapping.floating else 0
    passive[first:] -= stiffness[first:] * (gc[offset:] - mount[offset:])
    ours = np.linalg.solve(robot.getMassMatrix(), passive - robot.getNonlinearities())
    np.testing.assert_allclose(ours, t @ data.qacc, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name, seconds", [("hopper.xml", 5.0), ("walker2d_v5.xml", 5.0),
                                           ("humanoid.xml", 5.0)])
def test_models_simulate_with_contacts(name, seconds):
  """Hopper and walker2d under random motor commands (mapped by their gears and control
  ranges), the humanoid dropped from 0.5 m above its model pose: 5 s with contacts, finite,
  and no contact with the floor deeper than 1 cm; the humanoid (solver="PGS" iterations="50")
  solves with at most 50 sweeps and needs them all while it lies on the floor."""
  import jax
  import jax.numpy as jnp
  world, robot, mj_model = _load(name)
  actuation = world.mjcfActuation["torso"]
  assert actuation.gear_matrix.shape == (robot.getDOF(), len(actuation.names))
  if name == "humanoid.xml":
    gc = robot.getGeneralizedCoordinate()
    gc[2] += 0.5
    robot.setGeneralizedCoordinate(gc)
  model, state = world.compile()
  steps = int(round(seconds / world.getTimeStep()))
  ctrl = jax.random.uniform(jax.random.PRNGKey(0), (steps, len(actuation.names)),
                            minval=-1.0, maxval=1.0)
  floor = world.getObject("floor").getIndexInWorld()

  def body(state, c):
    control = rj.Control.from_state(model, state)
    system = control.articulated[0].replace(feedforward_force=actuation.generalized_force(c))
    state = rj.step(model, state, control.replace(articulated=(system,)))
    contacts = state.contacts
    on_floor = contacts.active & ((contacts.body_a == floor) | (contacts.body_b == floor))
    return state, (jnp.max(jnp.where(on_floor, contacts.depth, 0.0)), state.solver_iterations)

  final, (depth, sweeps) = jax.jit(lambda s, c: jax.lax.scan(body, s, c))(state, ctrl)
  gc = np.asarray(final.articulated[0].generalized_coordinate)
  assert np.all(np.isfinite(gc)) and bool(final.finite)
  assert float(np.max(depth)) < 0.01, float(np.max(depth))
  assert float(np.max(depth)) > 0.0                     # it did touch the floor
  if mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS:  # the humanoid: 50 sweeps at most
    assert int(np.max(sweeps)) == mj_model.opt.iterations == 50


@pytest.mark.parametrize("name", MODELS)
def test_bodies_in_contact_match_mujoco(name):
  """Which bodies touch, against MuJoCo's collision detection at random poses (limbs crossed,
  the base low enough to hit the floor): every pair of bodies that MuJoCo finds more than 1 cm
  deep we find in contact, and every pair we find more than 1 cm deep MuJoCo finds in
  contact. MuJoCo never collides a body with its parent body (filterparent); a body reached
  through its joints' massless chain has links between the two here, which collided: the
  humanoid's thighs sat 9.6 cm deep in its pelvis at the model pose, a permanent internal
  contact that MuJoCo does not have."""
  import jax
  from raisim_jax.collision import detection
  world, robot, mj_model = _load(name)
  data = mujoco.MjData(mj_model)
  mapping = Mapping(mj_model, robot)
  model, state = world.compile()
  detect = jax.jit(lambda s: detection.detect_contacts(model, s))
  offset = model.collision.articulated_body_offset[0]
  floor = world.getObject("floor").getIndexInWorld()
  mj_bodies = [mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}"
               for b in range(mj_model.nbody)]
  # Bodies welded together (no joint between them) are one body in both engines: MuJoCo's
  # weld group is named by its root body, ours is the body holding that root's frame.
  weld_name = lambda b: mj_bodies[mj_model.body_weldid[b]] if mj_model.body_weldid[b] else "world"
  ours_to_mj = {floor: "world"}
  for b in range(1, mj_model.nbody):
    if mj_model.body_weldid[b] == b:
      ours_to_mj[offset + robot.getFrameByLinkName(mj_bodies[b]).parentId] = mj_bodies[b]
  mj_body_of_geom = lambda g: weld_name(mj_model.geom_bodyid[g])

  rng = np.random.default_rng(1)
  checked = 0
  for sample in range(30):
    qpos = _random_qpos(mj_model, mapping.floating, rng)
    if mapping.floating:
      qpos[2] = rng.uniform(0.0, 0.6)       # low enough for some limbs to reach the floor
    data.qpos[:] = qpos
    mujoco.mj_forward(mj_model, data)
    gc, _ = mapping.ours_from_mujoco(qpos)
    system = state.articulated[0].replace(generalized_coordinate=jax.numpy.asarray(gc))
    contacts = jax.tree.map(np.asarray, detect(state.replace(articulated=(system,))))
    ours = {}
    for a, b, depth in zip(contacts.body_a[contacts.active], contacts.body_b[contacts.active],
                           contacts.depth[contacts.active]):
      pair = frozenset((ours_to_mj[int(a)], ours_to_mj[int(b)]))
      ours[pair] = max(ours.get(pair, -np.inf), float(depth))
    theirs = {}
    for c in data.contact[:data.ncon]:
      pair = frozenset((mj_body_of_geom(c.geom1), mj_body_of_geom(c.geom2)))
      theirs[pair] = max(theirs.get(pair, -np.inf), -float(c.dist))
    for pair, depth in theirs.items():
      if depth > 0.01:
        assert pair in ours, f"{name} sample {sample}: MuJoCo's {set(pair)} ({depth:.3f} m deep) missing; ours: {ours}"
        checked += 1
    for pair, depth in ours.items():
      if depth > 0.01:
        assert pair in theirs, f"{name} sample {sample}: our {set(pair)} ({depth:.3f} m deep) not in MuJoCo's {theirs}"
        checked += 1
  assert checked > 0


@pytest.mark.parametrize("flag", ["", '<option><flag filterparent="disable"/></option>'])
def test_parent_filter_follows_mujocos_flag(tmp_path, flag):
  """A child body overlapping its parent through two joints (a massless link between them
  here): MuJoCo collides the two only with filterparent disabled, and so do we."""
  from raisim_jax.collision import detection
  path = tmp_path / "overlap.xml"
  path.write_text(f"""<mujoco>{flag}
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" pos="0 0 -3"/>
    <body name="base" pos="0 0 1"><freejoint/>
      <geom type="sphere" size="0.2"/>
      <body name="arm" pos="0.1 0 0">
        <joint name="j1" type="hinge" axis="0 0 1"/><joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.15"/>
      </body>
    </body>
  </worldbody></mujoco>""")
  mj_model = mujoco.MjModel.from_xml_path(str(path))
  data = mujoco.MjData(mj_model)
  mujoco.mj_forward(mj_model, data)
  world = rj.World(str(path))
  model, state = world.compile()
  contacts = detection.detect_contacts(model, state)
  assert int(np.sum(np.asarray(contacts.active))) == data.ncon == (1 if flag else 0)


CONTACT_MODEL = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.6" condim="3"/>
    <body name="a" pos="0 0 0.09"><freejoint/>
      <geom type="capsule" fromto="-0.2 0 0 0.2 0 0" size="0.1" condim="1" friction="0.9"/>
    </body>
    <body name="b" pos="0 0 0.27"><freejoint/>
      <geom type="sphere" size="0.1" condim="1" friction="0.3"/>
    </body>
    <body name="c" pos="0.6 0 0.09"><freejoint/>
      <geom type="box" size="0.1 0.1 0.1" condim="3" friction="0.5"/>
    </body>
    <body name="d" pos="0.6 0 0.28"><freejoint/>
      <geom type="sphere" size="0.1" condim="1" friction="0.2"/>
    </body>
  </worldbody></mujoco>"""


def test_contact_friction_follows_mujocos_condim_and_friction_combination(tmp_path):
  """Each contact's friction coefficient against MuJoCo's contact at the same poses: MuJoCo
  gives a contact the larger condim and the larger friction of its two geoms, so it is
  frictionless (dim 1) only between two condim-1 geoms (Gymnasium's humanoid and hopper:
  limb against limb), and has friction against the condim-3 floor."""
  import jax
  from raisim_jax.collision import detection
  path = tmp_path / "friction.xml"
  path.write_text(CONTACT_MODEL)
  mj_model = mujoco.MjModel.from_xml_path(str(path))
  data = mujoco.MjData(mj_model)
  mujoco.mj_forward(mj_model, data)
  world = rj.World(str(path))
  model, state = world.compile()
  contacts = jax.tree.map(np.asarray, detection.detect_contacts(model, state))
  robots = [o.getName() for o in world.getObjList()
            if o.getObjectType() == rj.ObjectType.ARTICULATED_SYSTEM]
  offsets = np.asarray(model.collision.articulated_body_offset)  # one body per system here
  index = {int(offsets[k]): name for k, name in enumerate(robots)}
  index[world.getObject("floor").getIndexInWorld()] = "floor"
  material = np.asarray(model.collision.shapes.material)
  table = np.asarray(model.solver.pair_table[..., 0])
  ours = {}
  for a, b, sa, sb in zip(*(getattr(contacts, f)[contacts.active]
                            for f in ("body_a", "body_b", "shape_a", "shape_b"))):
    ours[frozenset((index[int(a)], index[int(b)]))] = table[material[sa], material[sb]]
  theirs = {}
  for c in data.contact[:data.ncon]:
    pair = frozenset(mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY,
                                       mj_model.geom_bodyid[g]).replace("world", "floor")
                     for g in (c.geom1, c.geom2))
    theirs[pair] = float(c.friction[0]) if c.dim > 1 else 0.0
  assert set(ours) == set(theirs) == {frozenset(p) for p in
                                      [("a", "floor"), ("a", "b"), ("c", "floor"), ("c", "d")]}
  for pair, mu in theirs.items():
    assert ours[pair] == pytest.approx(mu), (set(pair), ours[pair], mu)
  assert theirs[frozenset(("a", "b"))] == 0.0


@pytest.mark.parametrize("option, iterations", [
    ('<option solver="PGS" iterations="37"/>', 37),
    ('<option solver="PGS"/>', 100),                  # MuJoCo's default iterations
    ('<option solver="Newton" iterations="3"/>', None),
    ("", None)])
def test_pgs_iterations_become_the_contact_solvers_sweep_limit(tmp_path, option, iterations):
  """MuJoCo's PGS iteration is one Gauss-Seidel sweep over the constraints, the unit of
  maxIter: a PGS model's `iterations` (as MuJoCo parses it, default included) is the solver's
  sweep limit. A Newton or CG iteration is not a sweep: those keep RaiSim's 150 and the
  warning names the ignored settings."""
  path = tmp_path / "option.xml"
  path.write_text(CONTACT_MODEL.replace('<option timestep="0.002"/>', option))
  mj_model = mujoco.MjModel.from_xml_path(str(path))
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    world = rj.World(str(path))
  model, _ = world.compile()
  messages = " ".join(str(w.message) for w in caught)
  if iterations is not None:
    assert mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS
    assert int(model.solver.max_iterations) == mj_model.opt.iterations == iterations
    assert "option" not in messages
  else:
    assert int(model.solver.max_iterations) == 150
    if option:
      assert "option iterations, option solver" in messages


def test_the_load_warning_names_every_ignored_physics_setting(tmp_path):
  """Settings that change MuJoCo's physics and are not mapped are named in the one load
  warning (never accepted silently); settings mapped or without effect on the physics are
  not."""
  path = tmp_path / "settings.xml"
  path.write_text("""<mujoco>
  <option integrator="RK4" cone="elliptic" timestep="0.002"><flag contact="disable"/></option>
  <default><geom margin="0.01" solref="0.02 1" rgba="1 0 0 1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" gap="0.001"/>
    <body name="base" pos="0 0 1"><freejoint/>
      <geom type="sphere" size="0.1" condim="4"/>
      <body name="arm" pos="0.3 0 0">
        <joint name="j" type="hinge" frictionloss="0.1" damping="0.5" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05" solimp="0.9 0.95 0.001"/>
        <body name="hand" pos="0.3 0 0">
          <joint name="k" type="ball" range="0 30"/><geom type="sphere" size="0.05"/>
        </body>
      </body>
    </body>
    <body name="free_damped" pos="2 0 1"><joint type="free" damping="0.1"/>
      <geom type="box" size="0.1 0.1 0.1"/></body>
  </worldbody></mujoco>""")
  mujoco.MjModel.from_xml_path(str(path))        # a valid MuJoCo model
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    rj.World(str(path))
  messages = [str(w.message) for w in caught if "ignored by raisim_jax" in str(w.message)]
  assert len(messages) == 1
  listed = messages[0].split("ignored by raisim_jax's MJCF reader: ")[1].split(", ")
  assert listed == ["ball joint range", "free joint damping",
                    "geom condim 4 (torsional/rolling friction)", "geom gap", "geom margin",
                    "geom solimp", "geom solref", "joint frictionloss", "option cone",
                    "option integrator", "option/flag contact"]


@pytest.mark.parametrize("attribute, message", [
    ('condim="2"', "condim must be 1, 3, 4 or 6, got '2'"),
    ('solver="PGS" iterations="0"', "iterations must be a positive integer, got '0'")])
def test_bad_condim_or_iterations_name_the_line(tmp_path, attribute, message):
  option = f"<option {attribute}/>" if "iterations" in attribute else ""
  geom = attribute if "condim" in attribute else ""
  path = tmp_path / "bad.xml"
  path.write_text(f"""<mujoco>{option}
  <worldbody><body name="b"><freejoint/>
    <geom type="sphere" size="0.1" {geom}/></body></worldbody></mujoco>""")
  with pytest.raises(ValueError, match=message) as error:
    rj.World(str(path))
  assert str(path) in str(error.value) and ", line " in str(error.value)


STATIC_GEOMS_MODEL = """<mujoco>
  <compiler angle="degree"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <geom name="ramp" type="box" size="0.5 0.3 0.05" pos="0 0 0.8" euler="0 20 10"/>
    <geom name="post" type="capsule" fromto="2 0 0.4 2.2 0.1 1.2" size="0.05"/>
    <geom name="drum" type="cylinder" size="0.2 0.1" pos="-2 0 0.8" quat="0.7071 0.7071 0 0"/>
    <geom name="ball" type="sphere" size="0.15" pos="0 2 0.8"/>
    <geom name="ghost" type="sphere" size="0.15" pos="0 -2 0.8" contype="0" conaffinity="0"/>
    <body name="probe" pos="0 0 3"><freejoint/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody></mujoco>"""


def test_worldbody_geoms_are_static_shapes_that_collide_as_in_mujocos(tmp_path):
  """The worldbody's geoms other than the plane: one fixed system "world" with a static body,
  whose shapes touch a probe sphere as MuJoCo's do. 200 probe positions around each geom
  (box rotated by Euler angles, capsule by fromto, cylinder by quat, sphere; a geom with
  contype = conaffinity = 0 touches nothing): the deepest penetration with the static body
  against MuJoCo's (dist < 0) with that geom, 1e-6 m (the cylinder: 1e-3 m, MuJoCo's
  general convex collider), and the contact normal's direction."""
  import jax
  from raisim_jax.collision import detection
  path = tmp_path / "static.xml"
  path.write_text(STATIC_GEOMS_MODEL)
  mj_model = mujoco.MjModel.from_xml_path(str(path))
  data = mujoco.MjData(mj_model)
  world = rj.World(str(path))
  static = world.getObject("world")
  assert static.getDOF() == 0 and static.getBodyType(0) == rj.BodyType.STATIC
  model, state = world.compile()
  detect = jax.jit(lambda gc: detection.detect_contacts(model, state.replace(articulated=(
      state.articulated[0].replace(generalized_coordinate=gc), state.articulated[1]))))
  static_body = model.collision.articulated_body_offset[1]
  rng = np.random.default_rng(0)
  tolerance = {"ramp": 1e-6, "post": 1e-6, "drum": 1e-3, "ball": 1e-6, "ghost": 0.0}
  mujoco.mj_forward(mj_model, data)
  # (half-length along the geom's z axis, reach around it) of the probe centres
  for name, along, reach in (("ramp", 0.0, 0.6), ("post", 0.41, 0.16), ("drum", 0.1, 0.35),
                             ("ball", 0.0, 0.3), ("ghost", 0.0, 0.3)):
    g = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, name)
    axis = data.geom_xmat[g].reshape(3, 3)[:, 2]
    touching = 0
    for _ in range(200):
      qpos = mj_model.qpos0.copy()
      qpos[:3] = (data.geom_xpos[g] + rng.uniform(-along, along) * axis
                  + rng.uniform(-reach, reach, 3))
      data.qpos[:] = qpos
      mujoco.mj_forward(mj_model, data)
      theirs = [(-c.dist, np.array(c.frame[:3])) for c in data.contact[:data.ncon]
                if g in (c.geom1, c.geom2)]
      contacts = jax.tree.map(np.asarray, detect(jax.numpy.asarray(qpos[:7])))
      mine = (contacts.active & (contacts.depth > 0)
              & ((contacts.body_a == static_body) | (contacts.body_b == static_body)))
      if name == "ghost":
        assert not theirs and not mine.any()
        continue
      assert bool(mine.any()) == bool(theirs), (name, qpos[:3], theirs, contacts.depth[mine])
      if theirs:
        touching += 1
        depth, normal = max(theirs, key=lambda t: t[0])
        k = np.flatnonzero(mine)[np.argmax(contacts.depth[mine])]
        assert abs(contacts.depth[k] - depth) <= tolerance[name], (name, contacts.depth[k], depth)
        alignment = abs(np.dot(contacts.normal[k], normal))
        assert alignment > 1 - 1e-3, (name, contacts.normal[k], normal)
    assert touching >= 20 or name == "ghost", (name, touching)


def test_a_sphere_rests_on_a_static_worldbody_box_and_passes_through_a_ghost(tmp_path):
  """A free sphere dropped on a flat worldbody box comes to rest on its top; one dropped on a
  geom with contype = conaffinity = 0 falls through it to the floor."""
  path = tmp_path / "rest.xml"
  path.write_text("""<mujoco><option timestep="0.001"/><worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <geom type="box" size="0.3 0.3 0.25" pos="0 0 0.25" friction="0.5"/>
    <geom type="box" size="0.3 0.3 0.25" pos="2 0 0.25" contype="0" conaffinity="0"/>
    <body name="a" pos="0 0 0.8"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body name="b" pos="2 0 0.8"><freejoint/><geom type="sphere" size="0.1"/></body>
  </worldbody></mujoco>""")
  world = rj.World(str(path))
  for _ in range(1000):
    world.integrate()
  on_box = world.getObject("a").getGeneralizedCoordinate()[:3]
  through = world.getObject("b").getGeneralizedCoordinate()[:3]
  np.testing.assert_allclose(on_box, [0, 0, 0.6], atol=1e-3)
  np.testing.assert_allclose(through, [2, 0, 0.1], atol=1e-3)


@pytest.mark.parametrize("where", ["worldbody", "body"])
def test_a_box_with_two_sizes_names_its_line(tmp_path, where):
  """(It used to fail unpacking the sizes, naming neither the file nor the geom.)"""
  geom = '<geom type="box" size="0.3 0.3"/>'
  if where == "body":
    geom = f'<body name="b"><freejoint/>{geom}</body>'
  path = tmp_path / "bad.xml"
  path.write_text(f"""<mujoco><worldbody>
    {geom}
  </worldbody></mujoco>""")
  with pytest.raises(ValueError, match="a box needs 3 positive size numbers") as error:
    rj.World(str(path))
  assert str(path) in str(error.value) and "line 2" in str(error.value)


FILTER_MODEL = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1" {floor}/>
  <geom name="wall" type="box" size="0.2 0.2 0.2" pos="0.5 0 0.2" {wall}/>
  <body name="a" pos="0 0 0.09"><freejoint/><geom type="sphere" size="0.1" {a}/></body>
  <body name="b" pos="0.15 0 0.09"><freejoint/><geom type="sphere" size="0.1" {b}/></body>
  <body name="c" pos="0.32 0 0.09"><freejoint/><geom type="sphere" size="0.1" {c}/>
    <body name="c2" pos="0 0 0.1"><joint type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.04" pos="0 0 0.01" {c2}/></body></body>
  <body name="d" pos="-0.13 0 0.12"><freejoint/><geom type="box" size="0.05 0.05 0.05" {d}/></body>
</worldbody></mujoco>"""
FILTER_CLASSES = [(1, 1), (0, 1), (1, 0), (2, 2), (2, 1), (3, 0), (0, 2), (0, 0), (5, 4)]


def _touching_pairs_in_mujoco(path):
  model = mujoco.MjModel.from_xml_path(str(path))
  data = mujoco.MjData(model)
  mujoco.mj_forward(model, data)
  name = lambda geom: {"floor": "floor", "wall": "world"}.get(
      mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, geom),
      mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.geom_bodyid[geom]))
  return {frozenset((name(c.geom1), name(c.geom2))) for c in data.contact[:data.ncon]}


def _touching_pairs_here(world):
  """Pairs of MJCF body names in contact after collision detection ("world": the static
  system's box, "floor": the ground), through the OO contact lists."""
  world.integrate1()
  objects = world.getObjList()

  def name(obj, contact):
    body = obj.getBodyNames()[contact.getlocalBodyIndex()]
    return body.split("/")[0]

  pairs = set()
  for obj in objects:
    for contact in obj.getContacts():
      pair_object = objects[contact.getPairObjectIndex()]
      if pair_object.getName() in ("floor", "world"):   # static: keeps no contact list
        pairs.add(frozenset((name(obj, contact), pair_object.getName())))
        continue
      pair_contact = pair_object.getContacts()[contact.getPairContactIndexInPairObject()]
      pairs.add(frozenset((name(obj, contact), name(pair_object, pair_contact))))
  return pairs


@pytest.mark.parametrize("seed", range(40))
def test_contype_and_conaffinity_filter_contacts_across_systems_as_mujoco_does(tmp_path, seed):
  """Random (contype, conaffinity) on the ground plane, a static worldbody box, four free
  bodies and a slide-jointed child (each touching some others at the start): the body pairs
  in contact after collision detection are MuJoCo's, within a system, across systems, with the
  static "world" system and with the ground."""
  rng = np.random.default_rng(seed)
  names = ("floor", "wall", "a", "b", "c", "c2", "d")
  chosen = {n: FILTER_CLASSES[rng.integers(len(FILTER_CLASSES))] for n in names}
  path = tmp_path / "filter.xml"
  path.write_text(FILTER_MODEL.format(**{
      n: f'contype="{t}" conaffinity="{a}"' for n, (t, a) in chosen.items()}))
  world = rj.World(str(path))
  assert _touching_pairs_here(world) == _touching_pairs_in_mujoco(path), chosen


@pytest.mark.parametrize("classes", [(1, 0), (2, 2), (0, 1), (3, 2)])
def test_an_object_added_after_loading_collides_as_a_default_mujoco_geom(tmp_path, classes):
  """A sphere added through the World's API (RaiSim's default group and mask) touches a loaded
  body's geom exactly where MuJoCo's default geom (contype = conaffinity = 1) would."""
  body = ('<body name="a" pos="0 0 0.5"><freejoint/><geom type="sphere" size="0.1" '
          'contype="{}" conaffinity="{}"/></body>').format(*classes)
  extra = '<body name="e" pos="0.15 0 0.5"><freejoint/><geom type="sphere" size="0.1"/></body>'
  model = '<mujoco><worldbody><geom type="plane" size="5 5 0.1"/>{}</worldbody></mujoco>'
  oracle = tmp_path / "oracle.xml"
  oracle.write_text(model.format(body + extra))
  path = tmp_path / "model.xml"
  path.write_text(model.format(body))
  world = rj.World(str(path))
  world.addSphere(0.1, 1.0).setPosition(0.15, 0, 0.5)
  world.integrate1()
  touches = len(world.getObject("a").getContacts()) > 0
  assert touches == (frozenset(("a", "e")) in _touching_pairs_in_mujoco(oracle))


def test_a_contype_that_is_not_a_bit_mask_names_its_line(tmp_path):
  path = tmp_path / "bad.xml"
  path.write_text("""<mujoco><worldbody>
    <body name="b"><freejoint/><geom type="sphere" size="0.1" contype="-2"/></body>
  </worldbody></mujoco>""")
  with pytest.raises(ValueError, match="'contype' must be a non-negative 32-bit integer") as e:
    rj.World(str(path))
  assert str(path) in str(e.value) and "line 2" in str(e.value)
