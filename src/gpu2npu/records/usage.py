"""The error of a request that cannot be carried out as given."""


class UsageError(Exception):
    """The request cannot be carried out as given (exit status 2, nothing written)."""
