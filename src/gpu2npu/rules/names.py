"""Helpers shared by the rules: resolved names, attribute chains, string literals."""
from __future__ import annotations

import builtins
import re
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from ..knowledge.device_words import CUDA_ONLY_IMPLEMENTATIONS, is_platform_label, names_a_cuda_implementation
from ..reading.collective_backends import TORCH_WORDS, foreign_library
from ..reading.enum_parameters import parameters_taking
from ..reading.file_facts import (KEY_METHODS, MESSAGE_CALLS, FileFacts, facts_of_statements, is_rng_state_callee,
                                  mapping_text, option_destination)
from ..reading.kernel_launchers import launcher_names
from ..knowledge import npu_keywords
from ..knowledge.library_devices import library_device_api
from ..knowledge.tips import cuda_only_package, handed_on, has_fused_kernel
from .dotted_names import dotted_name, last_name
from .npu_aware import mentions_npu
from .walk import ClassHooks, ParentNodeProvider, walk


def qualified_names(rule: cst.MetadataDependent, node: cst.CSTNode) -> Set[str]:
    """Fully qualified names `node` may refer to (aliases and local imports resolved).

    Resolved through the file's imports (`ImportAliases`) and, for the names whose meaning
    depends on where they are read, through the file's scopes (`scopes.Scopes`, found by
    Python's `ast` of the same text: the rule or analysis has them as `scopes`), when the rule
    or analysis has them: libcst's scope analysis costs more than all the rules together, and
    what the rules ask is only "which module does this name come from here".  A name no import
    binds is a builtin if Python has one of that name.
    """
    aliases = getattr(rule, "import_aliases", None)
    if aliases is None:
        try:
            names = rule.get_metadata(QualifiedNameProvider, node, set())
        except KeyError:
            return set()
        return {name.name for name in names}
    name = dotted_name(node)
    if name is None or (isinstance(node, cst.Name) and not _is_access(rule, node)):
        return set()
    root, _, rest = name.partition(".")
    targets = aliases.get(root)
    scopes = getattr(rule, "scopes", None)
    if scopes is not None and root in scopes.names:
        here = _meaning_here(rule, scopes, node)
        if here is not None:
            targets = here
    if targets is None:
        return {f"builtins.{name}"} if root in _BUILTINS else set()
    return {f"{target}.{rest}" if rest else target for target in targets}


def _meaning_here(rule: cst.MetadataDependent, scopes, node: cst.CSTNode):
    """What the root Name of a chain stands for where it stands (None: a node the scopes do not
    know, one a rule made, say)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    try:
        position = rule.get_metadata(PositionProvider, node, None)
    except KeyError:
        return None
    if position is None:
        return None
    # (the leftover analysis reads a local named as its module, `def pick(torch)`, as that module; the
    # rules, which edit, never do)
    likely = node.value if getattr(rule, "reads_likely_modules", False) else None
    return scopes.at(position.start.line, position.start.column, likely)


_BUILTINS = frozenset(dir(builtins))


def _is_access(rule: cst.MetadataDependent, node: cst.Name) -> bool:
    """Whether a Name reads a variable (`cuda` in `cuda.synchronize()`), rather than naming an
    attribute (`x.cuda`), a keyword (`f(cuda=True)`), a parameter or a definition.  Rules that
    meet bare Names this way declare ParentNodeProvider; for the others (which ask about the
    callee of a call) every Name is an access."""
    try:
        parent = rule.get_metadata(ParentNodeProvider, node, None)
    except KeyError:
        return True
    if isinstance(parent, cst.Attribute):
        return parent.value is node
    if isinstance(parent, cst.Arg):
        return parent.keyword is not node
    if isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.AsName, cst.ImportAlias, cst.ImportFrom,
                           cst.NameItem, cst.MatchAs, cst.MatchStar, cst.MatchMapping)):
        return False  # (a definition, a `global` or `nonlocal` name, a `match` capture)
    return True


# Node class -> whether it is an expression (isinstance against libcst's abstract classes is
# slow, and asked of every statement and expression head of a module).
_EXPRESSIONS: Dict[type, bool] = {}


class ImportAliases(ClassHooks, cst.CSTVisitor):
    """Local name -> the qualified names it is imported as, over every import of a module.
    Imports are statements, so expressions are never entered: a small part of a full walk."""

    def __init__(self) -> None:
        super().__init__()
        self.aliases: Dict[str, Set[str]] = {}

    @classmethod
    def of(cls, module: cst.Module) -> Dict[str, Set[str]]:
        collector = cls()
        walk(collector, module)
        return collector.aliases

    def on_visit(self, node: cst.CSTNode) -> bool:
        expression = _EXPRESSIONS.get(type(node))
        if expression is None:
            expression = _EXPRESSIONS[type(node)] = isinstance(node, cst.BaseExpression)
        return not expression and self.class_visit(node)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases.setdefault(alias.asname.name.value, set()).add(full)
            else:
                root = full.split(".")[0]
                self.aliases.setdefault(root, set()).add(root)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar):
            return False
        module = dotted_name(node.module) if node.module is not None else ""
        prefix = "." * len(node.relative) + (module or "")
        for alias in node.names:
            imported = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else imported
            self.aliases.setdefault(local, set()).add(handed_on(prefix, imported) or (
                f"{prefix}.{imported}" if prefix and not prefix.endswith(".") else f"{prefix}{imported}"))
        return False


class _Collect(cst.CSTVisitor):
    def __init__(self, kinds: Tuple[type, ...]) -> None:
        super().__init__()
        self.kinds = kinds
        self.found: List[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.kinds):
            self.found.append(node)
        return True


def nodes_within(node: cst.CSTNode, *kinds: type) -> List[cst.CSTNode]:
    """The nodes of the given classes in `node`'s tree, `node` included, in source order
    (libcst.matchers.findall without importing matchers, which costs a tenth of a second)."""
    collect = _Collect(kinds)
    walk(collect, node)
    return collect.found


def build_dotted(name: str) -> cst.BaseExpression:
    parts = name.split(".")
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def environment_keywords(call: cst.Call) -> List[cst.Arg]:
    """The keyword arguments that name environment variables where a call builds an environment:
    `dict(os.environ, CUDA_VISIBLE_DEVICES="0")`, `env.update(CUDA_LAUNCH_BLOCKING="1")` (a child
    process's environment, or the process's own through `os.environ.update`)."""
    func = call.func
    builds = (isinstance(func, cst.Name) and func.value == "dict") or (
        isinstance(func, cst.Attribute) and func.attr.value == "update")
    return [arg for arg in call.args if builds and arg.keyword is not None and arg.keyword.value.isupper()]


def with_keywords_renamed(original: cst.Call, updated: cst.Call, renamed: Dict[int, str]) -> cst.Call:
    """`updated` (the call `original` as the rules left it) with the keyword of each argument of
    `original` whose id `renamed` holds changed to the name it maps to."""
    if not renamed:
        return updated
    return updated.with_changes(args=[
        arg.with_changes(keyword=cst.Name(renamed[id(before)])) if id(before) in renamed else arg
        for before, arg in zip(original.args, updated.args)])


def string_text(node: cst.SimpleString) -> Optional[str]:
    """The characters between the quotes of a plain (non-bytes) literal, or None."""
    if "b" in node.prefix.lower():
        return None
    return node.raw_value


def with_string_text(node: cst.SimpleString, text: str) -> cst.SimpleString:
    return node.with_changes(value=f"{node.prefix}{node.quote}{text}{node.quote}")


class DocstringTracker:
    """Mixin for rules and the analysis: knows which strings stand alone as statements (docstrings and
    string "comments"), which are documentation and are never rewritten."""

    def __init__(self) -> None:
        self._doc_strings: Set[int] = set()

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            stack = [value]
            while stack:
                item = stack.pop()
                self._doc_strings.add(id(item))
                if isinstance(item, cst.ConcatenatedString):
                    stack.extend((item.left, item.right))

    def is_documentation(self, original_node: cst.CSTNode) -> bool:
        return id(original_node) in self._doc_strings


DEVICE_STRING = re.compile(r"^cuda(:(\d+|\{[^{}]*\}|%[sdi])?)?$")


# Options of other frameworks that take a device *name* of their own, not a torch device:
# (option, callees it belongs to (None: any, also as a variable or argparse default of that
# name), why it is left as written and what to do).
FRAMEWORK_OPTIONS = (
    ("accelerator", None,
     "Lightning's accelerator option, not a torch device: Lightning has no built-in 'npu' accelerator and "
     "rejects the name, so it is left as written; run on the NPU through a custom lightning Accelerator or an "
     "Ascend integration of Lightning"),
    ("device", ("vllm.LLM", "vllm.EngineArgs", "vllm.AsyncEngineArgs", "vllm.entrypoints.llm.LLM",
                "vllm.engine.arg_utils.EngineArgs"),
     "vLLM's device option, not a torch device: on Ascend vLLM runs through the vllm-ascend plugin, which "
     "chooses the NPU itself; left as written: drop the argument (its default is auto) on the NPU machine"),
)


# What an entry of a device table holds that the migration renames with its key.
_CARRIED_WITH_THE_DEVICE = re.compile(r"""["'](cuda(:\d+)?|nccl|NCCL)["']|\btorch\.cuda\b|\.cuda\(""")
# What the right side of `"cuda" in ...` holds where it asks about a device, not a key.
_DEVICE_HOLDERS = ("dev", "type", "str(", "accelerator", "backend", "place", "loc", "platform", "cuda", "gpu")


def not_a_device(rule, node: cst.CSTNode) -> bool:
    """Whether a string that spells a device (`"cuda"`) stands where no device goes: a dict key or
    a subscript (a checkpoint's RNG states under "cuda", which checkpoints written on GPUs keep:
    also where the file looks other mappings up by a device, _holds_rng_states),
    a mapping method's key, a message for people (`print`, logging), or the value of an Enum's
    member (a label).  Renamed there, the code would look up keys that old data lacks and print
    or label something else.  The keys of `map_location={"cuda:0": "cpu"}` are the locations a
    checkpoint file records (a checkpoint written on GPUs says "cuda:0"): renamed, such a file's
    tensors would be restored to CUDA, which raises on the NPU; its values are devices.
    `rule` declares ParentNodeProvider."""
    def parent_of(child):
        return rule.get_metadata(ParentNodeProvider, child, None)

    parent = parent_of(node)
    if _holds_rng_states(rule, node, parent, parent_of):
        return True
    if _given_to_an_npu_mark(rule, parent, parent_of):
        return True
    if (_part_of_a_longer_word(node, parent_of) or _answer_of_a_cuda_implementation(node, parent_of)
            or _declared_by_a_cuda_only_implementation(node, parent_of)):
        return True
    if isinstance(parent, cst.DictElement) and _beside_platform_labels_in_a_dict(node, parent, parent_of):
        return True
    if isinstance(parent, cst.DictElement) and parent.key is node:
        holder = parent_of(parent_of(parent))
        if isinstance(holder, cst.Arg) and holder.keyword is not None and holder.keyword.value == "map_location":
            return True
        facts = file_facts(rule, node)
        if facts.looks_up_by_device:
            # a table of devices: its keys go with the device, unless the entry is CUDA's own
            # (cuda_only_table_entry)
            return _keeps_naming_cuda(rule, parent.value)
        if facts.device_named_keys:
            return True  # the file reads or writes data under "cuda": this mapping holds such data
        # else a table of devices where its entry goes with the device (a backend, a device, a
        # torch.cuda function, renamed or migrated beside it); data where the entry is computed
        # (`"cuda": torch.cuda.get_rng_state_all()`), a label where it names something else
        return (isinstance(parent.value, cst.Call)
                or _CARRIED_WITH_THE_DEVICE.search(cst.Module(body=()).code_for_node(parent.value)) is None)
    if isinstance(parent, cst.Index):  # (`Literal["cpu", "cuda"]` lists values: no key)
        subscript = parent_of(parent_of(parent))
        if isinstance(subscript, cst.Subscript) and (dotted_name(subscript.value) or "").rsplit(".", 1)[-1] == "Literal":
            return any(isinstance(element.slice, cst.Index) and _a_platform_label(element.slice.value)
                       for element in subscript.slice)
        return not _looks_up_by_device(rule, node)
    if (_compared_with_tritons_backend(rule, node, parent, parent_of)
            or _compared_with_a_python_name(rule, node, parent, parent_of)):
        return True
    if isinstance(parent, cst.Comparison) and parent.left is node and len(parent.comparisons) == 1 and isinstance(
            parent.comparisons[0].operator, (cst.In, cst.NotIn)):
        # `"cuda" in state` asks for a key; `"cuda" in str(device)`, `in args.device` ask about a device
        within = cst.Module(body=()).code_for_node(parent.comparisons[0].comparator).lower()
        return not any(word in within for word in _DEVICE_HOLDERS) and not _looks_up_by_device(rule, node)
    if isinstance(parent, cst.Element) and _among_platform_labels(parent_of(parent)):
        return True
    if _a_label_options_value(rule, node, parent, parent_of) or _held_with_platform_labels(rule, node, parent, parent_of):
        return True
    if isinstance(parent, cst.Arg):
        call = parent_of(parent)
        if isinstance(call, cst.Call):
            callee = call.func
            last = last_name(callee)
            if last in MESSAGE_CALLS:
                return True
            if last in KEY_METHODS and isinstance(callee, cst.Attribute) and call.args and call.args[0] is parent:
                return not _looks_up_by_device(rule, node)
            own = _own_packages(rule)
            if any(cuda_only_package(name, own) or name.startswith(_HUB_KERNELS) for name in qualified_names(rule, callee)):
                # an argument of a CUDA-only package's API (the Hub kernels' `Device(type="cuda",
                # properties=CUDAProperties(...))`): that package's own word for its CUDA build,
                # which has no NPU one (its rows say so); "npu" there it refuses or misreads
                return True
            if _given_to_a_cpu_or_cuda_library(rule, call, parent):
                return True
            if an_enum_value(rule, node):
                return True
            if registers_a_launcher(rule, call, parent):
                return True
            attribute_function = an_attribute_name(rule, node)
            if attribute_function and _a_torch_submodule(rule, call.args[0].value):
                # an attribute's name, no device: `getattr(torch.version, "cuda", None)` reads CUDA's
                # version (None on the NPU machine), `hasattr(torch.backends, "cuda")` a backend
                # module; torch_npu adds no "npu" to either
                return True
            if ((attribute_function == "getattr" and not _torch_module_or_method(rule, call, parent_of))
                    or _names_an_attributes_value(rule, node)):
                # `getattr(args, "cuda")`, `getattr(version_module, "cuda", None)` (here or in a
                # function of the file it is handed to): a value some object holds (an option's
                # flag, the CUDA version of a module loaded by hand), neither torch's module
                # torch.cuda nor a method called: "npu" there reads what nothing sets
                return True
    if isinstance(parent, cst.Element) and isinstance(parent_of(parent), (cst.List, cst.Tuple)):
        holder = parent_of(parent_of(parent))  # (`device_types=("cuda",)`)
        call = parent_of(holder) if isinstance(holder, cst.Arg) else None
        if isinstance(call, cst.Call) and registers_a_launcher(rule, call, holder):
            return True
    if (isinstance(node, cst.SimpleString) and string_text(node) == "cuda:" and _cut_from_text(rule, parent)
            and _function_handles_npu(rule, node)):
        # a prefix cut from a device's text (`for remove in "cuda:", "(", ")": device =
        # device.replace(remove, "")`) in a function that handles "npu:" itself (ultralytics'
        # parse_device keeps "npu:0,1" for its own NPU branch): "npu:" cut there would undo it.
        # Elsewhere it goes with the device ("npu:0" must lose its prefix as "cuda:0" did).
        return True
    return enum_label(rule, node) or class_label(rule, node)


def library_device_argument(rule, call: cst.Call) -> Optional[Tuple[str, cst.Arg]]:
    """(the API, its device argument) where `call` gives a device to a library that runs on the
    CPU and NVIDIA's GPUs only (knowledge.library_devices: `VideoDecoder(data, device=d)`)."""
    for name in sorted(qualified_names(rule, call.func)):
        known = library_device_api(name)
        if known is None:
            continue
        keyword = next((argument for argument in call.args
                        if argument.keyword is not None and argument.keyword.value == "device"), None)
        if keyword is not None:
            return name, keyword
        position = known[0]
        positional = [argument for argument in call.args if argument.keyword is None]
        if position is None or len(positional) <= position or any(argument.star for argument in positional[:position + 1]):
            return None
        return name, positional[position]
    return None


def _given_to_a_cpu_or_cuda_library(rule, call: cst.Call, argument: cst.Arg) -> bool:
    """Whether the argument is the device of a library that runs on the CPU and NVIDIA's GPUs only:
    "npu" there is refused or decoded on the CPU, and the call's row (NPU934) says what to do."""
    given = library_device_argument(rule, call)
    return given is not None and given[1] is argument


_WORD_CHARACTER = re.compile(r"\w")


def _part_of_a_longer_word(node: cst.CSTNode, parent_of) -> bool:
    """Whether the string's text is glued to letters around it into a longer name: a profiler's
    sort key `f"{'cuda' if on_gpu else 'cpu'}_time_total"`, `"cuda" + "_graphs"`.  Renamed, the
    name becomes one nothing defines (`npu_time_total`, which torch's profiler tables lack); a
    device goes on with `:` (`f"{'cuda' if ok else 'cpu'}:{rank}"` is one)."""
    value = node
    while isinstance(parent_of(value), cst.IfExp):  # either branch of `'cuda' if test else 'cpu'`
        if parent_of(value).test is value:
            return False
        value = parent_of(value)
    holder = parent_of(value)
    if isinstance(holder, cst.FormattedStringExpression):
        parts = list(parent_of(holder).parts)
        where = parts.index(holder)
        before = parts[where - 1] if where else None
        after = parts[where + 1] if where + 1 < len(parts) else None
        return ((isinstance(before, cst.FormattedStringText) and _WORD_CHARACTER.match(before.value[-1:]) is not None)
                or (isinstance(after, cst.FormattedStringText) and _WORD_CHARACTER.match(after.value[:1]) is not None))
    if isinstance(holder, cst.BinaryOperation) and isinstance(holder.operator, cst.Add):
        other = holder.right if holder.left is value else holder.left
        text = string_text(other) if isinstance(other, cst.SimpleString) else None
        if not text:
            return False
        edge = text[:1] if holder.left is value else text[-1:]
        return _WORD_CHARACTER.match(edge) is not None
    return False


def _answer_of_a_cuda_implementation(node: cst.CSTNode, parent_of) -> bool:
    """Whether the string is what a branch gives where a framework's CUDA implementation answers
    (`if CUDAAccelerator.is_available(): return "cuda"`): that framework's name for it, which its
    registry knows (no "npu" there); on an Ascend machine the class, left as written, says no."""
    child, ancestor = node, parent_of(node)
    while ancestor is not None and not isinstance(ancestor, (cst.If, cst.FunctionDef, cst.ClassDef, cst.Module)):
        child, ancestor = ancestor, parent_of(ancestor)
    if not isinstance(ancestor, cst.If) or ancestor.body is not child:
        return False
    for call in nodes_within(ancestor.test, cst.Call):
        owner = call.func.value if isinstance(call.func, cst.Attribute) else None
        name = owner.value if isinstance(owner, cst.Name) else owner.attr.value if isinstance(owner, cst.Attribute) else ""
        if names_a_cuda_implementation(name):
            return True
    return False


def _declared_by_a_cuda_only_implementation(node: cst.CSTNode, parent_of) -> bool:
    """Whether the string is among the devices that an implementation running on NVIDIA's GPUs
    alone declares beside its name (`ImplInfo(name="cute", devices=("cuda",))`): renamed, the
    registry would offer CuTe kernels on the NPU, where they cannot run."""
    argument = parent_of(node)
    if isinstance(argument, cst.Element):
        argument = parent_of(parent_of(argument))
    if not isinstance(argument, cst.Arg) or argument.keyword is None or "device" not in argument.keyword.value:
        return False
    call = parent_of(argument)
    return isinstance(call, cst.Call) and any(
        other.keyword is not None and isinstance(other.value, cst.SimpleString)
        and (string_text(other.value) or "").lower() in CUDA_ONLY_IMPLEMENTATIONS for other in call.args)


def _compared_with_tritons_backend(rule, node: cst.CSTNode, parent, parent_of) -> bool:
    """`backend == "cuda"` where `backend` holds the backend Triton compiles for
    (file_facts.triton_backends): Triton's CUDA backend, no torch device."""
    if isinstance(parent, cst.ComparisonTarget):
        parent = parent_of(parent)
    if not isinstance(parent, cst.Comparison) or len(parent.comparisons) != 1:
        return False
    backends = file_facts(rule, node).triton_backends
    if not backends:
        return False
    other = parent.comparisons[0].comparator if parent.left is node else parent.left
    name = dotted_name(other) if not isinstance(other, cst.Call) else f"{dotted_name(other.func)}()"
    return name in backends


# The fields of Python's syntax tree nodes that hold a name written in the code: a Name's id, an
# Attribute's attr, an argument's arg.
_SYNTAX_NAME_FIELDS = frozenset({"id", "attr", "arg"})


def _compared_with_a_python_name(rule, node: cst.CSTNode, parent, parent_of) -> bool:
    """`target.id == "cuda"` in a file that reads Python's syntax tree (`import ast`): the name of
    a variable in some code it parses (torch's version module's `cuda = "12.1"`), no device."""
    if isinstance(parent, cst.ComparisonTarget):
        parent = parent_of(parent)
    if not isinstance(parent, cst.Comparison) or len(parent.comparisons) != 1:
        return False
    other = parent.comparisons[0].comparator if parent.left is node else parent.left
    if not (isinstance(other, cst.Attribute) and other.attr.value in _SYNTAX_NAME_FIELDS):
        return False
    aliases = getattr(rule, "import_aliases", None) or {}
    return any(name == "ast" or name.startswith("ast.") for names in aliases.values() for name in names)


def _own_packages(visitor) -> frozenset:
    """The CUDA-only packages the file loads from the project's own code (a rule's, from its
    context; the guard analysis keeps them as `own`)."""
    context = getattr(visitor, "context", None)
    if context is not None:
        return context.options.own_packages_of(context.path)
    return getattr(visitor, "own", frozenset())


# The Hub's kernels (the `kernels` package, compiled for CUDA: findings/hazards/gpu_kernels.py).
_HUB_KERNELS = "kernels."

def _a_label_options_value(rule, node: cst.CSTNode, parent, parent_of) -> bool:
    """Whether the string `node` is a value of a command-line option whose choices offer "cuda"
    beside labels of other implementations (file_facts.label_options: `--quant-backend` with
    choices cuda, triton): in its add_argument call, or compared with the option
    (`args.quant_backend == "cuda"`).  Its launch scripts pass "cuda" as they did."""
    holder = parent
    while isinstance(holder, (cst.Element, cst.List, cst.Tuple, cst.Set, cst.Arg)):
        holder = parent_of(holder)
    if isinstance(holder, cst.ComparisonTarget):  # (`args.impl in ("cuda",)` too)
        holder = parent_of(holder)
    # (the file's facts are read only where the string stands in such a place)
    if isinstance(holder, cst.Call) and (dotted_name(holder.func) or "").rsplit(".", 1)[-1] == "add_argument":
        labels = file_facts(rule, node).label_options
        return any(isinstance(arg.value, cst.SimpleString) and string_text(arg.value) in labels
                   and (arg.keyword is None or arg.keyword.value == "dest") for arg in holder.args)
    if not isinstance(holder, cst.Comparison):
        return False
    labels = file_facts(rule, node).label_options
    operands = (holder.left, *(target.comparator for target in holder.comparisons))
    return any((dotted_name(operand) or "").rsplit(".", 1)[-1] in labels for operand in operands)


def _among_platform_labels(collection: Optional[cst.CSTNode]) -> bool:
    """Whether `collection` (a list, tuple or set) holds a platform's label (`("cpu", "cuda",
    "vulkan")`, a command-line option's choices, `kind in ["cuda", "rocm"]`: ROCm runs on torch's
    "cuda" device, and "npu" would join the GPUs' group): its "cuda" is CUDA the platform."""
    if not isinstance(collection, (cst.List, cst.Tuple, cst.Set)):
        return False
    return any(_a_platform_label(element.value) for element in collection.elements)


def _a_platform_label(node: Optional[cst.CSTNode]) -> bool:
    return isinstance(node, cst.SimpleString) and is_platform_label(string_text(node))


def cuda_only_table_entry(rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is the "cuda" key of a table the file looks up by a device whose
    entry is CUDA's own (`{"cpu": ("CPU",), "cuda": ("CPU", "CUDA")}`, profiler activities):
    under "npu" it would hand the NPU what only CUDA has, where the table lacked the NPU's entry
    and said so.  `rule` declares ParentNodeProvider."""
    def parent_of(child):
        return rule.get_metadata(ParentNodeProvider, child, None)

    parent = parent_of(node)
    return (isinstance(parent, cst.DictElement) and parent.key is node and file_facts(rule, node).looks_up_by_device
            # (not a table of platforms, nor a checkpoint's RNG states: no device there at all)
            and not _beside_platform_labels_in_a_dict(node, parent, parent_of)
            and not _holds_rng_states(rule, node, parent, parent_of)
            and _keeps_naming_cuda(rule, parent.value))


def _keeps_naming_cuda(rule, value: cst.BaseExpression) -> bool:
    """Whether `value` names CUDA in what the migration leaves as written: torch's CUDA member of
    an enumeration (`ProfilerActivity.CUDA`) or its name ("CUDA"), a CUDA-only implementation's
    label ("cutlass"), or a "cuda" that stands where no device goes (a profiler kind beside
    "proton")."""
    for node in nodes_within(value, cst.Attribute, cst.SimpleString):
        if isinstance(node, cst.Attribute):
            if node.attr.value == "CUDA":
                return True
            continue
        text = string_text(node)
        if text == "CUDA" or text in CUDA_ONLY_IMPLEMENTATIONS or (
                text is not None and DEVICE_STRING.match(text) is not None and not_a_device(rule, node)):
            return True
    return False


def _beside_platform_labels_in_a_dict(node: cst.CSTNode, entry: cst.DictElement, parent_of) -> bool:
    """Whether the dict that the key or value `node` is in has a platform's label in the same place
    (`{"rocm": "rocm", "cuda": "cuda", "xpu": "vulkan"}`): a table of platforms, not of devices."""
    table = parent_of(entry)
    if not isinstance(table, cst.Dict):
        return False
    as_key = entry.key is node
    return any(isinstance(other, cst.DictElement) and other is not entry
               and _a_platform_label(other.key if as_key else other.value)
               for other in table.elements)


# The string methods whose argument is a piece of the text they are called on.
_TEXT_METHODS = frozenset({"startswith", "endswith", "removeprefix", "removesuffix", "split", "partition"})


def _holder_key(expression: cst.BaseExpression) -> Optional[str]:
    """What holds a value, named as file_facts.holder_key names it."""
    if (isinstance(expression, cst.Call) and isinstance(expression.func, cst.Name) and expression.func.value == "getattr"
            and len(expression.args) > 1 and isinstance(expression.args[1].value, cst.SimpleString)):
        return string_text(expression.args[1].value)  # (an attribute by its name)
    if (isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute) and expression.func.attr.value == "get"
            and expression.args and isinstance(expression.args[0].value, cst.SimpleString)):
        return string_text(expression.args[0].value)  # (a mapping's entry by its key)
    if isinstance(expression, cst.Call):
        name = (dotted_name(expression.func) or "").rsplit(".", 1)[-1]
        return f"{name}()" if name else None
    if isinstance(expression, cst.Attribute):
        return expression.attr.value
    if (isinstance(expression, cst.Subscript) and len(expression.slice) == 1 and isinstance(expression.slice[0].slice, cst.Index)
            and isinstance(expression.slice[0].slice.value, cst.SimpleString)):
        return string_text(expression.slice[0].slice.value)
    return expression.value if isinstance(expression, cst.Name) else None


def _offered_beside_platform_labels(node: cst.SimpleString, choices: cst.BaseExpression) -> bool:
    """Whether `choices` is a collection offering the string `node` beside a platform's label."""
    return (isinstance(choices, (cst.List, cst.Tuple, cst.Set)) and _among_platform_labels(choices)
            and any(isinstance(element.value, cst.SimpleString) and element.value.value == node.value
                    for element in choices.elements))


def _held_with_platform_labels(rule, node: cst.CSTNode, parent, parent_of) -> bool:
    """Whether the string `node` is compared with, given to, returned as, or cut from what the file
    elsewhere compares with a platform's label (file_facts.label_holders: `backend == "rocm"`
    makes `backend == "cuda"`, `backend = "cuda"`, `route.backend == "cuda"` CUDA the platform),
    or offered beside such labels as a default."""
    if isinstance(parent, cst.IfExp) and _a_platform_label(parent.orelse if parent.body is node else parent.body):
        return True  # (the other choice is a platform: `backend = "rocm" if is_rocm else "cuda"`)
    place = parent
    while isinstance(place, (cst.Element, cst.List, cst.Tuple, cst.Set, cst.IfExp, cst.BooleanOperation)):
        place = parent_of(place)
    holders = None

    def held(expression) -> bool:
        nonlocal holders
        key = _holder_key(expression)
        if key is None:
            return False
        holders = file_facts(rule, node).label_holders if holders is None else holders
        return key in holders

    if isinstance(place, cst.ComparisonTarget):
        place = parent_of(place)
    if isinstance(place, cst.Comparison):
        return any(held(operand) for operand in (place.left, *(target.comparator for target in place.comparisons))
                   if operand is not node)
    if isinstance(place, cst.Assign):
        return any(held(target.target) for target in place.targets)
    if isinstance(place, cst.AnnAssign):  # (`kernel: Literal["cuda", "triton"] = "cuda"`)
        return held(place.target) or any(_a_platform_label(inner) for inner in nodes_within(place.annotation, cst.SimpleString))
    if isinstance(place, cst.Return):
        function = parent_of(place)
        while function is not None and not isinstance(function, cst.FunctionDef):
            function = parent_of(function)
        return function is not None and held(cst.Call(func=function.name))
    if isinstance(place, cst.Arg):
        call = parent_of(place)
        if isinstance(call, cst.Call) and place.value is node and any(
                _offered_beside_platform_labels(node, other.value) for other in call.args if other is not place):
            return True  # (a default beside its choices: `env_with_choices("KERNEL", "cuda", ["cuda", "triton"])`)
        if (place.keyword is None and isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in _TEXT_METHODS and held(call.func.value)):
            return True
        # the length of a label's prefix, cut from a holder of labels: `line[len("cuda"):]`
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "len":
            cut = _subscript_around(call, parent_of)
            return cut is not None and held(cut.value)
    return False


def _subscript_around(node: cst.CSTNode, parent_of) -> Optional[cst.Subscript]:
    """The subscript whose slice bound `node` is (`text[len("cuda"):]`), or None."""
    place = parent_of(node)
    if not isinstance(place, cst.Slice):
        return None
    element = parent_of(place)
    subscript = parent_of(element) if isinstance(element, cst.SubscriptElement) else None
    return subscript if isinstance(subscript, cst.Subscript) else None


# Python's functions that take an object and the name of one of its attributes
_ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


# torch's modules whose attribute "cuda" is no device API that torch_npu gives an "npu" twin: CUDA's
# version string, the CUDA backend's settings (a class's method "cuda", `torch.Tensor.cuda`, goes
# with the device: its callers call npu())
_NO_NPU_TWIN = ("torch.version", "torch.backends")


def an_attribute_name(rule, node: cst.CSTNode) -> Optional[str]:
    """The function (getattr, hasattr...) that the string `node` is handed to as an attribute's
    name, or None.  `rule` declares ParentNodeProvider."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    call = rule.get_metadata(ParentNodeProvider, parent, None) if isinstance(parent, cst.Arg) else None
    if (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _ATTRIBUTE_FUNCTIONS
            and len(call.args) > 1 and call.args[1] is parent):
        return call.func.value
    return None


def _a_torch_submodule(rule, expression: cst.BaseExpression) -> bool:
    """Whether `expression` is torch.version, torch.backends or a module of it: as its imports
    resolve it, or as it is spelled where its root is torch handed in (`def collect(torch):
    getattr(torch.version, "cuda")`) or looked up (`getattr(getattr(torch, "version", None), "cuda")`)."""
    if any(name == module or name.startswith(module + ".") for name in qualified_names(rule, expression)
           for module in _NO_NPU_TWIN):
        return True
    if (isinstance(expression, cst.Call) and isinstance(expression.func, cst.Name) and expression.func.value == "getattr"
            and len(expression.args) > 1 and _spells_torch(expression.args[0].value)):
        return string_text(expression.args[1].value) in _TWINLESS_MODULES
    return (isinstance(expression, cst.Attribute) and expression.attr.value in _TWINLESS_MODULES
            and _spells_torch(expression.value))


def _torch_module_or_method(rule, lookup: cst.Call, parent_of) -> bool:
    """Whether the getattr call `lookup` reads torch's or a torch object's attribute (`getattr(torch,
    "cuda")`, `getattr(torch.Tensor, "cuda")`, `_torch = load(); getattr(_torch, "cuda")`) or a
    method that the file calls (`getattr(batch, "cuda")()`, `move = getattr(batch, "cuda")` and
    `move()`)."""
    outer = parent_of(lookup)
    if isinstance(outer, cst.Call) and outer.func is lookup:
        return True
    if (isinstance(outer, cst.Assign) and len(outer.targets) == 1 and isinstance(outer.targets[0].target, cst.Name)
            and outer.targets[0].target.value in file_facts(rule, lookup).called_names):
        return True  # `move = getattr(tensor, "cuda")`, then `move()`
    target = lookup.args[0].value
    while isinstance(target, cst.Attribute):
        target = target.value
    return _spells_torch(target) or any(name == "torch" or name.startswith("torch.")
                                        for name in qualified_names(rule, lookup.args[0].value))


# The modules of torch (_NO_NPU_TWIN) by their name in torch.
_TWINLESS_MODULES = frozenset(module.split(".", 1)[1] for module in _NO_NPU_TWIN)


def _spells_torch(expression: cst.BaseExpression) -> bool:
    """Whether the expression is a name torch is written as (`torch`, `self.torch`, `_torch`)."""
    name = dotted_name(expression)
    return name is not None and name.rsplit(".", 1)[-1].strip("_") == "torch"


def names_a_method(rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is handed to a parameter that its function (in this file) uses as
    a method's name: `self._apply("cuda")` with `def _apply(self, fn): getattr(v, fn)()` calls
    a method named cuda, of whatever `v` is (a tensor, a module, a class of the project's).
    `rule` declares ParentNodeProvider."""
    return _handed_to_one_of(rule, node, file_facts(rule, node).attribute_parameters)


def _names_an_attributes_value(rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is handed to a parameter that its function (in this file) only
    reads an attribute by (`def version(attr): return getattr(module, attr, None)`)."""
    return _handed_to_one_of(rule, node, file_facts(rule, node).read_attribute_parameters)


# torch.library's ways to register an operator's implementation for a device type, with the
# positional index of the device type where it may be given so (custom_op's is keyword-only).
_REGISTRATIONS = {"torch.library.custom_op": None, "torch.library.register_kernel": 1, "torch.library.impl": 1,
                  "torch._library.custom_ops.custom_op": None}
_DEVICE_TYPE_KEYWORDS = ("device_types", "types")


def registers_a_launcher(rule, call: cst.Call, argument: cst.Arg) -> bool:
    """Whether `argument` is the device type that an operator's implementation is registered for
    (`@torch.library.custom_op("proj::rope", mutates_args=(), device_types="cuda")`) where that
    implementation launches a GPU kernel (a Triton or Helion kernel, the file's or the project's)
    or calls a CUDA-only package:
    registered for "npu" it would send NPU tensors into the CUDA kernel, where the dispatcher
    said no kernel is registered for the NPU.  The kernel's own row says what to do."""
    names = qualified_names(rule, call.func)
    position = next((_REGISTRATIONS[name] for name in sorted(names) if name in _REGISTRATIONS), -1)
    if position == -1:
        return False
    if argument.keyword is not None:
        if argument.keyword.value not in _DEVICE_TYPE_KEYWORDS:
            return False
    elif position is None or [a for a in call.args if a.keyword is None].index(argument) != position:
        return False
    implementation, function = _registered_function(rule, call)
    if implementation is None:
        return False
    launchers = set((file_facts(rule, call).kernel_launchers or {}).keys())
    context = getattr(rule, "context", None)  # (the project's too, where a rule asks)
    if context is not None:
        launchers |= launcher_names(context.options.kernel_launchers)
    if implementation in launchers:
        return True
    # (or it calls a launcher that another module of the project defines, `from .kernels import
    # rope_forward`, whose kernel the file's own reading cannot see; or a CUDA-only package:
    # DeepEP's dispatch, imported in the function itself, or a method of what the file made with
    # one: `_buffer = HybridEPBuffer(...)`, `_buffer.combine(...)`)
    if function is None:
        return False
    own = _own_packages(rule)
    holders = None
    for inner in nodes_within(function.body, cst.Call):
        called = qualified_names(rule, inner.func)
        if any(name.rsplit(".", 1)[-1] in launchers for name in called):
            return True
        if any(cuda_only_package(name, own) for name in called):
            return True
        if isinstance(inner.func, cst.Attribute):
            holders = _cuda_only_holders(rule, function, own) if holders is None else holders
            if dotted_name(inner.func.value) in holders:
                return True
    return False


def _cuda_only_holders(rule, node: cst.CSTNode, own) -> Set[str]:
    """The names that the file of `node` binds to what a CUDA-only package makes (`_buffer =
    HybridEPBuffer(...)`, in any of its functions)."""
    module = node
    while not isinstance(module, cst.Module):
        module = rule.get_metadata(ParentNodeProvider, module)
    return {dotted_name(target.target) for assign in nodes_within(module, cst.Assign)
            if isinstance(assign.value, cst.Call)
            and any(cuda_only_package(name, own) for name in qualified_names(rule, assign.value.func))
            for target in assign.targets if dotted_name(target.target)}


def _registered_function(rule, call: cst.Call) -> Tuple[Optional[str], Optional[cst.FunctionDef]]:
    """The name of the function a registration registers, and its definition where it decorates
    it: the function it decorates, or the one it is given (`register_kernel("proj::op", "cuda",
    fn)`, `func=fn`)."""
    decorator = rule.get_metadata(ParentNodeProvider, call, None)
    if isinstance(decorator, cst.Decorator):
        function = rule.get_metadata(ParentNodeProvider, decorator, None)
        return (function.name.value, function) if isinstance(function, cst.FunctionDef) else (None, None)
    given = [a.value for a in call.args if (a.keyword is None and isinstance(a.value, cst.Name)) or (
        a.keyword is not None and a.keyword.value in ("func", "fn") and isinstance(a.value, cst.Name))]
    return (given[-1].value, None) if given else (None, None)


def _given_to_an_npu_mark(rule, parent, parent_of) -> bool:
    """Whether the string (whose parent is `parent`) is given to one of the project's pytest marks
    that its tests give "npu" too (`@pytest.mark.runs_on(["cuda"])` beside `runs_on(["cuda",
    "npu"])`; Options.npu_marks): a statement about the devices a test runs on, which the project's
    conftest reads.  "cuda" alone there says the test is CUDA's only: renamed, it would run on the
    NPU what the project keeps off it, and no longer on CUDA."""
    context = getattr(rule, "context", None)
    marks = context.options.npu_marks if context is not None else ()
    if not marks:
        return False
    while isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.Set)):
        parent = parent_of(parent)
    call = parent_of(parent) if isinstance(parent, cst.Arg) else None
    if not isinstance(call, cst.Call):
        return False
    name = dotted_name(call.func) or ""
    return name.rsplit(".", 1)[-1] in marks and (name.startswith(("pytest.mark.", "mark.")))


def _calls_torch(rule, call: cst.Call) -> bool:
    """Whether `call` calls one of torch's own functions or classes."""
    return any(name.startswith("torch.") for name in qualified_names(rule, call.func))


def an_enum_value(rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is handed where one of the project's Enums takes it as its
    member's value (`TimerType("cuda")`, `timer("step", "cuda")` whose parameter is a TimerType;
    reading.enum_parameters): "npu" there is no member's value, and raises."""
    text = string_text(node) if isinstance(node, cst.SimpleString) else None
    if text is None:
        return False
    context = getattr(rule, "context", None)  # (a rule's; the guard analysis keeps the table itself)
    table = context.options.enum_parameters if context is not None else getattr(rule, "enum_parameters", ())
    # (and the file's own, where it is migrated alone)
    parameters = parameters_taking(table, text) | parameters_taking(file_facts(rule, node).enum_parameters, text)
    if not parameters or not _handed_to_one_of(rule, node, parameters):
        return False
    call = rule.get_metadata(ParentNodeProvider, rule.get_metadata(ParentNodeProvider, node, None), None)
    return not _calls_torch(rule, call)  # (torch's own call of the same name takes a device there)


def _handed_to_one_of(rule, node: cst.CSTNode, parameters) -> bool:
    """Whether the string `node` is an argument given to one of `parameters` ((function name,
    positional index) or (function name, parameter name))."""
    if not parameters:
        return False
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    if not isinstance(parent, cst.Arg):
        return False
    call = rule.get_metadata(ParentNodeProvider, parent, None)
    if not isinstance(call, cst.Call):
        return False
    last = last_name(call.func)
    if parent.keyword is not None:
        return (last, parent.keyword.value) in parameters
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return (last, next((i for i, arg in enumerate(positional) if arg is parent), None)) in parameters


# str methods that cut their argument out of a text
_CUTTING_METHODS = frozenset({"replace", "removeprefix", "lstrip", "strip", "split", "partition"})


def argument_of_method(rule, parent, methods) -> bool:
    """Whether `parent` (of some node) is an argument of a call of a method named one of `methods`
    (`device.startswith(...)`, `text.replace(...)`).  `rule` declares ParentNodeProvider."""
    if not isinstance(parent, cst.Arg):
        return False
    call = rule.get_metadata(ParentNodeProvider, parent, None)
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in methods


def _cut_from_text(rule, parent) -> bool:
    """Whether a string whose parent is `parent` is one of a collection of strings (what a loop cuts
    out one by one) or what a str method cuts out."""
    return isinstance(parent, cst.Element) or argument_of_method(rule, parent, _CUTTING_METHODS)


def called_method(rule, attribute: cst.Attribute) -> bool:
    """Whether `attribute` (`x.is_cuda`) is called: then it is a method of a class of its own
    (vLLM's `current_platform.is_cuda()`), not torch's property.  `rule` declares
    ParentNodeProvider."""
    parent = rule.get_metadata(ParentNodeProvider, attribute, None)
    return isinstance(parent, cst.Call) and parent.func is attribute


def function_around(rule, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
    """The innermost function `node` stands in (None: the module's code).  `rule` declares
    ParentNodeProvider."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    while parent is not None and not isinstance(parent, cst.FunctionDef):
        parent = rule.get_metadata(ParentNodeProvider, parent, None)
    return parent


def _function_handles_npu(rule, node: cst.CSTNode) -> bool:
    """Whether the function around `node` names the NPU in a string of its own ("npu", "npu:")."""
    function = function_around(rule, node)
    return function is not None and mentions_npu(function.body)


def properties_query_stays(rule, node: cst.CSTNode, name: str) -> bool:
    """Whether `name` (a qualified name read at `node`) is `torch.cuda.get_device_properties` in a
    file that reads a field of its answer torch_npu's properties have not (`.major`: file_facts):
    renamed, the query would answer on the NPU and the field raise AttributeError where CUDA's
    absence raised the RuntimeError the code expects.  The migration, the guard analysis and the
    leftover analysis ask this one question."""
    return name == "torch.cuda.get_device_properties" and file_facts(rule, node).reads_cuda_only_properties


def of_a_properties_query_left(rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is the device of a `torch.cuda.get_device_properties(...)` that stays
    as written (properties_query_stays): its device stays with it.  `rule` declares ParentNodeProvider."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    call = rule.get_metadata(ParentNodeProvider, parent, None) if isinstance(parent, cst.Arg) else None
    return isinstance(call, cst.Call) and any(properties_query_stays(rule, node, name)
                                              for name in qualified_names(rule, call.func))


def arguments_the_npu_lacks(call: cst.Call, name: str, torch_version: Tuple[int, ...]) -> List[str]:
    """The parameters given to `call`, a call of the torch.cuda function `name` (its last part:
    `memory_snapshot`), that torch_npu.npu's counterpart in the release of `torch_version` does
    not take and whose absence would change what the call does (npu_keywords): such a call stays
    as written.  The migration and the leftover analysis ask this one question."""
    missing = npu_keywords.MISSING_PARAMETERS.get(name)
    if not missing:
        return []
    given = set(parameters_given(call.args, missing))
    return [keyword for keyword, parameter in missing.items()
            if keyword in given and not parameter.droppable and parameter.missing_in(torch_version)]


def parameters_given(args: Sequence[cst.Arg], parameters) -> List[Optional[str]]:
    """The parameter each of `args` gives: its keyword, or the one of `parameters` (name ->
    npu_keywords.MissingParameter) at its position; None for `*args`, `**kwargs` and a position
    none of `parameters` holds."""
    given: List[Optional[str]] = []
    position = 0
    for arg in args:
        if arg.keyword is not None:
            given.append(arg.keyword.value)
        elif arg.star:
            given.append(None)
        else:
            given.append(next((name for name, parameter in parameters.items() if parameter.position == position), None))
            position += 1
    return given


def enum_label(rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is (a part of) the value of an Enum's member: `CUDA = "cuda"`,
    `CUDA = ("cuda", "GPU", "nccl")`, a label that code compares with its other members' (an NPU
    member beside it says "npu"), not a device.  `rule` declares ParentNodeProvider."""
    def parent_of(child):
        return rule.get_metadata(ParentNodeProvider, child, None)

    parent = parent_of(node)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List)):
        parent = parent_of(parent)
    if isinstance(parent, cst.Assign):
        definition = class_of(rule, parent_of(parent))
        return definition is not None and any(
            (dotted_name(base.value) or "").rsplit(".", 1)[-1].endswith("Enum") for base in definition.bases)
    return False


def class_of(rule, statement: Optional[cst.CSTNode]) -> Optional[cst.ClassDef]:
    """The class whose body `statement` (a line of statements, a function, a class) stands in
    directly, or None.  `rule` declares ParentNodeProvider."""
    body = rule.get_metadata(ParentNodeProvider, statement, None) if statement is not None else None
    definition = rule.get_metadata(ParentNodeProvider, body, None) if isinstance(body, cst.IndentedBlock) else None
    return definition if isinstance(definition, cst.ClassDef) else None


# A class attribute whose name says one of these holds a device (`device: str = "cuda"`,
# `DEVICE_TYPE`, `map_location`, `dev`).
_DEVICE_ATTRIBUTE_WORDS = re.compile(r"dev|loc", re.IGNORECASE)


def class_label(rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is a constant of a class (not an Enum's: enum_label) that labels
    something rather than naming a device: `class Kind: CUDA = "cuda"` compared with a user's
    choice (`kind == Kind.CUDA`), a quantized layer's `QUANT_TYPE = "cuda"` that other files compare
    with its siblings' "triton" and "exllama".  Renamed "npu", the user's "cuda" no longer matches
    and the code takes another branch.  Such a constant is a device where its name says so
    (`device`, `DEVICE_TYPE`, `map_location`) or where this file hands the attribute to a device
    position (`torch.device(Kind.CUDA)`, `.to(self.BACKEND)`, `device=`, a comparison with a
    device: `x.device.type == Kind.CUDA`, a variable named for a device, an f-string).
    `rule` declares ParentNodeProvider."""
    def parent_of(child):
        return rule.get_metadata(ParentNodeProvider, child, None)

    parent = parent_of(node)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
    elif isinstance(parent, cst.AnnAssign):
        target = parent.target
    else:
        return False
    if not isinstance(target, cst.Name) or _DEVICE_ATTRIBUTE_WORDS.search(target.value):
        return False
    if any(target.value.lower() == option[0] for option in FRAMEWORK_OPTIONS):
        return False  # (Lightning's accelerator: framework_option reports it)
    definition = class_of(rule, parent_of(parent))
    if definition is None:
        return False
    module = definition
    while parent_of(module) is not None:
        module = parent_of(module)
    return not any(_in_a_device_position(use, parent_of)
                   for use in nodes_within(module, cst.Attribute) if use.attr.value == target.value)


def _in_a_device_position(expression: cst.CSTNode, parent_of) -> bool:
    """Whether `expression` is handed where a device goes (class_label)."""
    parent = parent_of(expression)
    if isinstance(parent, cst.Arg):
        if parent.keyword is not None:
            return _DEVICE_ATTRIBUTE_WORDS.search(parent.keyword.value) is not None
        call = parent_of(parent)
        callee = dotted_name(call.func) or "" if isinstance(call, cst.Call) else ""
        return callee.startswith("torch.") or callee.rsplit(".", 1)[-1] in ("to", "to_empty", "device", "autocast")
    if isinstance(parent, cst.ComparisonTarget):
        parent = parent_of(parent)
    if isinstance(parent, cst.Comparison):
        code = cst.Module(body=()).code_for_node(parent).lower()
        return "str(" in code or _DEVICE_ATTRIBUTE_WORDS.search(code.replace(expression.attr.value.lower(), "")) is not None
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = parent.targets if isinstance(parent, cst.Assign) else (parent,)
        return any(_DEVICE_ATTRIBUTE_WORDS.search(cst.Module(body=()).code_for_node(target.target))
                   for target in targets)
    return isinstance(parent, cst.FormattedStringExpression)


def file_facts(rule, node: cst.CSTNode) -> FileFacts:
    """What the whole file says (file_facts): from the rule's context, where the pipeline read it
    (every file it migrates); else, for a rule run on a tree alone, from that tree (then the
    whole file), read with `ast` statement by statement, once."""
    facts = getattr(rule, "file_facts", None) or getattr(getattr(rule, "context", None), "file_facts", None)
    if facts is not None:
        return facts
    module = node
    while True:
        parent = rule.get_metadata(ParentNodeProvider, module, None)
        if parent is None:
            break
        module = parent
    answers = rule.__dict__.setdefault("_file_facts", {})
    if id(module) not in answers:
        statements = (top_level_statements(module) if isinstance(module, cst.Module)
                      else [(1, cst.Module(body=()).code_for_node(module))])
        answers[id(module)] = facts_of_statements(statements)
    return answers[id(module)]


def top_level_statements(module: cst.Module) -> Iterator[Tuple[int, str]]:
    """(first line, text) of each top-level statement of `module` (its comments and blank lines
    before it included): what `ast` reads one by one where it cannot read the file whole."""
    line = 1 + sum(module.code_for_node(empty).count("\n") for empty in module.header)
    for statement in module.body:
        text = module.code_for_node(statement)
        yield line, text
        line += text.count("\n")


def _holds_rng_states(rule, node: cst.CSTNode, parent: Optional[cst.CSTNode], parent_of) -> bool:
    """Whether the key `node` ("cuda") is one under which the file keeps a device's RNG states (a
    checkpoint's, which checkpoints written on GPUs keep under "cuda"), though the file looks other
    mappings up by a device: `{"cuda": torch.cuda.get_rng_state_all()}`, a mapping the file writes
    or reads such states under "cuda" (file_facts.rng_state_mappings) subscripted, asked with
    `in`, or with a mapping method."""
    if isinstance(parent, cst.DictElement) and parent.key is node:
        value = parent.value
        return isinstance(value, cst.Call) and is_rng_state_callee(dotted_name(value.func) or "")
    mapping = None
    if isinstance(parent, cst.Index):
        subscript = parent_of(parent_of(parent))
        mapping = subscript.value if isinstance(subscript, cst.Subscript) else None
    elif isinstance(parent, cst.Comparison) and parent.left is node and len(parent.comparisons) == 1:
        mapping = parent.comparisons[0].comparator
    elif isinstance(parent, cst.Arg):
        call = parent_of(parent)
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in KEY_METHODS
                and call.args and call.args[0] is parent):
            mapping = call.func.value
    if mapping is None:
        return False
    held = file_facts(rule, node).rng_state_mappings
    return bool(held) and mapping_text(cst.Module(body=()).code_for_node(mapping)) in held


def _looks_up_by_device(rule, node: cst.CSTNode) -> bool:
    """Whether the file looks a mapping up by a device: then the "cuda" keys of its mappings are
    device types (`{"cuda": "nccl", "cpu": "gloo"}[device.type]`), to be renamed with the device.
    Where it looks mappings up by literal keys only, "cuda" is a key of data (a checkpoint's RNG
    states), which data written on GPUs keeps."""
    return file_facts(rule, node).looks_up_by_device


# Calls that write their argument out for another program to read (a JSON or YAML config)
_SERIALIZERS = frozenset({"json.dumps", "json.dump", "yaml.dump", "yaml.safe_dump", "toml.dumps", "tomli_w.dumps"})


def _serialized_by(rule, node: cst.CSTNode, parent_of) -> Optional[str]:
    """The serializer (`json.dumps`) that writes the literal collection holding `node` out, or None:
    `json.dumps({"backend": "nccl"})` is vLLM's `--weight-transfer-config`, not torch's backend."""
    parent = parent_of(node)
    while isinstance(parent, (cst.DictElement, cst.Dict, cst.Element, cst.List, cst.Tuple)):
        parent = parent_of(parent)
    if isinstance(parent, cst.Arg):
        call = parent_of(parent)
        if isinstance(call, cst.Call):
            found = sorted(qualified_names(rule, call.func) & _SERIALIZERS)
            return found[0] if found else None
    return None


def foreign_collective(rule, node: cst.CSTNode) -> Optional[str]:
    """The collective library other than torch's (file_facts.FOREIGN_COLLECTIVES) that the backend name
    `node` ("nccl") goes to, by what the file does with it: handed to one directly, or held by a
    name (a variable, an attribute, an argparse option, a parameter, a dataclass field) that the
    file hands to one or tests before using one.  None: torch's process groups, or not known.
    `rule` declares ParentNodeProvider."""
    def parent_of(child):
        return rule.get_metadata(ParentNodeProvider, child, None)

    serializer = _serialized_by(rule, node, parent_of)
    if serializer is not None:
        return f"the program that reads what {serializer} writes (a config of another program, not torch's)"
    names = file_facts(rule, node).foreign_backends
    parent = parent_of(node)
    # (one of the values a choice gives, `"ipc" if hybrid else "nccl"`, `args.backend or "nccl"`, goes
    # where the choice goes)
    while (isinstance(parent, cst.IfExp) and parent.test is not node) or isinstance(parent, cst.BooleanOperation):
        node, parent = parent, parent_of(parent)
    holder = None
    if isinstance(parent, cst.Element):  # one of an option's choices (`choices=["nccl", "gloo"]`)
        container = parent_of(parent)
        parent = parent_of(container) if isinstance(container, (cst.List, cst.Tuple, cst.Set)) else None
        if not (isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "choices"):
            return None
    if isinstance(parent, cst.Arg):
        call = parent_of(parent)
        if isinstance(call, cst.Call):
            library = foreign_library(qualified_names(rule, call.func))
            if library is not None:
                return library
            if _getattr_default(call, parent):
                # `backend = getattr(args, "sync_backend", "nccl")`: the default of the field, whose
                # answer the assignment's target holds too
                holder = _held_by(call)
                around = parent_of(call)
                if isinstance(around, cst.Assign) and holder not in names and holder not in dict(
                        rule.context.options.foreign_backends):
                    holder = next((dotted_name(t.target) for t in around.targets if dotted_name(t.target)), holder)
            elif parent.keyword is not None and parent.keyword.value in ("default", "choices"):
                holder = option_destination([string_text(a.value) or "" for a in call.args
                                             if a.keyword is None and isinstance(a.value, cst.SimpleString)])
                if holder is None and isinstance(parent_of(call), cst.AnnAssign):  # `x: str = field(default="nccl")`
                    holder = dotted_name(parent_of(call).target)
            elif parent.keyword is not None and not _makes_torch_process_groups(rule, call):
                # a field set by its name (`FaultTolerance(process_group="nccl")`): the field holds it
                holder = parent.keyword.value
    elif isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        holder = next((dotted_name(t) for t in targets if dotted_name(t)), None)
    elif isinstance(parent, cst.Param):
        holder = parent.name.value
    elif isinstance(parent, cst.ComparisonTarget):
        comparison = parent_of(parent)
        holder = _held_by(comparison.left) if isinstance(comparison, cst.Comparison) else None
    elif isinstance(parent, cst.Comparison) and parent.left is node:
        holder = next((_held_by(c.comparator) for c in parent.comparisons if _held_by(c.comparator)), None)
    if holder is None:
        return None
    name = holder.rsplit(".", 1)[-1]
    # (another file of the project hands it to one: Options.foreign_backends)
    return names.get(name) or dict(rule.context.options.foreign_backends).get(name)


def _makes_torch_process_groups(rule, call: cst.Call) -> bool:
    """Whether the call is torch's (or a framework's maker of torch's process groups, as
    collective_backends.TORCH_WORDS names them): a backend given to it by keyword is torch's."""
    return _calls_torch(rule, call) or (last_name(call.func) or "") in TORCH_WORDS


def _getattr_field(value: cst.BaseExpression) -> Optional[str]:
    """The field `getattr(obj, "field"[, default])` reads, or None for anything else."""
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "getattr"
            and len(value.args) >= 2):
        return string_text(value.args[1].value)
    return None


def _held_by(value: cst.BaseExpression) -> Optional[str]:
    """The name that holds what `value` reads: its dotted name, or the field a getattr reads."""
    return _getattr_field(value) or dotted_name(value)


def _getattr_default(call: cst.Call, argument: cst.Arg) -> bool:
    """Whether `argument` is the default of `getattr(obj, "field", default)`."""
    return (_getattr_field(call) is not None and len(call.args) == 3 and call.args[2] is argument
            and argument.keyword is None)


def framework_option(rule, node: cst.CSTNode) -> Optional[Tuple[str, str]]:
    """(option, tip) of the framework option a string literal is given to
    (`Trainer(accelerator="cuda")`, `accelerator = "cuda"`, `add_argument("--accelerator",
    default="cuda")`, `LLM(model, device="cuda")`), or None.  `rule` declares ParentNodeProvider."""
    def parent_of(child):
        return rule.get_metadata(ParentNodeProvider, child, None)

    anywhere = {option: tip for option, callees, tip in FRAMEWORK_OPTIONS if callees is None}
    names_the_gpu = isinstance(node, cst.SimpleString) and string_text(node) == "gpu"
    parent = parent_of(node)
    # one of the values a choice gives the option (`accelerator="gpu" if cuda else "cpu"`, `... or "cuda"`)
    while (isinstance(parent, cst.IfExp) and node is not parent.test) or isinstance(parent, cst.BooleanOperation):
        node, parent = parent, parent_of(parent)
    if isinstance(parent, cst.DictElement) and node is parent.value and isinstance(parent.key, cst.SimpleString):
        key = string_text(parent.key)  # `Trainer(**{"accelerator": "cuda"})`
        if key in anywhere:
            return key, anywhere[key]
    if isinstance(parent, cst.Arg) and parent.keyword is not None:
        keyword = parent.keyword.value
        call = parent_of(parent)
        found = _option_of(keyword, qualified_names(rule, call.func) if isinstance(call, cst.Call) else ())
        if found is not None:
            return found
        if keyword == "default" and isinstance(call, cst.Call):
            flags = [a.value.raw_value.lstrip("-").replace("-", "_") for a in call.args
                     if a.keyword is None and isinstance(a.value, cst.SimpleString)]
            flag = next((flag for flag in flags if flag in anywhere), None)
            return (flag, anywhere[flag]) if flag else None
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        for target in targets:
            name = _holder_name(target)
            last = name.rsplit(".", 1)[-1] if name else None
            if last in anywhere:
                return last, anywhere[last]
            # a variable of another name that the file hands to the option (`Trainer(accelerator=accel)`),
            # or an attribute of that name on any object (`self.device_type = ...` in a config class,
            # `Trainer(accelerator=cfg.device_type)`): renamed, the framework would be given a name it
            # rejects, whatever else reads it
            handed = file_facts(rule, node).keyword_arguments
            found = _option_handed(handed.get(name, ()) if isinstance(target, cst.Name)
                                   else handed.get(f".{target.attr.value}", ()) if isinstance(target, cst.Attribute)
                                   else ())
            if found is not None:
                return found
    if isinstance(parent, cst.Return):
        # what a function of the file returns to the option (`Trainer(accelerator=pick())`)
        function = parent_of(parent)
        while function is not None and not isinstance(function, (cst.FunctionDef, cst.Lambda)):
            function = parent_of(function)
        if isinstance(function, cst.FunctionDef):
            found = _option_handed(file_facts(rule, node).keyword_arguments.get(f"{function.name.value}()", ()))
            if found is not None:
                return found
    if names_the_gpu and _returned(node, parent, parent_of):
        # "gpu" is no torch device (torch.device("gpu") raises): returned, it goes to a framework's
        # own choice of device (Lightning's accelerator="gpu"), in whichever file calls the function
        return "accelerator", anywhere["accelerator"]
    return _named_among(rule, node, anywhere)


def _returned(node: cst.CSTNode, parent, parent_of) -> bool:
    """Whether `node` is what a function returns, or a part of the tuple it returns
    (`return "gpu", torch.cuda.device_count()`)."""
    if isinstance(parent, cst.Element) and isinstance(parent_of(parent), cst.Tuple):
        parent = parent_of(parent_of(parent))
    return isinstance(parent, cst.Return)


def _option_handed(uses) -> Optional[Tuple[str, str]]:
    """The framework option among the keywords a value is handed to (file_facts.keyword_arguments)."""
    return next((option for option in (_option_of(keyword, callees) for keyword, callees in uses) if option), None)


def _holder_name(expression: cst.BaseExpression) -> Optional[str]:
    """The name an expression holds a value under: `accelerator`, `cfg.accelerator`, and the key of
    `kwargs["accelerator"]` and of `cfg.get("accelerator")`, the spellings of keyword arguments
    gathered before the call (`L.Fabric(**kwargs)`)."""
    name = dotted_name(expression)
    if name is not None:
        return name
    key = None
    if isinstance(expression, cst.Subscript) and len(expression.slice) == 1:
        index = expression.slice[0].slice
        key = index.value if isinstance(index, cst.Index) else None
    elif (isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute)
          and expression.func.attr.value == "get" and expression.args):
        key = expression.args[0].value
    return string_text(key) if isinstance(key, cst.SimpleString) else None


def _option_of(keyword: str, callees) -> Optional[Tuple[str, str]]:
    """(option, tip) of FRAMEWORK_OPTIONS that a keyword argument of a call of `callees` (its
    qualified names) is, or None."""
    for option, belongs_to, tip in FRAMEWORK_OPTIONS:
        if option == keyword and (belongs_to is None or any(name.startswith(belongs_to) for name in callees)):
            return option, tip
    return None


def _named_among(rule, node: cst.CSTNode, anywhere) -> Optional[Tuple[str, str]]:
    """The option whose values a collection of names holds or a test compares, by the name of the
    variable: `allowed_accelerators = {"cpu", "cuda"}`, `accelerator not in ("cuda", "gpu")`,
    `accelerator: Literal["cpu", "cuda", "auto"]`: one of these renamed and not the others would
    refuse the names the rest of the code still uses."""
    def parent_of(child):
        return rule.get_metadata(ParentNodeProvider, child, None)

    def option_in(name: Optional[str]) -> Optional[str]:
        last = name.rsplit(".", 1)[-1].lower() if name else ""
        return next((option for option in anywhere if option in last), None)

    holder, parent = node, parent_of(node)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.Set, cst.SubscriptElement, cst.Index,
                              cst.Subscript, cst.Annotation, cst.ComparisonTarget)):
        holder, parent = parent, parent_of(parent)
    if isinstance(parent, cst.Comparison):
        for operand in (parent.left, *(target.comparator for target in parent.comparisons)):
            option = option_in(_holder_name(operand))
            if option:
                return option, anywhere[option]
    elif isinstance(parent, (cst.Assign, cst.AnnAssign)) and holder is not node:
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        option = next((option_in(dotted_name(target)) for target in targets if option_in(dotted_name(target))), None)
        if option:
            return option, anywhere[option]
    elif isinstance(parent, cst.Param) and isinstance(holder, cst.Annotation):
        option = option_in(parent.name.value)
        if option:
            return option, anywhere[option]
    return None


def cuda_switch_of(rule, node: cst.CSTNode, api) -> Optional[str]:
    """"fused" when `node` stands in the value that decides a torch optimizer's `fused` (a dict
    entry, `{"fused": device.type == "cuda"}`, or the keyword of an optimizer the release `api` has
    no fused NPU kernel for; see cuda_switch_tip).
    `MergeOptions(cuda=)` when `node` stands in the value of a CUDA option (a keyword named
    with "cuda") of a function another package provides (`MergeOptions(cuda=torch.cuda.is_available())`,
    `convert(cuda=device.type == "cuda")`): that package runs its CUDA code when the value is true,
    so the NPU's answer would make it crash where the CUDA one keeps it off CUDA.  The project's own
    functions (defined in the file, imported relatively) are not another package's.  `rule`
    declares ParentNodeProvider."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    while parent is not None and not isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda)):
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == FUSED:
            call = rule.get_metadata(ParentNodeProvider, parent, None)
            fused_on_npu = isinstance(call, cst.Call) and any(
                has_fused_kernel(api, name) for name in qualified_names(rule, call.func))
            return None if fused_on_npu else FUSED
        if (isinstance(parent, cst.DictElement) and isinstance(parent.key, cst.SimpleString)
                and string_text(parent.key) == FUSED):
            return FUSED  # (for whichever optimizer the entry is given to)
        if isinstance(parent, cst.Arg) and parent.keyword is not None and "cuda" in parent.keyword.value.lower():
            call = rule.get_metadata(ParentNodeProvider, parent, None)
            if not isinstance(call, cst.Call):
                return None
            names = {name for name in qualified_names(rule, call.func) if not name.startswith("builtins.")}
            if names and not any(name.startswith(".") or name.split(".")[0] in NPU_AWARE_PACKAGES for name in names):
                return f"{cst.Module(body=()).code_for_node(call.func)}({parent.keyword.value}=)"
            return None
        parent = rule.get_metadata(ParentNodeProvider, parent, None)
    return None


FUSED = "fused"
# Packages that choose the NPU themselves where there is one: their CUDA-named options mean "an
# accelerator" (transformers' TrainingArguments(no_cuda=) is use_cpu), so the NPU's answer is right.
NPU_AWARE_PACKAGES = frozenset({"transformers", "accelerate", "trl", "peft", "diffusers"})


def cuda_switch_tip(written: str, option: str) -> str:
    if option == FUSED:
        return (f"{written} is left as written: it decides `fused` of a torch optimizer, and torch_npu has a fused "
                "kernel for AdamW only (aten::_fused_adamw_; Adam, SGD and Adagrad have none, so fused=True raises "
                "there at the first step); with the CUDA answer the optimizer runs unfused on the NPU. For AdamW "
                "pass fused=True on the NPU, or use torch_npu.optim.NpuFusedAdamW / NpuFusedAdam / NpuFusedSGD")
    return (f"{written} is left as written: {option} is another package's CUDA switch, which would run that "
            "package's CUDA code on an NPU machine if given the NPU's answer; with the CUDA answer (False there) it "
            "stays off CUDA (on the CPU). To use the NPU, give that package the NPU device its own way, if it has one")
