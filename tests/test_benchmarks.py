"""The benchmark scripts run, in their reduced mode, so they cannot rot (#12 item 5)."""

import importlib.util
import json
import os

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
