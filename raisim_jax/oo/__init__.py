"""The object-oriented shell: RaiSim's World API (camelCase) over the pure core.

`World` (world.py) builds a description, compiles it (compile.py) with capacity buckets and
steps it with the core's jitted `step`; the views (objects.py, articulated_system.py,
articulated_collision.py, contact.py, ray_collision.py) hold an index into the world, never a
value. precision.py runs the shell in float64 without a process-wide switch;
compilation_cache.py turns on JAX's persistent compilation cache. The core never imports
this package (tests/test_layering.py).
"""
