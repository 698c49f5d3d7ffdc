"""What flows between the stages: a run's options, a file's changes and findings and the
declared kinds of findings, what a migration of a file gives back, the project's
[tool.gpu2npu] table, the user's -r rules and the error of a request that cannot be carried out."""
