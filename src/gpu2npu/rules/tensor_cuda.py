"""x.cuda(...) -> x.npu(...) and x.is_cuda -> x.is_npu."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ..reading.scan.words import CUDA_METHOD_NAMES
from .base import Example, Rule
from .names import called_method, class_of, dotted_name, qualified_names
from .walk import ParentNodeProvider

# torch's classes whose `cuda` method torch_npu gives an `npu` counterpart of the same signature.
_CLASSES_WITH_NPU = frozenset({"torch.Tensor", "torch.nn.Module", "torch.nn.modules.module.Module"})
# A class's own methods that the calls and reads this rule renames reach (leave_FunctionDef).
_NPU_COUNTERPARTS = {name: name.replace("cuda", "npu") for name in CUDA_METHOD_NAMES}
# functions that take a function to copy what it is, not to call it (a wrapper of `Tensor.cuda`)
_DESCRIBING = frozenset({"functools.wraps", "functools.update_wrapper"})


class TensorCudaToNpu(Rule):
    """`.cuda()` on tensors and modules becomes `.npu()` with the same arguments.

    torch_npu adds `Tensor.npu`/`Module.npu` with the signature of `cuda` (device, non_blocking,
    memory_format), so arguments are kept as written; the incumbent's habit of dropping them
    (`.cuda(non_blocking=True)` -> `.npu()`) loses overlap of copies and compute.  `x.is_cuda`
    becomes `x.is_npu`.  The method handed on to be called, `map(torch.Tensor.cuda, tensors)`,
    becomes `torch.Tensor.npu`; one kept in a variable or replaced (a wrapper that patches
    `Tensor.cuda`) stays.  A class's own `cuda()` or `is_cuda` is renamed with its callers.
    """

    code = "NPU102"
    summary = "x.cuda(...) -> x.npu(...), x.is_cuda -> x.is_npu"
    triggers = (".cuda", "is_cuda", "def cuda")
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example("import torch\nmodel = Net().cuda()\n", "import torch\nimport torch_npu\nmodel = Net().npu()\n"),
        Example(
            "import torch\nimages = images.cuda(args.gpu, non_blocking=True)\n",
            "import torch\nimport torch_npu\nimages = images.npu(args.gpu, non_blocking=True)\n",
        ),
        Example(
            "import torch\nif x.is_cuda:\n    pass\n",
            "import torch\nimport torch_npu\nif x.is_npu:\n    pass\n",
        ),
        Example(
            "import torch\ninputs = list(map(torch.Tensor.cuda, inputs))\n",
            "import torch\nimport torch_npu\ninputs = list(map(torch.Tensor.npu, inputs))\n",
        ),
        Example(
            "import torch\nclass Cache:\n    def cuda(self):\n        self.k = self.k.cuda()\n        return self\n",
            "import torch\nimport torch_npu\nclass Cache:\n    def npu(self):\n        self.k = self.k.npu()\n"
            "        return self\n",
        ),
    )
    unchanged = (
        "import torch\nuse_cuda = args.cuda and torch_available\n",
        # the method kept to be wrapped: the wrapper is what the program calls
        "import torch\n_cuda = torch.Tensor.cuda\n",
        "import functools\nimport torch\n\n@functools.wraps(torch.Tensor.cuda)\ndef cuda(self, *a):\n    return self\n",
        # a class with the NPU's method of its own beside
        "class Box:\n    def cuda(self):\n        return self\n    def npu(self):\n        return self\n",
    )

    def _is_torch_cuda_module(self, node: cst.Attribute) -> bool:
        # `torch.cuda` itself (the module) is TorchCudaApiToNpu's business.
        return any(name == "torch.cuda" or name.startswith("torch.cuda.") for name in qualified_names(self, node))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        func = original_node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return updated_node
        if self._is_torch_cuda_module(func) or not torchs_cuda_takes(original_node):
            # (arguments torch's Tensor.cuda and Module.cuda do not take, `quantizer.cuda(qtensor,
            # meta=meta, device=d)`: another class's method, which has no `npu` of the same name)
            return updated_node
        self.record(original_node, "change .cuda() to .npu()")
        self.context.needs_torch_npu = True
        updated_node = updated_node.with_changes(func=updated_node.func.with_changes(attr=cst.Name("npu")))
        if self.context.options.specify_device is not None:
            updated_node = self._without_device_argument(original_node, updated_node)
        return updated_node

    def _without_device_argument(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        """-s: the process's NPU is already set from DEVICE_ID, so `.npu(idx)` loses `idx`;
        keyword arguments such as `non_blocking=True` stay."""
        args = list(updated_node.args)
        index = next((i for i, a in enumerate(args) if (a.keyword is None and not a.star) or
                      (a.keyword is not None and a.keyword.value == "device")), None)
        if index is None:
            return updated_node
        del args[index]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        self.record(original_node, "drop the device argument of .npu(): -s sets the NPU from DEVICE_ID")
        return updated_node.with_changes(args=args)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        if original_node.attr.value == "cuda" and self._handed_on_to_be_called(original_node):
            self.record(original_node, "change .cuda to .npu (the method handed on, to be called)")
            self.context.needs_torch_npu = True
            return updated_node.with_changes(attr=cst.Name("npu"))
        if original_node.attr.value != "is_cuda" or called_method(self, original_node):
            return updated_node  # (torch's is_cuda is a property: `x.is_cuda()` is another class's method)
        self.record(original_node, "change .is_cuda to .is_npu")
        self.context.needs_torch_npu = True
        return updated_node.with_changes(attr=cst.Name("is_npu"))

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        """A class's own `cuda()` or `is_cuda` (a cache of tensors, a results wrapper, a module that
        moves what it holds besides its parameters): the calls `.cuda()` and reads `.is_cuda`
        become `.npu()` and `.is_npu` wherever they stand, in every file, so its definition is
        renamed with them, or they would raise AttributeError (on a module: pass over it).  A class
        that defines the NPU's name too keeps both; a method `is_cuda()` (vLLM's Platform) is no
        tensor's property, and stays with its callers."""
        name = original_node.name.value
        counterpart = _NPU_COUNTERPARTS.get(name)
        if counterpart is None or (name == "is_cuda") != _is_property(original_node):
            # (torch's is_cuda is a property and cuda a method: a method `is_cuda()` is called and
            # a property `cuda` read, and neither is renamed where it is used)
            return updated_node
        definition = class_of(self, original_node)
        if definition is None or _defines(definition, counterpart):
            return updated_node
        self.record(original_node.name, f"change the method {name} of {definition.name.value} to {counterpart}: "
                                        f"its callers' .{name} become .{counterpart}")
        decorators = [decorator.with_changes(decorator=decorator.decorator.with_changes(value=cst.Name(counterpart)))
                      if _accessor_of(decorator, name) else decorator for decorator in updated_node.decorators]
        return updated_node.with_changes(name=cst.Name(counterpart), decorators=decorators)

    def leave_AssignTarget(self, original_node: cst.AssignTarget, updated_node: cst.AssignTarget):
        """`is_cuda = False` in a class's body: read as `.is_cuda`, which becomes `.is_npu`, so it is
        renamed with its readers as a property is (leave_FunctionDef).  (An annotated one may be a
        dataclass's field, which its constructor's callers name: left.)"""
        target = original_node.target
        if not (isinstance(target, cst.Name) and target.value == "is_cuda"):
            return updated_node
        assignment = self.get_metadata(ParentNodeProvider, original_node, None)
        definition = class_of(self, self.get_metadata(ParentNodeProvider, assignment, None))
        if definition is None or _defines(definition, "is_npu"):
            return updated_node
        self.record(original_node, f"change the attribute is_cuda of {definition.name.value} to is_npu: "
                                   "its readers' .is_cuda become .is_npu")
        return updated_node.with_changes(target=cst.Name("is_npu"))

    def _handed_on_to_be_called(self, node: cst.Attribute) -> bool:
        """Whether `node` is torch's `Tensor.cuda` (or `Module.cuda`), not called here but given to
        a call that calls it (`map(torch.Tensor.cuda, xs)`, `apply_to_collection(batch,
        torch.Tensor, torch.Tensor.cuda)`)."""
        argument = self.get_metadata(ParentNodeProvider, node, None)
        if not (isinstance(argument, cst.Arg) and argument.value is node):
            return False
        call = self.get_metadata(ParentNodeProvider, argument, None)
        return (isinstance(call, cst.Call) and not _DESCRIBING & qualified_names(self, call.func)
                and bool(_CLASSES_WITH_NPU & qualified_names(self, node.value)))


# What torch's Tensor.cuda(device, non_blocking, memory_format) and Module.cuda(device) take.
_CUDA_PARAMETERS = ("device", "non_blocking", "memory_format")


def torchs_cuda_takes(call: cst.Call) -> bool:
    """Whether the arguments of a `.cuda(...)` call are ones torch's Tensor.cuda or Module.cuda
    takes: at most its parameters, each once, positionally in order or by name (a star argument
    may be anything)."""
    if any(arg.star for arg in call.args):
        return True
    positional = [arg for arg in call.args if arg.keyword is None]
    named = [arg.keyword.value for arg in call.args if arg.keyword is not None]
    given = [*_CUDA_PARAMETERS[:len(positional)], *named]
    return len(positional) <= len(_CUDA_PARAMETERS) and all(name in _CUDA_PARAMETERS for name in named) and len(
        set(given)) == len(given)


def _defines(definition: cst.ClassDef, name: str) -> bool:
    """Whether the class's body defines `name` (a method, a property, an attribute)."""
    for statement in definition.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = ([target.target for target in small.targets] if isinstance(small, cst.Assign)
                           else [small.target] if isinstance(small, cst.AnnAssign) else [])
                if any(isinstance(target, cst.Name) and target.value == name for target in targets):
                    return True
    return False


def _is_property(definition: cst.FunctionDef) -> bool:
    """Whether the function is a property's getter, setter or deleter."""
    return any((dotted_name(decorator.decorator) or "").rsplit(".", 1)[-1] in ("property", "cached_property")
               or _accessor_of(decorator, definition.name.value) for decorator in definition.decorators)


def _accessor_of(decorator: cst.Decorator, name: str) -> bool:
    """Whether `decorator` adds a setter or deleter to the property `name` (`@is_cuda.setter`)."""
    expression = decorator.decorator
    return (isinstance(expression, cst.Attribute) and expression.attr.value in ("setter", "deleter", "getter")
            and isinstance(expression.value, cst.Name) and expression.value.value == name)
