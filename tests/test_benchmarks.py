"""The benchmark scripts run, in their reduced mode, so they cannot rot (#12 item 5)."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np

BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "benchmarks")


def _load(name):
  spec = importlib.util.spec_from_file_location(name, os.path.join(BENCHMARKS, name + ".py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_mjcf_models_against_mjx_quick(tmp_path):
  """Gymnasium's hopper in both engines at the file's own time step (MuJoCo's value, 2 ms),
  figures positive and finite, the ratio the quotient of the two rates, the JSON the table."""
  out = tmp_path / "mjcf.json"
  rows = _load("mjcf_models").main(["--quick", "--models", "hopper", "--json", str(out)])
  assert len(rows) == 1
  row = rows[0]
  assert row["model"] == "hopper" and row["batch"] == 2 and row["time_step"] == 0.002
  for key in ("ours", "mjx_rl", "mjx_default", "ours_compile_s", "mjx_rl_compile_s"):
    assert np.isfinite(row[key]) and row[key] > 0, key
  assert np.isclose(row["ratio_vs_mjx_rl"], row["ours"] / row["mjx_rl"])
  cores = jax.local_device_count()
  if cores == 1 or 2 % cores:                   # one device (the usual test process)
    assert row["ours_all_cores"] is None
  else:
    assert np.isfinite(row["ours_all_cores"]) and row["ours_all_cores"] > 0
  assert json.loads(out.read_text())["rows"] == rows


def test_narrowphase_cost_quick():
  """The per-pair cost benchmark at batch 2, one repeat, on a primitive pair and the hull
  pairs (random 64-vertex hulls with their triangle tables): positive, finite figures."""
  rows = _load("narrowphase_cost").main(["--batch", "2", "--repeats", "1", "--pairs",
                                         "box-box", "mesh-halfspace", "sphere-mesh",
                                         "capsule-mesh"])
  assert [name for name, *_ in rows] == ["box-box", "mesh-halfspace", "sphere-mesh",
                                         "capsule-mesh"]
  for name, us, compile_s in rows:
    assert np.isfinite(us) and us > 0 and np.isfinite(compile_s) and compile_s > 0, name


def test_gradients_quick(tmp_path):
  """The gradient benchmark in its reduced mode: rates and times positive and finite, the
  ratios their quotients, the gradient finite, the JSON the row. Reverse mode keeps a step's
  and a sweep's inputs, not every row visit of every sweep: XLA's temporaries for the
  gradient stay under 20 MiB per world (5.0 MiB measured; ~25 MB per step without the
  checkpoints in rollout and the sweeps)."""
  out = tmp_path / "gradients.json"
  rows = _load("gradients").main(["--quick", "--json", str(out)])
  assert [r["gradient"] for r in rows] == ["implicit"]
  row = rows[0]
  assert row["batch"] == 2 and row["steps"] == 3
  for key in ("forward_only", "differentiable", "gradient_seconds", "gradient_compile_s"):
    assert np.isfinite(row[key]) and row[key] > 0, key
  assert np.isclose(row["differentiable_over_forward_only"],
                    row["forward_only"] / row["differentiable"])
  assert np.isclose(row["gradient_over_forward"],
                    row["gradient_seconds"] / row["differentiable_seconds"])
  assert row["gradient_finite"] is True
  assert row["gradient_temp_bytes_per_world"] < 20 * 2**20
  assert json.loads(out.read_text())["rows"] == rows


def test_scenes_against_mujoco_quick(tmp_path):
  """The 9-body scenes and the sphere pile in both engines: rates, compile times, memory per
  world and per-call latencies positive and finite, the ratios their quotients, MuJoCo's
  contact count equal to ours on the resting scene (4 box corners x 4 + 4 spheres), the JSON
  the rows."""
  out = tmp_path / "scenes.json"
  rows = _load("scenes").main(["--quick", "--json", str(out)])
  batched = [r for r in rows if "ours" in r]
  latency = [r for r in rows if "oo_integrate_us" in r]
  assert [r["scene"] for r in batched] == ["falling", "resting", "pile"]
  assert [r["scene"] for r in latency] == ["falling", "resting", "pile"]
  for row in batched:
    for key in ("ours", "ours_compile_s", "bytes_per_world", "mujoco_c"):
      assert np.isfinite(row[key]) and row[key] > 0, key
    assert np.isclose(row["ratio"], row["ours"] / row["mujoco_c"])
  for row in latency:
    assert np.isclose(row["mj_step_ratio"], row["oo_integrate_us"] / row["mj_step_us"])
  resting = latency[1]
  assert resting["oo_contacts"] == resting["mujoco_contacts"] == 20
  assert json.loads(out.read_text())["rows"] == rows


def test_suite_compile_time_plugin_logs_and_summarizes(tmp_path):
  """The plugin logs one record per test with the compile it triggered (tracing and backend
  compile time > 0), nothing for a test without JAX; the summary sums per file."""
  (tmp_path / "test_tiny.py").write_text(textwrap.dedent("""
      import jax, jax.numpy as jnp
      def test_compiles():
        assert float(jax.jit(lambda x: jnp.sin(x) * 2)(1.0)) != 0
      def test_plain():
        assert 1 + 1 == 2
  """))
  log = tmp_path / "log"
  root = os.path.join(os.path.dirname(__file__), "..")
  # Not an xdist worker's environment: the child names its log after PYTEST_XDIST_WORKER.
  environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
  environment["RAISIM_JAX_COMPILE_LOG"] = str(log)
  result = subprocess.run(
      [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
       "benchmarks.suite_compile_time", str(tmp_path / "test_tiny.py")],
      cwd=root, env=environment, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stdout + result.stderr
  records = [json.loads(line) for line in (log / "main.jsonl").read_text().splitlines()]
  assert [r["nodeid"].split("::")[1] for r in records] == ["test_compiles", "test_plain"]
  assert records[0]["trace"] > 0 and records[0]["backend"] > 0
  assert records[1]["trace"] == 0 and records[1]["backend"] == 0
  rows = _load("suite_compile_time").main([str(log), "--json", str(tmp_path / "s.json")])
  assert rows[-1]["file"] == "TOTAL" and len(rows) == 2
  assert np.isclose(rows[-1]["wall"], sum(r["wall"] for r in records))
  assert np.isclose(rows[0]["backend"], records[0]["backend"])


def test_host_devices_reads_the_device_count_and_keeps_given_flags(monkeypatch):
  """`--devices N` / `--devices=N` from the command line, else the core count; `configure`
  leaves a device count or an Eigen setting already in XLA_FLAGS alone, and does nothing once
  JAX is imported (as in this process)."""
  host_devices = _load("host_devices")
  assert host_devices.requested(["--batches", "1", "--devices", "3"]) == 3
  assert host_devices.requested(["--devices=5"]) == 5
  assert host_devices.requested([]) == (os.cpu_count() or 1)
  monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
  host_devices.configure(["--devices", "2"])          # JAX is imported here: no change
  assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"
  script = textwrap.dedent("""
      import os, sys
      sys.path.insert(0, sys.argv[1])
      from benchmarks import host_devices
      host_devices.configure(["--devices", "2"])
      print(os.environ["XLA_FLAGS"])
  """)
  environment = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
  result = subprocess.run([sys.executable, "-c", script, os.path.join(BENCHMARKS, "..")],
                          env=environment, capture_output=True, text=True, timeout=60)
  assert result.stdout.split() == ["--xla_force_host_platform_device_count=4",
                                   "--xla_cpu_multi_thread_eigen=false"], result.stderr


def test_host_devices_one_core_pins_the_process_and_uses_one_device():
  """`--one-core` (MJX's LAPACK kernels deadlock a pool of 2+ threads) wins over `--devices`;
  in a fresh interpreter `configure` pins the process to one core before JAX starts, and JAX
  then has one CPU device."""
  host_devices = _load("host_devices")
  assert host_devices.requested(["--one-core", "--devices", "2"]) == 1
  assert host_devices.one_core(["--batches", "1", "--one-core"])
  assert not host_devices.one_core(["--devices", "2"])
  script = textwrap.dedent("""
      import os, sys
      sys.path.insert(0, sys.argv[1])
      from benchmarks import host_devices
      host_devices.configure(["--one-core"])
      import jax
      print(len(os.sched_getaffinity(0)), jax.local_device_count(), os.environ["XLA_FLAGS"])
  """)
  environment = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
  result = subprocess.run([sys.executable, "-c", script, os.path.join(BENCHMARKS, "..")],
                          env=environment, capture_output=True, text=True, timeout=120)
  assert result.stdout.split() == ["1", "1", "--xla_cpu_multi_thread_eigen=false",
                                   "--xla_force_host_platform_device_count=1"], result.stderr


def test_batched_runs_split_over_host_devices_as_on_one_device():
  """With 2 host devices (a fresh interpreter), `timing.batched` splits a batch of 4 worlds
  over both devices and gives bit for bit, on each device, the states of the same 2 worlds
  stepped on one device (the same program: a 4-world program may round differently); batch 1
  and a batch the devices do not divide stay on one device; MuJoCo C gets one thread per
  device."""
  script = textwrap.dedent("""
      import sys
      sys.path.insert(0, sys.argv[1])
      from benchmarks import host_devices
      host_devices.configure(["--devices", "2"])
      import jax, jax.numpy as jnp, numpy as np
      jax.config.update("jax_enable_x64", True)
      import raisim_jax as rj
      from benchmarks import timing
      assert jax.local_device_count() == 2 and timing.cores() == 2
      world = rj.World()
      world.setTimeStep(2e-3)
      world.addGround()
      world.addBox(0.2, 0.3, 0.1, 1.0).setPosition(0, 0, 0.049)    # resting on the ground
      world.addSphere(0.1, 0.5).setPosition(0.5, 0, 0.099)
      world.setContactSolverDifferentiable(False)
      model, state = world.compile()
      fn = lambda s: rj.rollout(model, s, 20)[0]
      run, inputs = timing.batched(fn, state, 4)
      assert len(inputs.bodies.position.sharding.device_set) == 2
      split = run(inputs)
      pair = jax.jit(jax.vmap(fn))(rj.batching.replicate(state, 2))
      for a, b in zip(jax.tree.leaves(split), jax.tree.leaves(pair)):
        assert np.array_equal(np.asarray(a), np.concatenate([np.asarray(b)] * 2))
      assert int(np.asarray(split.contacts.active).sum()) > 0
      for batch in (1, 3):
        _, inputs = timing.batched(fn, state, batch)
        assert len(inputs.bodies.position.sharding.device_set) == 1
      print("ok")
  """)
  # The suite's own XLA flags, not a device count or Eigen setting a user's environment may
  # add.
  from tests.conftest import SUITE_XLA_FLAGS
  environment = dict(os.environ, XLA_FLAGS=SUITE_XLA_FLAGS)
  result = subprocess.run([sys.executable, "-c", script, os.path.join(BENCHMARKS, "..")],
                          env=environment, capture_output=True, text=True, timeout=600)
  assert result.stdout.strip().endswith("ok"), result.stdout + result.stderr


def test_step_profile_quick(tmp_path):
  """The step profiler in its reduced mode (hopper): the shares by file, function and line
  each add up to the whole, most of the time is attributed to raisim_jax source lines (the
  stack-frame tables were read), the dynamics among them, and the JSON holds the result."""
  out = tmp_path / "profile.json"
  result = _load("step_profile").main(["--quick", "--json", str(out)])
  assert result["model"] == "hopper" and result["thunk_ms"] > 0
  for key in ("by_file", "by_function", "by_line"):
    assert np.isclose(sum(share for _, share in result[key]), 1.0)
  files = dict(result["by_file"])
  assert 1.0 - files.get("?", 0.0) > 0.5, files
  assert any(name.startswith("dynamics/") for name in files), files
  assert json.loads(out.read_text())["by_file"] == [list(row) for row in result["by_file"]]


def test_oo_calls_quick(tmp_path):
  """The OO call-latency benchmark in its reduced mode: the calls of both scenes timed,
  every figure positive and finite, the JSON the table."""
  out = tmp_path / "oo_calls.json"
  rows, step = _load("oo_calls").main(["--quick", "--json", str(out)])
  assert {row["scene"] for row in rows} == {"9 bodies resting", "quadruped standing"}
  assert any(row["call"].startswith("control loop") for row in rows)
  for row in rows:
    assert np.isfinite(row["us"]) and row["us"] > 0, row
  assert step is None or (np.isfinite(step) and step > 0)
  assert json.loads(out.read_text()) == dict(rows=rows, mj_step_us=step)
