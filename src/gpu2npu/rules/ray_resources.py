"""Ray's GPU requests -> requests for Ray's NPU resource."""
from __future__ import annotations

import libcst as cst

from .base import Example, Rule
from .names import qualified_names


def _is_ray(name: str) -> bool:
    return name == "ray" or name.startswith("ray.")


def is_ray_call(visitor, func: cst.BaseExpression) -> bool:
    """Whether `func` is Ray's (for the rule and for the analysis of what it leaves): a name from
    ray, or `.options(...)` in a file that imports ray (the method of a remote function or actor)."""
    if any(_is_ray(name) for name in qualified_names(visitor, func)):
        return True
    return (isinstance(func, cst.Attribute) and func.attr.value == "options"
            and any(_is_ray(target) for targets in (visitor.import_aliases or {}).values() for target in targets))


class RayGpusToNpus(Rule):
    """Ray schedules tasks and actors by resource.  It counts Ascend NPUs as the resource "NPU"
    (and then sets ASCEND_RT_VISIBLE_DEVICES for the task), not as GPUs: `num_gpus=N` asks for
    devices an Ascend node has none of, so the task never starts.  In a call of Ray's
    (`@ray.remote(...)`, `ray.init(...)`, and `.options(...)` in a file that imports ray),
    `num_gpus=N` becomes `resources={"NPU": N}` with the same expression, fractions included.
    A call that passes `resources=` or `**kwargs` as well stays, reported with the Ray way.
    """

    code = "NPU110"
    summary = 'Ray num_gpus=N -> resources={"NPU": N}'
    triggers = ("num_gpus",)
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
    )
    unchanged = (
        "import ray\n@ray.remote(num_gpus=1, resources={'ssd': 1})\ndef f():\n    pass\n",
        "import ray\nf = ray.remote(**options)\ng = f.options(num_gpus=1, **extra)\n",
        "trainer = Trainer(num_gpus=2)\nconfig.options(num_gpus=1)\n",
    )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
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
