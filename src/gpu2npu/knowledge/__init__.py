"""What gpu2npu knows of the world, below the rules and the analyses: what each torch_npu
release provides (apidata, read from data/), CUDA's and NCCL's environment variables and
their Ascend counterparts, and the tips the reports give."""
