"""The library's own index (analyse/index.py) answers where a call goes where a plain reading is
certain, and leaves the rest (None) to jedi.  Each case is a small library; the call asked about
is the one on the line marked `# <-`.  Where the index answers, jedi must answer no more (checked
on every case and on the fancylib fixture)."""
import textwrap
from types import SimpleNamespace
from pathlib import Path
from typing import Dict

import pytest

from gpu2npu.analyse.call_graph import _ask_jedi, _by_file
from gpu2npu.analyse.index import Index
from gpu2npu.analyse.library import Library

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "libraries" / "fancylib"


@pytest.fixture(autouse=True)
def jedi_takes_its_time(monkeypatch):
    """jedi's answers here are compared whole: the analysis's limit per call site (2 s of wall
    time) is not for a machine whose first inference loads jedi's own stubs under load (CI)."""
    from gpu2npu.analyse import call_graph

    monkeypatch.setattr(call_graph, "JEDI_SECONDS", 120.0)

LAYERS = """
class Attention:
    def forward(self, x):
        return x

class Mlp:
    def forward(self, x):
        return x

def create_block(dim):
    return Attention()

def helper(x):
    return x
"""


def build(tmp_path: Path, files: Dict[str, str]) -> Library:
    root = tmp_path / "lib"
    for name, text in {"__init__.py": "", "layers.py": LAYERS, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return Library(root, sorted(root.rglob("*.py")))


def marked_site(library: Library, path: str):
    text = (library.root / path).read_text().splitlines()
    line = next(number for number, content in enumerate(text, 1) if "# <-" in content)
    sites = [site for site in library.calls if site.path == path and site.line == line]
    return max(sites, key=lambda site: site.column)  # the outermost call's last name stands last


def answer(library: Library, path: str):
    site = marked_site(library, path)
    index = Index(library.indexes, library.definitions, library.module_of)
    return index.targets(library.module_of(path), site.line, site.column)


def jedi_answer(library: Library, path: str):
    site = marked_site(library, path)
    found, _ = _ask_jedi(library, (), {site.path: [(site.line, site.column)]}, 1, lambda *_: None)
    return sorted(found.get(f"{site.path}:{site.line}:{site.column}", []))


class TestAnsweredFromTheSource:
    """Certain readings: answered without jedi, and jedi agrees."""

    CASES = {
        "imported function": ("from .layers import helper\ndef f(x):\n    return helper(x)  # <-\n",
                              [("function", "layers.py", 13, "helper")]),
        "class through a module alias": ("from . import layers as L\ndef f():\n    return L.Mlp()  # <-\n",
                                         [("class", "layers.py", 6, "Mlp")]),
        "attribute assigned an instance": (
            "from .layers import Attention\nclass Net:\n    def __init__(self):\n        self.attn = Attention()\n"
            "    def forward(self, x):\n        return self.attn(x)  # <-\n",
            [("instance", "layers.py", 2, "Attention")]),
        "method through self": (
            "class Net:\n    def mix(self, x):\n        return x\n    def forward(self, x):\n        return self.mix(x)  # <-\n",
            [("function", "model.py", 2, "mix")]),
        "method inherited from a library base": (
            "from .layers import Mlp\nclass Net(Mlp):\n    def run(self, x):\n        return self.forward(x)  # <-\n",
            [("function", "layers.py", 7, "forward")]),
        "super()": (
            "from .layers import Mlp\nclass Net(Mlp):\n    def forward(self, x):\n        return super().forward(x)  # <-\n",
            [("function", "layers.py", 7, "forward")]),
        "a builder's return": (
            "from .layers import create_block\nclass Net:\n    def __init__(self):\n        self.block = create_block(4)\n"
            "    def forward(self, x):\n        return self.block(x)  # <-\n",
            [("instance", "layers.py", 2, "Attention")]),
        "partial of a class": (
            "from functools import partial\nfrom .layers import Mlp\nclass Net:\n    def __init__(self):\n"
            "        make = partial(Mlp)\n        self.mlp = make()\n    def forward(self, x):\n        return self.mlp(x)  # <-\n",
            [("instance", "layers.py", 6, "Mlp")]),
        "a value read from a dict literal": (
            "from .layers import Mlp, Attention\nTABLE = {'a': Attention, 'm': Mlp}\nclass Net:\n"
            "    def __init__(self, kind):\n        self.layer = TABLE[kind]()\n"
            "    def forward(self, x):\n        return self.layer(x)  # <-\n",
            [("instance", "layers.py", 2, "Attention"), ("instance", "layers.py", 6, "Mlp")]),
        "a setter's argument is not what the constructor assigned": (
            "from .layers import Mlp\nclass Net:\n    def __init__(self):\n        self.mlp = Mlp()\n"
            "    def set_mlp(self, mlp):\n        self.mlp = mlp\n"
            "    def forward(self, x):\n        return self.mlp(x)  # <-\n",
            [("instance", "layers.py", 6, "Mlp")]),
        "a class updated by hand as a decorator would": (
            "from .layers import helper\nclass Auto:\n    @classmethod\n    def build(cls):\n        return helper(1)\n"
            "Auto = helper(Auto)\ndef f():\n    return Auto.build()  # <-\n",
            [("function", "model.py", 4, "build")]),
        "an item of a registry object": (
            "class Registry:\n    def __getitem__(self, key):\n        return key\nACTS = Registry()\n"
            "class Net:\n    def __init__(self):\n        self.act = ACTS['gelu']\n"
            "    def forward(self, x):\n        return self.act(x)  # <-\n", []),
        "a method of a local object of unknown type": (
            "def helper(x):\n    return x\ndef f(tensor):\n    y = tensor * 2\n    return y.helper()  # <-\n", []),
        "a builtin": ("def helper(x):\n    return x\ndef f(x):\n    return len(x)  # <-\n", []),
        "an outside package": ("import torch\ndef helper(x):\n    return x\ndef f(x):\n    return torch.helper(x)  # <-\n", []),
    }

    @pytest.mark.parametrize("case", sorted(CASES))
    def test_answer(self, tmp_path, case):
        text, expected = self.CASES[case]
        library = build(tmp_path, {"model.py": text})
        assert answer(library, "model.py") == expected
        assert set(jedi_answer(library, "model.py")) <= set(expected)


class TestLeftToJedi:
    """Shadows and values this reading does not follow: None, so that jedi is asked."""

    CASES = {
        "a parameter (callers may pass another class)": (
            "from .layers import Mlp\nclass Net:\n    def __init__(self, layer=Mlp):\n        self.layer = layer()\n"
            "    def forward(self, x):\n        return self.layer(x)  # <-\n"),
        "a name bound twice": (
            "try:\n    from .layers import helper\nexcept ImportError:\n    helper = None\n"
            "def f(x):\n    return helper(x)  # <-\n"),
        "a dataclass field's default": (
            "from dataclasses import dataclass\nfrom .layers import Mlp\n@dataclass\nclass Fns:\n    mlp: type = Mlp\n"
            "def f(fns: Fns):\n    return Fns().mlp()  # <-\n"),
        "a class updated by a function that may return another": (
            "from .layers import Mlp\ndef f():\n    return Mlp\nMlp2 = Mlp\nMlp2 = f()\n"
            "def g():\n    return Mlp2()  # <-\n"),
    }

    @pytest.mark.parametrize("case", sorted(CASES))
    def test_left(self, tmp_path, case):
        library = build(tmp_path, {"model.py": self.CASES[case]})
        assert answer(library, "model.py") is None


class TestScopes:
    """Names mean what Python's scopes say."""

    def test_a_local_shadow_is_not_the_import(self, tmp_path):
        library = build(tmp_path, {"model.py": "from .layers import helper\ndef f(helper):\n    return helper(1)  # <-\n"})
        assert answer(library, "model.py") is None

    def test_a_closure_over_an_import_is_the_import(self, tmp_path):
        library = build(tmp_path, {"model.py": "from .layers import helper\ndef f():\n    def g(x):\n"
                                               "        return helper(x)  # <-\n    return g\n"})
        assert answer(library, "model.py") == [("function", "layers.py", 13, "helper")]

    def test_a_class_body_name_is_not_seen_from_its_methods(self, tmp_path):
        library = build(tmp_path, {"model.py": "from .layers import helper\nclass Net:\n    helper = None\n"
                                               "    def forward(self, x):\n        return helper(x)  # <-\n"})
        assert answer(library, "model.py") == [("function", "layers.py", 13, "helper")]

    def test_a_package_name_wins_over_its_submodule(self, tmp_path):
        library = build(tmp_path, {"blocks/__init__.py": "from .mlp import mlp\n",
                                   "blocks/mlp.py": "def mlp(x):\n    return x\n",
                                   "model.py": "from .blocks import mlp\ndef f(x):\n    return mlp(x)  # <-\n"})
        assert answer(library, "model.py") == [("function", "blocks/mlp.py", 1, "mlp")]

    def test_a_decorated_function_is_the_function(self, tmp_path):
        library = build(tmp_path, {"model.py": "def wrap(fn):\n    def run(*a):\n        return fn(*a)\n    return run\n"
                                               "@wrap\ndef export(x):\n    return x\ndef f(x):\n    return export(x)  # <-\n"})
        assert answer(library, "model.py") == [("function", "model.py", 6, "export")]


    def test_a_comprehension_variable_is_the_comprehensions_own(self, tmp_path):
        library = build(tmp_path, {"model.py": "from .layers import helper\ndef f(fns):\n"
                                               "    calls = [helper() for helper in fns]\n    return helper(calls)  # <-\n"})
        assert answer(library, "model.py") == [("function", "layers.py", 13, "helper")]
        library = build(tmp_path / "inside", {"model.py": "from .layers import helper\ndef f(fns):\n"
                                                          "    return [helper(1) for helper in fns]  # <-\n"})
        assert answer(library, "model.py") is None

    def test_a_walrus_in_a_comprehension_binds_the_function_variable(self, tmp_path):
        library = build(tmp_path, {"model.py": "from .layers import helper\ndef f(xs):\n"
                                               "    found = [helper := x for x in xs]\n    return helper(found)  # <-\n"})
        assert answer(library, "model.py") is None

    def test_a_nonlocal_name_is_the_enclosing_functions_variable(self, tmp_path):
        library = build(tmp_path, {"model.py": "from .layers import helper\ndef f(make):\n    helper = make()\n"
                                               "    def g(x):\n        nonlocal helper\n        helper = make()\n"
                                               "        return helper(x)  # <-\n    return g\n"})
        assert answer(library, "model.py") is None

    def test_a_module_name_a_function_rebinds_by_global_is_not_certain(self, tmp_path):
        library = build(tmp_path, {"model.py": "from .layers import helper\ndef use_fast(fast):\n"
                                               "    global helper\n    helper = fast\n"
                                               "def f(x):\n    return helper(x)  # <-\n"})
        assert answer(library, "model.py") is None


class TestOneAnswerWithTheMigration:
    """Whether `helper` at the marked call is the import `from .layers import helper`: the
    migration's reading (reading/scopes.py, which every rule and finding asks) and the library
    index answer alike where a name has one binding in its scope.  (Where a scope binds a name
    twice, the migration takes the import, the alternatives being its stand-ins; the index leaves
    the call to jedi, which follows both.)"""

    CASES = {
        "parameter": "def f(helper):\n    return helper(1)  # <-\n",
        "local": "def f(make):\n    helper = make()\n    return helper(1)  # <-\n",
        "closure": "def f():\n    def g(x):\n        return helper(x)  # <-\n    return g\n",
        "loop variable": "def f(fns):\n    for helper in fns:\n        helper(1)  # <-\n",
        "comprehension variable": "def f(fns):\n    return [helper(1) for helper in fns]  # <-\n",
        "after a comprehension": "def f(fns):\n    calls = [helper for helper in fns]\n    return helper(calls)  # <-\n",
        "lambda parameter": "run = lambda helper: helper(1)  # <-\n",
        "class attribute": "class Net:\n    helper = None\n    def forward(self, x):\n        return helper(x)  # <-\n",
        "import inside a function": "def f(x):\n    from .layers import create_block as helper\n    return helper(x)  # <-\n",
        "except target": "def f():\n    try:\n        pass\n    except Exception as helper:\n        helper(1)  # <-\n",
        "module level": "def f(x):\n    return helper(x)  # <-\n",
    }

    @pytest.mark.parametrize("case", sorted(CASES))
    def test_same_answer(self, tmp_path, case):
        import ast

        from gpu2npu.reading.scan import nodes_by_class
        from gpu2npu.reading.scopes import Scopes

        text = "from .layers import helper\n" + self.CASES[case]
        library = build(tmp_path, {"model.py": text})
        line = next(number for number, content in enumerate(text.splitlines(), 1) if "# <-" in content)
        tree = ast.parse(text)
        scopes = Scopes.of(tree, nodes_by_class(tree))
        reads = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "helper"
                 and node.lineno == line and isinstance(node.ctx, ast.Load)]
        called = min(reads, key=lambda node: node.col_offset)
        meaning = scopes.of_node(called) if scopes is not None else frozenset({".layers.helper"})
        migration_says_import = meaning == frozenset({".layers.helper"})
        targets = answer(library, "model.py")
        index_says_import = targets == [("function", "layers.py", 13, "helper")]
        assert migration_says_import == index_says_import, (meaning, targets)
        assert index_says_import == (case in ("closure", "class attribute", "after a comprehension", "module level"))


def test_jedi_agrees_with_every_answer_of_the_index_on_a_library():
    library = Library(FIXTURE, sorted(FIXTURE.rglob("*.py")))
    index = Index(library.indexes, library.definitions, library.module_of)
    sites = [site for site in library.calls if library.worth_resolving(site)]
    answered = {(site.path, site.line, site.column): index.targets(library.module_of(site.path), site.line, site.column)
                for site in sites}
    certain = {position: targets for position, targets in answered.items() if targets is not None}
    assert len(certain) >= len(sites) * 0.8, "the index answers most call sites of a plain library"
    jedi, _ = _ask_jedi(library, (), _by_file(sorted(certain)), 1, lambda *_: None)
    for position, targets in certain.items():
        assert set(jedi.get("%s:%d:%d" % position, [])) <= set(targets), position


def test_jedi_is_asked_within_its_time_and_a_rerun_goes_on_from_the_cache(tmp_path):
    import subprocess
    import sys

    library = build(tmp_path, {"model.py": TestLeftToJedi.CASES["a parameter (callers may pass another class)"]})
    cache = tmp_path / "cache"

    def analyse(*more):
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        done = subprocess.run([sys.executable, "-m", "gpu2npu", "analyse", "-i", str(library.root), "-o", str(out),
                               "-v", "2.1.0", "-m", "third_party", "-j", "1", "--cache-dir", str(cache), *more],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "1 call site not asked: --jedi-seconds 0 ran out" in analyse("--jedi-seconds", "0")
    first = analyse()
    assert "not asked" not in first and "1 by jedi" in first
    assert "the answers of 1 file from the cache" in analyse()


def test_the_call_sites_jedi_did_not_reach_are_those_after_its_time_ran_out(tmp_path, monkeypatch):
    from gpu2npu.analyse import call_graph

    library = build(tmp_path, {"model.py": "def f(x, layer):\n    n = len(x)\n    return layer(n)\n"})
    sites = sorted((site.line, site.column) for site in library.calls if site.path == "model.py")
    assert len(sites) == 2
    call_graph._init(str(library.root), str(library.import_root), [])
    clock = iter([0.0, 0.0, 10.0])  # the file's start and its first call site in time, the second not
    monkeypatch.setattr(call_graph, "time", SimpleNamespace(time=lambda: next(clock)))
    path, answers, not_reached = call_graph._resolve_file(("model.py", sites, 5.0))
    # the first was asked (jedi places `len` outside the library: no answer), only the second was not
    assert (path, answers, not_reached) == ("model.py", {}, sites[1:])
