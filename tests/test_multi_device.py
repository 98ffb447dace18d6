"""The batch axis across devices and processes (#12 item 4).

- 8 forced host devices (XLA_FLAGS=--xla_force_host_platform_device_count=8): a batch of 16
  worlds sharded with `batching.shard` and stepped by `batching.sharded_vmap` gives bit for
  bit the states of the same 2-world groups stepped on one device, and the one-device
  16-world batch to within the solver's tolerance (each device's early exits see its own
  worlds only).
- Two processes on loopback (`jax.distributed`, gloo CPU collectives), each stepping its half
  of the batch: together they give the single-process result (same comparison).

Each run is a fresh interpreter: the device count is fixed when JAX starts."""

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A scene with contacts: two boxes and a sphere dropped on the ground at per-world heights.
SCENE = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import raisim_jax as rj
    from raisim_jax import batching

    def batch(size):
        world = rj.World()
        world.setTimeStep(2e-3)
        world.addGround()
        for k, body in enumerate([world.addBox(0.2, 0.3, 0.1, 1.0), world.addSphere(0.1, 0.5),
                                  world.addBox(0.1, 0.1, 0.1, 2.0)]):
            body.setPosition(0.5 * k, 0, 0.2)
        model, state = world.compile()
        states = batching.replicate(state, size)
        heights = 0.06 + 0.005 * np.arange(size)[:, None] * np.ones(3)
        states = rj.tree_replace(states, {"bodies.position":
            states.bodies.position.at[:, 1:4, 2].set(heights)})
        return model, states

    def run(model, states, steps=80, step=None):
        step = step or jax.jit(jax.vmap(rj.step, in_axes=(None, 0)))
        for _ in range(steps):
            states = step(model, states)
        return states
""")

SHARDED = SCENE + textwrap.dedent("""
    assert jax.device_count() == 8, jax.devices()
    model, states = batch(16)
    one = run(model, states)
    # Each device holds 2 worlds, whose early exits depend on those 2 only: the oracle is the
    # same 2-world batches stepped on one device.
    pairs = [run(model, jax.tree.map(lambda x: x[k:k + 2], states)) for k in range(0, 16, 2)]
    pairs = jax.tree.map(lambda *x: np.concatenate(x), *pairs)
    many = run(batching.replicate_on(model), batching.shard(states),
               step=batching.sharded_vmap(rj.step, (None, 0)))
    devices = {d for leaf in jax.tree.leaves(many) for d in leaf.sharding.device_set}
    assert len(devices) == 8, devices
    worst = max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)),
                             initial=0.0))
                for a, b in zip(jax.tree.leaves(pairs), jax.tree.leaves(many)))
    assert worst == 0.0, worst
    gap = np.max(np.abs(np.asarray(one.bodies.position) - np.asarray(many.bodies.position)))
    assert gap < 1e-6, gap      # vs. one 16-world batch: within the solver's tolerance
    assert bool(np.all(np.asarray(many.contacts.active).any(axis=1)))   # every world touches
    try:
        batching.shard(batching.replicate(states, 1).bodies.position[0, :3])
    except ValueError as error:
        assert "divisible by 8" in str(error), error
    else:
        raise AssertionError("a batch of 3 on 8 devices did not raise")
    print("sharded ok", worst, gap)
""")

# jax.distributed.initialize must run before anything starts JAX's backend (importing
# raisim_jax does: it builds a few constant arrays).
WORKER = textwrap.dedent("""
    import sys
    import jax
    process, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                               process_id=process)
""") + SCENE + textwrap.dedent("""
    model, states = batch(8)
    mine = jax.tree.map(lambda x: x[4 * process:4 * process + 4], states)
    final = run(batching.replicate_on(model), batching.shard_process_local(mine),
                step=batching.sharded_vmap(rj.step, (None, 0)))
    position = [s for s in final.bodies.position.addressable_shards]
    np.save(out, np.concatenate([np.asarray(s.data) for s in position]))
    jax.distributed.shutdown()
""")

SINGLE = SCENE + textwrap.dedent("""
    import sys
    model, states = batch(8)
    halves = [run(model, jax.tree.map(lambda x: x[k:k + 4], states)) for k in (0, 4)]
    np.save(sys.argv[1], np.concatenate([np.asarray(h.bodies.position) for h in halves]))
    np.save(sys.argv[2], np.asarray(run(model, states).bodies.position))
""")


def _python(code, *args, env=None):
  return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                        text=True, timeout=900, cwd=ROOT,
                        env={**os.environ, "PYTHONPATH": ROOT, **(env or {})})


def test_sharded_batch_on_8_host_devices_equals_one_device():
  result = _python(SHARDED, env={"XLA_FLAGS": os.environ.get("XLA_FLAGS", "")
                                 + " --xla_force_host_platform_device_count=8"})
  assert "sharded ok" in result.stdout, result.stdout + result.stderr[-3000:]


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_two_processes_each_step_half_the_batch(tmp_path):
  port = _free_port()
  outputs = [tmp_path / f"process{k}.npy" for k in range(2)]
  workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(k), str(port), str(out)],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k, out in enumerate(outputs)]
  logs = [w.communicate(timeout=900) for w in workers]
  for worker, (out, err) in zip(workers, logs):
    assert worker.returncode == 0, out + err[-3000:]
  single_halves, single_batch = tmp_path / "halves.npy", tmp_path / "batch.npy"
  result = _python(SINGLE, single_halves, single_batch)
  assert result.returncode == 0, result.stderr[-3000:]
  distributed = np.concatenate([np.load(out) for out in outputs])
  # Each process's 4 worlds converge on their own: exactly its half stepped alone, and the
  # 8-world single-process batch to within the solver's tolerance.
  np.testing.assert_array_equal(distributed, np.load(single_halves))
  np.testing.assert_allclose(distributed, np.load(single_batch), rtol=0, atol=1e-6)
