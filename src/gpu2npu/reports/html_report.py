"""report.html: one self-contained page that a reviewer reads instead of the CSVs.

What was migrated and the verdict, what the run says of the whole project (its console notes),
counts by report and by rule (inline SVG), what is left to do
(every unsupported, unknown and advice row, by file and kind, with its source line, tip and the
rule's explanation), and every change as a highlighted diff whose hunks carry the rules that made
them.  No network, scripts, fonts or images from elsewhere; the content needs no JavaScript (the
small script only filters and collapses, and takes its first filter from the address:
`report.html#rule=NPU103&file=train.py`).  Every text that comes from the project is escaped.
"""
from __future__ import annotations

import functools
import html
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from ..records.change import Change, Finding, Operation, Report
from ..records.finding_kinds import NOT_MIGRATED
from ..records.results import COPIED_UNCHANGED
from ..reading.linemap import grouped_opcodes, source_lines
from . import python_colours

if TYPE_CHECKING:
    from .catalogue import RuleEntry

FILE_NAME = "report.html"
# A diff longer than this many lines is cut (the migrated file is in the output); the rows of
# the report are never cut.
MAX_DIFF_LINES = 400
TODO_REPORTS = (Report.UNSUPPORTED, Report.UNKNOWN, Report.PERFORMANCE, Report.AFFINITY)
REPORT_TITLES = {Report.UNSUPPORTED: "unsupported (unsupported_api.csv)", Report.UNKNOWN: "unknown (unknown_api.csv)",
                 Report.PERFORMANCE: "advice (api_performance_advice.csv)",
                 Report.AFFINITY: "faster NPU API (affinity_api_call.csv)"}


@dataclass
class PageFacts:
    """What the header says of the run."""

    name: str
    input: str
    output: str
    torch_version: str
    torch_npu_version: str
    options: str
    tool_version: str
    time: str
    notes: Tuple[str, ...] = ()  # what the run says of the whole project (the console's and the log's notes)


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _anchor(path: str) -> str:
    """An id for a file: its path's characters that are safe in an id, and a number for the rest."""
    return "f-" + "".join(c if c.isalnum() or c in "-_." else f"_{ord(c):x}" for c in path)


def write_page(folder: Path, facts: PageFacts, changes: Sequence[Change], findings: Sequence[Finding],
               files: Sequence[str], original: Callable[[str], Optional[bytes]],
               migrated: Callable[[str], Optional[bytes]], explanations: Dict[str, str], memo=None) -> Path:
    """Write report.html into `folder`; `original(path)` and `migrated(path)` read a file's bytes
    before and after (None: not readable), `files` lists every migrated-kind file of the run.
    `memo`: the run's result cache (`cache.ResultCache`), where each file's diff is kept once
    made, so that a re-run does not compare and highlight the same files again."""
    path = folder / FILE_NAME
    original = functools.lru_cache(maxsize=None)(original)  # a file with rows and a diff is read once
    with open(path, "w", encoding="utf-8") as out:
        for part in _page(facts, changes, findings, files, original, migrated, explanations, memo):
            out.write(part)
    return path


def _page(facts, changes, findings, files, original, migrated, explanations, memo=None) -> Iterable[str]:
    todo = [f for f in findings if f.report in TODO_REPORTS]
    changed = sorted({c.file for c in changes})
    human = sum(1 for f in todo if f.report in (Report.UNSUPPORTED, Report.UNKNOWN))
    yield ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f"<title>gpu2npu: {_e(facts.name)}</title><style>{_STYLE}</style></head><body>\n")
    yield f"<header><h1>Migration of {_e(facts.name)}</h1><dl>"
    for label, value in (("input", facts.input), ("output", facts.output), ("PyTorch", facts.torch_version),
                         ("torch_npu", facts.torch_npu_version), ("options", facts.options or "none"),
                         ("gpu2npu", facts.tool_version), ("time", facts.time)):
        yield f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>"
    yield (f"</dl><p class=\"verdict\" id=\"verdict\">{len(changed)} file{'s' if len(changed) != 1 else ''} changed "
           f"({len(changes)} changes), {human} place{'s' if human != 1 else ''} need a human, "
           f"{len(todo) - human} piece{'s' if len(todo) - human != 1 else ''} of advice</p>")
    if facts.notes:
        yield "<ul class=\"notes\">" + "".join(f"<li>{_e(note)}</li>" for note in facts.notes) + "</ul>"
    yield "</header>\n"
    yield "<section id=\"counts\"><h2>Counts</h2><div class=\"charts\">"
    by_report = Counter(REPORT_TITLES[f.report].split(" (")[0] for f in todo)
    yield _bars("by report", [("changes", len(changes))] + sorted(by_report.items()))
    yield _bars("by rule", sorted(Counter(c.rule for c in changes).items()) +
                sorted(Counter(f"{f.rule} ({f.report.value})" for f in todo).items()))
    yield "</div></section>\n"
    rules = sorted({c.rule for c in changes} | {f.rule for f in todo})
    row_files = sorted({c.file for c in changes} | {f.file for f in todo})
    yield "<nav id=\"filters\" class=\"filters\"><label>rule <select id=\"f-rule\"><option value=\"\">all</option>"
    yield "".join(f"<option>{_e(r)}</option>" for r in rules)
    yield "</select></label> <label>report <select id=\"f-report\"><option value=\"\">all</option><option>change</option>"
    yield "".join(f"<option>{_e(r.value)}</option>" for r in TODO_REPORTS)
    yield "</select></label> <label>file <select id=\"f-file\"><option value=\"\">all</option>"
    yield "".join(f"<option>{_e(p)}</option>" for p in row_files)
    yield ("</select></label> <label>search <input id=\"f-search\" type=\"search\" placeholder=\"text in a row\"></label>"
           " <span id=\"f-count\"></span></nav>\n")
    shown: Dict[str, set] = defaultdict(set)  # file -> its original lines the diffs show
    failed = sorted((f for f in findings if f.rule == NOT_MIGRATED.code), key=lambda f: f.file)
    not_read = {f.file for f in failed}
    diffs = "".join(_changes(changes, changed, [p for p in files if p not in not_read], original, migrated, shown, memo))
    yield from _not_migrated(failed)
    yield from _todo(todo, original, explanations, set(changed), shown)
    yield diffs
    yield f"<script>{_SCRIPT}</script></body></html>\n"


def _bars(title: str, items: List[Tuple[str, int]]) -> str:
    if not items:
        return ""
    width, row = 420, 18
    top = max(count for _, count in items) or 1
    height = row * len(items) + 4
    parts = [f"<figure><figcaption>{_e(title)}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" "
             f"width=\"{width + 320}\" height=\"{height}\" role=\"img\" aria-label=\"{_e(title)}\">"]
    for index, (label, count) in enumerate(items):
        y = index * row + 2
        length = max(1, round(width * count / top))
        parts.append(f"<text x=\"0\" y=\"{y + 13}\" class=\"label\">{_e(label)}</text>"
                     f"<rect x=\"250\" y=\"{y + 2}\" width=\"{length}\" height=\"{row - 5}\" class=\"bar\"/>"
                     f"<text x=\"{255 + length}\" y=\"{y + 13}\" class=\"count\">{count}</text>")
    parts.append("</svg></figure>")
    return "".join(parts)


def _not_migrated(failed: Sequence[Finding]) -> Iterable[str]:
    """The files that could not be read or parsed: copied as they are, nothing in them looked at."""
    if not failed:
        return
    yield (f"<section id=\"not-migrated\"><h2>Not migrated ({len(failed)})</h2>\n<p>Copied unchanged: gpu2npu could "
           "not read these files, so whatever CUDA they hold is still there and nothing in them was checked "
           f"({_e(NOT_MIGRATED.code)}).</p><ul>")
    for finding in failed:
        yield (f"<li class=\"failed\" data-file=\"{_e(finding.file)}\"><span class=\"path\">{_e(finding.file)}</span>: "
               f"{_e(finding.tip.removeprefix(COPIED_UNCHANGED))}</li>")
    yield "</ul></section>\n"


def _todo(todo: Sequence[Finding], original, explanations, changed, shown) -> Iterable[str]:
    yield f"<section id=\"todo\"><h2>To do ({len(todo)})</h2>\n"
    if not todo:
        yield "<p>Nothing: every CUDA construct found was migrated.</p>"
    by_file: Dict[str, List[Finding]] = defaultdict(list)
    for finding in todo:
        by_file[finding.file].append(finding)
    for path in sorted(by_file):
        rows = by_file[path]
        yield (f"<details open class=\"file\" data-file=\"{_e(path)}\"><summary><span class=\"path\">{_e(path)}</span> "
               f"<span class=\"n\">{len(rows)}</span></summary>")
        data = original(path)
        # (split as Python numbers lines, on \n, \r\n and \r only, where str.splitlines also splits
        # at a form feed; only the lines shown are decoded)
        lines = data.splitlines() if data is not None else []
        for report in TODO_REPORTS:
            kind = sorted((f for f in rows if f.report == report), key=lambda f: (f.start_line, f.api))
            if not kind:
                continue
            yield f"<h3>{_e(REPORT_TITLES[report])}</h3>"
            for finding in kind:
                rule = finding.rule
                source = (lines[finding.start_line - 1].decode("utf-8", errors="replace")
                          if 0 < finding.start_line <= len(lines) else "")
                target = (f"{_anchor(path)}-L{finding.start_line}" if finding.start_line in shown[path]
                          else _anchor(path))
                link = (f" <a href=\"#{target}\">in the diff</a>" if path in changed else "")
                explanation = explanations.get(rule, "")
                yield (f"<div class=\"row\" data-kind=\"finding\" data-rule=\"{_e(rule)}\" data-report=\"{finding.report.value}\" "
                       f"data-file=\"{_e(path)}\" data-line=\"{finding.start_line}\">"
                       f"<span class=\"line\">{finding.start_line}</span> <span class=\"rule\">{_e(rule)}</span> "
                       f"<b class=\"api\">{_e(finding.api)}</b>{link}"
                       f"<pre class=\"src\">{_e(source.strip())}</pre><p class=\"tip\">{_e(finding.tip)}"
                       + (f" <em>→ {_e(finding.replacement)}</em>" if finding.replacement else "") + "</p>"
                       + (f"<details class=\"why\"><summary>{_e(rule)}</summary><pre>{_e(explanation)}</pre></details>"
                          if explanation else "") + "</div>\n")
        yield "</details>\n"
    yield "</section>\n"


def _changes(changes: Sequence[Change], changed: Sequence[str], files: Sequence[str], original, migrated,
             shown: Dict[str, set], memo=None) -> Iterable[str]:
    yield f"<section id=\"changes\"><h2>Changes ({len(changes)} in {len(changed)} files)</h2>\n"
    by_file: Dict[str, List[Change]] = defaultdict(list)
    for change in changes:
        by_file[change.file].append(change)
    for path in changed:
        rows = by_file[path]
        codes = sorted({c.rule for c in rows})
        yield (f"<details open class=\"file\" id=\"{_anchor(path)}\" data-file=\"{_e(path)}\" data-rules=\"{_e(' '.join(codes))}\">"
               f"<summary><span class=\"path\">{_e(path)}</span> <span class=\"n\">{len(rows)}</span> "
               + " ".join(f"<span class=\"rule\">{_e(c)}</span>" for c in codes) + "</summary>")
        before, after = original(path), migrated(path)
        if before is None or after is None:
            yield "<p>(not readable)</p></details>\n"
            continue
        text, lines = _file_diff(path, before, after, rows, memo)
        shown[path].update(lines)
        yield text
        yield "</details>\n"
    unchanged = sorted(set(files) - set(changed))
    yield (f"<details class=\"unchanged\"><summary>{len(unchanged)} files unchanged</summary><ul>"
           + "".join(f"<li>{_e(p)}</li>" for p in unchanged) + "</ul></details></section>\n")


def _file_diff(path: str, before: bytes, after: bytes, rows: Sequence[Change], memo) -> Tuple[str, FrozenSet[int]]:
    """The diff of one file as the page shows it, and the original lines it shows; read back
    from `memo` where the same file, migration and rows were shown before."""
    key = None
    if memo is not None:
        made_of = b"\0".join([before, after, repr(list(rows)).encode("utf-8", "surrogateescape"),
                              _highlighter_version().encode()])
        key = memo.key(f"report.html diff of {path}", made_of)
        kept = memo.get(key)
        if kept is not None:
            return kept
    lines: set = set()
    text = "".join(_diff(path, source_lines(before.decode("utf-8", "replace")),
                         source_lines(after.decode("utf-8", "replace")), rows, lines))
    if memo is not None:
        memo.put(key, (text, frozenset(lines)))
    return text, frozenset(lines)


def _diff(path: str, old: List[str], new: List[str], rows: Sequence[Change], shown_lines: set) -> Iterable[str]:
    # A notebook's rows name lines of its cells, its diff is of its JSON: every hunk carries the
    # file's rules and the first lists its rows.
    whole_file = path.endswith(".ipynb")
    listed = False
    shown = 0
    highlight, anchor = _highlighter_for(path), _anchor(path)
    for group in grouped_opcodes(old, new, 3):
        first_old, last_old = group[0][1] + 1, group[-1][2]
        here = [r for r in rows if whole_file or (
            first_old - 1 <= r.start_line <= last_old + 1 if r.operation == Operation.INSERT
            else r.start_line <= last_old and r.end_line >= first_old)]
        codes = sorted({r.rule for r in here})
        if whole_file:
            here, listed = ([] if listed else here), True
        yield (f"<div class=\"hunk\" data-file=\"{_e(path)}\" data-rules=\"{_e(' '.join(codes))}\" data-kind=\"change\">"
               f"<div class=\"hunk-head\">@@ -{group[0][1] + 1},{group[-1][2] - group[0][1]} "
               f"+{group[0][3] + 1},{group[-1][4] - group[0][3]} @@ "
               + " ".join(f"<span class=\"rule\">{_e(c)}</span>" for c in codes) + "<ul>"
               + "".join(f"<li>{r.start_line}: {_e(r.rule)} {_e(r.message)}</li>" for r in here) + "</ul></div><pre>")
        for tag, i1, i2, j1, j2 in group:
            if shown > MAX_DIFF_LINES:
                break
            if tag == "equal":
                for k in range(i1, i2):
                    yield _line(" ", k + 1, old[k], highlight, anchor)
                shown_lines.update(range(i1 + 1, i2 + 1))
                shown += i2 - i1
                continue
            for k in range(i1, i2):
                yield _line("-", k + 1, old[k], highlight, anchor)
            shown_lines.update(range(i1 + 1, i2 + 1))
            for k in range(j1, j2):
                yield _line("+", None, new[k], highlight, anchor)
            shown += (i2 - i1) + (j2 - j1)
        yield "</pre></div>\n"
        if shown > MAX_DIFF_LINES:
            yield (f"<p class=\"cut\">The diff of this file is longer than {MAX_DIFF_LINES} lines: the rest is in the "
                   "migrated file and change_list.csv.</p>")
            return


def _line(sign: str, number: Optional[int], text: str, highlight: Callable[[str], str], anchor: str) -> str:
    kind = {"+": "add", "-": "del", " ": "ctx"}[sign]
    where = f"{number}" if number is not None else ""
    target = f" id=\"{anchor}-L{number}\"" if number is not None else ""
    return f"<span class=\"{kind}\"{target}><i>{where}</i>{sign} {highlight(text)}</span>"


_TOKEN_CLASSES = (("Keyword", "k"), ("Name.Builtin", "b"), ("Name.Function", "fn"), ("Name.Class", "fn"),
                  ("Literal.String", "s"), ("Literal.Number", "m"), ("Comment", "c"), ("Operator.Word", "k"))


def _highlighter_version() -> str:
    try:
        from pygments import __version__ as version
    except ImportError:
        return "none"
    return version


def _highlighter_for(path: str) -> Callable[[str], str]:
    """One line of the file as escaped HTML with its tokens' colours: Python's read with Python's
    own tokenizer (python_colours), the other kinds (TOML, YAML, shell...) with pygments' lexer
    for them, where there is one."""
    if path.endswith(".py"):
        return python_colours.line_html
    try:
        from pygments.lexers import get_lexer_for_filename
        from pygments.util import ClassNotFound
    except ImportError:  # the page is still right without colours
        return _e
    try:
        lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return _e
    return functools.partial(_highlight, lexer=lexer)


def _highlight(text: str, lexer) -> str:
    """`text` (one line) as escaped HTML with the lexer's tokens as classes."""
    parts = []
    for token, value in lexer.get_tokens(text):
        name = str(token).replace("Token.", "")
        css = next((css for prefix, css in _TOKEN_CLASSES if name.startswith(prefix)), None)
        parts.append(f"<em class=\"{css}\">{_e(value)}</em>" if css else _e(value))
    return "".join(parts)


def explanations_of(rules: Dict[str, "RuleEntry"], analysis: Dict[str, str]) -> Dict[str, str]:
    """What `gpu2npu explain` says of each code, shortened to its summary and description."""
    texts = {code: f"{rule.summary}\n\n{rule.description}" for code, rule in rules.items()}
    texts.update(analysis)
    return texts


_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;padding:0 1em 4em;color:#1b1f24}
h1{font-size:1.5em;margin:.8em 0 .3em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1em;margin:.8em 0 .3em;color:#57606a}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1em 1em;margin:0}dt{color:#57606a}dd{margin:0;word-break:break-all}
.verdict{font-size:1.2em;font-weight:600;margin:.8em 0}
.notes{margin:.4em 0 .8em;padding-left:1.2em;max-width:70em}
.charts{display:flex;flex-wrap:wrap;gap:2em}figure{margin:0}figcaption{color:#57606a}
svg .bar{fill:#0969da}svg .label,svg .count{font:12px system-ui,sans-serif;fill:#1b1f24}
.filters{position:sticky;top:0;background:#f6f8fa;border:1px solid #d0d7de;padding:.5em;margin-top:1em;z-index:1}
.filters select{max-width:22em}
details.file{border:1px solid #d0d7de;border-radius:6px;margin:.6em 0;padding:.3em .6em}
summary{cursor:pointer}.path{font-family:ui-monospace,monospace;font-weight:600}.n{color:#57606a}
.rule{font:12px ui-monospace,monospace;background:#ddf4ff;border-radius:4px;padding:0 .3em;margin-right:.2em}
.row{border-top:1px solid #eaeef2;padding:.4em 0}.line{font-family:ui-monospace,monospace;color:#57606a}
pre{margin:.2em 0;overflow-x:auto;font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre.src{background:#f6f8fa;padding:.2em .4em}.tip{margin:.2em 0}
.hunk{margin:.5em 0;border:1px solid #eaeef2}.hunk-head{background:#f6f8fa;padding:.2em .5em;font:12px ui-monospace,monospace}
.hunk-head ul{margin:.2em 0;padding-left:1.2em;font-family:system-ui,sans-serif}
.hunk pre span{display:block;white-space:pre}.add{background:#e6ffec}.del{background:#ffebe9}
.hunk pre i{display:inline-block;width:4em;color:#8c959f;font-style:normal;user-select:none}
em.k{color:#cf222e;font-style:normal}em.b,em.fn{color:#8250df;font-style:normal}em.s{color:#0a3069;font-style:normal}
em.m{color:#0550ae;font-style:normal}em.c{color:#6e7781}
.hidden{display:none!important}.cut{color:#9a6700}
"""

_SCRIPT = """
(function(){
  var rule=document.getElementById('f-rule'),report=document.getElementById('f-report'),
      file=document.getElementById('f-file'),search=document.getElementById('f-search'),
      count=document.getElementById('f-count');
  var items=Array.prototype.slice.call(document.querySelectorAll('.row,.hunk'));
  var files=Array.prototype.slice.call(document.querySelectorAll('details.file'));
  function apply(){
    var r=rule.value,p=report.value,f=file.value,q=search.value.toLowerCase(),shown=0;
    items.forEach(function(el){
      var kind=el.getAttribute('data-kind');
      var ok=(!r||(' '+(el.getAttribute('data-rules')||el.getAttribute('data-rule'))+' ').indexOf(' '+r+' ')>=0)
        &&(!p||(p==='change'?kind==='change':el.getAttribute('data-report')===p))
        &&(!f||el.getAttribute('data-file')===f)
        &&(!q||el.textContent.toLowerCase().indexOf(q)>=0);
      el.classList.toggle('hidden',!ok); if(ok){shown++;}
    });
    files.forEach(function(d){
      d.classList.toggle('hidden',!d.querySelector('.row:not(.hidden),.hunk:not(.hidden)'));
    });
    count.textContent=shown+' of '+items.length+' shown';
    var state=[];
    if(r){state.push('rule='+encodeURIComponent(r));} if(p){state.push('report='+encodeURIComponent(p));}
    if(f){state.push('file='+encodeURIComponent(f));} if(q){state.push('q='+encodeURIComponent(q));}
    if(state.length||location.hash.indexOf('=')>=0){history.replaceState(null,'',state.length?'#'+state.join('&'):location.pathname);}
  }
  function fromHash(){
    location.hash.replace(/^#/,'').split('&').forEach(function(part){
      var kv=part.split('='); if(kv.length!==2){return;}
      var v=decodeURIComponent(kv[1]);
      if(kv[0]==='rule'){rule.value=v;} else if(kv[0]==='report'){report.value=v;}
      else if(kv[0]==='file'){file.value=v;} else if(kv[0]==='q'){search.value=v;}
    });
  }
  [rule,report,file].forEach(function(s){s.addEventListener('change',apply);});
  search.addEventListener('input',apply);
  fromHash(); apply();
})();
"""
