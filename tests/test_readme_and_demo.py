"""The README's examples run as written, and the demo runs without arguments."""

import pathlib
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_python_examples_run(monkeypatch):
  monkeypatch.chdir(ROOT)
  text = (ROOT / "README.md").read_text()
  blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
  assert len(blocks) >= 2
  namespace = {}
  exec(compile("\n".join(blocks), "README.md", "exec"), namespace)  # noqa: S102
  assert np.all(np.isfinite(namespace["final"].bodies.position))


def test_demo_runs(capsys):
  from raisim_jax import demo
  demo.main()
  out = capsys.readouterr().out
  assert "materials example" in out and "batched" in out and "pendulum" in out
