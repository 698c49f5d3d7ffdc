"""Ray's GPU requests -> requests for Ray's NPU resource."""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from .base import Example, Rule
from .names import nodes_within, qualified_names


def _is_ray(name: str) -> bool:
    return name == "ray" or name.startswith("ray.")


PLACEMENT_GROUPS = frozenset({"ray.util.placement_group", "ray.util.placement_group.placement_group"})


def _has_key(element: cst.BaseDictElement, key: str) -> bool:
    return (isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
            and element.key.evaluated_value == key)


def gpu_requests(node: cst.CSTNode) -> List[cst.Dict]:
    """The dict literals within `node` that ask for Ray's "GPU" resource (and not for "NPU" too)."""
    return [found for found in nodes_within(node, cst.Dict)
            if any(_has_key(e, "GPU") for e in found.elements) and not any(_has_key(e, "NPU") for e in found.elements)]


class _GpuKeysToNpu(cst.CSTTransformer):
    def leave_DictElement(self, original_node, updated_node):
        if _has_key(original_node, "GPU"):
            quote = original_node.key.quote
            return updated_node.with_changes(key=cst.SimpleString(f"{quote}NPU{quote}"))
        return updated_node


def imports_ray(visitor) -> bool:
    """Whether the file the visitor reads imports ray (no call of its can be Ray's otherwise)."""
    return any(_is_ray(target) for targets in (visitor.import_aliases or {}).values() for target in targets)


def is_ray_call(visitor, func: cst.BaseExpression) -> bool:
    """Whether `func` is Ray's (for the rule and for the analysis of what it leaves): a name from
    ray, or `.options(...)` in a file that imports ray (the method of a remote function or actor)."""
    if any(_is_ray(name) for name in qualified_names(visitor, func)):
        return True
    return isinstance(func, cst.Attribute) and func.attr.value == "options" and imports_ray(visitor)


_BUNDLES_MESSAGE = ('ask for Ray\'s "NPU" resource in the placement group\'s bundles where they asked for "GPU" '
                    '(Ray counts Ascend NPUs as "NPU")')


def _bundles_position(call: cst.Call) -> Optional[int]:
    """Where a placement group's bundles stand among `call`'s arguments (the first, or `bundles=`)."""
    for position, arg in enumerate(call.args):
        if (arg.keyword is None and not arg.star and position == 0) or (
                arg.keyword is not None and arg.keyword.value == "bundles"):
            return position
    return None


class _BundlesBound(cst.CSTVisitor):
    """The assignments that bind, in the function (or module) that makes a placement group, the
    name of the bundles it is given (`bundles = [{"GPU": 1} for _ in range(n)]` then
    `placement_group(bundles)`), where every one of them asks for "GPU": ids of their values."""

    def __init__(self, rule) -> None:
        super().__init__()
        self.rule = rule
        self.scopes: List[Tuple[Dict[str, List[cst.Assign]], Set[str]]] = [({}, set())]
        self.values: Set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(({}, set()))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._settle(*self.scopes.pop())

    def leave_Module(self, original_node: cst.Module) -> None:
        self._settle(*self.scopes.pop())

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.scopes[-1][0].setdefault(target.target.value, []).append(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):  # (bound again)
            self.scopes[-1][0].setdefault(node.target.value, []).append(node)

    def visit_Call(self, node: cst.Call) -> None:
        if PLACEMENT_GROUPS & set(qualified_names(self.rule, node.func)):
            position = _bundles_position(node)
            bundles = node.args[position].value if position is not None else None
            if isinstance(bundles, cst.Name):
                self.scopes[-1][1].add(bundles.value)

    def _settle(self, bound: Dict[str, List[cst.Assign]], given: Set[str]) -> None:
        for name in given:
            assigns = bound.get(name, [])
            if assigns and all(isinstance(assign, cst.Assign) and len(assign.targets) == 1
                               and gpu_requests(assign.value) for assign in assigns):
                self.values.update(id(assign.value) for assign in assigns)


class RayGpusToNpus(Rule):
    """Ray schedules tasks and actors by resource.  It counts Ascend NPUs as the resource "NPU"
    (and then sets ASCEND_RT_VISIBLE_DEVICES for the task), not as GPUs: `num_gpus=N` asks for
    devices an Ascend node has none of, so the task never starts.  In a call of Ray's
    (`@ray.remote(...)`, `ray.init(...)`, and `.options(...)` in a file that imports ray),
    `num_gpus=N` becomes `resources={"NPU": N}` with the same expression, fractions included.
    A call that passes `resources=` or `**kwargs` as well stays, reported with the Ray way.
    The bundles of `ray.util.placement_group(...)` written out as dict literals ask for "NPU" where
    they asked for "GPU" (`[{"GPU": 1, "CPU": 8}] * 4`), in the call or in the assignments of
    the name it is given where the group is made, where each asks for "GPU" (`bundles = [{"GPU": 1}
    for _ in range(n)]`):
    the actors placed in the group ask for "NPU", and a group of GPU bundles never forms on an
    Ascend node.
    """

    code = "NPU110"
    summary = 'Ray num_gpus=N -> resources={"NPU": N}, placement-group bundles {"GPU": n} -> {"NPU": n}'
    triggers = ("num_gpus", "placement_group")
    examples = (
        Example(
            "import ray\n\n@ray.remote(num_gpus=1, num_cpus=4)\nclass Worker:\n    pass\n\n"
            "workers = [Worker.options(num_gpus=0.5).remote() for _ in range(2)]\n",
            "import ray\n\n@ray.remote(resources={\"NPU\": 1}, num_cpus=4)\nclass Worker:\n    pass\n\n"
            "workers = [Worker.options(resources={\"NPU\": 0.5}).remote() for _ in range(2)]\n",
        ),
        Example(
            "import ray\nray.init(num_gpus=args.gpus)\n",
            "import ray\nray.init(resources={\"NPU\": args.gpus})\n",
        ),
        Example(
            "from ray.util.placement_group import placement_group\n\n"
            "group = placement_group([{'GPU': 1, 'CPU': 8}] * 4, strategy='STRICT_PACK')\n",
            "from ray.util.placement_group import placement_group\n\n"
            "group = placement_group([{'NPU': 1, 'CPU': 8}] * 4, strategy='STRICT_PACK')\n",
        ),
        Example(
            "from ray.util.placement_group import placement_group\n\n\ndef make(n):\n"
            "    bundles = [{'GPU': 1, 'CPU': 1} for _ in range(n)]\n    return placement_group(bundles, strategy='PACK')\n",
            "from ray.util.placement_group import placement_group\n\n\ndef make(n):\n"
            "    bundles = [{'NPU': 1, 'CPU': 1} for _ in range(n)]\n    return placement_group(bundles, strategy='PACK')\n",
        ),
    )
    unchanged = (
        "import ray\n@ray.remote(num_gpus=1, resources={'ssd': 1})\ndef f():\n    pass\n",
        # bundles bound to something else too, or somewhere else than where the group is made
        "from ray.util import placement_group\nbundles = [{'GPU': 1}]\nbundles = extra\ngroup = placement_group(bundles)\n",
        "from ray.util import placement_group\nbundles = [{'GPU': 1}]\n\n\ndef make():\n    return placement_group(bundles)\n",
        "import ray\nf = ray.remote(**options)\ng = f.options(num_gpus=1, **extra)\n",
        "trainer = Trainer(num_gpus=2)\nconfig.options(num_gpus=1)\n",
        "from ray.util import placement_group\ngroup = placement_group(bundles)\n",
        "import ray\nconfig = ray.train.ScalingConfig(use_gpu=True, resources_per_worker={'GPU': 1})\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._bundles: Set[int] = set()  # ids of the values of assignments that bind a group's bundles

    def visit_Module(self, node: cst.Module) -> None:
        finder = _BundlesBound(self)
        node.visit(finder)
        self._bundles = finder.values

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if id(original_node.value) not in self._bundles:
            return updated_node
        self.record(original_node.value, _BUNDLES_MESSAGE)
        return updated_node.with_changes(value=updated_node.value.visit(_GpuKeysToNpu()))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if PLACEMENT_GROUPS & set(qualified_names(self, original_node.func)):
            return self._bundles_on_npus(original_node, updated_node)
        keywords = [arg.keyword.value for arg in original_node.args if arg.keyword is not None]
        if "num_gpus" not in keywords or "resources" in keywords or any(arg.star for arg in original_node.args):
            return updated_node
        if not is_ray_call(self, original_node.func):
            return updated_node
        args = []
        for arg in updated_node.args:
            if arg.keyword is not None and arg.keyword.value == "num_gpus":
                request = cst.Dict([cst.DictElement(cst.SimpleString('"NPU"'), arg.value)])
                arg = arg.with_changes(keyword=cst.Name("resources"), value=request)
            args.append(arg)
        self.record(original_node, 'change num_gpus=N to resources={"NPU": N} (Ray counts Ascend NPUs as "NPU")')
        return updated_node.with_changes(args=args)

    def _bundles_on_npus(self, original_node: cst.Call, updated_node: cst.Call):
        position = _bundles_position(updated_node)
        if position is None or not gpu_requests(updated_node.args[position].value):
            return updated_node
        self.record(original_node, _BUNDLES_MESSAGE)
        args = list(updated_node.args)
        args[position] = args[position].with_changes(value=args[position].value.visit(_GpuKeysToNpu()))
        return updated_node.with_changes(args=args)
