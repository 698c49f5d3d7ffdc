"""Maps the file paths of a migrated training script onto ModelArts storage.

gpu2npu -m wrapped every path the script reads or writes: `torch.save(state, path)` became
`torch.save(state, ModelArtsPathManager().get_path(path))`.  On ModelArts (the `moxing` SDK can
be imported):

- the first `ModelArtsPathManager()` copies each 'input' of PATH_MAPPING_CONFIG from object
  storage into a local cache (MODELARTS_CACHE_DIR, default /cache/modelarts_cache), once per
  machine: several processes started together (one per NPU) share one copy;
- `get_path(path)` returns the cached copy's path for a path at or below an 'input' or 'output'
  key, and the path unchanged for anything else (file objects, file descriptors too);
- when the script ends (atexit), the cached 'output' paths are copied to object storage, by the
  first process only (RANK_ID / RANK 0 or unset), since every process holds the same results.
  `ModelArtsPathManager().upload()` copies them at any other time (e.g. after each epoch).

Without moxing, `get_path` returns every path unchanged and nothing is copied, so the migrated
script runs anywhere as the original did.  atexit does not run when the process is killed
(SIGKILL, os._exit); call `upload()` yourself where results must not be lost.
"""
import atexit
import os
import sys
import time

try:
    import moxing as mox
except ImportError:
    mox = None

from .path_mapping_config import PATH_MAPPING_CONFIG

# How long a process waits for another one of the same launch to finish downloading the inputs.
WAIT_SECONDS = float(os.environ.get("MODELARTS_DOWNLOAD_TIMEOUT", "7200"))


class ModelArtsPathManager:
    """One per process (every `ModelArtsPathManager()` is the same object)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            instance = super().__new__(cls)
            instance._start()
            cls._instance = instance
        return cls._instance

    def _start(self):
        self.enabled = mox is not None
        self.cache_root = os.path.abspath(os.environ.get("MODELARTS_CACHE_DIR", "/cache/modelarts_cache"))
        self.inputs = self._mappings("input")
        self.outputs = self._mappings("output")
        if not self.enabled:
            return
        self._download_inputs()
        for _, _, cached in self.outputs:
            os.makedirs(os.path.dirname(cached), exist_ok=True)
        if os.environ.get("RANK_ID", os.environ.get("RANK", "0")) == "0":
            atexit.register(self.upload)

    def _mappings(self, kind):
        """(absolute local path, remote path, cache path), longest local path first so that the
        most specific mapping wins."""
        mappings = []
        for number, (local, remote) in enumerate(sorted(PATH_MAPPING_CONFIG.get(kind, {}).items())):
            local = os.path.abspath(local)
            cached = os.path.join(self.cache_root, kind, str(number), os.path.basename(local))
            mappings.append((local, remote, cached))
        return sorted(mappings, key=lambda mapping: len(mapping[0]), reverse=True)

    def get_path(self, path):
        """Where `path` is on this machine: its cached copy for a mapped path, else `path`."""
        if not self.enabled or not isinstance(path, (str, os.PathLike)):
            return path
        text = os.fspath(path)
        if not isinstance(text, str):
            return path  # bytes paths are left as they are
        absolute = os.path.abspath(text)
        if absolute == self.cache_root or absolute.startswith(self.cache_root + os.sep):
            return path  # already mapped
        for local, _, cached in self.inputs + self.outputs:
            if absolute == local or absolute.startswith(local + os.sep):
                mapped = cached + absolute[len(local):]
                return type(path)(mapped) if not isinstance(path, str) else mapped
        return path

    def _download_inputs(self):
        if not self.inputs:
            return
        os.makedirs(self.cache_root, exist_ok=True)
        # Processes started by one launcher (run_distributed_npu.sh, torchrun) share a parent:
        # the first of them downloads, the others wait for it.
        marker = os.path.join(self.cache_root, ".inputs-of-%d" % os.getppid())
        try:
            os.close(os.open(marker + ".lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            deadline = time.time() + WAIT_SECONDS
            while not os.path.exists(marker + ".done"):
                if time.time() > deadline:
                    raise TimeoutError("inputs not downloaded by another process after %d s" % WAIT_SECONDS)
                time.sleep(1)
            return
        for local, remote, cached in self.inputs:
            print("ModelArts: downloading %s to %s (for %s)" % (remote, cached, local), file=sys.stderr)
            if mox.file.is_directory(remote):
                mox.file.copy_parallel(remote, cached)
            else:
                os.makedirs(os.path.dirname(cached), exist_ok=True)
                mox.file.copy(remote, cached)
        open(marker + ".done", "w").close()

    def upload(self):
        """Copy every cached 'output' to object storage."""
        if not self.enabled:
            return
        for local, remote, cached in self.outputs:
            if os.path.isdir(cached):
                print("ModelArts: uploading %s to %s (for %s)" % (cached, remote, local), file=sys.stderr)
                mox.file.copy_parallel(cached, remote)
            elif os.path.isfile(cached):
                print("ModelArts: uploading %s to %s (for %s)" % (cached, remote, local), file=sys.stderr)
                mox.file.copy(cached, remote)
