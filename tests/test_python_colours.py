"""The review page colours a line of Python from Python's own tokenizer, read alone: every
character of the line is on the page, escaped, whatever the line is a part of."""
import html
import re

import pytest

from gpu2npu.reports.python_colours import line_html


def _coloured(line: str):
    """(class, text) of every coloured token of the line's HTML."""
    return [(css, html.unescape(text)) for css, text in re.findall(r'<em class="(\w+)">(.*?)</em>', line_html(line))]


def _text(line_html_: str) -> str:
    return html.unescape(re.sub(r"</?em[^>]*>", "", line_html_))


@pytest.mark.parametrize("line, expected", [
    ("def train(model, loader):\n", [("k", "def"), ("fn", "train")]),
    ("class Net(nn.Module):\n", [("k", "class"), ("fn", "Net")]),
    ("    for x in range(10):  # epochs\n", [("k", "for"), ("k", "in"), ("b", "range"), ("m", "10"), ("c", "# epochs")]),
    ("device = 'npu' if ok and not cpu else None\n",
     [("s", "'npu'"), ("k", "if"), ("k", "and"), ("k", "not"), ("k", "else"), ("k", "None")]),
    ("print(self.print, 0x1F, 1e-3)\n", [("b", "print"), ("b", "self"), ("m", "0x1F"), ("m", "1e-3")]),
    ("raise ValueError(len(x))\n", [("k", "raise"), ("b", "len")]),
])
def test_tokens_get_the_pages_classes(line, expected):
    assert _coloured(line) == expected


def test_an_f_string_is_a_string():
    # (from Python 3.12 on the tokenizer splits it: its text parts are strings, its expressions code)
    strings = "".join(text for css, text in _coloured('x = f"npu:{rank}"\n') if css == "s")
    assert strings in ('f"npu:{rank}"', 'f"npu:"')


@pytest.mark.parametrize("line", [
    "    model = DistributedDataParallel(model,\n",  # a statement that goes on
    "    ) if x < 1 else y\n",  # the end of one
    "    Moves the model's weights to the <device> & back.\n",  # a line of a docstring
    '"""Train on "npu" or on \'cuda\' <b>.\n',  # a string that goes on
    "x = '<script>'  # a & b\n",
    "\tif torch.cuda.is_available():\r\n",
    "",
    "   \n",
])
def test_every_character_is_on_the_page_and_escaped(line):
    shown = line_html(line)
    assert _text(shown) == line
    assert "<" not in re.sub(r"</?em[^>]*>", "", shown)


def test_the_tokens_before_an_unfinished_statement_keep_their_colours():
    assert _coloured("    return torch.cat([x,\n")[:1] == [("k", "return")]
