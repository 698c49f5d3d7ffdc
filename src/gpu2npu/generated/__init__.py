"""Packages that gpu2npu writes into a migrated project (copied byte for byte, never imported by
the tool).  They are kept here as real source so that the test suite can run them."""
