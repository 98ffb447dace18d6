"""The notebooks in notebooks/ (#12 item 7) run from top to bottom at a reduced size
(RAISIM_JAX_NOTEBOOK_QUICK=1: the same cells, smaller batches and fewer steps), each draws at
least one figure, and the checks inside them hold (the materials notebook asserts each
sphere's rebound ratio equals its pair's restitution within 1%; the trajectory notebook that
its loss fell)."""

import glob
import os

import nbclient
import nbformat
import pytest

NOTEBOOKS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "notebooks", "*.ipynb")))


def test_the_three_notebooks_are_there():
  names = {os.path.basename(path) for path in NOTEBOOKS}
  assert {"quadruped_rl.ipynb", "trajectory_optimization.ipynb", "materials.ipynb"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs_and_draws(path, monkeypatch):
  monkeypatch.setenv("RAISIM_JAX_NOTEBOOK_QUICK", "1")
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  monkeypatch.setenv("PYTHONPATH", root + os.pathsep + os.environ.get("PYTHONPATH", ""))
  notebook = nbformat.read(path, as_version=4)
  nbclient.NotebookClient(notebook, timeout=1200, kernel_name="python3",
                          resources={"metadata": {"path": os.path.dirname(path)}}).execute()
  images = [output for cell in notebook.cells if cell.cell_type == "code"
            for output in cell.get("outputs", []) if "image/png" in output.get("data", {})]
  assert images, f"{os.path.basename(path)} drew no figure"
