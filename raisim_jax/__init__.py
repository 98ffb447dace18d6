"""raisim_jax: RaiSim's rigid-body physics on JAX (jit, vmap, grad), with RaiSim's World API.

Pure core: `compile_world`, `step`, `integrate1`, `integrate2`, `rollout` over `Model`/`State`;
`batching` (replicate, per-world parameters, masked reset, snapshots).
OO layer: `World` and its objects, with RaiSim's method names.
"""

from raisim_jax import batching as batching
from raisim_jax.compile import compile_world as compile_world
from raisim_jax.step import integrate1 as integrate1
from raisim_jax.step import integrate2 as integrate2
from raisim_jax.step import ROLLOUT_SAVED as ROLLOUT_SAVED
from raisim_jax.step import rollout as rollout
from raisim_jax.step import step as step
from raisim_jax.struct import tree_replace as tree_replace
from raisim_jax.types import BodyType as BodyType
from raisim_jax.types import ArticulatedControl as ArticulatedControl
from raisim_jax.types import Control as Control
from raisim_jax.types import ControlMode as ControlMode
from raisim_jax.types import IntegrationScheme as IntegrationScheme
from raisim_jax.types import Model as Model
from raisim_jax.types import MeshCollisionMode as MeshCollisionMode
from raisim_jax.types import ObjectType as ObjectType
from raisim_jax.io.convex_decomposition import CoacdOptions as CoacdOptions
from raisim_jax.types import State as State
from raisim_jax.oo.objects import CompoundObjectChild as CompoundObjectChild
from raisim_jax.oo.objects import Transformation as Transformation
from raisim_jax.oo.articulated_system import ArticulatedSystemOption as ArticulatedSystemOption
from raisim_jax.joint_springs import SpringElement as SpringElement
from raisim_jax.oo.world import COLLISION as COLLISION
from raisim_jax.oo.world import DivergenceError as DivergenceError
from raisim_jax.oo.world import ParameterContainer as ParameterContainer
from raisim_jax.oo.world import World as World

__all__ = [
    "batching", "compile_world", "step", "integrate1", "integrate2", "rollout", "ROLLOUT_SAVED",
    "tree_replace",
    "Model", "State", "Control", "ArticulatedControl", "BodyType", "ObjectType",
    "MeshCollisionMode", "CoacdOptions",
    "ControlMode", "IntegrationScheme",
    "World", "ParameterContainer", "DivergenceError", "COLLISION", "ArticulatedSystemOption", "SpringElement", "CompoundObjectChild", "Transformation",
]
