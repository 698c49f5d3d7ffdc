"""Ray's GPU requests -> requests for Ray's NPU resource."""
from __future__ import annotations

from typing import List

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


class RayGpusToNpus(Rule):
    """Ray schedules tasks and actors by resource.  It counts Ascend NPUs as the resource "NPU"
    (and then sets ASCEND_RT_VISIBLE_DEVICES for the task), not as GPUs: `num_gpus=N` asks for
    devices an Ascend node has none of, so the task never starts.  In a call of Ray's
    (`@ray.remote(...)`, `ray.init(...)`, and `.options(...)` in a file that imports ray),
    `num_gpus=N` becomes `resources={"NPU": N}` with the same expression, fractions included.
    A call that passes `resources=` or `**kwargs` as well stays, reported with the Ray way.
    The bundles of `ray.util.placement_group(...)` written out as dict literals ask for "NPU" where
    they asked for "GPU" (`[{"GPU": 1, "CPU": 8}] * 4`).
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
    )
    unchanged = (
        "import ray\n@ray.remote(num_gpus=1, resources={'ssd': 1})\ndef f():\n    pass\n",
        "import ray\nf = ray.remote(**options)\ng = f.options(num_gpus=1, **extra)\n",
        "trainer = Trainer(num_gpus=2)\nconfig.options(num_gpus=1)\n",
        "from ray.util import placement_group\ngroup = placement_group(bundles)\n",
        "import ray\nconfig = ray.train.ScalingConfig(use_gpu=True, resources_per_worker={'GPU': 1})\n",
    )

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
        for position, arg in enumerate(updated_node.args):
            bundles = (arg.keyword is None and not arg.star and position == 0) or (
                arg.keyword is not None and arg.keyword.value == "bundles")
            if bundles and gpu_requests(arg.value):
                self.record(original_node, 'ask for Ray\'s "NPU" resource in the placement group\'s bundles where they '
                            'asked for "GPU" (Ray counts Ascend NPUs as "NPU")')
                args = list(updated_node.args)
                args[position] = arg.with_changes(value=arg.value.visit(_GpuKeysToNpu()))
                return updated_node.with_changes(args=args)
        return updated_node
