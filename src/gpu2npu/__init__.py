"""gpu2npu: migrate PyTorch CUDA code to Ascend NPUs (torch_npu)."""

__version__ = "0.1.0"
