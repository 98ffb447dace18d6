"""Pure math helpers: quaternions (w, x, y, z), rotations, gradient-safe operations."""
