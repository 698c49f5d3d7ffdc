"""A CPU reference of the apex modules the fixtures use (the real ones need CUDA)."""
