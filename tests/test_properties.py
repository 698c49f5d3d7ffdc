"""Property-based tests: programs composed from CUDA idioms always satisfy the SPEC section 6
invariants.

A program is drawn from a library of statement templates (device strings, `.cuda()`,
`torch.cuda.*`, aliases, AMP, DataLoader, DP/DDP, NCCL, CUDA_VISIBLE_DEVICES, comments and
strings that mention CUDA) nested in blocks, with random names, indentation (spaces or tabs),
line endings (LF or CRLF) and trailing comments.  Whatever is drawn, the migration's output
parses, migrating it again changes nothing, every line no change touched is byte-identical, the
line endings are kept, the diff is exactly what the change list says, and every edit a row
claims is in the output at its line.
"""
import ast
from dataclasses import replace

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import Status, migrate_source
from gpu2npu.modes.distributed import INIT_CALL, SPAWN_CALL
from gpu2npu.modes import rules_for
from gpu2npu.rules import DistributedSettings, Options, SpecifyDeviceSettings
from helpers import lost_edits, unexplained_differences

API = apidata.load("2.1.0")
PATH = "prog.py"
MODES = {
    "single": Options(api=API),
    "specify-device": Options(api=API, specify_device=SpecifyDeviceSettings(entry_files=frozenset({PATH}))),
    "distributed": Options(api=API, distributed=DistributedSettings(main_file=PATH)),
}

IMPORTS = [
    "import torch as {t}",
    "from torch import cuda",
    "from torch.cuda import amp",
    "from torch.cuda.amp import autocast, GradScaler",
    "import torch.nn as nn",
    "from torch import nn",
    "import torch.distributed as dist",
    "from torch.utils.data import DataLoader",
    "from torch.nn.parallel import DistributedDataParallel as DDP",
    "import os",
    "import torch.nn.functional as F",
]

# {t} torch alias, {v} target, {w} expression name, {p} plain identifier, {n} small int,
# {q} quote, {i} the statement's own indentation (for continuation lines)
STATEMENTS = [
    "{v} = {w}.cuda()",
    "{v} = {w}.cuda({n})",
    "{v} = {w}.cuda(non_blocking=True)",
    "{v} = {w}.cuda({w}, non_blocking=True)",
    "{v} = {w}.to({q}cuda:{n}{q})",
    "{v} = {w}.to({q}cuda{q}, non_blocking=True)",
    "{v} = {w}.to({n})",
    "{v} = {w}.to({w})",
    "{v} = {t}.device({q}cuda{q})",
    "{v} = {t}.device({q}cuda{q}, {n})",
    "{v} = {t}.device({q}cuda{q} if {t}.cuda.is_available() else {q}cpu{q})",
    "{v} = {t}.zeros({n}, device={q}cuda:{n}{q})",
    "{v} = {t}.ones(2, device={n})",
    "{v} = {t}.randn(2, 3).to(device={w})",
    "{t}.cuda.synchronize()",
    "{t}.cuda.set_device({w})",
    "{t}.cuda.manual_seed_all({n})",
    "{v} = {t}.cuda.device_count()",
    "{v} = {t}.cuda.is_available()",
    "{v} = {t}.cuda.max_memory_allocated() / 1024",
    "cuda.manual_seed({n})",
    "{v} = cuda.current_device()",
    "{v} = {w}.is_cuda",
    "{v} = f{q}cuda:{{{w}}}{q}",
    "{v} = {q}cuda:{{}}{q}.format({w})",
    "{v} = {t}.cuda.amp.GradScaler()",
    "{v} = amp.GradScaler(enabled=True)",
    "{v} = GradScaler()",
    "{v} = {t}.amp.GradScaler({q}cuda{q})",
    "{v} = DataLoader({w}, batch_size={n}, shuffle=True)",
    "{v} = DataLoader({w}, batch_size={n}, shuffle=False, pin_memory=True, num_workers=2)",
    "train_loader = {t}.utils.data.DataLoader({w}, batch_size={n}, shuffle=True)",
    "{v} = nn.DataParallel({w})",
    "model = nn.DataParallel(model).cuda()",
    "model = {t}.nn.DataParallel(model, device_ids=[0, 1])",
    "model = DDP(model, device_ids=[{w}])",
    "model = {t}.nn.parallel.DistributedDataParallel(model)",
    "model = Net().cuda()",
    "model = model.to({w})",
    "dist.init_process_group(backend={q}nccl{q})",
    "dist.init_process_group({q}nccl{q}, init_method={q}env://{q}, rank={w})",
    "{v} = dist.is_nccl_available()",
    "os.environ[{q}CUDA_VISIBLE_DEVICES{q}] = {q}{n}{q}",
    "{v} = os.environ.get({q}CUDA_VISIBLE_DEVICES{q}, {q}0{q})",
    "{v} = {t}.autocast({q}cuda{q})",
    "{t}.cuda.nvtx.range_push({q}step{q})",
    "{v} = {t}.cuda.get_device_capability()",
    "{t}.backends.cudnn.benchmark = True",
    "{t}.save(model.state_dict(), {q}ckpt.pt{q})",
    "model.load_state_dict({t}.load({w}, map_location={q}cuda:{n}{q}))",
    "{v} = {q}cuda is not available{q}",
    "print({q}training on cuda:{n}{q}, {w})",
    "{v} = {w}.cuda() if {t}.cuda.is_available() else {w}",
    "{v} = [{p}.cuda() for {p} in {w}]",
    "{v} = {{k: {p}.to({q}cuda{q}) for k, {p} in {w}.items()}}",
    "{v} = F.relu({w}).cuda()",
    "{v} = {t}.tensor([1, 2], device={q}cuda{q}).sum()",
    "{v} = ({w}.cuda(),  # to the cuda device\n{i}    {w}.to({q}cuda{q}))",
    "{v} = {w} \\\n{i}    .cuda()",
    "{v} = {t}.zeros(\n{i}    {n},\n{i}    device={q}cuda{q},  # cuda here\n{i})",
    "assert {w}.device.type == {q}cuda{q}, {q}needs cuda{q}",
    # nested: a rewritten call inside a rewritten string, device argument or call
    "{v} = f{q}cuda:{{{t}.cuda.current_device()}}{q}",
    "{v} = {q}cuda:{{}}{q}.format({t}.cuda.current_device())",
    "{v} = {w}.to({t}.cuda.current_device())",
    "{v} = {t}.zeros({n}, device={t}.cuda.current_device())",
    "{v} = {w}.cuda({t}.cuda.current_device(), non_blocking=True)",
    "{v} = {w}.to({t}.device({q}cuda{q}, {t}.cuda.current_device()))",
    "{v} = {w}.to(f{q}cuda:{{{t}.cuda.current_device()}}{q}, non_blocking=True)",
    "model = nn.DataParallel(model.cuda(), device_ids=list(range({t}.cuda.device_count())))",
    "{v} = {n}",
    "pass",
    "# move everything to cuda:{n}",
]

BLOCKS = [
    "if {t}.cuda.is_available():",
    "if {w}.device.type == {q}cuda{q}:",
    "if args.dist_backend == {q}nccl{q}:",
    "with {t}.cuda.amp.autocast():",
    "with autocast():",
    "with {t}.autocast(device_type={q}cuda{q}, dtype={t}.float16):",
    "with {t}.cuda.device({n}):",
    "for {p} in DataLoader({w}, batch_size={n}):",
    "for epoch in range({n}):",
    "def {p}({p}, device={q}cuda{q}):",
    "def train(model, loader):",
    "class Net({t}.nn.Module):",
    "while {w}:",
    "if __name__ == {q}__main__{q}:",
]

TARGETS = ["x", "model", "net", "device", "batch", "loader", "args.gpu", "self.model", "images", "out"]
EXPRESSIONS = ["x", "model", "images", "args.gpu", "rank", "local_rank", "device", "data", "batch[0]", "self.model"]
IDENTIFIERS = ["x", "rank", "gpu", "item", "tensor", "local_rank"]
TRAILING = ["", "", "", "  # cuda", "  # moved to cuda:0", "  # type: ignore", "\t# nccl"]


@st.composite
def _fill(draw, template, torch_name, indentation):
    return template.format(
        t=torch_name,
        v=draw(st.sampled_from(TARGETS)),
        w=draw(st.sampled_from(EXPRESSIONS)),
        p=draw(st.sampled_from(IDENTIFIERS)),
        n=draw(st.integers(0, 7)),
        q=draw(st.sampled_from(["'", '"'])),
        i=indentation,
    )


@st.composite
def _block(draw, torch_name, unit, level):
    """Lines (without line endings) of a block at nesting `level`: at least one statement."""
    indentation = unit * level
    lines = []
    for _ in range(draw(st.integers(1, 5 if level else 8))):
        if level < 3 and draw(st.integers(0, 3)) == 0:
            header = draw(_fill(draw(st.sampled_from(BLOCKS)), torch_name, indentation))
            lines.append(indentation + header + draw(st.sampled_from(TRAILING)))
            if header.startswith(("def ", "class ")) and draw(st.booleans()):
                lines.append(indentation + unit + '"""Runs on cuda:0 with nccl."""')
            lines.extend(draw(_block(torch_name, unit, level + 1)))
        else:
            statement = draw(_fill(draw(st.sampled_from(STATEMENTS)), torch_name, indentation))
            trailing = "" if statement.startswith("#") or statement.endswith(")") and "\n" in statement else draw(
                st.sampled_from(TRAILING))
            lines.append(indentation + statement + trailing)
        if draw(st.integers(0, 5)) == 0:
            lines.append("")
    if all(not line.strip() or line.strip().startswith("#") for line in lines):
        lines.append(indentation + "pass")  # a block of comments alone is not valid Python
    return lines


@st.composite
def programs(draw):
    torch_name = draw(st.sampled_from(["torch", "th"]))
    unit = draw(st.sampled_from(["    ", "  ", "\t", "        "]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    if draw(st.booleans()):
        lines.append('"""A training script for cuda (nccl backend)."""')
    imports = draw(st.lists(st.sampled_from(IMPORTS), min_size=0, max_size=6, unique=True))
    lines.extend(line.format(t=torch_name) for line in ["import torch as {t}" if torch_name != "torch" else "import torch"] + imports)
    lines.extend(draw(_block(torch_name, unit, 0)))
    source = newline.join(line.replace("\n", newline) for line in lines) + newline  # continuation lines too
    return source.encode()


def _rows(changes):
    return [{"Start Line": str(c.start_line), "End Line": str(c.end_line), "Operation Type": c.operation.value}
            for c in changes]


# Found by the generator: the model is built in an `if` block that ends with a comment line, and
# the DistributedDataParallel wrap goes after that comment (its INSERT row must say so).
FOOTER_COMMENT = (
    b'"""A training script for cuda (nccl backend)."""\n'
    b'import torch\n'
    b'model = nn.DataParallel(model).cuda()\n'
    b'\n'
    b"x = {k: x.to('cuda') for k, x in x.items()}\n"
    b'\n'
    b'with autocast():\n'
    b'    if torch.cuda.is_available():\n'
    b'        x = DataLoader(x, batch_size=0, shuffle=True)\n'
    b'\n'
    b'        x = torch.cuda.device_count()\n'
    b'\n'
    b'        x = x.cuda()\n'
    b'\n'
    b'\n'
    b'    x = torch.cuda.get_device_capability()\n'
    b'\n'
    b'    if torch.cuda.is_available():\n'
    b'        x = [x.cuda() for x in x]\n'
    b'\n'
    b'        cuda.manual_seed(0)\n'
    b'\n'
    b'        if torch.cuda.is_available():\n'
    b"            torch.save(model.state_dict(), 'ckpt.pt')\n"
    b'\n'
    b'            model = nn.DataParallel(args.gpu)  # cuda\n'
    b'            # move everything to cuda:4\n'
    b'\n'
    b'\n'
    b'        train_loader = torch.utils.data.DataLoader(model, batch_size=5, shuffle=True)  # cuda\n'
    b'        # move everything to cuda:6\n'
    b'\n'
    b'    for tensor in DataLoader(x, batch_size=5):\n'
    b"        model = self.model.to('cuda', non_blocking=True)\n"
    b"        if args.dist_backend == 'nccl':  # moved to cuda:0\n"
    b'            batch = data.cuda()\n'
    b'\n'
    b'            net = x.cuda(x, non_blocking=True)\n'
    b'\n'
    b'            x = model.to("cuda:6")  # moved to cuda:0\n'
    b'\n'
    b'            net = images.cuda(3)\n'
    b'        with torch.cuda.amp.autocast():\n'
    b"            model = local_rank.to('cuda:0')\n"
    b'\n'
    b'            self.model = x.cuda(non_blocking=True)\n'
    b'\n'
    b'\n'
    b"loader = args.gpu.to('cuda', non_blocking=True)\n"
    b'\n'
    b'net = x.cuda(non_blocking=True)\n'
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(source=programs(), mode=st.sampled_from(sorted(MODES)))
@example(source=FOOTER_COMMENT, mode="distributed")
# a statement removed above the main block (-s deletes set_device) used to shift the pairing of
# statements with their originals: the start-up insert was recorded at the removed line
@example(source=b"import torch\ntorch.cuda.set_device(x)\n\nif __name__ == '__main__':\n"
                b"    if torch.cuda.is_available():\n        x = x.cuda()\n", mode="specify-device")
# a loader over a list of written size is advised, not edited; the distributed migration then
# wraps the list's name (`model = DDP(model)`): a second run must see the same list
@example(source=b"import torch\nmodel = [x.cuda() for x in x]\n\n"
                b"train_loader = torch.utils.data.DataLoader(model, batch_size=0, shuffle=True)\n", mode="distributed")
def test_generated_programs_keep_every_invariant(source, mode):
    ast.parse(source)  # the generator only writes valid Python
    options = _settings_for(source, MODES[mode])
    result = migrate_source(source, PATH, options, rules_for(options))
    assert result.status != Status.FAILED, result.error
    output = result.output or source
    assert _parses(output), output.decode()
    assert unexplained_differences(source, output, _rows(result.changes)) == []
    assert lost_edits(source, output, result.changes) == []
    if b"\r\n" in source:
        assert output.count(b"\n") == output.count(b"\r\n"), "a line lost its CRLF"
    else:
        assert b"\r" not in output
    options = _settings_for(output, options)
    again = migrate_source(output, PATH, options, rules_for(options))
    assert again.changes == [] and again.output in (None, output), "migrating twice changed the result"


def _settings_for(source: bytes, options: Options) -> Options:
    """What the run works out from the project before migrating it (`project.check_request`):
    a project that initialises its process group itself gets none added."""
    if options.distributed is None:
        return options
    initialises = INIT_CALL.search(source) is not None
    settings = replace(options.distributed, project_initialises=initialises, guard_saves=not initialises,
                       main_spawns=SPAWN_CALL.search(source.decode()) is not None)
    return replace(options, distributed=settings)


def _parses(data: bytes) -> bool:
    try:
        ast.parse(data)
        return True
    except SyntaxError:
        return False
