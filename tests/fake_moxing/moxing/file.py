"""Object storage is a local folder: obs://bucket/key is $FAKE_OBS_ROOT/bucket/key.  Every copy
is appended to $FAKE_MOXING_LOG as a JSON line: the call, its arguments and the files the
source held at that moment (so a test can tell what was uploaded, and when)."""
import json
import os
import shutil


def _local(path):
    if path.startswith(("obs://", "s3://")):
        return os.path.join(os.environ["FAKE_OBS_ROOT"], path.split("://", 1)[1])
    return path


def _record(call, source, destination):
    root = _local(source)
    if os.path.isdir(root):
        files = sorted(os.path.relpath(os.path.join(folder, name), root)
                       for folder, _, names in os.walk(root) for name in names)
    else:
        files = [os.path.basename(root)] if os.path.exists(root) else []
    with open(os.environ["FAKE_MOXING_LOG"], "a") as log:
        log.write(json.dumps({"call": call, "source": source, "destination": destination, "files": files}) + "\n")


def is_directory(path):
    return os.path.isdir(_local(path))


def copy(source, destination):
    _record("copy", source, destination)
    os.makedirs(os.path.dirname(_local(destination)) or ".", exist_ok=True)
    shutil.copyfile(_local(source), _local(destination))


def copy_parallel(source, destination):
    _record("copy_parallel", source, destination)
    shutil.copytree(_local(source), _local(destination), dirs_exist_ok=True)
