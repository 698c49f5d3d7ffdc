"""report.html, the review page: its content read structurally, its escaping, and the page as a
browser shows it (headless Chromium, where the system has one)."""
import collections
import html.parser
import shutil
import subprocess
import sys

import pytest

from helpers import FIXTURES, fixture_names, migrate, read_csv

FINDING_CSVS = ("unsupported_api.csv", "unknown_api.csv", "api_performance_advice.csv", "affinity_api_call.csv")


class Page(html.parser.HTMLParser):
    """The rows, hunks and scripts of a report page, as elements with their attributes and text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.rows, self.hunks, self.scripts, self.items = [], [], 0, []
        self._open = []  # (element, its record)
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        record = None
        if "row" in (attrs.get("class") or "").split():
            record = {"attrs": attrs, "text": ""}
            self.rows.append(record)
        elif "hunk" in (attrs.get("class") or "").split():
            record = {"attrs": attrs, "text": "", "items": []}
            self.hunks.append(record)
        if tag == "script":
            self.scripts += 1
        if tag == "li" and self.hunks and any(r is self.hunks[-1] for _, r in self._open):
            self.items.append(self.hunks[-1])
        if tag not in ("meta", "br", "input", "rect", "img"):
            self._open.append((tag, record))

    def handle_endtag(self, tag):
        while self._open:
            open_tag, _ = self._open.pop()
            if open_tag == tag:
                break

    def handle_data(self, data):
        for _, record in self._open:
            if record is not None:
                record["text"] += data


def page_of(target):
    return Page((target / "report.html").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    return {name: migrate(FIXTURES / name, out, "2.1.0") for name in fixture_names()}


@pytest.mark.parametrize("name", fixture_names())
def test_every_finding_appears_once_with_its_line(name, migrated):
    target = migrated[name]
    page = page_of(target)
    expected = collections.Counter()
    for report in FINDING_CSVS:
        for row in read_csv(target / report):
            expected[(row["File"], row["Start Line"])] += 1
    shown = collections.Counter((r["attrs"]["data-file"], r["attrs"]["data-line"]) for r in page.rows)
    assert shown == expected


@pytest.mark.parametrize("name", fixture_names())
def test_every_change_appears_in_a_hunk_labelled_with_its_rule(name, migrated):
    target = migrated[name]
    page = page_of(target)
    rows = collections.Counter((row["File"], f"{row['Start Line']}: {row['Rule']} {row['Message']}")
                               for row in read_csv(target / "change_list.csv"))
    for (path, label), count in rows.items():
        holding = [h for h in page.hunks if h["attrs"]["data-file"] == path and label in h["text"]]
        assert sum(h["text"].count(label) for h in holding) == count, label  # once per row
        assert all(label.split()[1] in h["attrs"]["data-rules"].split() for h in holding), label
    assert page.scripts == 1  # the filter script, nothing else


def test_text_from_the_project_is_escaped(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    name = "<script>alert(1)&amp;.py"  # (a file name holds no "/")
    (project / name).write_text('import torch\nx = torch.ones(2).cuda()  # "<script>alert(2)</script>"\n'
                                'y = torch.heaviside(x, x)  # </pre><b>\n')
    target = migrate(project, tmp_path / "out", "2.1.0")
    text = (target / "report.html").read_text(encoding="utf-8")
    assert "<script>alert" not in text and "</pre><b>" not in text
    assert "&lt;script&gt;alert(1)&amp;amp;.py" in text and "&lt;script&gt;alert(2)" in text
    page = Page(text)
    assert page.scripts == 1 and any(r["attrs"]["data-file"] == name for r in page.rows)


def test_no_html_writes_no_page_and_the_console_names_it_otherwise(tmp_path):
    command = [sys.executable, "-m", "gpu2npu", "-i", str(FIXTURES / "single_gpu_loop"), "-v", "2.1.0", "--no-cache"]
    with_page = subprocess.run(command + ["-o", str(tmp_path / "a")], capture_output=True, text=True)
    page = tmp_path / "a" / "single_gpu_loop_msft" / "report.html"
    assert with_page.returncode == 0 and f"Review page: {page}" in with_page.stdout and page.is_file()
    without = subprocess.run(command + ["-o", str(tmp_path / "b"), "--no-html"], capture_output=True, text=True)
    assert without.returncode == 0 and "Review page" not in without.stdout
    assert not (tmp_path / "b" / "single_gpu_loop_msft" / "report.html").exists()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def chromium(*arguments, timeout=90):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *arguments], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (apt-get install chromium); .ci/run installs it")
def test_the_page_in_a_browser_filters_by_rule_and_file(migrated, tmp_path):
    target = migrated["llm_env_project"]
    url = (target / "report.html").as_uri()
    shown = chromium("--dump-dom", url + "#rule=NPU853&file=requirements.txt")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Uncaught" not in shown.stderr and ":ERROR:CONSOLE" not in shown.stderr.replace(" ", "")
    dom = Page(shown.stdout)
    visible = [item for item in dom.rows + dom.hunks if "hidden" not in (item["attrs"].get("class") or "").split()]
    assert visible, "the filter left nothing"
    for item in visible:
        assert item["attrs"]["data-file"] == "requirements.txt"
        assert "NPU853" in (item["attrs"].get("data-rules") or item["attrs"].get("data-rule")).split()
    hidden = [item for item in dom.rows + dom.hunks if "hidden" in (item["attrs"].get("class") or "").split()]
    assert hidden, "the filter hid nothing"
    screenshot = tmp_path / "page.png"
    taken = chromium("--window-size=1280,1400", f"--screenshot={screenshot}", url + "#file=train.py")
    assert taken.returncode == 0 and screenshot.stat().st_size > 20_000


@pytest.mark.parametrize("name", fixture_names())
def test_every_link_to_the_diff_has_its_target(name, migrated):
    import re

    text = (migrated[name] / "report.html").read_text(encoding="utf-8")
    ids = set(re.findall(r' id="([^"]+)"', text))
    targets = re.findall(r'href="#([^"]+)"', text)
    assert all(target in ids for target in targets), [t for t in targets if t not in ids][:5]
    # a finding on a line the diff shows links to that line
    assert name != "llm_env_project" or "requirements.txt-L11" in " ".join(targets)


def test_a_file_that_could_not_be_migrated_has_its_section_its_row_and_is_not_called_unchanged(tmp_path):
    project = tmp_path / "legacy"
    project.mkdir()
    (project / "old.py").write_text("import torch\nx = torch.zeros(1).cuda()\nprint 'done'\n")
    (project / "train.py").write_text("import torch\nx = torch.zeros(1)\n")
    done = subprocess.run([str(sys.executable), "-m", "gpu2npu", "-i", str(project), "-o", str(tmp_path / "out"),
                           "-v", "2.1.0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    target = tmp_path / "out" / "legacy_msft"
    [row] = read_csv(target / "unsupported_api.csv")
    assert (row["File"], row["Start Line"], row["OP"], row["Rule"]) == ("old.py", "3", "file not migrated", "NPU925")
    assert "syntax error at line 3" in row["Tips"]
    text = (target / "report.html").read_text(encoding="utf-8")
    section = text[text.index('<section id="not-migrated">'):]
    section = section[:section.index("</section>")]
    assert "Not migrated (1)" in section and "old.py" in section and "not valid Python 3" in section
    assert "Nothing: every CUDA construct" not in text
    unchanged = text[text.index('<details class="unchanged">'):]
    assert "old.py" not in unchanged[:unchanged.index("</details>")] and "train.py" in unchanged
    if CHROMIUM is not None:  # and a browser shows it
        shown = chromium("--dump-dom", (target / "report.html").as_uri())
        assert shown.returncode == 0 and "Not migrated (1)" in shown.stdout
