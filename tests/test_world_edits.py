"""The OO World under sequences of edits (issue #11): adds, removes and re-adds in any order
give the state a freshly built world gives; edits inside a capacity bucket and solver
settings reuse the compiled step; a World leaves process-wide JAX configuration alone."""

import itertools
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.oo import stored_steps
from raisim_jax.oo import world as world_module
from raisim_jax.step import step as pure_step
from tests import world_steps


def _spheres_at(world, xs):
  spheres = []
  for x in xs:
    sphere = world.addSphere(0.1, 1.0)
    sphere.setPosition(x, 0, 1)
    spheres.append(sphere)
  return spheres


def test_adding_two_objects_in_a_row_after_a_compile():
  world = rj.World()
  ground = world.addGround()
  assert ground.getHeight() == 0.0          # compiles the world
  a = world.addSphere(0.1, 1.0)
  b = world.addBox(0.2, 0.2, 0.2, 1.0)
  a.setPosition(0, 0, 1)
  b.setPosition(1, 0, 1)
  world.integrate()
  np.testing.assert_allclose(a.getPosition(), [0, 0, 1 - 9.81 * world.getTimeStep() ** 2],
                             rtol=0, atol=1e-12)
  np.testing.assert_allclose(b.getPosition()[:2], [1, 0])


def test_removing_two_objects_in_a_row_after_a_compile_keeps_the_survivors_state():
  world = rj.World()
  world.setGravity([0, 0, 0])
  spheres = _spheres_at(world, [0, 10, 20, 30])
  world.integrate()
  world.removeObject(spheres[1])
  world.removeObject(spheres[2])
  np.testing.assert_allclose(spheres[3].getPosition(), [30, 0, 1])
  np.testing.assert_allclose(spheres[0].getPosition(), [0, 0, 1])
  world.integrate()
  np.testing.assert_allclose(spheres[3].getPosition(), [30, 0, 1])


def _scene(world, kinds):
  """Objects of `kinds` dropped side by side onto a ground, each with a spin."""
  made = {}
  for k, kind in enumerate(kinds):
    if kind == "sphere":
      obj = world.addSphere(0.1, 1.0)
    elif kind == "box":
      obj = world.addBox(0.2, 0.2, 0.2, 2.0)
    else:
      obj = world.addCapsule(0.1, 0.2, 1.5)
    obj.setPosition(0.5 * k, 0, 0.3)
    obj.setVelocity([0, 0, 0], [0.0, 0.3 * k, 0])
    made[kind + str(k)] = obj
  return made


@pytest.mark.parametrize("order", list(itertools.permutations(["add", "remove", "readd"])))
def test_add_remove_readd_in_any_order_equals_a_fresh_world(order):
  """A world edited between steps ends in the state of a world built fresh with the same
  objects (same order, same states at the time of the edit)."""
  world = rj.World()
  world.addGround()
  made = _scene(world, ["sphere", "box", "capsule"])
  names = ["sphere0", "box1", "capsule2"]
  for _ in range(20):
    world.integrate()
  removed = None
  for step in order:
    if step == "add":
      extra = world.addBox(0.1, 0.1, 0.1, 1.0)
      extra.setPosition(-1, 0, 0.2)
    elif step == "remove":
      removed = names[1]
      world.removeObject(made[removed])
    elif removed is not None:   # re-add what was removed, at its last state
      box = world.addBox(0.2, 0.2, 0.2, 2.0)
      box.setPosition(2, 0, 0.3)
    for _ in range(5):
      world.integrate()
  # Fresh world: the same objects, in the same order, with the same states.
  fresh = rj.World()
  fresh.setWorldTime(world.getWorldTime())
  for obj in world.getObjList():
    kind = obj.getObjectType()
    if kind == rj.ObjectType.HALFSPACE:
      copy = fresh.addGround()
      continue
    if kind == rj.ObjectType.SPHERE:
      copy = fresh.addSphere(0.1, obj.getMass())
    elif kind == rj.ObjectType.BOX:
      copy = fresh.addBox(*obj.getDim(), obj.getMass())
    else:
      copy = fresh.addCapsule(0.1, 0.2, obj.getMass())
    copy.setPosition(obj.getPosition())
    copy.setOrientation(obj.getQuaternion())
    copy.setVelocity(obj.getLinearVelocity(), obj.getAngularVelocity())
  for _ in range(30):
    world.integrate()
    fresh.integrate()
  for obj, copy in zip(world.getObjList(), fresh.getObjList()):
    np.testing.assert_allclose(obj.getPosition(), copy.getPosition(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(obj.getLinearVelocity(), copy.getLinearVelocity(), rtol=0,
                               atol=1e-10)


def test_edits_inside_a_bucket_and_solver_settings_reuse_the_compiled_step():
  world_steps.clear()
  world = rj.World()
  world.addGround()
  spheres = _spheres_at(world, [0, 1])
  world.integrate()
  assert world_steps.compiled() == 1
  # Ordinary edits: state, parameters, solver settings, materials, adds and removes that stay
  # inside the buckets (4 bodies, 4 sphere shapes).
  spheres[0].setPosition(0, 0, 2)
  spheres[0].setMass(3.0)
  world.setTimeStep(0.002)
  world.setContactSolverParam(1, 1, 1, 100, 1e-9)
  world.setContactSolverIterationOrder(False)
  world.setMaterialPairProp("rubber", "steel", 0.8, 0.5, 0.1)
  world.setObjectMaterial(spheres[1], "rubber")
  world.integrate()
  # Adds and removes inside the buckets compile nothing at all, not even an eager op (the
  # host-side bookkeeping of an edit once dispatched ~30 tiny XLA programs: 0.75 s).
  with world_steps.XlaCompiles() as compiles:
    third = world.addSphere(0.2, 1.0)
    third.setPosition(3, 0, 1)
    world.integrate()
    world.removeObject(spheres[0])
    world.integrate()
    world.removeObject(third)
    world.addSphere(0.1, 1.0).setPosition(5, 0, 1)
    world.integrate()
  assert compiles.count == 0
  assert world_steps.compiled() == 1
  assert world.getMaterialPairProperties("rubber", "steel").c_f == 0.8
  model, _ = world.compile()
  names = world._compiled_material_names
  rubber, steel = names.index("rubber"), names.index("steel")
  assert float(model.solver.pair_table[rubber, steel, 0]) == 0.8
  assert rubber in np.asarray(model.collision.shapes.material)
  # Past the bucket: a fifth body recompiles once.
  _spheres_at(world, [6, 7, 8])
  world.integrate()
  assert world_steps.compiled() == 2


def test_articulated_setters_and_set_state_reuse_the_compiled_step():
  """Setters of an articulated system and World.setState write leaves the next integrate()
  takes without compiling again (an uncommitted leaf once changed jit's cache key, and the
  step compiled a second time)."""
  world_steps.clear()
  world = rj.World()
  world.addGround()
  robot = world.addArticulatedSystem("rsc/urdf/pendulum.urdf")
  world.integrate()
  assert world_steps.compiled() == 1
  dof, coordinates = robot.getDOF(), robot.getGeneralizedCoordinateDim()
  robot.setGeneralizedCoordinate(np.full(coordinates, 0.3))
  robot.setGeneralizedVelocity(np.full(dof, 0.1))
  robot.setGeneralizedForce(np.full(dof, 0.2))
  robot.setPdGains(np.full(dof, 5.0), np.full(dof, 0.5))
  robot.setPdTarget(np.full(coordinates, 0.1), np.zeros(dof))
  world.integrate()
  _, state = world.compile()
  world.setState(state)
  world.setWorldTime(1.0)
  world.integrate()
  assert world_steps.compiled() == 1


def test_added_sphere_inside_a_bucket_behaves_like_one_compiled_for_it():
  """The padded rows are inert: a sphere added into a padded row falls and lands like the
  same sphere in a world compiled without padding."""
  world = rj.World()
  world.addGround()
  world.addSphere(0.1, 1.0).setPosition(3, 0, 0.1)
  world.integrate()
  late = world.addSphere(0.1, 1.0)
  late.setPosition(0, 0, 0.5)
  for _ in range(400):
    world.integrate()
  # Closed form: free fall from 0.5 m to contact at 0.1 m; then at rest on the ground.
  assert late.getPosition()[2] == pytest.approx(0.1, abs=2e-4)
  # Both spheres rest on the ground, so their contacts are found and, at rest, they sleep.
  assert len(world.getContactProblem()) == 2
  assert world.isObjectSleeping(late)


def test_a_world_leaves_the_users_float32_alone():
  """Creating and stepping a float64 World does not switch the process to 64-bit: the
  user's own JAX code next to it stays float32 (a fresh interpreter, since the test suite
  itself enables x64)."""
  script = textwrap.dedent("""
      import jax, jax.numpy as jnp, numpy as np
      import raisim_jax as rj
      world = rj.World()
      ball = world.addSphere(0.1, 1.0)
      world.integrate()
      model, state = world.compile()
      assert state.bodies.position.dtype == np.float64, state.bodies.position.dtype
      assert isinstance(ball.getPosition(), np.ndarray)
      assert ball.getPosition().dtype == np.float64
      assert not jax.config.jax_enable_x64
      assert jnp.ones(3).dtype == jnp.float32
      assert (jnp.arange(3.0) * 2).dtype == jnp.float32
      print("ok")
  """)
  env = dict(os.environ, RAISIM_JAX_COMPILATION_CACHE="0", JAX_ENABLE_X64="0")
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.strip().endswith("ok")


def test_pure_float64_compile_without_x64_says_how_to_enable_it():
  script = textwrap.dedent("""
      import jax.numpy as jnp
      from raisim_jax.compile import compile_world
      from raisim_jax.description import WorldDescription
      try:
        compile_world(WorldDescription(), jnp.float64)
      except ValueError as error:
        print(error)
  """)
  env = dict(os.environ, JAX_ENABLE_X64="0")
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
  assert "jax_enable_x64" in result.stdout, result.stdout + result.stderr[-2000:]


def test_persistent_compilation_cache_respects_the_user(tmp_path):
  """The default cache directory is set only while unset; the environment variable turns
  it off or names another directory."""
  script = textwrap.dedent("""
      import jax
      from raisim_jax.oo import compilation_cache
      print(compilation_cache.enable_default())
      print(jax.config.jax_compilation_cache_dir)
  """)

  def run(**env):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("JAX_COMPILATION_CACHE_DIR", "RAISIM_JAX_COMPILATION_CACHE")}
    environment.update(env)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=environment, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()

  default = run(XDG_CACHE_HOME=str(tmp_path))
  assert default == [str(tmp_path / "raisim_jax" / "jax_compilation_cache")] * 2
  assert run(RAISIM_JAX_COMPILATION_CACHE="0") == ["None", "None"]
  assert run(RAISIM_JAX_COMPILATION_CACHE=str(tmp_path / "mine")) == [str(tmp_path / "mine")] * 2
  users = str(tmp_path / "users")
  assert run(JAX_COMPILATION_CACHE_DIR=users) == [users, users]


def test_settings_without_a_counterpart_are_rejected_not_ignored():
  world = rj.World()
  for field, value in (("gjkMaxIterations", 10), ("epaTolerance", 1e-3),
                       ("sweptCcdEnabled", True), ("sweptCcdMinSpeed", 1.0)):
    settings = world.getContactSettings()
    setattr(settings, field, value)
    with pytest.raises(ValueError, match=f"ContactSettings.{field} .* is not supported"):
      world.setContactSettings(settings)
  with pytest.raises(ValueError, match="'erp2'.*not supported"):
    world.setERP(0.2, 0.1)
  with pytest.raises(FileNotFoundError, match="URDF module 'module.urdf' not found"):
    world.addArticulatedSystem("rsc/urdf/pendulum.urdf", ["module.urdf"])
  settings = world.getContactSettings()
  settings.sweptCcdSpeculativeMargin = 2e-4      # supported settings still work
  world.setContactSettings(settings)
  world.setERP(0.3)
  assert world.getContactSettings().sweptCcdSpeculativeMargin == 2e-4


def test_a_second_run_loads_the_compiled_step_and_steps_identically(tmp_path):
  """The first run stores the compiled step next to the compilation cache; a second run of
  the same script loads it (no tracing, lowering or compile) and produces the same
  trajectory bit for bit. After a change to raisim_jax's source (simulated: another source
  hash) the step is stored again, compiled afresh although JAX's compilation cache holds
  the same program (an executable that cache handed back serialized without all its kernels
  on XLA:CPU: loaded, it failed its first run), and a run after that loads it. JAX's cache
  gets no entry for a stored program."""
  script = textwrap.dedent("""
      import os
      import numpy as np
      import raisim_jax as rj
      from raisim_jax.oo import stored_steps
      if os.environ.get("SOURCE_HASH"):
        stored_steps._source_hash = lambda: os.environ["SOURCE_HASH"]
      import jax
      jax.jit(lambda x: x + 1)(1.0)    # JAX has decided to use its compilation cache
      world = rj.World()
      world.addGround()
      for k in range(5):
        body = world.addSphere(0.1, 1.0) if k % 2 else world.addBox(0.2, 0.2, 0.2, 1.0)
        body.setPosition(0.5 * k, 0, 0.3)
      for _ in range(200):
        world.integrate()
      print(stored_steps.stats["stored"], stored_steps.stats["loaded"],
            stored_steps.stats["fallback"])
      print(repr(np.concatenate([o.getPosition() for o in world.getObjList()]).tolist()))
  """)
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_X64")}
  env["RAISIM_JAX_COMPILATION_CACHE"] = str(tmp_path)

  def run(source_hash=""):
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(env, SOURCE_HASH=source_hash), timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    counts, positions = out.stdout.strip().splitlines()[-2:]
    return counts, positions

  first_counts, first_positions = run()
  second_counts, second_positions = run()
  assert first_counts == "1 0 0" and second_counts == "0 1 0"
  assert first_positions == second_positions
  assert len(list((tmp_path / stored_steps.SUBDIRECTORY).glob("step_plain-*.xla"))) == 1
  # The stored program's own entry in JAX's cache would never be read (its name is unique
  # to its stored key): it is not written.
  assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("jit_step_")]
  assert run("changed source") == ("1 0 0", first_positions)
  assert run("changed source") == ("0 1 0", first_positions)
  assert len(list((tmp_path / stored_steps.SUBDIRECTORY).glob("step_plain-*.xla"))) == 2


def test_a_step_stored_unoptimized_is_not_loaded_by_an_optimized_run():
  """The stored step's key includes `jax_disable_most_optimizations`: the test suite
  compiles unoptimized, and a script run after it loaded those executables and stepped 2x
  slower (9 bodies falling, float64: 375 -> 753-811 us per integrate())."""
  key = (jax.tree.structure(0.0), [((), "float64")], True, None, jax.devices()[0])
  step = world_steps.STEPS[0]
  before = jax.config.read("jax_disable_most_optimizations")
  try:
    digests = set()
    for unoptimized in (False, True):
      jax.config.update("jax_disable_most_optimizations", unoptimized)
      digests.add(step._key_digest(key))
  finally:
    jax.config.update("jax_disable_most_optimizations", before)
  assert len(digests) == 2


def _fresh_stored_steps(monkeypatch, directory):
  """The World's stored steps in `directory`, as a new process starts them (nothing loaded,
  checked, chained or warned yet)."""
  monkeypatch.setattr(stored_steps, "_directory", directory)
  for name, value in (("_calls", {}), ("_unverified", {}), ("_warned", False),
                      ("_chain", None)):
    for step in world_steps.STEPS:
      monkeypatch.setattr(step, name, value)


def test_a_stored_step_that_cannot_be_loaded_falls_back_to_jit_with_one_warning(
    tmp_path, monkeypatch):
  """A stored step that cannot be read back (a corrupted file, a toolchain that cannot load
  it) is never fatal: one warning naming the step and the directory, then the plain jitted
  step. Oracle: a sphere in free fall at the semi-implicit Euler positions, 1 - g dt^2 and
  1 - 3 g dt^2, across the stored and the fallback step."""
  world = rj.World()                          # (points the stored steps at its directory)
  _fresh_stored_steps(monkeypatch, tmp_path)
  sphere = world.addSphere(0.1, 1.0)
  sphere.setPosition(0, 0, 1)
  dt, g = world.getTimeStep(), 9.81
  stored = stored_steps.stats["stored"]
  world.integrate()
  assert stored_steps.stats["stored"] == stored + 1
  np.testing.assert_allclose(sphere.getPosition()[2], 1 - g * dt ** 2, rtol=0, atol=1e-12)
  for path in tmp_path.glob("step_plain-*.xla"):
    path.write_bytes(b"not a compiled step")
  _fresh_stored_steps(monkeypatch, tmp_path)   # as a new process would start
  fallback = stored_steps.stats["fallback"]
  with pytest.warns(UserWarning, match=f"could not store, load or run the compiled step_plain in "
                                       f"{tmp_path}"):
    world.integrate()
  assert stored_steps.stats["fallback"] == fallback + 1
  np.testing.assert_allclose(sphere.getPosition()[2], 1 - 3 * g * dt ** 2, rtol=0, atol=1e-12)


def test_a_stored_step_that_fails_its_first_run_is_deleted_and_jit_steps(tmp_path,
                                                                        monkeypatch):
  """A stored step that loads but fails when run (an executable XLA serialized
  incompletely) is checked on its first run in a process: the file is deleted, one warning
  names the step, and the plain jitted step takes the same step. Oracle: a sphere in free
  fall at the semi-implicit Euler heights 1 - g dt^2 and 1 - 3 g dt^2."""
  world = rj.World()
  _fresh_stored_steps(monkeypatch, tmp_path)
  sphere = world.addSphere(0.1, 1.0)
  sphere.setPosition(0, 0, 1)
  dt, g = world.getTimeStep(), 9.81
  world.integrate()                                        # stores the step
  np.testing.assert_allclose(sphere.getPosition()[2], 1 - g * dt ** 2, rtol=0, atol=1e-12)
  (path,) = tmp_path.glob("step_plain-*.xla")

  def fails(*args):
    raise jax.errors.JaxRuntimeError("NOT_FOUND: Function iota.9_kernel not found")

  monkeypatch.setattr(stored_steps.serialize_executable, "deserialize_and_load",
                      lambda *args, **kwargs: fails)
  _fresh_stored_steps(monkeypatch, tmp_path)   # as a new process would start
  fallback = stored_steps.stats["fallback"]
  with pytest.warns(UserWarning, match="could not store, load or run the compiled step_plain.*"
                                       "iota.9_kernel"):
    world.integrate()
  assert stored_steps.stats["fallback"] == fallback + 1
  assert not path.exists()
  np.testing.assert_allclose(sphere.getPosition()[2], 1 - 3 * g * dt ** 2, rtol=0, atol=1e-12)


def test_a_world_stepping_in_a_loop_reuses_the_last_calls_leaves(tmp_path, monkeypatch):
  """`integrate()` after `integrate()` passes the previous call's leaves straight back to the
  stored program (no flatten, shape key or lookup); an edit between steps replaces the State
  and takes the full path, so the edit is stepped. Oracle: a sphere in free fall from rest
  at the semi-implicit Euler heights z0 - g dt^2 n (n + 1) / 2, before and after it is moved
  (and at rest again)."""
  world = rj.World()
  _fresh_stored_steps(monkeypatch, tmp_path)
  full_calls = []
  device_of = stored_steps._device_of
  monkeypatch.setattr(stored_steps, "_device_of",
                      lambda leaves: full_calls.append(1) or device_of(leaves))
  sphere = world.addSphere(0.1, 1.0)
  sphere.setPosition(0, 0, 1)
  world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(2, 0, 1)
  dt, g = world.getTimeStep(), 9.81
  height = lambda z0, n: z0 - g * dt ** 2 * n * (n + 1) / 2
  for n in range(1, 6):
    world.integrate()
    np.testing.assert_allclose(sphere.getPosition()[2], height(1, n), rtol=0, atol=1e-12)
  assert len(full_calls) == 1            # the first call only
  sphere.setPosition(0, 0, 2)
  sphere.setVelocity([0, 0, 0], [0, 0, 0])
  for n in range(1, 4):
    world.integrate()
    np.testing.assert_allclose(sphere.getPosition()[2], height(2, n), rtol=0, atol=1e-12)
  assert len(full_calls) == 2            # the edited State once, then chained again


def test_the_oo_steps_compile_options_leave_the_trajectory_unchanged():
  """The OO World compiles its one-world step with XLA's classic CPU emitters
  (`stored_steps.compiler_options`, for a shorter compile); its trajectory equals the
  pure step compiled with XLA's defaults to float64 round-off."""
  world = rj.World()
  world.addGround()
  for k in range(4):
    world.addSphere(0.1, 1.0).setPosition(0.3 * k, 0.05 * k, 0.2 + 0.1 * k)
  model, state = world.compile()
  default_step = jax.jit(pure_step)
  for _ in range(150):
    world.integrate()
    state = default_step(model, state)
  if jax.default_backend() == "cpu":
    assert stored_steps.compiler_options() == {"xla_cpu_use_fusion_emitters": False}
  positions = np.stack([sphere.getPosition() for sphere in world.getObjList()[1:]])
  assert np.abs(positions[:, 2] - 0.1).max() < 1e-3      # landed and resting on the ground
  np.testing.assert_allclose(positions, np.asarray(state.bodies.position)[1:5], atol=1e-10)


def _five_boxes(stacked):
  """Five 0.2 m boxes on the ground: a stack of masses 1, 2, 4, 7, 10 from the top, or dropped
  side by side from 0.3 m. One structure, so both share their compiled programs."""
  world = rj.World()
  world.addGround()
  boxes = []
  for k, mass in enumerate([10, 7, 4, 2, 1]):
    box = world.addBox(0.2, 0.2, 0.2, float(mass))
    box.setPosition(0 if stacked else 0.5 * k, 0, 0.1 + 0.2 * k if stacked else 0.3)
    boxes.append(box)
  return world, boxes


def test_the_world_compiles_the_island_block_move_only_when_a_solve_needs_it():
  """A World steps with the plain program (no island block move, at most PLAIN_SWEEP_LIMIT
  sweeps) until a solve runs into that limit; that step is redone with the move, and the
  World keeps the move. Oracle: the pure core step with the move (the Model's default), run
  from the same start: boxes dropped side by side (they land around step 40, plain sweeps
  up to ~18) never switch and follow it to the solver's tolerance; a stack of mass ratio 10
  switches in its first steps and follows it to round-off; with maxIter <= BLOCK_SWEEP the
  move cannot run and the stack stays plain, equal to the pure step to round-off."""
  from raisim_jax.dynamics import gauss_seidel
  pure = jax.jit(pure_step)

  def run(world, steps):
    model, state = world.compile()
    switched_at, sweeps = None, []
    for n in range(steps):
      world.integrate()
      state = pure(model, state)
      sweeps.append(world.getContactSolverIterations())
      if world._uses_block_move and switched_at is None:
        switched_at = n
    positions = np.stack([o.getPosition() for o in world.getObjList()[1:]])
    return switched_at, positions, np.asarray(state.bodies.position)[1:6], max(sweeps)

  world_steps.clear()
  dropped, boxes = _five_boxes(stacked=False)
  switched_at, positions, expected, sweeps = run(dropped, 80)
  assert switched_at is None and gauss_seidel.BLOCK_SWEEP < sweeps
  assert (world_steps.STEPS[0]._cache_size(), world_steps.STEPS[1]._cache_size()) == (1, 0)
  assert np.abs(positions[:, 2] - 0.1).max() < 1e-3                  # landed on the ground
  np.testing.assert_allclose(positions, expected, rtol=0, atol=1e-7)

  stack, boxes = _five_boxes(stacked=True)
  switched_at, positions, expected, sweeps = run(stack, 30)
  assert switched_at is not None and switched_at < 5
  assert gauss_seidel.BLOCK_SWEEP < sweeps < world_module.PLAIN_SWEEP_LIMIT
  assert world_steps.compiled() == 2
  np.testing.assert_allclose(positions, expected, rtol=0, atol=1e-10)
  assert np.abs(positions[:, 2] - (0.1 + 0.2 * np.arange(5))).max() < 1e-3

  capped, boxes = _five_boxes(stacked=True)
  capped.setContactSolverParam(1, 1, 1, gauss_seidel.BLOCK_SWEEP, 1e-8)
  switched_at, positions, expected, sweeps = run(capped, 30)
  assert switched_at is None and sweeps == gauss_seidel.BLOCK_SWEEP
  np.testing.assert_allclose(positions, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_single_body_setters_write_their_row_and_reuse_the_compiled_step(dtype):
  """A sequence of single-body setters (written on the host and sent in one XLA call each)
  sets exactly the edited body's row, cast to the world's precision, leaves every other row
  bit-identical, wakes the body, and the next integrate() takes the values without
  compiling again. Oracle for the step: free flight under gravity and the external force,
  v' = v + dt (g + F / m), p' = p + dt v' (the ball is far from the ground)."""
  world_steps.clear()
  world = rj.World(dtype=dtype)
  world.addGround()
  still = world.addBox(1.0, 1.0, 1.0, 2.0)
  still.setPosition(5.0, 0.0, 0.5)
  ball = world.addSphere(0.1, 3.0)
  ball.setPosition(0.0, 0.0, 4.0)
  world.integrate()
  _, before = world.compile()
  position, velocity, force = np.array([0.25, -0.5, 3.0]), np.array([1.0, 2.0, -3.0]), \
      np.array([0.3, 0.0, 6.0])
  ball.setPosition(*position)
  ball.setVelocity(*velocity, 0.1, 0.2, 0.3)
  ball.setExternalForce(0, force)
  precision = np.dtype(dtype)
  assert np.array_equal(ball.getPosition(), position.astype(precision).astype(np.float64))
  assert np.array_equal(ball.getLinearVelocity(), velocity.astype(precision).astype(np.float64))
  _, edited = world.compile()
  row, other = ball._row(), still._row()
  assert edited.bodies.position.dtype == precision
  for name in ("position", "quaternion", "linear_velocity", "angular_velocity",
               "external_force", "external_torque"):
    assert np.array_equal(np.asarray(getattr(edited.bodies, name))[other],
                          np.asarray(getattr(before.bodies, name))[other]), name
  assert np.array_equal(np.asarray(edited.bodies.external_force)[row],
                        force.astype(precision))
  assert int(edited.bodies.quiet_steps[row]) == 0 and not bool(edited.bodies.sleeping[row])
  world.integrate()
  assert world_steps.compiled() == 1
  dt, gravity = world.getTimeStep(), world.getGravity()
  expected_velocity = velocity + dt * (gravity + force / 3.0)
  tolerance = 1e-12 if dtype == "float64" else 1e-5
  np.testing.assert_allclose(ball.getLinearVelocity(), expected_velocity, atol=tolerance)
  np.testing.assert_allclose(ball.getPosition(), position + dt * expected_velocity,
                             atol=tolerance)


def test_setters_and_getters_between_steps_compile_nothing_after_their_first_use():
  """A control loop's setters and getters, once each has run, compile no XLA program when
  they are called again on other bodies, with other values or after more steps: rows are
  traced arguments of the one jitted write, reads index host views."""
  world = rj.World()
  world.addGround()
  balls = _spheres_at(world, [0, 1, 2])
  robot = world.addArticulatedSystem("rsc/urdf/pendulum.urdf")
  dof = robot.getDOF()

  def loop(k, ball):
    ball.setPosition(k, 0.0, 1.0 + k)
    ball.setVelocity(0.1 * k, 0, 0, 0, 0, 0)
    ball.setExternalForce(0, [0.0, 0.0, float(k)])
    robot.setPdTarget(np.full(dof, 0.1 * k), np.zeros(dof))
    robot.setGeneralizedForce(np.full(dof, 0.2 * k))
    world.integrate()
    ball.getPosition(), ball.getLinearVelocity(), ball.getRotationMatrix()
    robot.getGeneralizedCoordinate(), robot.getFramePosition(0), ball.getContacts()

  loop(1, balls[0])     # compiles the world (its setters wrote the descriptions)
  loop(2, balls[0])     # the first use of each setter and getter on the compiled world
  with world_steps.XlaCompiles() as compiles:
    for k, ball in enumerate(balls * 2):
      loop(k + 3, ball)
  assert compiles.count == 0
  assert balls[2].getPosition()[0] != balls[1].getPosition()[0]
