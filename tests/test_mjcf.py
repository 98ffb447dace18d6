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
  and no contact with the floor deeper than 1 cm."""
  import jax
  import jax.numpy as jnp
  world, robot, _ = _load(name)
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
    return state, jnp.max(jnp.where(on_floor, contacts.depth, 0.0))

  final, depth = jax.jit(lambda s, c: jax.lax.scan(body, s, c))(state, ctrl)
  gc = np.asarray(final.articulated[0].generalized_coordinate)
  assert np.all(np.isfinite(gc)) and bool(final.finite)
  assert float(np.max(depth)) < 0.01, float(np.max(depth))
  assert float(np.max(depth)) > 0.0                     # it did touch the floor
