"""Shape detector of gpu2npu's dynamic-shape analysis (`gpu2npu analyse -m dynamic_shape`).

This file is copied to the top of the instrumented copy of a project as gpu2npu_shape_detector.py;
it imports nothing of gpu2npu, so the copy runs wherever the project runs (CPU, GPU or NPU).
Every call site of the project's code reads `DETECTOR.hook_func(fn, "name", index, *args,
**kwargs)`: the call is made exactly as written and its result returned untouched; the shapes of
the tensors going in and coming out are recorded per call site.  At exit (or at `DETECTOR.stop()`)
the detector writes, beside the instrumented copy:

- msft_dynamic_shape_analysis_report.csv: Function Name, File Path, Line Number, Call Stack,
  Input Shape Range, Output Shape Range (the incumbent's columns), then Calls, Distinct Input
  Shapes and Varying Dimensions;
- dynamic_shape_summary.txt: the call sites whose input shapes varied, most shapes first, each
  with the usual fix.

`for batch in DETECTOR.start(loader):` (the incumbent's way of marking the training loop) counts
steps; recording does not need it.  GPU2NPU_SHAPE_REPORT_DIR sets where the reports go; a rank
other than 0 (RANK) writes files of its own (…_rank1.csv).
"""
import atexit
import csv
import json
import os
import sys
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
SITES_FILE = "gpu2npu_shape_sites.json"
REPORT = "msft_dynamic_shape_analysis_report.csv"
SUMMARY = "dynamic_shape_summary.txt"
COLUMNS = ["Function Name", "File Path", "Line Number", "Call Stack", "Input Shape Range", "Output Shape Range",
           "Calls", "Distinct Input Shapes", "Varying Dimensions"]
MAX_SHAPES = 10000  # distinct input shapes kept per call site (beyond: counted as "more")
STACK_DEPTH = 6


STEPS_KEPT = 64  # training steps whose input shapes are compared, per call site


class _Site:
    __slots__ = ("calls", "inputs", "outputs", "stack", "label", "more", "per_step")

    def __init__(self):
        self.calls = 0
        self.inputs = set()
        self.outputs = set()
        self.stack = ""
        self.label = ""
        self.more = False
        self.per_step = {}  # optimizer steps done -> the input shapes seen until the next one


class ShapeDetector:
    def __init__(self):
        self._sites = {}
        self._table = None
        self._files = None
        self._tensor = None
        self._lock = threading.Lock()
        self.steps = 0
        self.optimizer_steps = 0  # counted by an optimizer step hook, where torch has one
        self._written = False
        atexit.register(self.stop)

    # -- the contract of the instrumented code -------------------------------------------------------
    def hook_func(self, fn, name, index, /, *args, **kwargs):
        result = fn(*args, **kwargs)
        tensor = self._tensor
        if tensor is None:
            tensor = self._tensor_type()
            if tensor is None:
                return result
        inputs = _shapes(args, tensor)
        receiver = getattr(fn, "__self__", None)  # x.view(...): the tensor is an input too
        if receiver is not None and isinstance(receiver, tensor):
            inputs = (tuple(receiver.shape),) + inputs
        if kwargs:
            inputs += _shapes(tuple(kwargs.values()), tensor)
        outputs = _shapes((result,), tensor)
        if not inputs and not outputs:
            return result
        site = self._sites.get(index)
        if site is None:
            with self._lock:
                site = self._sites.setdefault(index, _Site())
                site.stack = _stack(self._load_files())
                site.label = _label(fn, name)
        site.calls += 1
        if len(site.inputs) < MAX_SHAPES:
            site.inputs.add(inputs)
        elif inputs not in site.inputs:
            site.more = True
        if len(site.outputs) < MAX_SHAPES:
            site.outputs.add(outputs)
        step = self.optimizer_steps
        # (before the first step: initialisation and the first batch, which later steps repeat)
        if step and (step in site.per_step or len(site.per_step) < STEPS_KEPT):
            shapes = site.per_step.setdefault(step, set())
            if len(shapes) < MAX_SHAPES:
                shapes.add(inputs)
        return result

    def start(self, iterable):
        """Iterate as the loop did; each item counts as a step."""
        for item in iterable:
            self.steps += 1
            yield item

    def stop(self):
        """Write the reports (also done at exit); recording goes on if the program does."""
        with self._lock:
            if not self._sites and self._written:
                return
            self._write()
            self._written = True

    # -- internals ----------------------------------------------------------------------------------
    def _tensor_type(self):
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        self._tensor = torch.Tensor
        try:  # the training steps, so that shapes are compared across steps, not across initialisation
            from torch.optim.optimizer import register_optimizer_step_post_hook

            register_optimizer_step_post_hook(self._stepped)
        except (ImportError, AttributeError):
            pass
        return self._tensor

    def _stepped(self, optimizer, args, kwargs):
        self.optimizer_steps += 1

    def _load(self):
        if self._table is None:
            try:
                with open(os.path.join(_HERE, SITES_FILE), encoding="utf-8") as handle:
                    data = json.load(handle)
                self._table = {int(key): value for key, value in data["sites"].items()}
                self._files = {path: tuple(value) for path, value in data["files"].items()}
            except (OSError, ValueError, KeyError):
                self._table, self._files = {}, {}

    def _load_table(self):
        self._load()
        return self._table

    def _load_files(self):
        self._load()
        return self._files

    def _write(self):
        folder = os.environ.get("GPU2NPU_SHAPE_REPORT_DIR") or os.path.dirname(_HERE)
        rank = os.environ.get("RANK") or os.environ.get("RANK_ID") or "0"
        suffix = "" if rank in ("", "0") else f"_rank{rank}"
        table = self._load_table()
        trained = self.optimizer_steps > 1
        rows = []
        for index, site in sorted(self._sites.items()):
            path, line, name = table.get(index, ("?", 0, site.label))
            rows.append((site.label or name, path, line, site.stack, _range(site.inputs), _range(site.outputs),
                         site.calls, f"{len(site.inputs)}{'+' if site.more else ''}",
                         _varying_across_steps(site) if trained else _varying(site.inputs)))
        try:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, REPORT.replace(".csv", f"{suffix}.csv")), "w", encoding="utf-8",
                      newline="") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(COLUMNS)
                writer.writerows(rows)
            with open(os.path.join(folder, SUMMARY.replace(".txt", f"{suffix}.txt")), "w", encoding="utf-8") as handle:
                handle.write(_summary(rows, self.optimizer_steps if trained else self.steps, trained))
        except OSError as error:
            print(f"gpu2npu shape detector: cannot write the reports into {folder}: {error}", file=sys.stderr)


def _shapes(values, tensor):
    """The shapes of the tensors among `values` (and in lists, tuples and dicts one level down)."""
    shapes = ()
    for value in values:
        if isinstance(value, tensor):
            shapes += (tuple(value.shape),)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, tensor):
                    shapes += (tuple(item.shape),)
        elif isinstance(value, dict):
            for item in value.values():
                if isinstance(item, tensor):
                    shapes += (tuple(item.shape),)
    return shapes


def _label(fn, name):
    """The call site's name; for a module, the class whose forward runs."""
    forward = getattr(type(fn), "forward", None)
    if forward is not None and callable(fn) and hasattr(fn, "_modules"):
        return f"{name} ({type(fn).__name__}.forward)"
    return name


def _stack(files):
    """Where the first recorded call came from: the frames of the instrumented project, at the
    lines of the original files (`files`: path -> (line after which the detector's import was
    inserted, how many lines it takes))."""
    frames = []
    frame = sys._getframe(2)
    root = _HERE  # the top of the instrumented copy
    while frame is not None and len(frames) < STACK_DEPTH:
        filename = frame.f_code.co_filename
        if os.path.abspath(filename).startswith(root) and not filename.endswith("gpu2npu_shape_detector.py"):
            relative = os.path.relpath(os.path.abspath(filename), root).replace(os.sep, "/")
            line = frame.f_lineno
            after, inserted = files.get(relative, (0, 0))
            if line > after + inserted:
                line -= inserted
            frames.append(f"{relative}:{line} ({frame.f_code.co_name})")
        frame = frame.f_back
    return " <- ".join(frames)


def _range(signatures):
    """`[(1, 2, 3)-(1, 3, 5), ...]`: per tensor position, the smallest and largest size of each
    dimension seen (positions of one rank; a position seen with several ranks shows each)."""
    if not signatures:
        return "[]"
    positions = {}
    for signature in signatures:
        for position, shape in enumerate(signature):
            positions.setdefault((position, len(shape)), []).append(shape)
    parts = []
    for (position, rank), shapes in sorted(positions.items()):
        low = tuple(min(shape[d] for shape in shapes) for d in range(rank))
        high = tuple(max(shape[d] for shape in shapes) for d in range(rank))
        parts.append(f"{low}-{high}")
    return "[" + ", ".join(parts) + "]"


def _varying(signatures):
    """`input 0 dim 0; input 1 dims 0, 1`: which dimensions took more than one size."""
    positions = {}
    for signature in signatures:
        for position, shape in enumerate(signature):
            positions.setdefault((position, len(shape)), set()).add(shape)
    parts = []
    for (position, rank), shapes in sorted(positions.items()):
        dims = [d for d in range(rank) if len({shape[d] for shape in shapes}) > 1]
        if dims:
            parts.append(f"input {position} dim{'s' if len(dims) > 1 else ''} {', '.join(map(str, dims))}")
    ranks = {}
    for signature in signatures:
        for position, shape in enumerate(signature):
            ranks.setdefault(position, set()).add(len(shape))
    parts += [f"input {position} rank varies" for position, seen in sorted(ranks.items()) if len(seen) > 1]
    return "; ".join(parts)


def _varying_across_steps(site):
    """The dimensions that vary from one training step to another at this call site: a site that
    sees the same shapes every step (one call per layer, each layer its own shape) is static, and
    what ran before the first optimizer step (initialisation, parameter metadata) is not compared."""
    steps = [frozenset(shapes) for _, shapes in sorted(site.per_step.items())]
    if len(set(steps)) < 2:
        return ""
    return _varying(set().union(*steps))


def _summary(rows, steps, trained=False):
    varying = sorted((row for row in rows if row[8]), key=lambda row: (-int(str(row[7]).rstrip("+")), row[1], row[2]))
    counted = (f" from one optimizer step to the next over {steps} steps (calls before the first step, at "
               "initialisation, are not compared)" if trained else f" in {steps} steps" if steps else "")
    lines = [f"Dynamic shapes: {len(varying)} of {len(rows)} call sites saw more than one input shape" + counted + ".",
             "On the NPU each new input shape of an operator compiles it again: a step with new shapes is slow.", ""]
    for rank, row in enumerate(varying, 1):
        name, path, line, _, inputs, _, calls, distinct, dims = row
        lines.append(f"{rank}. {path}:{line} {name}: {distinct} input shapes in {calls} calls, {dims}; range {inputs}")
        lines.append(f"   fix: {_advice(dims)}")
    if varying:
        lines += ["", "Where shapes cannot be fixed: torch_npu.npu.set_compile_mode(jit_compile=False) runs operators from "
                  "precompiled binaries (no compilation per shape) on the releases that have it."]
    return "\n".join(lines) + "\n"


def _advice(dims):
    if dims and all(part.endswith("dim 0") for part in dims.split("; ")):
        return ("only the batch dimension varies: a smaller last batch; drop_last=True in the DataLoader (or pad the "
                "last batch) keeps one shape")
    return ("pad or bucket to a few fixed sizes (e.g. sequence lengths padded to a multiple of 64 or to the longest "
            "of a bucket), so that the operators see a small set of shapes")


# Only the copy in an instrumented project records: imported as part of gpu2npu (to copy this file),
# an instance would write an empty report into the installed package at exit.
if __name__ != "gpu2npu.analyse.detector":
    DETECTOR = ShapeDetector()
