"""A project's own settings for gpu2npu: the `[tool.gpu2npu]` table of its pyproject.toml.

    [tool.gpu2npu]
    version = "2.1.0"                      # the torch version, as -v
    exclude = ["third_party/**", "legacy"] # files and folders no command looks at
    ignore = ["NPU905"]                    # codes `check` never reports
    per-file-ignores = {"tests/**" = ["NPU102", "NPU9xx"]}

Found as ruff finds its own: the nearest pyproject.toml holding the table, from the folder of
what is checked (or migrated) upwards.  Globs are matched against paths relative to that file's
folder: `*` and `?` within one name, `**` across folders; a pattern without `/` matches a file or
folder of that name at any depth, one with `/` a path from the root (and everything below a
folder it names).  Codes may end in `x` for any digit (`NPU9xx`).  The command line wins over
every key it has an option for.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Dict, Iterable, Optional, Sequence, Tuple

PYPROJECT = "pyproject.toml"
TABLE = "tool.gpu2npu"
KEYS = ("version", "exclude", "ignore", "per-file-ignores")


class ConfigError(ValueError):
    """A `[tool.gpu2npu]` table that cannot be used as written (a usage error: exit 2)."""


@dataclass(frozen=True)
class ProjectConfig:
    root: Path  # the folder globs are relative to (the pyproject.toml's; else where the command looks)
    source: Optional[Path] = None  # the pyproject.toml read (None: no table found)
    version: Optional[str] = None
    exclude: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()

    def relative(self, path: Path) -> Optional[str]:
        """`path` relative to the root, POSIX-style (None: outside it)."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None

    def excluded(self, path: Path) -> bool:
        if not self.exclude:  # (asked of every file: no path is resolved where nothing is excluded)
            return False
        relative = self.relative(path)
        return relative is not None and any(glob_matches(pattern, relative) for pattern in self.exclude)

    def ignored_codes(self, path: Path) -> Tuple[str, ...]:
        """The code selectors that `check` ignores in the file at `path`."""
        if not self.per_file_ignores:
            return self.ignore
        relative = self.relative(path)
        extra = [code for pattern, codes in self.per_file_ignores
                 if relative is not None and glob_matches(pattern, relative) for code in codes]
        return self.ignore + tuple(extra)

    def selectors(self) -> Iterable[Tuple[str, str]]:
        """(where it is written, code selector) of every code the table names."""
        for code in self.ignore:
            yield "ignore", code
        for pattern, codes in self.per_file_ignores:
            for code in codes:
                yield f'per-file-ignores "{pattern}"', code


# A project without a [tool.gpu2npu] table: nothing excluded or ignored.
NO_TABLE = ProjectConfig(root=Path("."))


def find_config(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml at or above `start` that has a [tool.gpu2npu] table."""
    folder = start.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / PYPROJECT
        if path.is_file() and _has_table(path):
            return path
    return None


def _has_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r"^\s*\[\s*tool\s*\.\s*gpu2npu\s*\]", text, re.MULTILINE) is not None or \
        re.search(r"^\s*tool\s*\.\s*gpu2npu\s*[.=]", text, re.MULTILINE) is not None


def load_config(path: Optional[Path], root: Path) -> ProjectConfig:
    """The settings of `path` (a pyproject.toml; None: no settings, globs relative to `root`)."""
    if path is None:
        return ProjectConfig(root=root.resolve())
    data = _read_toml(path)
    table = data.get("tool", {}).get("gpu2npu", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.gpu2npu] is not a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{path}: [tool.gpu2npu] has no key {', '.join(repr(key) for key in unknown)} "
                          f"(it knows {', '.join(KEYS)})")
    version = table.get("version")
    if version is not None and (not isinstance(version, str) or not version.strip()):
        raise ConfigError(f"{path}: [tool.gpu2npu] version must be a torch version such as \"2.1.0\"")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{path}: [tool.gpu2npu] per-file-ignores must be a table of glob = [codes]")
    return ProjectConfig(
        root=path.parent.resolve(), source=path, version=version.strip() if version else None,
        exclude=_strings(path, "exclude", table.get("exclude", [])),
        ignore=tuple(code.upper() for code in _strings(path, "ignore", table.get("ignore", []))),
        per_file_ignores=tuple((pattern, tuple(code.upper() for code in _strings(path, f'per-file-ignores "{pattern}"', codes)))
                               for pattern, codes in per_file.items()))


def _strings(path: Path, key: str, value) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{path}: [tool.gpu2npu] {key} must be a list of strings")
    return tuple(item.strip() for item in value)


def _read_toml(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read ({error})") from None
    try:
        import tomllib  # (Python 3.11 on; tomlkit, already a dependency, before)

        return tomllib.loads(text)
    except ImportError:
        import tomlkit

        try:
            return tomlkit.parse(text).unwrap()
        except Exception as error:  # tomlkit's own parse errors
            raise ConfigError(f"{path}: not valid TOML ({error})") from None
    except ValueError as error:  # tomllib.TOMLDecodeError
        raise ConfigError(f"{path}: not valid TOML ({error})") from None


def config_for(paths: Sequence[Path], explicit: Optional[Path] = None) -> ProjectConfig:
    """The settings that apply to `paths`: those of `explicit` (--config), else of the nearest
    pyproject.toml with a [tool.gpu2npu] table above what they have in common."""
    common = _common_folder(paths)
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"--config {explicit}: no such file")
        return load_config(explicit, common)
    return load_config(find_config(common), common)


# What marks the folder of a project, for a command that looks for its dependency files.
_PROJECT_MARKS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")


def project_root(paths: Sequence[Path]) -> Path:
    """The nearest folder at or above what `paths` have in common that looks like a project's
    root (a pyproject.toml, setup.py, setup.cfg, requirements.txt or .git); else that folder."""
    common = _common_folder(paths)
    for folder in (common, *common.parents):
        if any((folder / mark).exists() for mark in _PROJECT_MARKS):
            return folder
    return common


def _common_folder(paths: Sequence[Path]) -> Path:
    folders = []
    for path in paths or [Path(".")]:
        resolved = path.resolve()
        folders.append(resolved if resolved.is_dir() else resolved.parent)
    common = folders[0]
    for folder in folders[1:]:
        while not (folder == common or common in folder.parents):
            common = common.parent
    return common


# --- globs ---------------------------------------------------------------------------------------

_GLOB_CACHE: Dict[str, "re.Pattern[str]"] = {}


def _translate(pattern: str) -> "re.Pattern[str]":
    compiled = _GLOB_CACHE.get(pattern)
    if compiled is not None:
        return compiled
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        elif pattern[index] == "[":
            end = pattern.find("]", index + 1)
            if end == -1:
                out.append(re.escape("["))
                index += 1
            else:
                body = pattern[index + 1:end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                index = end + 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    compiled = re.compile("".join(out) + r"\Z")
    _GLOB_CACHE[pattern] = compiled
    return compiled


def glob_matches(pattern: str, relative: str) -> bool:
    """Whether `relative` (POSIX, relative to the root) is `pattern` or lies in a folder it names."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.rstrip("/") or pattern
    path = PurePosixPath(relative)
    candidates = [relative] + [parent.as_posix() for parent in path.parents if parent.as_posix() != "."]
    if "/" not in pattern:
        regex = _translate(pattern)
        return any(regex.match(part) for part in path.parts)
    regex = _translate(pattern)
    return any(regex.match(candidate) for candidate in candidates)


# --- codes ---------------------------------------------------------------------------------------

def selector_matches(selector: str, code: str) -> bool:
    """Whether a code selector (NPU102, or NPU9xx: `x` for any digit) names `code`."""
    selector = selector.upper()
    if len(selector) != len(code):
        return False
    return all(wanted == given or (wanted == "X" and given.isdigit()) for wanted, given in zip(selector, code.upper()))


def unknown_selectors(selectors: Iterable[str], known: Iterable[str]) -> Tuple[str, ...]:
    codes = list(known)
    return tuple(selector for selector in selectors if not any(selector_matches(selector, code) for code in codes))

