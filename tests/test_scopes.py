"""A name stands for an import only where Python's scopes say it does: the migration, `check`,
`analyse -m torch_apis` and the `-r` rules answer alike.

Each class is one way a name is bound again (or reached) in an inner scope.  `LEFT` holds code
whose names are not the import there: the migration must leave it as written and no report may
speak of it.  `MIGRATED` holds (before, after): code where the name is the import."""
import ast
import json


from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.rules import Options
from gpu2npu.reading.scan import FileScan
from gpu2npu.reading.scopes import Scopes

from helpers import read_csv, run_cli

OPTIONS = Options(api=apidata.load("2.1.0"))
HEADER = "import torch\nfrom torch import cuda\nimport torch._inductor.config as config\n\n"


def migrated(body: str):
    source = HEADER + body
    result = migrate_source(source.encode(), "f.py", OPTIONS)
    return (result.output or source.encode()).decode(), result


def body_of(output: str) -> str:
    """The migrated body, without the header and the `import torch_npu` it may receive."""
    return output.replace("import torch_npu\n", "", 1)[len(HEADER):]


class ScopeCases:
    LEFT = ()
    MIGRATED = ()

    def test_left_as_written_and_unreported(self):
        for body in self.LEFT:
            output, result = migrated(body)
            assert body_of(output) == body, body
            assert not result.changes, (body, result.changes)
            # a local named torch that reads torch.cuda may hold the module: said (NPU923), not edited
            expected = {"NPU923"} if "torch.cuda." in body else set()
            assert {finding.rule for finding in result.findings} == expected, (body, result.findings)

    def test_migrated_where_the_name_is_the_import(self):
        for before, after in self.MIGRATED:
            output, result = migrated(before)
            assert body_of(output) == after, before
            assert result.changes


class TestParameters(ScopeCases):
    LEFT = (
        "def memory_of(cuda):\n    return cuda.memory_allocated()\n",
        "def sync_all(torch):\n    torch.cuda.synchronize()\n",
        "def f(*, cuda=None):\n    return cuda.device_count()\n",
        "def f(*cuda):\n    return cuda.device_count()\n",
        "def f(**cuda):\n    return cuda.device_count()\n",
        "run = lambda cuda: cuda.synchronize()\n",
        "async def f(torch):\n    await torch.cuda.synchronize()\n",
    )
    MIGRATED = (
        # a default value is read where the function is defined
        ("def f(n=cuda.device_count()):\n    return n\n", "def f(n=torch_npu.npu.device_count()):\n    return n\n"),
        # a parameter of another function does not shadow the import here
        ("def f(cuda):\n    return cuda\n\ndef g():\n    return cuda.device_count()\n",
         "def f(cuda):\n    return cuda\n\ndef g():\n    return torch_npu.npu.device_count()\n"),
    )


class TestLocals(ScopeCases):
    LEFT = (
        "def f(items):\n    cuda = items[0]\n    return cuda.memory_allocated()\n",
        # bound after the read: still the function's own name (Python raises UnboundLocalError)
        "def f(items):\n    n = cuda.memory_allocated()\n    cuda = items\n    return n\n",
        "def f(item):\n    with item as cuda:\n        cuda.synchronize()\n",
        "def f(items):\n    try:\n        pass\n    except Exception as cuda:\n        cuda.synchronize()\n",
        "def f(items):\n    if (cuda := items[0]):\n        cuda.synchronize()\n",
        "def f():\n    def cuda():\n        pass\n    cuda.synchronize = 1\n    return cuda.synchronize\n",
        "def f(x):\n    match x:\n        case [cuda]:\n            cuda.synchronize()\n",
    )
    MIGRATED = (
        ("def f():\n    n = cuda.memory_allocated()\n    return n\n",
         "def f():\n    n = torch_npu.npu.memory_allocated()\n    return n\n"),
    )


class TestComprehensionAndLoopVariables(ScopeCases):
    LEFT = (
        "def f(items):\n    return [cuda.device for cuda in items]\n",
        "def f(items):\n    return {cuda.device: 1 for cuda in items}\n",
        "def f(items):\n    return list(cuda.synchronize() for cuda in items)\n",
        "def f(items):\n    for cuda in items:\n        cuda.synchronize()\n",
        "def f(items):\n    for torch in items:\n        torch.cuda.synchronize()\n",
    )
    MIGRATED = (
        # the first iterable is read outside the comprehension
        ("def f():\n    return [d for d in range(cuda.device_count())]\n",
         "def f():\n    return [d for d in range(torch_npu.npu.device_count())]\n"),
        # a comprehension variable does not leak out of it
        ("def f(items):\n    names = [cuda for cuda in items]\n    return cuda.device_count()\n",
         "def f(items):\n    names = [cuda for cuda in items]\n    return torch_npu.npu.device_count()\n"),
    )


class TestClassAttributes(ScopeCases):
    LEFT = (
        # llm.c's GPT: `config` is the parameter, not torch._inductor.config
        "class GPT:\n    def __init__(self, config):\n        self.n_embd = config.n_embd\n"
        "        self.vocab = config.vocab_size\n        config.coordinate_descent_tuning = True\n",
        "class A:\n    cuda = None\n    x = cuda.synchronize\n",
    )
    MIGRATED = (
        # a method does not see its class body: `cuda` there is the module's import
        ("class A:\n    cuda = None\n\n    def f(self):\n        return cuda.device_count()\n",
         "class A:\n    cuda = None\n\n    def f(self):\n        return torch_npu.npu.device_count()\n"),
    )


class TestImportsInsideFunctions(ScopeCases):
    LEFT = (
        # `c` is imported in another function only
        "def f():\n    from torch import cuda as c\n    return 1\n\ndef g(c):\n    return c.is_available()\n",
    )
    MIGRATED = (
        ("def f():\n    from torch import cuda as c\n    return c.is_available()\n",
         "def f():\n    from torch import cuda as c\n    return torch_npu.npu.is_available()\n"),
        # an import in the function wins over an alternative binding in it
        ("def f():\n    try:\n        from torch import cuda as c\n    except ImportError:\n        c = None\n"
         "    return c.is_available()\n",
         "def f():\n    try:\n        from torch import cuda as c\n    except ImportError:\n        c = None\n"
         "    return torch_npu.npu.is_available()\n"),
    )


class TestClosures(ScopeCases):
    LEFT = (
        "def outer(cuda):\n    def inner():\n        return cuda.current_device()\n    return inner\n",
        "def outer():\n    cuda = 1\n    def inner():\n        nonlocal cuda\n        return cuda.current_device()\n"
        "    return inner\n",
    )
    MIGRATED = (
        ("def outer():\n    def inner():\n        return cuda.current_device()\n    return inner\n",
         "def outer():\n    def inner():\n        return torch_npu.npu.current_device()\n    return inner\n"),
        ("def f():\n    global cuda\n    cuda = None\n\ndef g():\n    return cuda.device_count()\n",
         "def f():\n    global cuda\n    cuda = None\n\ndef g():\n    return torch_npu.npu.device_count()\n"),
    )


class TestModuleAlternatives(ScopeCases):
    # at module level an import wins over the other bindings of its name: they are its fallbacks
    MIGRATED = (
        ("try:\n    from torch import cuda as c\nexcept ImportError:\n    c = None\nc.synchronize()\n",
         "try:\n    from torch import cuda as c\nexcept ImportError:\n    c = None\ntorch_npu.npu.synchronize()\n"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch import cuda as c\n\ndef f():\n"
         "    return c.is_available()\n",
         "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch import cuda as c\n\ndef f():\n"
         "    return torch_npu.npu.is_available()\n"),
    )


class TestBlocksThatBindTheNameAtTheTop(ScopeCases):
    # in the body of a loop, `with` or `except` that binds the name, the name is what they bound,
    # at the top of the file too (where the import wins elsewhere)
    LEFT = (
        "for cuda in devices:\n    cuda.synchronize()\n",
        "for torch in items:\n    torch.cuda.synchronize()\n",
        "for i, cuda in enumerate(devices):\n    print([cuda.name for _ in range(i)])\n",
        "with open('x') as cuda:\n    cuda.read()\n",
        "try:\n    pass\nexcept Exception as cuda:\n    cuda.synchronize()\n",
    )
    MIGRATED = (
        # after the loop, and in a function defined in its body (called later), the import wins
        ("for cuda in devices:\n    pass\ncuda.synchronize()\n", "for cuda in devices:\n    pass\ntorch_npu.npu.synchronize()\n"),
        ("for cuda in devices:\n    def f():\n        return cuda.device_count()\n",
         "for cuda in devices:\n    def f():\n        return torch_npu.npu.device_count()\n"),
        # the loop's iterable is read before it binds
        ("for d in range(cuda.device_count()):\n    pass\n", "for d in range(torch_npu.npu.device_count()):\n    pass\n"),
    )


def test_non_ascii_lines_find_their_names():
    # ast counts columns in UTF-8 bytes, libcst in characters: "é" shifts one from the other
    output, _ = migrated('def f(cuda):\n    s = "é"; return cuda.synchronize()\n\ndef g():\n'
                         '    s = "é"; return cuda.synchronize()\n')
    assert body_of(output) == ('def f(cuda):\n    s = "é"; return cuda.synchronize()\n\ndef g():\n'
                               '    s = "é"; return torch_npu.npu.synchronize()\n')


def test_the_file_wide_table_serves_files_without_a_name_bound_again():
    tree = ast.parse("import torch\nfrom torch import cuda\ncuda.synchronize()\ndef f(x):\n    return x\n")
    assert FileScan(tree).imports.scopes is None
    tree = ast.parse("import torch\ndef f(torch):\n    return torch\n")
    assert FileScan(tree).imports.scopes is not None


LLM_C_STYLE = HEADER + (
    "class GPT(torch.nn.Module):\n"
    "    def __init__(self, config):\n"
    "        super().__init__()\n"
    "        self.config = config\n"
    "        self.lm_head = torch.nn.Linear(config.n_embd, config.vocab_size)\n"
    "\n"
    "def memory_of(cuda):\n"
    "    return cuda.memory_allocated()\n"
    "\n"
    "config.coordinate_descent_tuning = True\n"
    "x = torch.zeros(1).cuda()\n"
    "cuda.synchronize()\n"
)


def test_check_analyse_and_migration_give_the_same_rows(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train_gpt2.py").write_text(LLM_C_STYLE, encoding="utf-8")
    checked = run_cli("check", "-v", "2.1.0", "--format", "json", "--no-cache", str(project))
    findings = json.loads(checked.stdout)["findings"]
    by_check = sorted((f["start_line"], f["rule"]) for f in findings)
    # the .cuda() and the synchronize (the module-level inductor setting is a note in the log, which
    # check does not count, NPU928): nothing in the class or the function whose parameters shadow the imports
    assert [line for line, _ in by_check] == [15, 16], findings
    assert not any("n_embd" in f["message"] or "vocab_size" in f["message"] for f in findings)

    out = tmp_path / "out"
    assert run_cli("-i", str(project), "-o", str(out), "-v", "2.1.0", "--no-cache").exit_code == 0
    analysed = tmp_path / "analysed"
    assert run_cli("analyse", "-i", str(project), "-o", str(analysed), "-v", "2.1.0", "--no-cache").exit_code == 0
    for name in ("change_list.csv", "unsupported_api.csv", "unknown_api.csv"):
        migration_rows = read_csv(out / "project_msft" / name)
        analysis_rows = read_csv(analysed / "project_analysis" / name)
        assert migration_rows == analysis_rows, name
    reported = {(int(row["Start Line"]), row["Rule"])
                for name in ("change_list.csv", "unsupported_api.csv") for row in read_csv(out / "project_msft" / name)
                if row.get("Rule") != "NPU001"}  # (the inserted `import torch_npu` answers every finding)
    assert reported == set(by_check)


def test_custom_rules_and_the_built_in_rules_resolve_alike(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": {"FuncNameModifyRule": [
        {"old_name": "torch.cuda.memory_allocated", "new_name": "torch.cuda.memory_reserved"}]}}),
        encoding="utf-8")
    source = tmp_path / "src"
    source.mkdir()
    (source / "m.py").write_text(HEADER + "def f(cuda):\n    return cuda.memory_allocated()\n\n"
                                 "def g():\n    return cuda.memory_allocated()\n", encoding="utf-8")
    out = tmp_path / "out"
    done = run_cli("-i", str(source), "-o", str(out), "-v", "2.1.0", "-r", str(rules), "--no-cache")
    assert done.exit_code == 0, done.output
    text = (out / "src_msft" / "m.py").read_text(encoding="utf-8")
    assert "def f(cuda):\n    return cuda.memory_allocated()\n" in text
    assert "def g():\n    return torch_npu.npu.memory_reserved()\n" in text


# -- the regions against a walk of the tree ---------------------------------------------------
# Scopes places each name by the region of the text it stands in; a walk of the tree, entering
# each scope as Python does, must put every name in the same scope.

def _walked_meanings(tree, names):
    """id(Name) -> what it stands for, found by walking the tree scope by scope."""
    import gpu2npu.reading.scopes as s

    module = s._Scope(s._MODULE, None)
    everyone = [module]
    reads, binds, todo = [], [], [(tree, module, frozenset())]
    while todo:
        node, scope, blocked = todo.pop()  # blocked: names the loops, withs, excepts around bind
        kind = node.__class__
        if kind is ast.Name:
            if node.id in names:
                (reads.append((node, scope, blocked)) if isinstance(node.ctx, ast.Load) else (scope.bind(node.id), binds.append(node)))
            continue
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            inner = s._Scope(s._FUNCTION, scope)
            everyone.append(inner)
            todo += [(d, scope, blocked) for d in (*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None])]
            for argument in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg):
                if argument is not None:
                    inner.bind(argument.arg)
                    if argument.annotation is not None:
                        todo.append((argument.annotation, scope, blocked))
            if kind is ast.Lambda:
                todo.append((node.body, inner, frozenset()))
                continue
            scope.bind(node.name)
            todo += [(d, scope, blocked) for d in node.decorator_list] + ([(node.returns, scope, blocked)] if node.returns else [])
            todo += [(statement, inner, frozenset()) for statement in node.body]
            continue
        if kind is ast.ClassDef:
            scope.bind(node.name)
            inner = s._Scope(s._CLASS, scope)
            everyone.append(inner)
            todo += [(part, scope, blocked) for part in (*node.decorator_list, *node.bases, *node.keywords)]
            todo += [(statement, inner, frozenset()) for statement in node.body]
            continue
        if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            inner = s._Scope(s._COMPREHENSION, scope)
            everyone.append(inner)
            todo.append((node.generators[0].iter, scope, blocked))
            for number, generator in enumerate(node.generators):
                todo += [(generator.target, inner, blocked)] + [(c, inner, blocked) for c in generator.ifs]
                if number:
                    todo.append((generator.iter, inner, blocked))
            todo += [(p, inner, blocked) for p in ((node.key, node.value) if kind is ast.DictComp else (node.elt,))]
            continue
        if kind is ast.NamedExpr:
            target = scope
            while target.kind == s._COMPREHENSION:
                target = target.parent
            todo += [(node.target, target, blocked), (node.value, scope, blocked)]
            continue
        if kind in (ast.Import, ast.ImportFrom):
            for name, bound in s.import_bindings(node):
                if name in names:
                    scope.imports.setdefault(name, set()).add(bound)
            continue
        if kind in (ast.Global, ast.Nonlocal):
            (scope.globals if kind is ast.Global else scope.nonlocals).update(node.names)
            continue
        if kind is ast.ExceptHandler and node.name:
            scope.bind(node.name)
        elif kind.__name__ in ("MatchAs", "MatchStar") and node.name:
            scope.bind(node.name)
        elif kind.__name__ == "MatchMapping" and node.rest:
            scope.bind(node.rest)
        if kind in (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith) or (kind is ast.ExceptHandler and node.name):
            if kind is ast.ExceptHandler:
                bound = {node.name}
            else:
                targets = [node.target] if kind in (ast.For, ast.AsyncFor) else [i.optional_vars for i in node.items]
                bound = {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}
            todo += [(statement, scope, blocked | bound) for statement in node.body]
            todo += [(part, scope, blocked) for field in node._fields if field != "body"
                     for part in (getattr(node, field) if isinstance(getattr(node, field), list) else [getattr(node, field)])
                     if isinstance(part, ast.AST)]
            continue
        for field in node._fields:
            value = getattr(node, field, None)
            for item in (value if isinstance(value, list) else [value]):
                if isinstance(item, ast.AST):
                    todo.append((item, scope, blocked))
    for scope in everyone[1:]:
        for name in scope.globals & scope.imports.keys():
            module.imports.setdefault(name, set()).update(scope.imports.pop(name))
    looker = Scopes.__new__(Scopes)
    looker._module = module
    meanings = {id(node): frozenset() for node in binds}
    meanings.update({id(node): frozenset() if node.id in blocked else looker._lookup(node.id, scope)
                     for node, scope, blocked in reads})
    return meanings


def _sources():
    from helpers import ROOT

    for folder in ("fixtures", "tests", "src"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.read_bytes()
    for case in (TestParameters, TestLocals, TestComprehensionAndLoopVariables, TestClassAttributes,
                 TestImportsInsideFunctions, TestClosures, TestModuleAlternatives, TestBlocksThatBindTheNameAtTheTop):
        for body in (*case.LEFT, *(before for before, _ in case.MIGRATED)):
            yield (HEADER + body).encode()
    yield (b"import torch\nf = lambda torch: [torch for torch in (lambda: torch)()]\n"
           b"g = [x for x in (lambda torch: torch)(torch)]\n@torch.jit.script\ndef h(torch=torch):\n    return torch\n"
           b"k = [torch for torch in torch.arange(3)]\n")


def test_regions_agree_with_a_walk_of_the_tree():
    from gpu2npu.reading.scan import nodes_by_class

    compared = 0
    for data in _sources():
        try:
            tree = ast.parse(data)
        except SyntaxError:
            continue
        groups = nodes_by_class(tree)
        scopes = Scopes.of(tree, groups, data=data)
        if scopes is None:
            continue
        walked = _walked_meanings(tree, scopes.names)
        for node in groups.get(ast.Name, ()):
            if node.id in scopes.names:
                assert scopes.of_node(node) == walked[id(node)], (data[:80], node.lineno, node.col_offset, node.id)
                compared += 1
    assert compared > 200


def test_reports_read_a_local_named_as_its_module_as_that_module_and_the_rules_do_not():
    # `torch = _torch()`: a lazy import handed back by a helper, as real code writes it
    source = ("import torch._inductor.config as config\n\n\ndef _torch():\n    import torch\n    return torch\n\n\n"
              "def build(model):\n    torch = _torch()\n    model = torch.compile(model)\n"
              "    torch.cuda.synchronize()\n    return model\n\n\n"
              "def shape(config):\n    return config.n_embd\n")
    result = migrate_source(source.encode(), "f.py", OPTIONS)
    assert not result.changes  # nothing edited through the local
    rows = {(finding.start_line, finding.rule) for finding in result.findings}
    assert (11, "NPU905") in rows and (12, "NPU923") in rows, rows
    assert not any(line >= 15 for line, _ in rows), rows  # the parameter `config` is no inductor setting


def test_a_local_torch_reaching_a_cuda_api_without_an_npu_form_gets_that_apis_row_only():
    source = "import torch\n\n\ndef mark(torch):\n    torch.cuda.nvtx.range_push('step')\n"
    result = migrate_source(source.encode(), "f.py", OPTIONS)
    assert not result.changes
    assert [(f.start_line, f.rule, f.api) for f in result.findings] == [(5, "NPU917", "torch.cuda.nvtx.range_push")]


def test_a_device_test_guarding_cuda_only_code_through_a_local_torch_is_left_as_written():
    # the test is not switched to the NPU: its body would call the CUDA-only capability there
    source = ("import torch\n\n\ndef _torch():\n    import torch\n    return torch\n\n\n"
              "def pick(device):\n    torch = _torch()\n    if getattr(device, 'type', None) == 'cuda':\n"
              "        major, _ = torch.cuda.get_device_capability()\n        return major\n    return 0\n")
    result = migrate_source(source.encode(), "f.py", OPTIONS)
    assert not result.changes, result.changes
    assert {(f.start_line, f.rule) for f in result.findings} == {(11, "NPU914"), (12, "NPU917")}
