"""Written by gpu2npu -m: runs a migrated training script on Huawei ModelArts.

Edit path_mapping_config.py to say which local paths are copied from object storage (OBS)
before training and which are copied back after it.  See modelarts_path_manager.py.
"""
from .modelarts_path_manager import ModelArtsPathManager

__all__ = ["ModelArtsPathManager"]
