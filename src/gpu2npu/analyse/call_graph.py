"""Who calls whom inside a library.

The library's own index (index.py) answers the call sites a plain reading of the source is
certain of: most of them.  jedi is asked the rest, where it can follow what that reading leaves
open (a parameter's value, through the calls that pass it).  jedi is slow (from milliseconds to
seconds a call site on a large library, whose modules it follows from one to the next), so it is
asked only about call sites that can lead into the library, file by file from a pool of
processes, with nothing but the library (and `-env` folders) on its path, within a time the user
sets (--jedi-seconds; JEDI_SECONDS a call site); what it answered in a file is kept in the cache
under the file's content and that of the library modules it imports.
"""
from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .index import Index
from .library import CLASS, CONSTRUCTORS, CONTAINER, INSTANCE_CALL, CallSite, Definition, Library

# (type, relative path, line, name) of what a call site may reach inside the library
Target = Tuple[str, str, int, str]
Edges = Dict[str, Set[str]]

CACHE_VERSION = "2"
# jedi follows some values through half a library (a model's configuration through a registry of
# classes): a call site it has not answered in this time is left unresolved, and counted
JEDI_SECONDS = 2.0
GAVE_UP: Target = ("gave up", "", 0, "")


def resolve(library: Library, env: Sequence[Path], jobs: int, cache_folder: Optional[Path],
            progress: Callable[..., None] = lambda *done_and_total: None,
            jedi_seconds: float = float("inf")) -> Tuple[Edges, dict]:
    """The call graph: caller key -> keys it may call; and figures about the resolution.  Also
    sets library.base_classes (the base-class expressions are resolved with the call sites).
    What the library's own index answers with certainty (index.py) is not asked of jedi."""
    sites = [site for site in library.calls if library.worth_resolving(site)]
    bases = [(key, definition.path, line, column) for key, definition in library.definitions.items()
             for line, column, name in definition.bases if name in library.class_names]
    index = Index(library.indexes, library.definitions, library.module_of)
    answers: Dict[str, List[Target]] = {}
    unanswered: List[Tuple[str, int, int]] = []
    for site in sites:
        targets = index.targets(library.module_of(site.path), site.line, site.column)
        _answer(answers, unanswered, (site.path, site.line, site.column), targets)
    for key, path, line, column in bases:
        _answer(answers, unanswered, (path, line, column), index.base_targets(key, line, column))
    by_index = len(sites) + len(bases) - len(unanswered)
    asked, from_cache, not_asked = _jedi_answers(library, env, unanswered, jobs, cache_folder, progress, jedi_seconds)
    gave_up = sum(1 for targets in asked.values() if GAVE_UP in targets)
    answers.update((site, targets) for site, targets in asked.items() if GAVE_UP not in targets)
    _set_base_classes(library, answers)
    edges = _edges(library, sites, answers)
    figures = {"call sites": len(library.calls), "asked": len(sites) + len(bases), "by the index": by_index,
               "by jedi": len(unanswered), "jedi gave up": gave_up, "not asked": not_asked, "cached": from_cache,
               "resolved": sum(1 for site in sites if answers.get(_site_id(site)))}
    return edges, figures


def _answer(answers: Dict[str, List[Target]], unanswered: List[Tuple[str, int, int]],
            position: Tuple[str, int, int], targets: Optional[List[Target]]) -> None:
    if targets is None:
        unanswered.append(position)
    elif targets:
        answers["%s:%d:%d" % position] = targets


def _site_id(site: CallSite) -> str:
    return f"{site.path}:{site.line}:{site.column}"


# -- asking jedi --------------------------------------------------------------------------------
def _by_file(positions: Iterable[Tuple[str, int, int]]) -> Dict[str, List[Tuple[int, int]]]:
    by_file: Dict[str, List[Tuple[int, int]]] = {}
    for path, line, column in positions:
        by_file.setdefault(path, []).append((line, column))
    return by_file


def _ask_jedi(library: Library, env: Sequence[Path], by_file: Dict[str, List[Tuple[int, int]]],
              jobs: int, progress: Callable[..., None],
              seconds: float = float("inf")) -> Tuple[Dict[str, List[Target]], Dict[str, List[Tuple[int, int]]]]:
    """jedi's answers at the (line, column) positions of each file, and the positions of each
    file it was not asked about before `seconds` ran out."""
    deadline = time.time() + seconds
    # Files of similar work go to different processes: biggest first, handed out one at a time.
    work = [(path, places, deadline) for path, places in sorted(by_file.items(), key=lambda item: (-len(item[1]), item[0]))]
    settings = (str(library.root), str(library.import_root), [str(folder) for folder in env])
    jobs = jobs or os.cpu_count() or 1
    answers: Dict[str, List[Target]] = {}
    unreached: Dict[str, List[Tuple[int, int]]] = {}
    if jobs <= 1 or len(work) < 4:
        _init(*settings)
        results = map(_resolve_file, work)
        pool = None
    else:
        pool = multiprocessing.get_context("spawn").Pool(min(jobs, len(work)), _init_worker, settings)
        results = pool.imap_unordered(_resolve_file, work, chunksize=1)
    try:
        for done, (path, path_answers, not_reached) in enumerate(results, 1):
            answers.update(path_answers)
            if not_reached:
                unreached[path] = not_reached
            progress(done, len(work))
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    return answers, unreached


_ROOT: Optional[Path] = None
_PROJECT = None


def _init_worker(root: str, import_root: str, env: List[str]) -> None:
    # Ctrl-C reaches every process of the terminal's group: the parent alone handles it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init(root, import_root, env)


def _init(root: str, import_root: str, env: List[str]) -> None:
    global _ROOT, _PROJECT
    import jedi

    _ROOT = Path(root)
    # Only the library and the -env folders: jedi need not read torch to find the library's own
    # definitions (torch's calls are judged from the imports), and reading it costs seconds.
    _PROJECT = jedi.Project(import_root, sys_path=[import_root, *env], smart_sys_path=False,
                            load_unsafe_extensions=False)


# Modules jedi keeps parsed (parso's cache) before a worker lets them all go, between two files:
# on a library of thousands of modules a process would grow past a gigabyte.  (Letting some go
# while a file is inferred, as parso's own collection does, changes what jedi answers.)
PARSED_MODULES_KEPT = 400


def _bound_parsed_modules() -> None:
    import parso.cache

    cache = getattr(parso.cache, "parser_cache", None)
    if isinstance(cache, dict) and sum(len(kept) for kept in cache.values()) > PARSED_MODULES_KEPT:
        cache.clear()


def _resolve_file(item: Tuple[str, List[Tuple[int, int]], float]) -> Tuple[str, Dict[str, List[Target]], List[Tuple[int, int]]]:
    """(the file, jedi's answers in it, the positions not asked before the deadline)."""
    import jedi

    relative, positions, deadline = item
    if time.time() > deadline:
        return relative, {}, positions
    _bound_parsed_modules()
    absolute = _ROOT / relative
    data = absolute.read_bytes()
    text = data.decode("utf-8", errors="replace")
    lines = data.split(b"\n")
    script = jedi.Script(text, path=str(absolute), project=_PROJECT)
    answers: Dict[str, List[Target]] = {}
    for number, (line, byte_column) in enumerate(positions):
        if time.time() > deadline:
            return relative, answers, positions[number:]
        column = len(lines[line - 1][:byte_column].decode("utf-8", errors="replace"))  # jedi counts characters
        try:
            with _time_limit(JEDI_SECONDS):
                names = script.infer(line, column)
        except _TooLong:
            answers[f"{relative}:{line}:{byte_column}"] = [GAVE_UP]
            continue
        except Exception:  # jedi fails on some constructs: that call site stays unresolved
            continue
        targets: List[Target] = []
        for name in names:
            module_path = name.module_path
            if module_path is None or name.line is None or name.type not in ("function", "class", "instance"):
                continue
            try:
                inside = Path(module_path).resolve().relative_to(_ROOT.resolve()).as_posix()
            except ValueError:
                continue  # outside the library
            targets.append((name.type, inside, name.line, name.name))
        if targets:
            answers[f"{relative}:{line}:{byte_column}"] = sorted(set(targets))
    return relative, answers, []


class _TooLong(BaseException):  # (not an Exception: jedi catches those and answers less)
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raises _TooLong in the block after `seconds` (where the platform has interval timers)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(*_):
        raise _TooLong()

    def unraisable(report):
        # the alarm may come while a finalizer (__del__) runs, which swallows it: not an error
        # to print, and the timer fires again until the block is left
        if not isinstance(report.exc_value, _TooLong):
            hook(report)

    hook = sys.unraisablehook
    previous = signal.signal(signal.SIGALRM, expired)
    sys.unraisablehook = unraisable
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = hook


# -- the graph ------------------------------------------------------------------------------------
def _edges(library: Library, sites: Iterable[CallSite], answers: Dict[str, List[Target]]) -> Edges:
    edges: Edges = {}
    for site in sites:
        for kind, path, line, name in answers.get(_site_id(site), ()):
            if kind == "instance":
                # jedi names an instance by its class: calling it runs __call__ (forward for a module)
                owner = library.by_position.get((path, line, name))
                target = instance_call(library, owner) if owner else None
                if target:
                    edges.setdefault(site.caller, set()).add(target)
                continue
            target = library.by_position.get((path, line, name))
            if target is not None and target != site.caller:
                edges.setdefault(site.caller, set()).add(target)
                if kind == "class" and site.returned:
                    # a builder returns what it constructs for its caller to run (`return TinyNet(dim)`):
                    # it leads where calling the instance does
                    run = instance_call(library, target)
                    if run:
                        edges[site.caller].add(run)
    _container_edges(library, answers, edges)
    for key, definition in list(library.definitions.items()):
        if definition.kind != CLASS:
            continue
        # Constructing a class runs its constructors, its own or inherited from library classes.
        for method in CONSTRUCTORS:
            target = method_of(library, key, method)
            if target:
                edges.setdefault(key, set()).add(target)
    return edges


def _container_edges(library: Library, answers: Dict[str, List[Target]], edges: Edges) -> None:
    """A method that runs the modules an attribute holds (`for block in self.blocks: x = block(x)`)
    reaches their forward, through a link named after the attribute (`Model.blocks`), so that the
    chain says where the model holds them."""
    for caller, owner, attribute in library.runs_held:
        targets: Set[str] = set()
        first = None
        for path, line, column in library.held.get((owner, attribute), ()):
            first = first or (path, line)
            for kind, target_path, target_line, name in answers.get(f"{path}:{line}:{column}", ()):
                held_class = library.by_position.get((target_path, target_line, name)) if kind == "class" else None
                target = instance_call(library, held_class) if held_class else None
                if target:
                    targets.add(target)
        if not targets or caller is None:
            continue
        link = f"{owner}.{attribute}"
        library.definitions.setdefault(link, Definition(link, CONTAINER, first[0], first[1]))
        edges.setdefault(caller, set()).add(link)
        edges.setdefault(link, set()).update(targets)


def instance_call(library: Library, class_key: str) -> Optional[str]:
    """The key of the method that calling an instance of `class_key` runs (its __call__, else its
    forward: torch.nn.Module's __call__ runs forward), its own or inherited."""
    for method in INSTANCE_CALL:
        target = method_of(library, class_key, method)
        if target is not None:
            return target
    return None


def method_of(library: Library, class_key: str, method: str, seen: Optional[Set[str]] = None) -> Optional[str]:
    """The key of the method `method` that an instance of `class_key` runs: its own, else the
    first found along its library base classes (left to right, depth first)."""
    seen = seen if seen is not None else set()
    if class_key in seen:
        return None
    seen.add(class_key)
    definition = library.definitions.get(class_key)
    if definition is None:
        return None
    if method in definition.methods:
        return definition.methods[method]
    for base in library.base_classes.get(class_key, ()):
        found = method_of(library, base, method, seen)
        if found:
            return found
    return None


def _set_base_classes(library: Library, answers: Dict[str, List[Target]]) -> None:
    """library.base_classes: class key -> the library classes it derives from, in order."""
    library.base_classes = {}
    for key, definition in library.definitions.items():
        bases: List[str] = []
        for line, column, name in definition.bases:
            for kind, path, target_line, target_name in answers.get(f"{definition.path}:{line}:{column}", ()):
                target = library.by_position.get((path, target_line, target_name))
                if kind == "class" and target and target != key and target not in bases:
                    bases.append(target)
        if bases:
            library.base_classes[key] = bases


# -- cache ----------------------------------------------------------------------------------------
def _jedi_answers(library: Library, env: Sequence[Path], positions: List[Tuple[str, int, int]], jobs: int,
                  cache_folder: Optional[Path], progress: Callable[..., None],
                  seconds: float) -> Tuple[Dict[str, List[Target]], int, int]:
    """jedi's answers for `positions`, how many of their files the cache answered and how many
    positions were not asked (`seconds` ran out before jedi came to them).  What
    jedi answers in a file is kept under the file's content, the content of the library modules
    it imports, the -env folders and the code that asks: a change re-asks the files it touches."""
    store = _answer_cache(cache_folder, library, env)
    digests: Dict[str, bytes] = {}

    def digest_of(module: str) -> bytes:
        if module not in digests:
            try:
                digests[module] = hashlib.sha256(library.modules[module].absolute.read_bytes()).digest()
            except OSError:
                digests[module] = b"?"
        return digests[module]

    answers: Dict[str, List[Target]] = {}
    ask: Dict[str, List[Tuple[int, int]]] = {}
    keys: Dict[str, str] = {}
    from_cache = 0
    for path, places in sorted(_by_file(positions).items()):
        kept = None
        if store is not None:
            keys[path] = store.key(path, _dependencies(library, path, digest_of))
            kept = store.get(keys[path])
        if kept is not None:
            answers.update({site: [tuple(target) for target in targets] for site, targets in kept.items()})
            from_cache += 1
        else:
            ask[path] = places
    try:
        asked, unreached = _ask_jedi(library, env, ask, jobs, progress, seconds) if ask and seconds > 0 else ({}, ask)
        answers.update(asked)
        if store is not None:
            for path in set(ask) - set(unreached):
                store.put(keys[path], {site: targets for site, targets in asked.items()
                                       if site.rsplit(":", 2)[0] == path})
    finally:
        if store is not None:
            store.close()
    not_asked = sum(len(places) for places in unreached.values())
    return answers, from_cache, not_asked


def _answer_cache(folder: Optional[Path], library: Library, env: Sequence[Path]):
    if folder is None:
        return None
    import jedi

    from ..migration.cache import ResultCache

    # what jedi answers depends on jedi, the code that asks (this module, library.py and index.py,
    # which choose the call sites), where the library is and the -env folders
    digest = hashlib.sha256(f"jedi answers\0{CACHE_VERSION}\0{jedi.__version__}\0".encode())
    for asking in (Path(__file__), Path(__file__).with_name("library.py"), Path(__file__).with_name("index.py")):
        digest.update(asking.read_bytes())
    digest.update(str(library.root.resolve()).encode("utf-8", "surrogateescape"))
    for folder_of_env in env:
        digest.update(b"\0env\0" + str(folder_of_env.resolve()).encode("utf-8", "surrogateescape"))
    return ResultCache(folder / "third_party", digest.hexdigest())


def _dependencies(library: Library, path: str, digests: Callable[[str], bytes]) -> bytes:
    """The content a file's answers depend on: the file and the library modules it imports."""
    module = library.module_of(path)
    names = {module, *library.indexes[module].imported_modules()}
    return b"\0".join(name.encode() + b"\0" + digests(name) for name in sorted(names) if name in library.modules)
