"""Recognise code that already handles NPU, so that it is never migrated a second time.

A project that was made to run on both devices keeps its CUDA branch on purpose:

    if torch.npu.is_available():      # the NPU branch: migrated like any code (it runs on NPU)
        device = "npu"
    elif torch.cuda.is_available():   # a CUDA branch: left exactly as written
        device = "cuda"
    else:                             # after an NPU test: not taken on NPU, left as written
        device = "cpu"

On an Ascend machine such CUDA branches are not taken, so they are device-neutral.  A branch is
left alone when its test mentions CUDA but not NPU, when its test is a negated NPU test
(`if not is_npu:`, `if device != "npu":`), or when it is the `else` of a chain with an NPU test;
the branch an NPU test selects is migrated, since it runs on the NPU.  The same holds for `if`
statements beside one with an NPU test in the same block, and for conditional expressions
(`"npu" if npu_ok else "cuda"`).  Boolean expressions and collection literals that mention NPU
(`device in ("npu", "cuda")`) are left whole, and so are the CUDA values of a class whose attributes
name NPU too (`CUDA = "cuda"` beside `NPU = "npu"`), and so is an assignment to a name of CUDA's
beside one to the NPU's same name in the same block (`self.is_cuda = ...` beside `self.is_npu =
...`: the project keeps a flag per device), and so is the body of a question named for
CUDA beside a function named for NPU (`is_cuda_available` beside `is_npu_available`: the callers
ask each device) or of one that asks whether a GPU kernel can run (`_use_triton`: the NPU cannot
run it).  "Mentions NPU" is decided on tokens that mean NPU, never on a substring: a name that is
`npu` or has it as a word (`torch_npu`, `torch.npu`, `is_npu`, `use_npu`, `npu_available`,
`npu_fusion_attention`), or an "npu"/"npu:N"/"hccl" string; `input` or `args.input_val_bin`
mention no NPU.  An `if` beside an NPU-aware one in the same block is left alone only when it
tests the same device expression (`if args.device == "npu": ...` then `if args.device ==
"cuda": ...`), never merely for being its neighbour.

The decision is made once, on the original file (`guarded_spans`): what the rules write
themselves ("npu", torch_npu.npu) must not make later rules believe the user wrote it.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..reading.scan import SPELLING_ESCAPE
from .dotted_names import dotted_name
from .walk import hooks_for, walk, walk_wrapped

# The API column of the log note on code left as written because it already handles NPU.
NOTE_API = "NPU-aware code"

_NPU_STRING = re.compile(r"^(npu(:.*)?|hccl|HCCL)$")
_NPU_DEVICE = re.compile(r"^npu(:.*)?$")


def _string_value(node: cst.CSTNode):
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # malformed escapes: not something we can judge
            return None
        return value if isinstance(value, str) else None
    return None


class _MentionsNpu(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        if names_npu(node.value):
            self.found = True
        return False

    def visit_SimpleString(self, node: cst.SimpleString) -> bool:
        value = _string_value(node)
        if value is not None and _NPU_STRING.match(value.strip()):
            self.found = True
        return False

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> bool:
        if node.value.startswith("npu"):
            self.found = True
        return False

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not self.found and super().on_visit(node)


_NPU_WORD = re.compile(r"(^|_)npu(_|\d*$)", re.IGNORECASE)
_CUDA_WORD = re.compile(r"(^|_)cuda(_|\d*$)", re.IGNORECASE)
# The words of a function's name that make it a question (`is_cuda_available`, `_check_device_cuda`),
# not an action (`to_cuda`, whose callers may call it on every device)
_QUESTION_WORD = re.compile(r"(^|_)(is|has|check|available|supported|capability)(_|$)", re.IGNORECASE)
# A question whether a GPU kernel can run (trl's `_use_triton`, `_supports_trl_loss_kernel`): its
# device test lists the accelerators the kernel was written for, which the NPU is not among
_KERNEL_QUESTION = re.compile(r"(^|_)(use|uses|can|supports?|is|has|check)_(\w+_)?(triton|kernels?|cutlass)(_|$)",
                              re.IGNORECASE)
_KERNEL_QUESTION_TEXT = re.compile(r"def \w*(triton|kernel|cutlass)", re.IGNORECASE)


def names_npu(identifier: str) -> bool:
    """Whether an identifier means NPU: `npu`, or `npu` as one of its `_`-separated words."""
    return _NPU_WORD.search(identifier) is not None


def mentions_npu(node: cst.CSTNode) -> bool:
    finder = _MentionsNpu()
    walk(finder, node)
    return finder.found


def _negated(test: cst.BaseExpression) -> bool:
    """`not <npu test>` or `x != "npu"`: the branch runs where there is no NPU."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.Comparison):
        return any(isinstance(c.operator, (cst.NotEqual, cst.IsNot, cst.NotIn)) for c in test.comparisons)
    return False


def mentions_cuda(node: cst.CSTNode) -> bool:
    text = cst.Module(body=()).code_for_node(node).lower()
    return "cuda" in text or "nccl" in text


def _branches(node: cst.If):
    """(test, body) of each `if`/`elif` of a chain, and its final `else` (or None)."""
    branches = []
    current = node
    while True:
        branches.append((current.test, current.body))
        if isinstance(current.orelse, cst.If):
            current = current.orelse
            continue
        return branches, current.orelse


def is_npu_aware(node: cst.CSTNode) -> bool:
    """Whether `node` is a construct that chooses between NPU and other devices."""
    if isinstance(node, cst.If):
        return any(mentions_npu(test) for test, _ in _branches(node)[0])
    if isinstance(node, (cst.IfExp, cst.BooleanOperation)):
        return mentions_npu(node)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return any(_string_value(el.value) is not None and mentions_npu(el.value) for el in node.elements)
    if isinstance(node, cst.Dict):  # {"cuda": "nccl", "npu": "hccl"}: renaming its "cuda" key would clash
        return any(isinstance(el, cst.DictElement) and _string_value(el.key) is not None and mentions_npu(el.key)
                   for el in node.elements)
    return False


# (node type, first line, first column, last line, last column): which node of the original
# tree; lines alone would also name every other node of that type on those lines.
Span = Tuple[str, int, int, int, int]


def span_of(position, node: cst.CSTNode) -> Span:
    return (type(node).__name__, position.start.line, position.start.column, position.end.line, position.end.column)


def _compared_subjects(test: cst.BaseExpression) -> Set[str]:
    """The code of what `test` compares with a device string (`args.device` in
    `args.device == "cuda"`), through `and`/`or`/`not`."""
    if isinstance(test, cst.UnaryOperation):
        return _compared_subjects(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _compared_subjects(test.left) | _compared_subjects(test.right)
    subjects: Set[str] = set()
    if isinstance(test, cst.Comparison):
        sides = [test.left, *(c.comparator for c in test.comparisons)]
        if any(_string_value(side) is not None for side in sides):
            subjects = {cst.Module(body=()).code_for_node(side) for side in sides if _string_value(side) is None}
    return subjects


# The node classes _Guards looks at (none has subclasses: a look-up of the class stands for
# isinstance, which for libcst's abstract-based classes costs ten times more).
_LOOKED_AT = frozenset({cst.If, cst.Module, cst.IndentedBlock, cst.ClassDef, cst.IfExp, cst.BooleanOperation,
                        cst.Tuple, cst.List, cst.Set, cst.Dict, cst.Assign, cst.Comparison})


def _asks_availability(test: cst.BaseExpression) -> bool:
    """Whether a test asks whether a device is there (`torch.cuda.is_available()`,
    `is_torch_npu_available()`), not something about it."""
    return "available" in cst.Module(body=()).code_for_node(test).lower()


_CALLED = re.compile(r"\b(\w+)\s*\(")  # (\b: not tried again from inside each name: half the time)


def called_names(code: str) -> Set[str]:
    """The names a text calls (the last part: `set_rng_state` of `torch.npu.set_rng_state(...)`;
    `x.is_cuda`, an attribute, is none)."""
    return set(_CALLED.findall(code))


def _called(block: cst.CSTNode) -> Set[str]:
    return called_names(cst.Module(body=()).code_for_node(block)) - {"print"}


def _tested_names(test: cst.BaseExpression) -> Set[str]:
    """The names a test reads as booleans: `use_cuda`, `not use_cuda`, `use_cuda and fast`."""
    if isinstance(test, cst.Name):
        return {test.value}
    if isinstance(test, cst.UnaryOperation):
        return _tested_names(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _tested_names(test.left) | _tested_names(test.right)
    return set()


class _Guards(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.spans: Set[Span] = set()
        self._elifs: Set[int] = set()  # `elif` nodes: handled with the head of their chain
        # `pt_cuda_available = torch.cuda.is_available()`: the values given to single names, and
        # the names that an NPU-aware chain tests as its CUDA branch's test
        self._values: dict = {}
        self._branch_tests: dict = {}  # id of a value assigned in an `if`'s body -> the `if`'s test
        self._cuda_tests: Set[str] = set()
        self.constants: FrozenSet[str] = frozenset()  # the project's device constants it compares with "npu"

    def _add(self, node: cst.CSTNode) -> None:
        self.spans.add(span_of(self.get_metadata(PositionProvider, node), node))

    def _guard_branch(self, test: cst.BaseExpression, body: cst.CSTNode) -> None:
        self._add(test)
        self._add(body)

    def _chain(self, node: cst.If) -> None:
        branches, orelse = _branches(node)
        npu_seen = False
        for test, body in branches:
            if mentions_npu(test):
                if _negated(test):
                    self._guard_branch(test, body)
                else:
                    npu_seen = True
                    self._add(test)  # the test itself is the project's NPU logic
            elif mentions_cuda(test):
                self._guard_branch(test, body)
                self._cuda_tests |= _tested_names(test)
        if npu_seen and isinstance(orelse, cst.Else):
            self._add(orelse)

    def _constant_test(self, node: cst.If) -> bool:
        """`if DEVICE_TYPE == "cuda":` where the project compares DEVICE_TYPE with "npu" too (it
        sets it to the NPU itself): a test for NVIDIA, left with the branch it chooses there (the
        body, or for `!=` the `else`).  Also where the test is one of an `and`, or a function
        returns it (`return DEVICE_TYPE == "cuda"`: see on_visit's Comparison)."""
        comparison = next((part for part in _comparisons(node.test) if _constant_against_cuda(part, self.constants)),
                          None)
        if comparison is None:
            return False
        self._add(node.test)
        negated = isinstance(comparison.comparisons[0].operator, (cst.NotEqual, cst.NotIn))
        chosen = node.orelse if negated else node.body
        if chosen is not None:
            self._add(chosen)
        return True

    def variables_of_cuda_tests(self, wrapper: MetadataWrapper) -> None:
        """`pt_cuda_available = torch.cuda.is_available()` ... `if pt_cuda_available: <CUDA>` `elif
        pt_npu_available: <NPU>`: the chain's CUDA branch stays as written, so the variable it tests
        must keep asking CUDA too (asking the NPU, it would send the NPU into the CUDA branch)."""
        left = [value for name in self._cuda_tests for value in self._values.get(name, ())
                if mentions_cuda(value) and not mentions_npu(value)]
        # `accelerator_name = "npu"` in one branch, `accelerator_name = "cuda"` in another: the
        # variable already names the NPU where the code finds one; renamed, the CUDA branch would
        # name it too (DeepSpeed's accelerator detection)
        # ("hccl" is no such name: Habana's HPUs have a backend of that name too)
        for values in self._values.values():
            if any(_NPU_DEVICE.match(_string_value(value) or "") for value in values):
                cuda_values = [value for value in values if _string_value(value) is not None and mentions_cuda(value)]
                # (and the CUDA test that chooses it: `if torch.cuda.is_available(): name = "cuda"`)
                left.extend([*cuda_values, *(self._branch_tests[id(value)] for value in cuda_values
                                             if id(value) in self._branch_tests)])
        if left:  # (after the walk: the positions are the wrapper's)
            positions = wrapper.resolve(PositionProvider)
            self.spans.update(span_of(positions[value], value) for value in left)

    def _device_members(self, node: cst.ClassDef) -> None:
        """A class whose attributes name device types, NPU among them (`CUDA = "cuda"` beside
        `NPU = "npu"`, an Enum of RNG or device types): its CUDA values are left as written.
        Renamed, two members would hold "npu" (in an Enum the second becomes an alias of the
        first) and the CUDA member's name would no longer parse from "cuda"."""
        values = [small.value for statement in getattr(node.body, "body", ())
                  if isinstance(statement, cst.SimpleStatementLine) for small in statement.body
                  if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None
                  and _string_value(small.value) is not None]
        if any(_NPU_STRING.match(_string_value(value).strip()) for value in values):
            for value in values:
                if mentions_cuda(value):
                    self._add(value)

    def _questions_of_cuda(self, functions) -> None:
        """The functions of one block whose bodies answer for CUDA and must keep doing so:
        - a question named for CUDA beside a function named for NPU (accelerate's and
          transformers' `is_cuda_available` beside `is_npu_available`): the project asks each
          device its own question and its callers branch on the answers, so the CUDA one must
          answer for CUDA (False on an NPU machine).  An action (`to_cuda` beside `to_npu`) is
          migrated: its callers may call it on every device.
        - a question whether a GPU kernel can run (`_use_triton(device)`: `device.type in ("cuda",
          "xpu")`): renamed, its answer would send NPU tensors into Triton or CUDA kernels the NPU
          cannot run, where the original fell back to torch."""
        has_npu_twin = len(functions) > 1 and any(names_npu(function.name.value) for function in functions)
        for function in functions:
            name = function.name.value
            if ((has_npu_twin and question_of_cuda(name))
                    or (_KERNEL_QUESTION.search(name) and mentions_cuda(function.body))):
                self._add(function.body)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) not in _LOOKED_AT:  # (asked of every node of a file: most are none of these)
            return True
        if isinstance(node, cst.Comparison):
            if self.constants and _constant_against_cuda(node, self.constants):
                self._add(node)
            return True
        if isinstance(node, cst.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                self._values.setdefault(node.targets[0].target.value, []).append(node.value)
            return True
        if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))
        if isinstance(node, cst.If) and mentions_cuda(node.test):
            for statement in getattr(node.body, "body", ()):
                for small in getattr(statement, "body", ()) if isinstance(statement, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.Assign):
                        self._branch_tests[id(small.value)] = node.test
        body = getattr(node, "body", None)
        if isinstance(node, (cst.Module, cst.IndentedBlock)) and isinstance(body, (list, tuple)):
            ifs = [statement for statement in body if isinstance(statement, cst.If)]
            tested = set()  # the device expressions that NPU-aware tests of this block compare
            npu_calls: Set[str] = set()  # what the `if`s of this block that ask for the NPU call
            for statement in ifs:
                if is_npu_aware(statement):
                    tested |= _compared_subjects(statement.test)
                    if _asks_availability(statement.test):
                        npu_calls |= _called(statement.body)
            if tested or npu_calls:
                for statement in ifs:
                    if not is_npu_aware(statement) and mentions_cuda(statement.test) and (
                            _compared_subjects(statement.test) & tested
                            or (npu_calls and _asks_availability(statement.test) and _called(statement.body) & npu_calls)):
                        # (`if torch.cuda.is_available(): set_rng("CUDA", torch.cuda, ...)` beside `if
                        # is_torch_npu_available(): set_rng("NPU", torch.npu, ...)`: each device is done by
                        # its own block, the same way)
                        self._guard_branch(statement.test, statement.body)
            for assignment in _cuda_twins(body):
                self._add(assignment)
            functions = [statement for statement in body if type(statement) is cst.FunctionDef]
            if functions:
                self._questions_of_cuda(functions)
        if isinstance(node, cst.ClassDef):
            self._device_members(node)
        if isinstance(node, cst.If) and self.constants and self._constant_test(node):
            return True
        if isinstance(node, cst.If) and is_npu_aware(node) and id(node) not in self._elifs:
            self._chain(node)
        elif isinstance(node, cst.IfExp) and mentions_npu(node.test):
            self._add(node.test)
            self._add(node.body if _negated(node.test) else node.orelse)
        elif isinstance(node, (cst.BooleanOperation, cst.Tuple, cst.List, cst.Set, cst.Dict)) and is_npu_aware(node):
            self._add(node)
            return False
        return True


def _comparisons(test: cst.BaseExpression) -> List[cst.Comparison]:
    """The comparisons of a test, through `and`/`or`, `not` and parentheses."""
    if isinstance(test, cst.BooleanOperation):
        return _comparisons(test.left) + _comparisons(test.right)
    if isinstance(test, cst.UnaryOperation):
        return _comparisons(test.expression)
    return [test] if isinstance(test, cst.Comparison) else []


def _constant_against_cuda(node: cst.Comparison, constants: FrozenSet[str]) -> bool:
    """`NAME == "cuda"`, `NAME in ("cuda", "hip")` (or `!=`, `not in`) for a NAME of `constants`."""
    if not (isinstance(node.left, cst.Name) and node.left.value in constants and len(node.comparisons) == 1):
        return False
    compared = node.comparisons[0].comparator
    values = compared.elements if isinstance(compared, (cst.Tuple, cst.List, cst.Set)) else [compared]
    return any(_string_value(value.value if isinstance(value, cst.BaseElement) else value) in ("cuda", "CUDA")
               for value in values)


def _cuda_twins(body) -> List[cst.CSTNode]:
    """The assignments of a block to a name of CUDA's beside one to the NPU's same name
    (`self.is_cuda = device.type == "cuda" and torch.cuda.is_available()` beside `self.is_npu =
    device.type == "npu" and torch.npu.is_available()`): the project keeps one per device and its
    readers ask each (`if self.is_cuda: ... elif self.is_npu: ...`), so CUDA's must go on
    answering for CUDA.  Migrated, both would ask for the NPU, and CUDA's branch would take it."""
    assigned: Dict[str, cst.CSTNode] = {}
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = ([target.target for target in small.targets] if isinstance(small, cst.Assign)
                           else [small.target] if isinstance(small, cst.AnnAssign) and small.value is not None else [])
                for target in targets:
                    name = dotted_name(target)
                    if name is not None:
                        assigned.setdefault(name, small)
    return [small for name, small in assigned.items() if _CUDA_IN_NAME.search(name)
            and _CUDA_IN_NAME.sub(lambda match: _NPU_SPELLING[match.group(0)], name) in assigned]


# CUDA in a name, and how the NPU's twin of the name spells it (`is_cuda` / `is_npu`, `CUDA_OK` / `NPU_OK`)
_CUDA_IN_NAME = re.compile(r"cuda|CUDA|Cuda")
_NPU_SPELLING = {"cuda": "npu", "CUDA": "NPU", "Cuda": "Npu"}


def question_of_cuda(name: str) -> bool:
    """Whether a function's name asks about CUDA (`is_cuda_available`, `check_cuda_fp8_capability`),
    not about the NPU."""
    return bool(_CUDA_WORD.search(name) and _QUESTION_WORD.search(name)) and not names_npu(name)


def may_mention_npu(code: str) -> bool:
    """False when no name or string of `code` can mean NPU (`mentions_npu`): neither "npu" nor
    "hccl" is in its text, in any case, and no escape could spell one in a string."""
    lowered = code.lower()
    return "npu" in lowered or "hccl" in lowered or SPELLING_ESCAPE.search(code) is not None


def guarded_spans(wrapper: MetadataWrapper, *also: cst.CSTVisitor, code: str = None,
                  constants: FrozenSet[str] = frozenset()) -> FrozenSet[Span]:
    """The span of every node of the original file that is left as
    written because it only runs where there is no NPU (or is the project's own NPU test).
    `also`: other visitors of the original file, run in the same walk (a walk of a large tree
    costs more than what most visitors do in it); `code`: the file's text, where known (a text
    that mentions no NPU has no such span, and is not walked for them); `constants`: the project's
    device constants that it compares with "npu" itself (Options.npu_constants)."""
    if (not also and code is not None and not may_mention_npu(code) and not _KERNEL_QUESTION_TEXT.search(code)
            and not any(constant in code for constant in constants)):
        return frozenset()
    guards = _Guards()
    guards.constants = constants
    walk_wrapped(_together([guards, *also]) if also else guards, wrapper)
    guards.variables_of_cuda_tests(wrapper)
    return frozenset(guards.spans)


def _together(visitors) -> "_Together":
    # Metadata is resolved for what a visitor's class declares: the union, on a class of its own.
    needs = tuple({provider for visitor in visitors for provider in visitor.get_inherited_dependencies()})
    return type("_TogetherWithMetadata", (_Together,), {"METADATA_DEPENDENCIES": needs})(visitors)


class _Together(cst.CSTVisitor):
    """Several visitors in one walk; each stops looking below a node only for itself."""

    def __init__(self, visitors) -> None:
        super().__init__()
        self.visitors = list(visitors)
        self._skipping = [None] * len(self.visitors)
        # each visitor's hooks by node class, found once (as `walk` finds them): libcst's
        # on_visit / on_leave would look a `visit_<Class>` method up by name on every node
        self._hooks = [{} for _ in self.visitors]

    def _hooks_of(self, index: int, kind: type) -> tuple:
        found = self._hooks[index].get(kind)
        if found is None:
            found = self._hooks[index][kind] = hooks_for(self.visitors[index], kind)
        return found

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            for visitor in self.visitors:
                visitor.metadata = self.metadata
        kind = type(node)
        for index in range(len(self.visitors)):
            if self._skipping[index] is None:
                visit, _, visit_is_hook = self._hooks_of(index, kind)
                if visit is not None and (visit(node) is False if visit_is_hook else not visit(node)):
                    self._skipping[index] = node
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        kind = type(original_node)
        for index in range(len(self.visitors)):
            skip_root = self._skipping[index]
            if skip_root is None or skip_root is original_node:
                self._skipping[index] = None
                leave = self._hooks_of(index, kind)[1]
                if leave is not None:
                    leave(original_node)


def guarded_types(spans: FrozenSet[Span]) -> FrozenSet[str]:
    return frozenset(span[0] for span in spans)
