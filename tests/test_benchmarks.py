"""The benchmark scripts run, in their reduced mode, so they cannot rot (#12 item 5)."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

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
