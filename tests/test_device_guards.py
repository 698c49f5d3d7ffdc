"""A device test is migrated only when what it guards is valid on the NPU after migration.

Otherwise the test and its branch stay exactly as written (dead on the NPU, as on any machine
without CUDA) and unsupported_api.csv has a row on the test saying why.
"""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.knowledge.tips import CUDA_BUILD_STRING
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options
from gpu2npu.rules.device_guards import _may_hold_cuda_only

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source: str):
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    output = (result.output or source.encode()).decode()
    guards = [f for f in result.findings if f.report == Report.UNSUPPORTED and f.api.startswith("device test")]
    return output, guards


# (source, the line of the test left as written)
LEFT_AS_WRITTEN = [
    # torch's profiler asked for CUDA's activity: switched, it would ask for CUDA on the NPU machine
    ("import torch\nfrom torch.profiler import ProfilerActivity\nacts = [ProfilerActivity.CPU]\n"
     "if torch.cuda.is_available():\n    acts.append(ProfilerActivity.CUDA)\n", 4),
    # capability behind availability, and/or chains, aliases
    ("import torch\nif torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0):\n"
     "    x = x.cuda()\n", 2),
    ("import torch as th\nif th.cuda.is_available() and th.cuda.get_device_capability()[0] >= 8:\n    pass\n", 2),
    ("from torch import cuda\nif cuda.is_available():\n    v = cuda.nccl.version()\n", 2),
    ("import torch\nif not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8:\n"
     "    fast = False\nelse:\n    fast = True\n", 2),
    # the guarded call in the body, the test a device comparison or is_cuda
    ("from flash_attn import flash_attn_with_kvcache\n\ndef attn(q, k, v):\n    if q.device.type == 'cuda':\n"
     "        return flash_attn_with_kvcache(q, k, v)\n    return sdpa(q, k, v)\n", 4),
    ("import flash_attn\n\ndef attn(q, k, v):\n    if q.is_cuda:\n        return flash_attn.flash_attn_with_kvcache(q, k, v)\n", 4),
    ("from xformers.ops.fmha import BlockDiagonalMask\n\ndef mask(lengths, device):\n"
     "    if str(device).startswith('cuda'):\n        return BlockDiagonalMask.from_seqlens(lengths)\n", 4),
    # an operator the release has no NPU kernel for
    ("import torch\n\ndef mm(a, b):\n    if a.is_cuda:\n        return torch._int_mm(a, b)\n    return a.float() @ b.float()\n", 4),
    # elif
    ("import torch\nif torch.backends.mps.is_available():\n    d = 'mps'\nelif torch.cuda.is_available():\n"
     "    torch.cuda.nvtx.range_push('x')\n", 4),
    # != "cuda": what runs where the test is false
    ("from flash_attn import flash_attn_with_kvcache\n\ndef attn(q, k, v):\n    if q.device.type != 'cuda':\n"
     "        return sdpa(q, k, v)\n    else:\n        return flash_attn_with_kvcache(q, k, v)\n", 4),
    # early return
    ("import torch\n\ndef use_bf16():\n    if not torch.cuda.is_available():\n        return False\n"
     "    return torch.cuda.get_device_capability()[0] >= 8\n", 4),
    # a raise in a nested block guards the rest of the function; the test around it stays too
    ("import torch\nimport torch_tensorrt\n\ndef to_trt(m, d):\n    if m.device.type != 'cuda':\n"
     "        if not torch.cuda.is_available() or d.type != 'cuda':\n            raise RuntimeError('CUDA only')\n"
     "    return torch_tensorrt.compile(m)\n", 6),
    ("import torch\nimport torch_tensorrt\n\ndef to_trt(m, d):\n    if m.device.type != 'cuda':\n"
     "        if not torch.cuda.is_available() or d.type != 'cuda':\n            raise RuntimeError('CUDA only')\n"
     "    return torch_tensorrt.compile(m)\n", 5),
    # continue guards the rest of the loop body
    ("import torch\n\ndef f(xs):\n    for b in xs:\n        if not b.is_cuda:\n            continue\n"
     "        torch.cuda.nvtx.range_push('b')\n", 5),
    # conditional expression and a boolean expression
    ("from flash_attn import flash_attn_with_kvcache\ny = flash_attn_with_kvcache(q, k, v) if q.is_cuda else sdpa(q, k, v)\n", 2),
    ("import torch\nfast = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8\n", 2),
    # a variable holding the test
    ("import torch\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n    print(torch.cuda.nccl.version())\n", 3),
    # another framework's device option, which the rules leave as written: migrated alone, the test
    # would ask that framework for CUDA on the NPU
    ("import torch\naccelerator = 'cpu'\nif torch.cuda.is_available():\n    accelerator = 'cuda'\n", 3),
    ("import torch\nimport lightning as L\ntrainer = L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu')\n", 3),
    ("import torch\n\ndef options(args):\n    if args.device.type == 'cuda':\n        args.accelerator = f'cuda'\n", 4),
    ("import torch\nfrom vllm import LLM\nif torch.cuda.is_available():\n    llm = LLM('m', device='cuda')\n", 3),
    # the device's name looked up in a table of NVIDIA GPUs: the NPU's name is no key of it
    ("import torch\nPEAK = {'NVIDIA H100': 989e12}\nif torch.cuda.is_available():\n    name = torch.cuda.get_device_name()\n"
     "    mfu = flops / PEAK[name]\n", 3),
    ("import torch\n\ndef peak(x):\n    if x.is_cuda:\n        return SPECS[torch.cuda.get_device_name(x.device)]['tflops']\n", 4),
    # another program's NCCL collective behind the test (an RL trainer's weight sync with a vLLM server):
    # migrated, the NPU would pass the test into an engine that needs libnccl and CUDA tensors
    ("import torch\nfrom vllm.distributed.weight_transfer.nccl_engine import NCCLWeightTransferEngine\n\n"
     "def join(device, info):\n    if device.type != 'cuda':\n        raise NotImplementedError('NCCL engine')\n"
     "    return NCCLWeightTransferEngine.trainer_init(info)\n", 5),
    ("import torch\nfrom vllm.distributed.device_communicators.pynccl import PyNcclCommunicator\n"
     "if torch.cuda.is_available():\n    comm = PyNcclCommunicator(group, device=0)\n", 3),
    # a fused update the release has no NPU kernel for (torch_npu 2.1 has fused AdamW, not Adam)
    ("import torch\nfrom torch import optim\n\ndef build(model, name, params):\n"
     "    fused = {'fused': True} if name in {'Adam', 'AdamW'} and next(model.parameters()).is_cuda else {}\n"
     "    return getattr(optim, name)(params=params, **fused)\n", 5),
    ("import torch\nuse_fused = x.device.type == 'cuda'\nopt = torch.optim.Adam(params, fused=True if use_fused else None)\n", 2),
    # another framework's CUDA build or provider
    ("import torch\nif torch.cuda.is_available():\n    check_requirements('onnxruntime-gpu>=1.18')\n", 2),
    ("import torch\nproviders = ['CUDAExecutionProvider'] if x.is_cuda else ['CPUExecutionProvider']\n", 2),
    ("import torch\nort = 'paddlepaddle-gpu' if 'cuda' in device.type else 'paddlepaddle'\n", 2),
    # the project's own question about CUDA, and a binding only CUDA builds of torch have
    ("import torch\nfrom .environment import check_cuda_fp8_capability\n"
     "if torch.cuda.is_available() and not check_cuda_fp8_capability():\n    fp8 = False\n", 3),
    ("import torch\nif torch.cuda.is_available():\n    assert not torch._C._cuda_isInBadFork()\n", 2),
    ("import torch\nfrom .utils import get_torch_cuda_device_capability\nif torch.cuda.is_available():\n"
     "    capability = float(get_torch_cuda_device_capability())\n", 3),
    # MoE and GEMM kernels for NVIDIA GPUs (CuTe DSL, DeepGEMM), also through transformers' integrations
    ("def experts(self, hidden, index, weights):\n    from transformers.integrations.sonicmoe import sonicmoe_experts_forward\n"
     "    if hidden.device.type != 'cuda':\n        raise ValueError('needs a GPU')\n"
     "    return sonicmoe_experts_forward(self, hidden, index, weights)\n", 3),
    ("import torch\nimport deep_gemm\nif torch.cuda.is_available():\n    out = deep_gemm.fp8_gemm_nt(a, b, out)\n", 3),
    # torch's varlen_attn runs a Flash-Attention CUDA kernel that torch_npu has no NPU kernel for,
    # through a variable holding the test and an early return
    ("import torch\nfrom torch.nn.attention.varlen import varlen_attn\n\ndef attend(q, k, v, cu, m):\n"
     "    fast = q.is_cuda and q.dtype == torch.bfloat16\n    if not fast:\n        return sdpa(q, k, v)\n"
     "    return varlen_attn(q, k, v, cu, cu, m, m)\n", 5),
    # FlexAttention raises for NPU tensors: torch's function, and transformers' attention option naming it
    ("import torch\nfrom torch.nn.attention.flex_attention import flex_attention\n"
     "out = flex_attention(q, k, v) if q.is_cuda else sdpa(q, k, v)\n", 3),
    ("import torch\nif torch.cuda.is_available():\n    model.config._attn_implementation = 'flex_attention'\n", 2),
    ("import torch\nfrom transformers import AutoModel\nuse_flex = torch.cuda.is_available()\n"
     "model = AutoModel.from_pretrained(p, attn_implementation='flex_attention' if use_flex else 'sdpa')\n", 4),
    # a framework's option handed over in a variable of another name (renamed, the framework would
    # be given a name it rejects), whatever else reads the variable
    ("import torch\nimport lightning as L\naccel = 'gpu' if torch.cuda.is_available() else 'cpu'\n"
     "trainer = L.Trainer(accelerator=accel, devices=1)\n", 3),
    ("import torch\nimport lightning as L\ndev = 'cpu'\nif torch.cuda.is_available():\n    dev = 'cuda'\n"
     "trainer = L.Trainer(accelerator=dev)\nx = torch.ones(2).to(dev)\n", 4),
    ("import torch\nfrom vllm import LLM\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
     "llm = LLM('model', device=device)\n", 3),
    # ... or in an attribute of that name, set on one object and read from another
    ("import torch\nimport lightning as L\n\nclass Config:\n    def __init__(self):\n"
     "        self.device_type = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n"
     "trainer = L.Trainer(accelerator=Config().device_type)\n", 6),
    ("import torch\nimport lightning as L\n\nclass Run:\n    def __init__(self):\n"
     "        self.accel = 'gpu' if torch.cuda.is_available() else 'cpu'\n\n"
     "    def fit(self, model):\n        L.Trainer(accelerator=self.accel).fit(model)\n", 6),
    # ... or returned to it by a function of the file, or a method of its class
    ("import torch\nimport lightning as L\n\ndef get_accelerator():\n"
     "    return 'gpu' if torch.cuda.is_available() else 'cpu'\n\n"
     "trainer = L.Trainer(accelerator=get_accelerator(), devices=1)\n", 5),
    ("import torch\nimport lightning as L\n\ndef choose():\n    if torch.cuda.is_available():\n"
     "        return 'cuda'\n    return 'cpu'\n\ntrainer = L.Trainer(accelerator=choose())\n", 5),
    ("import torch\nimport lightning as L\n\nclass Run:\n    def accelerator(self):\n"
     "        return 'gpu' if torch.cuda.device_count() > 0 else 'cpu'\n\n"
     "    def fit(self, model):\n        L.Trainer(accelerator=self.accelerator()).fit(model)\n", 6),
    # ... or "gpu" returned by a function whose callers are in other files: no torch device has
    # that name (torch.device("gpu") raises), so it goes to a framework's own choice
    ("import torch\n\n\ndef get_accelerator():\n    return 'gpu' if torch.cuda.is_available() else 'cpu'\n", 5),
    ("import torch\n\n\ndef accelerator_and_devices():\n    if torch.cuda.is_available():\n"
     "        return 'gpu', torch.cuda.device_count()\n    return 'cpu', 1\n", 5),
]


@pytest.mark.parametrize("source, line", LEFT_AS_WRITTEN)
def test_a_test_guarding_cuda_only_code_stays_as_written(source, line):
    output, guards = _migrate(source)
    original = source.splitlines()
    assert output.splitlines()[output.splitlines().index(original[line - 1])] == original[line - 1]
    assert any(guard.start_line == line for guard in guards), guards
    assert all("left as written" in guard.tip and "not taken" in guard.tip for guard in guards)


def test_the_variable_of_a_dead_test_is_not_migrated_either():
    source = next(source for source, _ in LEFT_AS_WRITTEN if "use_cuda = " in source)
    output, _ = _migrate(source)
    assert "use_cuda = torch.cuda.is_available()" in output


MIGRATED = [
    # what the test guards is valid on the NPU after migration
    ("import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n", "torch_npu.npu.is_available()"),
    ("import torch\nif x.device.type == 'cuda':\n    x = x.cuda()\n", "x.device.type == 'npu'"),
    ("import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n", "torch_npu.npu.is_available()"),
    # an attribute handed to a torch device position only, beside a framework option of another value
    ("import torch\nimport lightning as L\n\nclass Run:\n    def __init__(self):\n"
     "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
     "        self.model = torch.nn.Linear(2, 2).to(device=self.device)\n\n"
     "L.Trainer(accelerator='auto')\n", "'npu' if torch_npu.npu.is_available()"),
    # the CUDA-only code sits where the test is false: it ran there before migration too
    ("import torch\nif torch.cuda.is_available():\n    x = x.cuda()\nelse:\n    torch.cuda.nvtx.range_pop()\n",
     "torch_npu.npu.is_available()"),
    # metadata of a CUDA-only package is no use of its kernels
    ("import torch\nimport bitsandbytes\nif torch.cuda.is_available():\n    print(bitsandbytes.__version__)\n",
     "torch_npu.npu.is_available()"),
    # a device name that is a torch device, beside a framework's option of its own
    ("import torch\nimport lightning as L\nif torch.cuda.is_available():\n    x = x.to('cuda')\nL.Trainer(accelerator='gpu')\n",
     "torch_npu.npu.is_available()"),
    ("import torch\nacc = 'cpu'\nif torch.cuda.is_available():\n    acc = 'gpu'\n", "torch_npu.npu.is_available()"),
    # a variable handed to a keyword that is no framework's option (another callee's `device`)
    ("import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\nx = torch.ones(2, device=device)\n"
     "run(model, device=device)\n", "torch_npu.npu.is_available()"),
    # the name looked up with a default, or only printed
    ("import torch\nif torch.cuda.is_available():\n    peak = PEAK.get(torch.cuda.get_device_name(), 1.0)\n",
     "torch_npu.npu.is_available()"),
    ("import torch\nif torch.cuda.is_available():\n    print(torch.cuda.get_device_name())\n", "torch_npu.npu.is_available()"),
    # a function of the project named for CUDA that asks nothing (an action: it is migrated itself)
    ("import torch\nif torch.cuda.is_available():\n    x = to_cuda(x)\n", "torch_npu.npu.is_available()"),
    # a mapping whose key is computed (no option named by it)
    ("import torch\nif torch.cuda.is_available():\n    table = {name(): True}\n", "torch_npu.npu.is_available()"),
    # a fused update the release has a kernel for (AdamW in torch_npu 2.1)
    ("import torch\nuse_fused = device_type == 'cuda'\nextra = dict(fused=True) if use_fused else dict()\n"
     "opt = torch.optim.AdamW(params, lr=1e-3, **extra)\n", "device_type == 'npu'"),
    # torch's own collectives behind the same test run on the NPU over HCCL
    # (a message saying "CUDA only" would be the author's word that it is not: TestATestWhoseMessageSays...)
    ("import torch\nimport torch.distributed as dist\n\ndef sync(device, t):\n    if device.type != 'cuda':\n"
     "        raise NotImplementedError(f'no broadcast on {device}')\n    dist.broadcast(t, 0)\n", "device.type != 'npu'"),
    # a function of the file whose result is a torch device, or handed to a keyword of no framework
    ("import torch\n\ndef pick():\n    if torch.cuda.is_available():\n        return 'cuda'\n    return 'cpu'\n\n"
     "model = Net().to(device=pick())\n",
     "    if torch_npu.npu.is_available():\n        return 'npu'\n"),
    ("import torch\nimport lightning as L\n\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n\n"
     "x = torch.ones(2, device=pick())\ntrainer = L.Trainer(accelerator='auto')\n",
     "    return 'npu' if torch_npu.npu.is_available() else 'cpu'\n"),
    # a torch device returned to callers elsewhere; "gpu" only printed
    ("import torch\n\n\ndef device():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n",
     "    return 'npu' if torch_npu.npu.is_available() else 'cpu'\n"),
    ("import torch\n\n\ndef report():\n    if torch.cuda.is_available():\n        print('gpu')\n        return 1\n",
     "    if torch_npu.npu.is_available():\n"),
]


def test_a_framework_option_chosen_by_a_test_is_left_whole_with_the_frameworks_tip():
    output, guards = _migrate("import torch\nimport lightning as L\n"
                              "L.Trainer(accelerator='cuda' if torch.cuda.is_available() else 'cpu')\n")
    assert "accelerator='cuda' if torch.cuda.is_available() else 'cpu'" in output
    assert [guard.start_line for guard in guards] == [3]
    assert "Lightning's accelerator option" in guards[0].tip and "choose the NPU in that framework" in guards[0].tip


# The same availability test asked for another option of the framework, beside a left one.
LIGHTNING = "import torch\nimport lightning as L\n"
BESIDE_A_LEFT_CHOICE = [
    # in the same call, either option first, a count compared
    "L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu',\n"
    "          devices=torch.cuda.device_count() if torch.cuda.is_available() else 1)\n",
    "L.Trainer(devices=torch.cuda.device_count() if torch.cuda.is_available() else 1,\n"
    "          accelerator='cuda' if torch.cuda.is_available() else 'cpu')\n",
    "L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu',\n"
    "          strategy='ddp' if torch.cuda.device_count() > 1 else 'auto')\n",
    # in a dict of the framework's settings, and dict(...)
    "settings = {'accelerator': 'gpu' if torch.cuda.is_available() else 'cpu',\n"
    "            'devices': torch.cuda.device_count() if torch.cuda.is_available() else 1}\n",
    "settings = dict(accelerator='gpu' if torch.cuda.is_available() else 'cpu',\n"
    "                devices=torch.cuda.device_count() if torch.cuda.is_available() else 1)\n",
]


@pytest.mark.parametrize("call", BESIDE_A_LEFT_CHOICE)
def test_an_availability_test_beside_a_left_framework_choice_is_left_too(call):
    output, guards = _migrate(LIGHTNING + call)
    assert output == LIGHTNING + call
    assert [guard.start_line for guard in guards] == [3, 4]
    beside = [guard for guard in guards if "as the same test beside it" in guard.tip]
    assert len(beside) == 1 and "test for the NPU in both" in beside[0].tip


@pytest.mark.parametrize("source", [
    # the choice through a variable, the count written in the call
    "accel = 'gpu' if torch.cuda.is_available() else 'cpu'\n"
    "L.Trainer(accelerator=accel, devices=torch.cuda.device_count() if torch.cuda.is_available() else 1)\n",
    # both through variables, and the count through one beside a written choice
    "accel = 'gpu' if torch.cuda.is_available() else 'cpu'\n"
    "n_dev = torch.cuda.device_count() if torch.cuda.is_available() else 1\nL.Trainer(accelerator=accel, devices=n_dev)\n",
    "n_dev = torch.cuda.device_count() if torch.cuda.is_available() else 1\n"
    "L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu', devices=n_dev)\n",
])
def test_the_same_through_variables_the_file_assigns_once(source):
    output, guards = _migrate(LIGHTNING + source)
    assert output == LIGHTNING + source
    assert len(guards) == 2 and sum("as the same test beside it" in guard.tip for guard in guards) == 1


STAY_MIGRATED_BESIDE = [
    # a capability test raises without CUDA: migrated, it answers for the NPU (the CPU run takes bf16 too)
    ("L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu',\n"
     "          precision='bf16-mixed' if torch.cuda.is_bf16_supported() else '32-true')\n",
     "torch_npu.npu.is_bf16_supported()"),
    # in another call, or another statement
    ("L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu')\n"
     "n = torch.cuda.device_count() if torch.cuda.is_available() else 1\n",
     "n = torch_npu.npu.device_count() if torch_npu.npu.is_available() else 1"),
    ("L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu',\n"
     "          devices=count(torch.cuda.device_count() if torch.cuda.is_available() else 1))\n",
     "count(torch_npu.npu.device_count() if torch_npu.npu.is_available() else 1)"),
    # a count variable assigned twice (what reaches the call is not one value), or handed elsewhere
    ("n = torch.cuda.device_count() if torch.cuda.is_available() else 1\nif big:\n    n = 8\n"
     "L.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu', devices=n)\n",
     "n = torch_npu.npu.device_count() if torch_npu.npu.is_available() else 1"),
    ("accel = 'gpu' if torch.cuda.is_available() else 'cpu'\nL.Trainer(accelerator=accel)\n"
     "world = torch.cuda.device_count() if torch.cuda.is_available() else 1\nspawn(run, nprocs=world)\n",
     "world = torch_npu.npu.device_count() if torch_npu.npu.is_available() else 1"),
    # beside a torch device choice, which is migrated
    ("run(device='cuda' if torch.cuda.is_available() else 'cpu',\n"
     "    world=torch.cuda.device_count() if torch.cuda.is_available() else 1)\n",
     "world=torch_npu.npu.device_count() if torch_npu.npu.is_available() else 1"),
]


@pytest.mark.parametrize("source, expected", STAY_MIGRATED_BESIDE)
def test_tests_not_beside_a_left_choice_are_migrated(source, expected):
    output, _ = _migrate(LIGHTNING + source)
    assert expected in output


@pytest.mark.parametrize("source, expected", MIGRATED)
def test_a_test_guarding_valid_code_is_migrated(source, expected):
    output, guards = _migrate(source)
    assert expected in output
    assert guards == []


def test_the_tf32_gate_gets_the_hf32_tip():
    source = ("import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n"
              "    torch.backends.cuda.matmul.allow_tf32 = True\n")
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    rows = [f for f in result.findings if f.api == "torch.cuda.get_device_capability"]
    assert rows and "HF32" in rows[0].tip and "bf16" not in rows[0].tip


def test_an_attribute_named_like_a_device_variable_is_no_device_test():
    source = ("import torch\nimport bitsandbytes as bnb\n\ndef f(device, param):\n"
              "    device = device or torch.device('cuda')\n    if param.device.type == 'meta':\n"
              "        return bnb.nn.Params4bit(param)\n    return param.to(device)\n")
    output, guards = _migrate(source)
    assert guards == []
    assert "torch.device('npu')" in output


def test_a_name_imported_from_two_places_is_reported_the_same_every_run():
    """Which of its two imports a guarded name is reported as does not depend on the run (string
    hashing differs from one Python process to the next)."""
    import os
    import subprocess
    import sys

    source = (
        "import torch\n"
        'DEVICE_TYPE = "cuda" if torch.cuda.is_available() else "cpu"\n'
        'if DEVICE_TYPE == "cuda":\n'
        "    try:\n"
        "        from triton.backends.nvidia.driver import libcuda_dirs\n"
        "    except ImportError:\n"
        "        from triton.common.build import libcuda_dirs\n"
        "    libcuda_dirs()\n"
    )
    program = (
        "import sys\n"
        "from gpu2npu.knowledge import apidata\nfrom gpu2npu.migration import pipeline\n"
        "from gpu2npu.modes import rules_for\n"
        "from gpu2npu.rules import Options\n"
        "options = Options(api=apidata.load('2.6.0'))\n"
        "result = pipeline.migrate_source(sys.stdin.buffer.read(), 'gpu_init.py', options, rules_for(options))\n"
        "print([(f.start_line, f.api, f.tip) for f in result.findings if f.start_line == 3])\n"
    )
    answers = set()
    for seed in range(6):
        run = subprocess.run([sys.executable, "-c", program], input=source.encode(), capture_output=True,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)}, check=True)
        answers.add(run.stdout)
    assert len(answers) == 1
    assert b"triton.backends.nvidia.driver.libcuda_dirs" in answers.pop()


def test_a_left_fused_update_and_a_cuda_build_say_what_the_npu_uses_instead():
    _, guards = _migrate("import torch\nuse_fused = x.device.type == 'cuda'\n"
                         "opt = torch.optim.Adam(params, fused=True if use_fused else None)\n")
    assert "no fused NPU kernel for Adam" in guards[0].tip and "torch_npu.optim.NpuFusedAdamW" in guards[0].tip
    _, guards = _migrate("import torch\nif torch.cuda.is_available():\n    check_requirements('onnxruntime-gpu')\n")
    assert "'onnxruntime-gpu'" in guards[0].tip and "CANNExecutionProvider" in guards[0].tip


def test_a_guard_of_a_name_the_npu_has_but_answers_otherwise_does_not_call_it_missing():
    _, guards = _migrate("import torch\nif torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8:\n"
                         "    x = x.cuda()\n")
    assert "has no NPU form" not in guards[0].tip and "does not answer as CUDA's does" in guards[0].tip


def test_the_variable_of_a_dead_test_read_negated_is_not_migrated_either():
    # diffusers' Nunchaku loader: renamed alone, the variable let the NPU past the refusal into the
    # capability query
    output, guards = _migrate("import torch\n\ndef validate():\n    cuda_available = torch.cuda.is_available()\n"
                              "    if not cuda_available:\n        raise ValueError('needs CUDA')\n"
                              "    return torch.cuda.get_device_capability()\n")
    assert "cuda_available = torch.cuda.is_available()" in output
    assert [guard.start_line for guard in guards] == [4, 5]  # the variable and the test


class TestATestAroundADeadOne:
    """A device test around one left as written guards nothing CUDA-only there: the inner test's
    branch stays dead on the NPU by itself.  So the outer one is migrated, and a device whose type
    the inner test compares goes on moving with the migration."""

    SOURCE = ("import torch\n\ndef place(model):\n    gpus = torch.cuda.device_count()\n    if gpus > 1:\n"
              "        device = torch.device(f'cuda:{gpus - 1}')\n        model.to(device)\n"
              "        if device.type == 'cuda':\n            model.config._attn_implementation = 'flex_attention'\n"
              "    return model\n")

    def test_the_inner_test_alone_stays(self):
        output, guards = _migrate(self.SOURCE)
        assert "        if device.type == 'cuda':\n" in output
        assert [guard.start_line for guard in guards] == [8]

    def test_the_outer_test_and_the_device_are_migrated(self):
        output, _ = _migrate(self.SOURCE)
        assert "gpus = torch_npu.npu.device_count()" in output
        assert "device = torch.device(f'npu:{gpus - 1}')" in output

    def test_a_test_around_a_dead_one_on_a_variable_assigned_in_it_stays(self):
        # Lightning's connector: the inner test reads the accelerator flag itself, so what the outer
        # branch assigns to it stays as written with it; migrated alone, the outer test would let
        # the NPU into that CUDA choice
        output, guards = _migrate(
            "import torch\n\ndef choose(self):\n    if self._accelerator_flag == 'auto':\n"
            "        self._accelerator_flag = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "    if self.devices[0].type == 'cuda':\n"
            "        if self._accelerator_flag and self._accelerator_flag not in ('auto', 'cuda', 'gpu'):\n"
            "            raise ValueError('choose one device type')\n        self._accelerator_flag = 'cuda'\n")
        assert "    if self.devices[0].type == 'cuda':\n" in output and "self._accelerator_flag = 'cuda'\n" in output
        assert [guard.start_line for guard in guards] == [5, 6, 7, 9]

    def test_a_test_that_exits_before_a_dead_one_still_stays_with_it(self):
        # `if not D: raise` in the body guards the rest of the function: migrating the outer
        # test alone would send the NPU past the refusal
        output, guards = _migrate(
            "import torch\nimport torch_tensorrt\n\ndef to_trt(m, d):\n    if m.device.type != 'cuda':\n"
            "        if not torch.cuda.is_available():\n            raise RuntimeError('CUDA only')\n"
            "    return torch_tensorrt.compile(m)\n")
        assert "if m.device.type != 'cuda':" in output and [guard.start_line for guard in guards] == [5, 6]


@pytest.mark.parametrize("test", [
    # a chain in parentheses over several lines: `(a and b and c)` holds the chain `a and b` of its own
    "(\n    flag\n    and w.device.type == 'cuda'\n    and torch.cuda.get_device_capability(w.device)[0] >= 8\n"
    "    and w.dtype == torch.float32\n)",
    "flag and torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 10 and other",
])
def test_a_chained_test_left_as_written_is_one_row(test):
    source = f"import torch\n\n\ndef f(w, flag, other):\n    if {test}:\n        return 1\n    return 0\n"
    output, guards = _migrate(source)
    assert output.count("torch.cuda.get_device_capability(") == 1
    assert len(guards) == 1 and guards[0].start_line in (5, 6), guards  # (the `if` or its first operand)


@pytest.mark.parametrize("text", ["faiss-gpu", "onnxruntime-gpu>=1.18", "paddlepaddle-gpu==2.6", "jax[cuda12]",
                                  "CUDAExecutionProvider", "TensorrtExecutionProvider"])
def test_the_text_test_before_the_walk_lets_every_cuda_build_string_through(text):
    # (the walk is skipped where the text test says no: it must say yes wherever a build string can be)
    assert CUDA_BUILD_STRING.match(text)
    assert _may_hold_cuda_only(f"import torch\nif torch.cuda.is_available():\n    need({text!r})\n", apidata.load("2.1.0"))


def test_a_gpu_option_of_the_script_is_no_cuda_build_string():
    code = ("import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--gpu', type=int)\n"
            "args = p.parse_args()\nif torch.cuda.is_available():\n    torch.cuda.set_device(args.gpu)\n")
    assert not _may_hold_cuda_only(code, apidata.load("2.1.0"))
    output, guards = _migrate(code)
    assert guards == [] and "torch_npu.npu.set_device(args.gpu)" in output


class TestTheNameAGuardIsLeftFor:
    """A device test left as written for the CUDA-only name it guards has the row, and its tip is
    that name's: where the name is in the test itself, that is its one row there; in the code the
    test guards, the name keeps a row of its own at its line."""

    @pytest.mark.parametrize("test", [
        "query.device.type != 'cuda' or torch.cuda.get_device_capability(query.device)[0] != 10",
        "torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)",
    ])
    def test_in_the_test_one_row(self, test):
        source = f"import torch\n\n\ndef attend(query):\n    if {test}:\n        return query * 2\n    return query\n"
        result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
        rows = [(f.start_line, f.rule) for f in result.findings if f.report == Report.UNSUPPORTED]
        assert rows == [(5, "NPU914")]
        assert "get_device_capability returns None" in result.findings[0].tip

    def test_in_the_guarded_code_a_row_of_its_own(self):
        source = ("import torch\n\n\ndef fast(x):\n    if torch.cuda.is_available():\n"
                  "        major, _ = torch.cuda.get_device_capability()\n        return x * major\n    return x\n")
        result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
        rows = [(f.start_line, f.rule) for f in result.findings if f.report == Report.UNSUPPORTED]
        assert rows == [(5, "NPU914"), (6, "NPU917")]


class TestATestAndWhatItGuardsOnOneLine:
    """A conditional expression whose test and guarded code are both calls on one line: the test
    left as written has its row, and so has the CUDA-only call it guards."""

    @pytest.mark.parametrize("source, guarded", [
        ('import torch\nfn = torch.cuda.jiterator._create_jit_fn("x") if torch.cuda.is_available() else None\n',
         "torch.cuda.jiterator._create_jit_fn"),
        ('import torch\n\n\ndef make():\n    return (torch.cuda.jiterator._create_jit_fn("x")\n'
         '            if torch.cuda.is_available() else None)\n', "torch.cuda.jiterator._create_jit_fn"),
    ])
    def test_both_rows(self, source, guarded):
        result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
        rows = sorted(f.api for f in result.findings if f.report == Report.UNSUPPORTED)
        assert rows == ["device test torch.cuda.is_available()", guarded]


class TestATableOfGpusLookedUpByTheDevicesName:
    """A table of NVIDIA GPUs looked up by the device's name, or a part of it, has no key for the
    NPU's name (Ascend910B...): the lookup raises where CUDA's absence skipped it, so the test in
    front of it stays as written. A lookup that cannot raise is migrated."""

    @staticmethod
    def _peak_flops(lookup: str) -> str:
        """A function that looks the peak up (`lookup`, its lines) where CUDA is there."""
        body = "".join(f"        {line}\n" for line in lookup.splitlines())
        return (f"import torch\nPEAK = {{'A100': 312e12}}\n\n\ndef peak_flops():\n    if torch.cuda.is_available():\n"
                f"{body}        return peak\n    return 1e12\n")

    @pytest.mark.parametrize("lookup", [
        "peak = PEAK[torch.cuda.get_device_name()]",
        "peak = PEAK[torch.cuda.get_device_name(0).split(' ')[1]]",
        "name = torch.cuda.get_device_name()\nkey = name.split()[-1]\npeak = PEAK[key]",
        "peak = PEAK[torch.cuda.get_device_name().replace('NVIDIA ', '').lower()]",
    ])
    def test_the_test_stays(self, lookup):
        output, guards = _migrate(self._peak_flops(lookup))
        assert "if torch.cuda.is_available():" in output
        assert len(guards) == 1 and "get_device_name()" in guards[0].tip

    @pytest.mark.parametrize("lookup", [
        "peak = PEAK.get(torch.cuda.get_device_name(), 1e12)",  # no key: a default
        "peak = PEAK[torch.cuda.device_count()]",  # not the name
        # asked first whether the table has it (Lightning's throughput: an unknown chip returns None)
        "chip = torch.cuda.get_device_name().lower()\nif chip not in PEAK:\n    return None\npeak = PEAK[chip]",
        # a cache keyed by the name: a store cannot miss, nor a lookup that catches the miss; a
        # key made of the name and other values is a cache's
        "key = (4, torch.cuda.get_device_name())\nPEAK[key] = peak = 1.0",
        "try:\n    peak = PEAK[torch.cuda.get_device_name()]\nexcept KeyError:\n    peak = 1.0",
        "key = (4, str(torch.float16), torch.cuda.get_device_name())\npeak = PEAK[key]",
    ])
    def test_a_lookup_that_cannot_miss_is_migrated(self, lookup):
        output, guards = _migrate(self._peak_flops(lookup))
        assert "if torch_npu.npu.is_available():" in output and guards == []

    @staticmethod
    def _behind_an_early_return(search: str) -> str:
        """A peak-FLOPs helper that returns without CUDA first, then runs `search` (its lines)."""
        body = "".join(f"    {line}\n" for line in search.splitlines())
        return ("import torch\nPEAK = {'a100': 312e12}\n\n\ndef peak_flops():\n    if not torch.cuda.is_available():\n"
                f"        return 0.0\n{body}")

    @pytest.mark.parametrize("search", [
        "name = torch.cuda.get_device_name()\nfor key, flops in PEAK.items():\n    if key in name:\n        return flops\n"
        "raise ValueError(name)",
        "name = torch.cuda.get_device_name(0).lower()\nfor key in PEAK:\n    if name.startswith(key):\n"
        "        return PEAK[key]\nelse:\n    raise KeyError(name)",
    ])
    def test_a_search_that_raises_where_none_matches_keeps_the_test(self, search):
        output, guards = _migrate(self._behind_an_early_return(search))
        assert "if not torch.cuda.is_available():" in output
        assert len(guards) == 1 and "raises where none matches" in guards[0].tip

    @pytest.mark.parametrize("after", ["return float('inf')", "print(name)\nreturn None"])
    def test_a_search_with_a_default_is_migrated(self, after):
        search = f"name = torch.cuda.get_device_name()\nfor key, flops in PEAK.items():\n    if key in name:\n        return flops\n{after}"
        output, guards = _migrate(self._behind_an_early_return(search))
        assert "if not torch_npu.npu.is_available():" in output and guards == []

    @pytest.mark.parametrize("search", [
        "name = torch.cuda.get_device_name()\nreturn next(v for k, v in PEAK.items() if k in name)",
        "return next(PEAK[k] for k in PEAK if torch.cuda.get_device_name(0).lower().startswith(k))",
    ])
    def test_a_next_over_the_table_without_a_default_keeps_the_test(self, search):
        # (next() raises StopIteration where no entry matches)
        output, guards = _migrate(self._behind_an_early_return(search))
        assert "if not torch.cuda.is_available():" in output
        assert len(guards) == 1 and "raises where none matches" in guards[0].tip

    @pytest.mark.parametrize("search", [
        "name = torch.cuda.get_device_name()\nreturn next((v for k, v in PEAK.items() if k in name), 1e12)",
        "return next(v for k, v in PEAK.items() if k in SIZES)",  # not the name
    ])
    def test_a_next_with_a_default_or_over_something_else_is_migrated(self, search):
        output, guards = _migrate(self._behind_an_early_return("torch.cuda.synchronize()\n" + search))
        assert "if not torch_npu.npu.is_available():" in output and guards == []

    @pytest.mark.parametrize("choice", [
        'name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"',
        'if torch.cuda.is_available():\n    name = torch.cuda.get_device_name(0)\nelse:\n    name = "cpu"',
        'chip = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"\nname = chip.lower()',
    ])
    def test_a_key_chosen_by_the_test_and_looked_up_after_it_keeps_the_test(self, choice):
        # on a machine without CUDA the key is "cpu", which the table has; migrated, the NPU's name
        body = "".join(f"    {line}\n" for line in choice.splitlines())
        source = f"import torch\n\n\ndef peak_flops():\n{body}    return {{'a100': 312e12, 'cpu': 1e12}}[name]\n"
        output, guards = _migrate(source)
        assert "torch.cuda.is_available()" in output and "torch_npu.npu.is_available" not in output
        assert len(guards) == 1 and "get_device_name()" in guards[0].tip and guards[0].start_line in (5, 6)

    @pytest.mark.parametrize("lookup", ["TABLE.get(name, 1e12)", "TABLE[name] if name in TABLE else 1e12",
                                        "len(name)"])
    def test_a_key_chosen_by_the_test_read_where_it_cannot_miss_is_migrated(self, lookup):
        source = ("import torch\nTABLE = {'a100': 312e12}\n\n\ndef peak_flops():\n"
                  f"    name = torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'\n    return {lookup}\n")
        output, guards = _migrate(source)
        assert "if torch_npu.npu.is_available()" in output and guards == []

    # a function of the file that normalizes the name it is given and searches the table with it,
    # raising where none matches (open-instruct's MFU helper): the name reaches it as an argument
    _NORMALIZER = ("import torch\nGPU_SPECS = {'a100': 312e12, 'h100': 989e12}\n\n\n"
                   "def device_key(device_name: str) -> str:\n    normalized = device_name.lower()\n"
                   "    for key in GPU_SPECS:\n        if key in normalized:\n            return key\n"
                   "    raise ValueError(device_name)\n\n\n")

    @pytest.mark.parametrize("caller", [
        "def dims():\n    return device_key(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else None\n",
        "def dims(name=None):\n    if name is None and torch.cuda.is_available():\n"
        "        name = device_key(device_name=torch.cuda.get_device_name(0))\n    return name\n",
        "def dims():\n    if torch.cuda.is_available():\n        raw = torch.cuda.get_device_name()\n"
        "        return device_key(raw.strip())\n",
    ])
    def test_a_name_handed_to_a_function_of_the_file_that_searches_keeps_the_test(self, caller):
        output, guards = _migrate(self._NORMALIZER + caller)
        assert "torch.cuda.is_available()" in output and "torch_npu.npu.is_available" not in output
        assert guards and all("raises where none matches" in guard.tip for guard in guards)

    def test_in_a_long_file_migrated_through_its_relevant_statements_too(self):
        # (a file of 200 lines or more is migrated through the statements that matter: the
        # function that searches is one of them, though it names no CUDA)
        padding = "".join(f"def helper_{number}(x):\n    return x + {number}\n\n\n" for number in range(120))
        caller = "def dims():\n    return device_key(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else None\n"
        output, guards = _migrate(self._NORMALIZER.replace("\n\n\ndef device_key", "\n\n\n" + padding + "def device_key")
                                  + caller)
        assert len(output.splitlines()) > 400
        assert "torch.cuda.is_available()" in output and "torch_npu.npu.is_available" not in output
        assert guards and all("raises where none matches" in guard.tip for guard in guards)

    @pytest.mark.parametrize("caller", [
        # the function is given something else, or is another file's (not read here)
        "def dims():\n    if torch.cuda.is_available():\n        return device_key(ARGS.chip)\n",
        "def dims():\n    if torch.cuda.is_available():\n        return other.device_key(torch.cuda.get_device_name())\n",
    ])
    def test_a_function_given_no_device_name_or_of_another_module_is_migrated(self, caller):
        output, guards = _migrate(self._NORMALIZER + caller)
        assert "torch_npu.npu.is_available()" in output and guards == []

    def test_a_raise_after_a_loop_over_something_else_is_migrated(self):
        source = ("import torch\n\n\ndef check(shapes):\n    if not torch.cuda.is_available():\n        return\n"
                  "    name = torch.cuda.get_device_name()\n    for shape in shapes:\n        if shape[0] > 8:\n"
                  "            return\n    raise ValueError(name)\n")
        output, guards = _migrate(source)
        assert "if not torch_npu.npu.is_available():" in output and guards == []


class TestATestWhoseMessageSaysWhatItStopsIsCudaOnly:
    """`assert D, msg` guards what follows it as `if not D: raise` does.  Where the message says the
    code it stops runs on CUDA only ("GDS currently only supported for CUDA accelerator"), the author
    declares a CUDA-only feature that no name of it may show: migrated, the NPU would pass the test
    into that code.  A message that only requires CUDA ("requires a CUDA GPU") asks for an
    accelerator, which the NPU is; one that names another device too speaks of a set the NPU may join."""

    STOPS = [
        "from deepspeed.accelerator import get_accelerator\n\ndef gds(cfg):\n    if cfg['use_gds']:\n"
        "        assert get_accelerator().device_name() == 'cuda', 'GDS currently only supported for CUDA accelerator'\n"
        "    return cfg\n",
        "def validate(acc):\n    assert acc.device_name() == 'cuda', (\n"
        "        f\"SuperOffload only supports NVIDIA CUDA GPUs, found '{acc.device_name()}'.\")\n",
        "import torch\n\ndef kernel(x):\n    if x.device.type != 'cuda':\n"
        "        raise ValueError('This kernel only runs on NVIDIA GPUs')\n    return x * 2\n",
        "import torch\n\ndef kernel(x):\n    assert x.is_cuda, 'CUDA only'\n    return x * 2\n",
    ]

    @pytest.mark.parametrize("source", STOPS)
    def test_it_stays_as_written_with_a_row_quoting_the_message(self, source):
        output, guards = _migrate(source)
        assert output == source
        assert len(guards) == 1 and "its message says" in guards[0].tip and "only" in guards[0].tip

    @pytest.mark.parametrize("source, migrated", [
        ("import torch\n\ndef main():\n    assert torch.cuda.is_available(), 'This script requires a CUDA GPU'\n"
         "    x = torch.ones(2).cuda()\n", "torch_npu.npu.is_available()"),
        ("import torch\n\ndef check(t):\n    assert t.device.type in ('cuda', 'cpu'), 'only CUDA and CPU tensors'\n",
         "('npu', 'cpu')"),
        ("import torch\n\ndef check(t):\n    assert t.is_cuda, 'only tensors on an NPU or CUDA device'\n", "t.is_npu"),
        # the message is not the test's: another statement's
        ("import torch\nprint('only CUDA is tested')\nassert torch.cuda.is_available()\n", "torch_npu.npu.is_available()"),
    ])
    def test_a_test_whose_message_asks_for_an_accelerator_is_migrated(self, source, migrated):
        output, guards = _migrate(source)
        assert migrated in output and not guards

    def test_an_assert_before_cuda_only_code_guards_it(self):
        source = "import torch\nimport apex\n\ndef f(x):\n    assert x.is_cuda\n    return apex.fused(x)\n"
        output, guards = _migrate(source)
        assert "assert x.is_cuda" in output and [g.start_line for g in guards] == [5]

    @pytest.mark.parametrize("source", [
        # an assert of a type that reads a device variable before CUDA-only code is no device test
        "import torch\nfrom vllm.platforms import current_platform\n\ndef setup(device):\n"
        "    if isinstance(device, int):\n        device = torch.device(f'cuda:{device}')\n"
        "    assert isinstance(device, torch.device)\n    if current_platform.is_cuda():\n        fast = True\n",
        "import torch\n\ndef setup(device):\n    if not isinstance(device, torch.device):\n"
        "        raise TypeError('only CUDA devices are supported')\n    return torch.ones(2, device='cuda')\n",
    ])
    def test_a_test_that_names_no_cuda_guards_nothing_by_its_message(self, source):
        output, guards = _migrate(source)
        assert "'npu" in output and not guards


KERNELS = ("import torch\nimport triton\nimport triton.language as tl\n\n\n"
           "@triton.autotune(\n    configs=[triton.Config({'BLOCK': 64})],\n    key=['n'],\n)\n@triton.jit\n"
           "def _scale_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n\n\n"
           "def scale(x):\n    _scale_kernel[(x.numel(),)](x, x.numel())\n    return x\n\n\n"
           "def scale_twice(x):\n    return scale(scale(x))\n\n\n"
           "class ScaleFunction(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
           "        return scale(x)\n\n\n")


class TestACallThatLaunchesAGpuKernel:
    """A Triton kernel (or CuTe DSL, cuTile) is compiled for CUDA: a device test around its launch,
    or around a call of a function or class of the project that launches one, itself or through
    another, guards CUDA-only code.  Migrated, the NPU would take the kernel's branch where the
    torch code beside it ran; left, the NPU runs the torch code, and the row says so."""

    @pytest.mark.parametrize("tail, line", [
        ("def f(x):\n    if x.is_cuda:\n        _scale_kernel[(1,)](x, 1)\n        return x\n    return x * 2\n", 31),
        ("def f(x):\n    if x.device.type == 'cuda':\n        return scale(x)\n    return x * 2\n", 31),
        ("def f(x):\n    if x.device.type != 'cuda':\n        return x * 2\n    return scale_twice(x)\n", 31),
        ("def f(x):\n    if torch.cuda.is_available() and x.is_cuda:\n        return ScaleFunction.apply(x)\n"
         "    return x * 2\n", 31),
        ("def f(x):\n    return scale(x) if x.is_cuda else x * 2\n", 31),
        # through a function defined in a module-level block (one implementation where torch has
        # custom_op), installed by a function that returns first off CUDA
        ("if HAS_CUSTOM_OP:\n\n    def _attention(x):\n        return scale(x)\n\nelse:\n\n"
         "    def _attention(x):\n        return ScaleFunction.apply(x)\n\n\n"
         "def install(model):\n    if not torch.cuda.is_available():\n        return False\n"
         "    model.attention = _attention\n    return True\n", 42),
    ])
    def test_in_the_file_that_writes_it_the_test_stays(self, tail, line):
        source = KERNELS + tail
        output, guards = _migrate(source)
        assert output == source
        assert [g.start_line for g in guards] == [line]
        assert "kernel _scale_kernel" in guards[0].tip and "Triton-Ascend" in guards[0].tip

    @pytest.mark.parametrize("tail, migrated, left", [
        # a function that chooses by its own CUDA test launches nothing on the NPU: its own test
        # stays (it guards the launch), the test around its call moves
        ("def pick(x):\n    if x.is_cuda:\n        return scale(x)\n    return x * 2\n\n\n"
         "def f(x):\n    if x.is_cuda:\n        return pick(x)\n    return x\n", "    if x.is_npu:\n        return pick(x)",
         [31]),
        # a test around torch code in a file that has kernels
        ("def f(x):\n    if torch.cuda.is_available():\n        x = x.cuda()\n    return scale(x)\n", "x = x.npu()", []),
        # torch.jit's decorators compile for any device
        ("@torch.jit.script\ndef g(x):\n    return x * 2\n\n\ndef f(x):\n    if x.is_cuda:\n        return g(x)\n"
         "    return x\n", "if x.is_npu:", []),
        # a name of the kernel's that is no call of it
        ("def f(x, scale_kernel):\n    if x.is_cuda:\n        return scale_kernel(x)\n    return x\n", "if x.is_npu:", []),
    ])
    def test_what_launches_no_kernel_is_migrated(self, tail, migrated, left):
        output, guards = _migrate(KERNELS + tail)
        assert migrated in output and [g.start_line for g in guards] == left

    def test_in_a_long_file_whose_rules_see_only_the_statements_they_edit(self):
        # (a file of 200 lines or more is migrated through its relevant statements: the kernel's
        # definition is not among them, the file's kernels are read from the whole of it)
        filler = "".join(f"def helper_{n}(a):\n    b = a + {n}\n    return b * 2\n\n\n" for n in range(50))
        source = KERNELS + filler + "def f(x):\n    if x.is_cuda:\n        return scale(x)\n    return x * 2\n"
        output, guards = _migrate(source)
        assert output == source and [g.start_line for g in guards] == [source.count("\n") - 2]

    def test_a_jit_imported_from_triton_makes_a_kernel_too(self):
        source = ("import torch\nfrom triton import jit\n\n\n@jit\ndef _k(x_ptr):\n    pass\n\n\n"
                  "def f(x):\n    if x.is_cuda:\n        _k[(1,)](x)\n    return x\n")
        output, guards = _migrate(source)
        assert output == source and [g.start_line for g in guards] == [11]

    def test_a_class_with_a_kernel_method_and_an_operator_registered_with_a_launcher(self):
        source = ("import torch\nimport cutlass.cute as cute\nfrom vllm.utils import direct_register_custom_op\n\n\n"
                  "class NormKernel:\n    @cute.jit\n    def __call__(self, x):\n        pass\n\n\n"
                  "def norm(x):\n    return NormKernel()(x)\n\n\n"
                  "direct_register_custom_op(op_name='fused_norm', op_func=norm, mutates_args=[])\n\n\n"
                  "def f(x):\n    if x.is_cuda:\n        return torch.ops.vllm.fused_norm(x)\n    return x\n\n\n"
                  "def g(x):\n    if x.is_cuda:\n        return NormKernel()(x)\n    return x\n")
        output, guards = _migrate(source)
        assert output == source
        assert [(g.start_line, "CuTe DSL kernel NormKernel.__call__" in g.tip) for g in guards] == [(20, True), (26, True)]

    @pytest.mark.parametrize("source, left", [
        # an operator of a compiled extension (vLLM's `_C`): no Python of the project registers it
        ("import torch\n\ndef penalties(logits, p):\n    if logits.is_cuda and logits.is_contiguous():\n"
         "        torch.ops._C.apply_repetition_penalties_(logits, p)\n    else:\n        logits /= p\n", [4]),
        # one the file registers from a Python function for every device runs on the NPU too
        ("import torch\n\n@torch.library.custom_op('proj::scale', mutates_args=())\ndef scale(x: torch.Tensor) -> torch.Tensor:\n"
         "    return x * 2\n\n\ndef f(x):\n    if x.is_cuda:\n        return torch.ops.proj.scale(x)\n    return x\n", []),
        # torch's own and torch_npu's operators
        ("import torch\n\ndef f(x):\n    if x.is_cuda:\n        return torch.ops.aten.add(x, x)\n    return x\n", []),
        # called through a function of the file that calls it (itself, or through another)
        ("import torch\n\ndef penalties_cuda(logits, p):\n    torch.ops._C.apply_repetition_penalties_(logits, p)\n\n\n"
         "def penalties(logits, p):\n    if logits.is_cuda and logits.is_contiguous():\n        penalties_cuda(logits, p)\n"
         "    else:\n        logits /= p\n", [8]),
        ("import torch\n\ndef soft_cap(x, t):\n    out = torch.empty_like(x)\n    torch.ops._C.soft_cap(out, x, t)\n"
         "    return out\n\n\ndef capped(x, t):\n    return soft_cap(x, t)\n\n\nclass Cap(torch.nn.Module):\n"
         "    def forward(self, x):\n        if x.is_cuda:\n            return capped(x, 2.0)\n        return torch.tanh(x)\n", [15]),
        # a function whose operator the file registers from Python runs on the NPU
        ("import torch\n\ndef scale(x):\n    return torch.ops.proj.scale(x)\n\n\n"
         "torch.library.define('proj::scale', '(Tensor x) -> Tensor')\n\n\n"
         "def f(x):\n    if x.is_cuda:\n        return scale(x)\n    return x\n", []),
    ])
    def test_an_operator_no_python_of_the_project_registers(self, source, left):
        output, guards = _migrate(source)
        assert [g.start_line for g in guards] == left
        assert (output == source) == bool(left)
        assert all("compiled extension" in g.tip and "PrivateUse1" in g.tip for g in guards)

    def test_a_function_that_calls_a_compiled_operator_behind_its_own_test_chooses(self):
        # its own test stays (it guards the operator); a test around a call of it moves: the
        # function runs on the NPU, taking its torch branch
        source = ("import torch\n\ndef norm(x):\n    if x.is_cuda:\n        return torch.ops._C.rms_norm(x)\n"
                  "    return x\n\n\ndef f(x):\n    if x.is_cuda:\n        return norm(x)\n    return x\n")
        output, guards = _migrate(source)
        assert [g.start_line for g in guards] == [4]
        assert output.count("if x.is_cuda:") == 1 and output.count("if x.is_npu:") == 1

    def test_a_question_whose_answer_chooses_the_kernel_answers_for_cuda(self):
        # `if self._fused_ok(p): scale(p)`: the question's own device test is the choice, and
        # stays with the test that asks it (a row on each)
        source = KERNELS + ("class Opt:\n    def _fused_ok(self, p):\n        if p.numel() < 10:\n            return False\n"
                            "        return self.enabled and p.is_cuda\n\n    def step(self, p):\n"
                            "        if self._fused_ok(p):\n            scale(p)\n        else:\n            p.mul_(2)\n")
        output, guards = _migrate(source)
        assert output == source and [g.start_line for g in guards] == [34, 37]

    def test_a_question_that_answers_no_at_once_answers_for_cuda(self):
        # `if not p.is_cuda: return False` answers by itself, as a returned test does
        source = KERNELS + ("def _fused_ok(p):\n    if not p.is_cuda:\n        return False\n    return p.numel() > 10\n\n\n"
                            "def step(p):\n    if _fused_ok(p):\n        scale(p)\n    else:\n        p.mul_(2)\n")
        output, guards = _migrate(source)
        assert output == source and [g.start_line for g in guards] == [31, 37]

    @pytest.mark.parametrize("outer", [
        # asked in a test that answers at once, in a returned test, through self, nested in another test
        "def _ok(self, x):\n        if not self._lacks(x):\n            return False\n        return x.is_cuda and x.dim() == 2\n",
        "def _ok(self, x):\n        return x.is_cuda and x.dim() == 2 and self._lacks(x)\n",
        "def _ok(self, x):\n        if torch.compiler.is_compiling():\n            if not self._lacks(x):\n"
        "                return False\n        return x.is_cuda and x.numel() > 4\n",
    ])
    def test_a_question_a_question_asks_answers_for_cuda_too(self, outer):
        # the inner question's answer is part of the outer one's, which chooses the kernel: migrated
        # alone, it would answer for the NPU inside a question that still answers for CUDA
        source = KERNELS + ("class Opt:\n    def _lacks(self, t):\n        if not t.is_cuda:\n            return False\n"
                            "        return t.dtype == torch.float8_e4m3fn\n\n    " + outer +
                            "\n    def step(self, p):\n        if self._ok(p):\n            scale(p)\n        else:\n"
                            "            p.mul_(2)\n")
        output, guards = _migrate(source)
        assert output == source, output
        assert 32 in [g.start_line for g in guards] and all("scale" in g.tip for g in guards)

    def test_a_device_named_like_what_a_left_test_reads_goes_on_being_a_device(self):
        # the test reads `device` (a parameter); another function's `device = torch.device("cuda", i)`
        # is a device, no test held in a variable: renamed as ever
        source = KERNELS + ("def _lacks(device):\n    return torch.cuda.get_device_capability(device) < (8, 9)\n\n\n"
                            "def _ok(x):\n    if _lacks(x.device):\n        return False\n    return x.is_cuda\n\n\n"
                            "def step(p):\n    if _ok(p):\n        scale(p)\n    else:\n        p.mul_(2)\n\n\n"
                            "def probe(index):\n    device = torch.device(\"cuda\", index)\n    return torch.zeros(1, device=device)\n")
        output, guards = _migrate(source)
        assert 'device = torch.device("npu", index)' in output
        assert not [g for g in guards if "torch.device" in g.api]

    def test_a_question_a_question_asks_around_torch_code_is_migrated(self):
        source = ("import torch\n\n\ndef _lacks(t):\n    if not t.is_cuda:\n        return False\n    return True\n\n\n"
                  "def _ok(x):\n    if _lacks(x):\n        return False\n    return x.is_cuda\n\n\n"
                  "def run(x):\n    if _ok(x):\n        return x.cuda()\n    return x\n")
        output, guards = _migrate(source)
        assert "if not t.is_npu:" in output and "return x.is_npu" in output and not guards

    def test_a_question_asked_only_around_torch_code_is_migrated(self):
        source = KERNELS + ("def ok(p):\n    return p.is_cuda\n\n\ndef step(p):\n    if ok(p):\n        torch.cuda.synchronize()\n")
        output, guards = _migrate(source)
        assert "return p.is_npu" in output and not guards

    def test_in_the_project_s_own_npu_backend_triton_is_triton_ascend(self):
        source = KERNELS + "def f(x):\n    if x.is_cuda:\n        return scale(x)\n    return x * 2\n"
        options = Options(api=apidata.load("2.1.0"), npu_backend_files=frozenset({"ops/npu/m.py"}))
        result = migrate_source(source.encode(), "ops/npu/m.py", options, rules_for(options))
        assert "if x.is_npu:" in result.output.decode()


class TestALauncherOfAnotherFile:
    """The kernels and launchers of every file of the project are read before any is migrated, so a
    call of one imported from another file (absolutely, relatively, through its module) is known
    where it is made: through the console script, as a user runs it."""

    CALLERS = {
        "relative": "from .kernels import scale\n\n\ndef f(x):\n    if x.is_cuda:\n        return scale(x)\n"
                    "    return x * 2\n",
        "absolute": "from pkg.kernels import ScaleFunction\n\n\ndef f(x):\n    if x.device.type == 'cuda':\n"
                    "        return ScaleFunction.apply(x)\n    return x * 2\n",
        "module": "import pkg.kernels as kernels\n\n\ndef f(x):\n    if x.is_cuda:\n"
                  "        return kernels.scale_twice(x)\n    return x * 2\n",
        "parent": "from ..kernels import scale\n\n\ndef f(x):\n    return scale(x) if x.is_cuda else x\n",
        "operator": "def f(x):\n    if x.is_cuda:\n        return torch.ops.proj.scale_op(x)\n    return x * 2\n",
        # a function of another file that calls a compiled extension's operator
        "extension": "from pkg import custom_ops as ops\n\n\ndef f(x):\n    if x.is_cuda:\n"
                     "        return ops.soft_cap(x)\n    return torch.tanh(x)\n",
    }

    def test_the_test_around_the_call_stays(self, tmp_path):
        import subprocess
        import sys
        from pathlib import Path

        root = tmp_path / "proj"
        (root / "pkg" / "sub").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
        (root / "pkg" / "sub" / "__init__.py").write_text("")
        (root / "pkg" / "kernels.py").write_text(
            KERNELS + "def describe():\n    return 'scale'\n\n\n"
            "torch.library.define('proj::scale_op', '(Tensor x) -> Tensor')\n"
            "torch.library.impl('proj::scale_op', 'cuda', scale)\n")
        for name, text in self.CALLERS.items():
            folder = root / "pkg" / ("sub" if name == "parent" else "")
            (folder / f"{name}.py").write_text("import torch\n" + text)
        (root / "pkg" / "custom_ops.py").write_text(
            "import torch\n\n\ndef soft_cap(x):\n    return torch.ops._C.soft_cap(x)\n\n\n"
            "def scale(x):\n    return torch.ops.proj.scale_op(x)\n")
        (root / "pkg" / "registered.py").write_text(
            "import torch\nfrom pkg import custom_ops\n\n\ndef f(x):\n    if x.is_cuda:\n"
            "        return custom_ops.scale(x)\n    return x\n")
        (root / "pkg" / "plain.py").write_text(
            "import torch\nfrom .kernels import describe\n\n\ndef f(x):\n    if x.is_cuda:\n"
            "        print(describe())\n    return x\n")
        gpu2npu = str(Path(sys.executable).parent / "gpu2npu")
        done = subprocess.run([gpu2npu, "-i", root, "-o", tmp_path / "out", "-v", "2.1.0"], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        out = tmp_path / "out" / "proj_msft"
        for name, text in self.CALLERS.items():
            relative = f"pkg/{'sub/' if name == 'parent' else ''}{name}.py"
            assert (out / relative).read_text() == "import torch\n" + text, name
        rows = (out / "unsupported_api.csv").read_text().splitlines()
        left = sorted(row.split(",", 1)[0] for row in rows if row.endswith(",NPU914"))
        assert left == sorted(f"pkg/{'sub/' if name == 'parent' else ''}{name}.py" for name in self.CALLERS)
        # the module's function that launches nothing moves with the device, and so does one whose
        # operator the project registers from Python (in another file)
        assert "if x.is_npu:" in (out / "pkg" / "plain.py").read_text()
        assert "if x.is_npu:" in (out / "pkg" / "registered.py").read_text()


class TestAQuestionAskedInAnotherFile:
    """`def can_use_gemv(x): if not x.is_cuda: return False ...` in one module, `if can_use_gemv(x):
    return gemv(x)` in another, where gemv launches a GPU kernel: the question's device tests say
    whether the kernel runs, and stay (read for the whole project before any file is migrated)."""

    CHECKS = ("import torch\n\n\ndef can_use_gemv(x):\n    if not (x.is_cuda and x.dtype == torch.float16):\n"
              "        return False\n    return x.shape[0] == 1\n\n\ndef ready(x):\n    return x.is_cuda\n")

    def _run(self, tmp_path, caller):
        import subprocess
        import sys
        from pathlib import Path

        root = tmp_path / "proj"
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
        (root / "pkg" / "kernels.py").write_text(KERNELS + "def gemv(x):\n    return scale(x)\n")
        (root / "pkg" / "checks.py").write_text(self.CHECKS)
        (root / "pkg" / "model.py").write_text(caller)
        gpu2npu = str(Path(sys.executable).parent / "gpu2npu")
        done = subprocess.run([gpu2npu, "-i", root, "-o", tmp_path / "out", "-v", "2.1.0"], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        out = tmp_path / "out" / "proj_msft"
        rows = [row for row in (out / "unsupported_api.csv").read_text().splitlines() if row.endswith(",NPU914")]
        return (out / "pkg" / "checks.py").read_text(), rows

    @pytest.mark.parametrize("caller", [
        "import torch\nfrom pkg.checks import can_use_gemv\nfrom pkg.kernels import gemv\n\n\ndef f(x, w):\n"
        "    if can_use_gemv(x):\n        return gemv(x)\n    return x @ w\n",
        "import torch\nfrom pkg import checks, kernels\n\n\ndef f(x, w):\n    if x.dim() == 2 and checks.can_use_gemv(x):\n"
        "        y = kernels.gemv(x)\n        return y\n    return x @ w\n",
    ])
    def test_its_device_test_stays(self, tmp_path, caller):
        checks, rows = self._run(tmp_path, caller)
        assert "if not (x.is_cuda and" in checks and "return x.is_npu" in checks
        assert [row.split(",")[:2] for row in rows if row.startswith("pkg/checks.py")] == [["pkg/checks.py", "5"]]
        assert any("gemv(), which launches the Triton kernel" in row for row in rows)

    def test_a_question_asked_before_torch_code_is_migrated(self, tmp_path):
        checks, rows = self._run(tmp_path, "import torch\nfrom pkg.checks import can_use_gemv\n\n\ndef f(x):\n"
                                           "    if can_use_gemv(x):\n        torch.cuda.synchronize()\n    return x\n")
        assert "if not (x.is_npu and" in checks and not [row for row in rows if row.startswith("pkg/checks.py")]


class TestAFeatureWhoseFallbackSaysItNeedsCuda:
    """`if device_type != "cuda": print("FP8 training requires CUDA, ignoring --fp8") else: <fp8>`:
    the author fenced a feature for CUDA and gave every other device a fallback that goes on.
    Migrated, the NPU would take the feature's branch; left, it takes the fallback, as any machine
    without CUDA did.  A device's choice moves ("CUDA not found, using the CPU" beside `device =
    "cuda"`), and a fallback that stops the program asks for an accelerator, which the NPU is."""

    @pytest.mark.parametrize("source, line", [
        ("import torch\n\ndef setup(model, args, device_type):\n    if args.fp8:\n        if device_type != 'cuda':\n"
         "            print('Warning: FP8 training requires CUDA, ignoring --fp8 flag')\n        else:\n"
         "            from project.fp8 import convert\n            convert(model)\n", 5),
        ("import warnings\nimport torch\n\ndef pick(model):\n    if torch.cuda.is_available():\n"
         "        model.fuse_kernels()\n    else:\n        warnings.warn('fused kernels are only supported on NVIDIA GPUs')\n"
         "    return model\n", 5),
        ("import logging\nimport torch\nlog = logging.getLogger(__name__)\n\ndef f(x):\n    if not x.is_cuda:\n"
         "        log.warning('the graph capture needs CUDA; running eagerly')\n        return run(x)\n"
         "    return capture(x)\n", 6),
        # the host's memory named by a feature ("CPU-offloading") is no other device
        ("import warnings\nimport torch\n\ndef allowed(device, offload):\n    if offload:\n        if device != 'cuda':\n"
         "            warnings.warn('CPU-offloading is only enabled when using CUDA-devices. Continuing without "
         "cpu-offloading')\n            return False\n    return offload\n", 6),
    ])
    def test_the_test_stays_with_a_row_quoting_the_fallback(self, source, line):
        output, guards = _migrate(source)
        assert output == source
        assert [g.start_line for g in guards] == [line] and "its other branch says" in guards[0].tip

    @pytest.mark.parametrize("source, migrated", [
        # the device's choice
        ("import torch\nif not torch.cuda.is_available():\n    print('CUDA is required for speed, using the CPU')\n"
         "    device = 'cpu'\nelse:\n    device = 'cuda'\n", "device = 'npu'"),
        ("import torch\nif torch.cuda.is_available():\n    model = model.cuda()\nelse:\n    print('training needs CUDA')\n",
         "model = model.npu()"),
        # a fallback that stops the program: an accelerator is asked for
        ("import torch\nif not torch.cuda.is_available():\n    print('this script requires CUDA')\n    raise SystemExit(1)\n"
         "run()\n", "torch_npu.npu.is_available()"),
        # a message that names another device too, or names no CUDA requirement
        ("import torch\nif torch.cuda.is_available():\n    fast = True\nelse:\n    print('fast mode requires CUDA or an NPU')\n",
         "torch_npu.npu.is_available()"),
        ("import torch\nif torch.cuda.is_available():\n    fast = True\nelse:\n    print('fast mode is off')\n",
         "torch_npu.npu.is_available()"),
        ("import warnings\nimport torch\n\ndef pick(device):\n    if device != 'cuda':\n"
         "        warnings.warn('Only CPU and CUDA are tested; continuing')\n        return None\n    return device\n",
         "if device != 'npu':"),
    ])
    def test_a_choice_of_device_or_a_stop_is_migrated(self, source, migrated):
        output, guards = _migrate(source)
        assert migrated in output and not guards


class TestAFunctionCompiledWithInductor:
    """A function of the file compiled by torch.compile with the default backend runs inductor's
    code: where the release has no inductor for the NPU (torch_npu before 2.6.0), a device test
    that chooses it over the eager code guards what fails there, so it stays and the NPU keeps the
    eager path; where the release has inductor for the NPU, or the backend is the NPU's, it moves."""

    EAGER = "import torch\n\n\ndef _uniform(a, b):\n    return a * b\n\n\n"
    CHOOSES = [
        (EAGER + "_fast = torch.compile(_uniform, fullgraph=True, dynamic=True)\n\n\ndef uniform(x, y):\n"
         "    if x.device.type == 'cuda':\n        return _fast(x, y)\n    return _uniform(x, y)\n", 12),
        (EAGER + "_fast = torch.compile(_uniform, backend='inductor')\n\n\ndef uniform(x, y):\n"
         "    return _fast(x, y) if x.is_cuda else _uniform(x, y)\n", 12),
        ("import torch\n\n\n@torch.compile\ndef step(a):\n    return a * 2\n\n\ndef run(x):\n"
         "    if not x.is_cuda:\n        return x * 2\n    return step(x)\n", 10),
        ("import torch\n\n\n@torch.compile(dynamic=True)\ndef step(a):\n    return a * 2\n\n\ndef run(x):\n"
         "    if torch.cuda.is_available():\n        return step(x)\n    return x * 2\n", 10),
    ]

    @pytest.mark.parametrize("source, line", CHOOSES)
    def test_without_an_npu_inductor_the_test_stays(self, source, line):
        output, guards = _migrate(source)
        assert output.replace("import torch_npu\n", "") == source
        assert [guard.start_line for guard in guards] == [line]
        assert "torch.compile of" in guards[0].tip and "backend='npu'" in guards[0].tip
        assert "2.6.0 and later" in guards[0].tip

    @pytest.mark.parametrize("source, line", CHOOSES)
    def test_with_an_npu_inductor_the_test_moves(self, source, line):
        options = Options(api=apidata.load("2.6.0"))
        result = migrate_source(source.encode(), "m.py", options, rules_for(options))
        assert result.output is not None and b"npu" in result.output.splitlines()[line]

    @pytest.mark.parametrize("source, migrated", [
        # the NPU's own backend
        (EAGER + "_fast = torch.compile(_uniform, backend='npu')\n\n\ndef uniform(x, y):\n"
         "    if x.is_cuda:\n        return _fast(x, y)\n    return _uniform(x, y)\n", "    if x.is_npu:"),
        # a model compiled is the project's choice, reported where it is made (NPU905)
        ("import torch\nmodel = torch.compile(torch.nn.Linear(2, 2))\nif torch.cuda.is_available():\n"
         "    model = model.cuda()\n    out = model(torch.ones(2, device='cuda'))\n", "model = model.npu()"),
        # a name bound twice is not certainly the compiled function
        (EAGER + "_fast = torch.compile(_uniform)\n_fast = _uniform\n\n\ndef uniform(x, y):\n"
         "    if x.is_cuda:\n        return _fast(x, y)\n    return x\n", "    if x.is_npu:"),
        # a test around the eager function only
        (EAGER + "_fast = torch.compile(_uniform)\n\n\ndef uniform(x, y):\n"
         "    if x.is_cuda:\n        return _uniform(x, y)\n    return _fast(x, y)\n", "    if x.is_npu:"),
    ])
    def test_what_is_not_a_compiled_function_chosen_moves(self, source, migrated):
        output, guards = _migrate(source)
        assert migrated in output and not guards


class TestATestThatAsksForNvidiaNotRocm:
    """`torch.version.hip is None and torch.cuda.is_available()`: ROCm answers torch.cuda too, so a
    test that excludes it asks for NVIDIA's GPUs, and what it enables was written for them only (a
    CUDA-graph step on by default, a kernel's tuning by capability).  It stays as written, so the
    NPU takes the path other accelerators take; a test that asks for ROCm, or none, moves."""

    @pytest.mark.parametrize("source, line", [
        ("import torch\n\n\ndef default_enabled():\n    try:\n"
         "        return torch.version.hip is None and torch.cuda.is_available()\n    except Exception:\n"
         "        return False\n", 6),
        ("import torch\n\n\ndef ok(weight):\n"
         "    return torch.version.hip is None and weight is not None and weight.device.type == 'cuda'\n", 5),
        ("import torch\n\n\ndef warps(device_type):\n    if device_type == 'cuda' and not torch.version.hip:\n"
         "        return 8\n    return 4\n", 5),
        ("from torch import version\nimport torch\nUSE_GRAPHS = torch.cuda.is_available() and version.hip is None\n", 3),
    ])
    def test_the_test_stays_with_a_row_that_says_why(self, source, line):
        output, guards = _migrate(source)
        assert output == source
        assert [guard.start_line for guard in guards] == [line]
        assert "NVIDIA GPUs only" in guards[0].tip

    def test_what_it_guards_that_is_cuda_only_is_the_reason_given(self):
        source = ("import torch\n\n\ndef config(device_type, index):\n"
                  "    if device_type == 'cuda' and torch.version.hip is None:\n"
                  "        return torch.cuda.get_device_capability(index)\n    return None\n")
        output, guards = _migrate(source)
        assert output == source
        assert [guard.start_line for guard in guards] == [5]
        assert "get_device_capability" in guards[0].tip and "NVIDIA GPUs only" not in guards[0].tip

    def test_a_test_before_one_that_excludes_rocm_is_judged_on_its_own(self):
        # (the ROCm test is part of the later expression, not of what the first test guards)
        source = ("import torch\n\n\ndef ok(x, fast):\n    if not fast:\n        return False\n"
                  "    return x.is_cuda and torch.version.hip is None\n")
        output, guards = _migrate(source)
        assert [guard.start_line for guard in guards] == [7]

    @pytest.mark.parametrize("source, migrated", [
        ("import torch\nif torch.cuda.is_available():\n    x = torch.ones(2).cuda()\n", "torch_npu.npu.is_available()"),
        # a test that asks for ROCm: false on the NPU whatever the device test gives
        ("import torch\nROCM = torch.cuda.is_available() and torch.version.hip is not None\n",
         "torch_npu.npu.is_available()"),
        ("import torch\nif torch.cuda.is_available() and torch.version.hip:\n    x = 1\n", "torch_npu.npu.is_available()"),
    ])
    def test_a_test_that_does_not_exclude_rocm_moves(self, source, migrated):
        output, guards = _migrate(source)
        assert migrated in output and not guards


class TestATensorSharedByItsIpcHandle:
    """reduce_tensor makes a tensor's IPC handle; for an NPU tensor torch_npu returns its own
    rebuild function with it.  A file that rebuilds the handles as CUDA tensors
    (rebuild_cuda_tensor) cannot take an NPU tensor's, and a release without
    torch_npu.multiprocessing.reductions cannot make one: there a device test choosing the handle
    stays, and the NPU takes the other branch (a CPU copy); elsewhere it moves."""

    SHARE = ("import torch\nfrom torch.multiprocessing.reductions import {imported}\n\n\ndef entry(tensor):\n"
             "    if tensor.is_cuda:\n        return reduce_tensor(tensor)\n    return tensor.cpu()\n")

    def test_a_file_that_rebuilds_them_as_cuda_tensors_keeps_the_test(self):
        source = self.SHARE.format(imported="rebuild_cuda_tensor, reduce_tensor")
        output, guards = _migrate(source)
        assert output == source
        assert [guard.start_line for guard in guards] == [6] and "rebuild_npu_tensor" in guards[0].tip

    def test_a_release_that_cannot_share_npu_tensors_keeps_the_test(self):
        options = Options(api=apidata.load("1.11.0"))
        source = self.SHARE.format(imported="reduce_tensor")
        result = migrate_source(source.encode(), "m.py", options, rules_for(options))
        guards = [f for f in result.findings if f.api.startswith("device test")]
        assert [guard.start_line for guard in guards] == [6] and "cannot share NPU tensors" in guards[0].tip

    def test_a_release_that_shares_them_and_a_file_that_rebuilds_what_it_gets_moves(self):
        output, guards = _migrate(self.SHARE.format(imported="reduce_tensor"))
        assert "if tensor.is_npu:" in output and not guards


class TestACommentInsideATestLeftAsWritten:
    """A test written over several lines may hold comments: the row's OP shows the code without
    them, and a word of a comment is no variable the test reads (`graphs` in "graphs are CUDA
    only" does not make the assignment `graphs = ...` in its branch a test of its own)."""

    SOURCE = ("import torch\n\n\ndef run(agent, device, fast):\n    if (\n        fast\n        and device.type == 'cuda'\n"
              "        # ROCm reports cuda too: graphs are CUDA only\n"
              "        and torch.cuda.get_device_capability()[0] >= 9\n    ):\n"
              "        graphs = agent.graphs = make_graphs(agent, torch.cuda.current_stream())\n"
              "        return graphs\n    return None\n")

    def test_one_row_whose_op_has_no_comment(self):
        output, guards = _migrate(self.SOURCE)
        assert output == self.SOURCE
        assert [(guard.start_line, guard.api) for guard in guards] == [
            (6, "device test ( fast and device.type == 'cuda' and torch.cuda.get_device_capability()[0] >= 9 )")]


class TestALibraryThatDecodesOnTheCpuOrNvidiasGpusOnly:
    """torchcodec decodes with NVDEC and refuses any device but "cpu" and "cuda"; torchvision's
    decode_jpeg decodes with nvJPEG for CUDA and on the CPU for any other device, returning the
    image there.  A "cuda" given to either stays (renamed, the call refuses the NPU or decodes on
    the CPU silently), a device test around such a call stays, a call given another device than the
    CPU is a row (NPU934), and code that names NVIDIA's video engines (a codec "h264_nvenc", a
    message "decoding with NVDEC") is CUDA-only for the test around it."""

    FENCE = ("import torch\nfrom torchcodec.decoders import VideoDecoder\n\n\n"
             "def make(data, device='cpu'):\n    kind = torch.device(device).type\n"
             "    if kind == 'cuda' and not has_nvdec():\n        raise ValueError('no NVDEC')\n"
             "    elif kind not in ('cpu', 'cuda'):\n        raise ValueError(f'cpu and cuda only, got {device}')\n"
             "    return VideoDecoder(data, seek_mode='exact', device=device)\n")

    @staticmethod
    def _rows(source, code):
        result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
        return [(f.start_line, f.api) for f in result.findings if f.rule == code]

    @pytest.mark.parametrize("call", ["VideoDecoder(data, device='cuda')", "VideoDecoder(data, device='cuda:0')",
                                      "decode_jpeg(data, device='cuda')", "decode_jpeg(data, ImageReadMode.RGB, 'cuda')",
                                      "torchvision.io.decode_jpeg(data, device='cuda')"])
    def test_a_cuda_device_given_to_it_stays_with_a_row(self, call):
        source = ("import torch\nimport torchvision\nfrom torchvision.io import ImageReadMode, decode_jpeg\n"
                  f"from torchcodec.decoders import VideoDecoder\nframes = {call}\n")
        output, _ = _migrate(source)
        assert output == source
        assert [line for line, _ in self._rows(source, "NPU934")] == [5]

    def test_a_device_of_the_program_given_to_it_is_a_row_and_the_cpu_none(self):
        source = ("import torch\nfrom torchcodec.decoders import VideoDecoder\n\n\ndef read(data, device):\n"
                  "    gpu = VideoDecoder(data, device=device)\n    cpu = VideoDecoder(data, device='cpu')\n"
                  "    plain = VideoDecoder(data)\n    return gpu, cpu, plain\n")
        assert self._rows(source, "NPU934") == [(6, "torchcodec.decoders.VideoDecoder(device=...)")]

    @pytest.mark.parametrize("source, line", [
        ("import torch\nfrom torchcodec.decoders import VideoDecoder\n\n\ndef make(data):\n"
         "    if torch.cuda.is_available():\n        return VideoDecoder(data, device='cuda')\n"
         "    return VideoDecoder(data)\n", 6),
        ("import torch\nfrom torchvision.io import decode_jpeg\n\n\ndef load(data, device):\n"
         "    if device.type == 'cuda':\n        return decode_jpeg(data, device=device)\n"
         "    return decode_jpeg(data).to(device)\n", 6),
        # an `if ... elif ...` whose branches all stop: each test fences what follows the chain
        (FENCE, 9),
        # what the test guards names NVIDIA's engines: a codec, a message
        ("import torch\n\n\ndef codec():\n    if torch.cuda.is_available():\n        return 'h264_nvenc'\n"
         "    return 'libx264'\n", 5),
        ("import logging\nimport torch\n\n\ndef setup(kwargs, device_type):\n    if device_type != 'cuda':\n"
         "        return\n    kwargs['device'] = device_type\n"
         "    logging.info('decoding video with NVDEC (device=%s)', device_type)\n", 6),
    ])
    def test_a_device_test_around_it_stays(self, source, line):
        output, guards = _migrate(source)
        assert output == source
        assert line in [guard.start_line for guard in guards]

    def test_the_fences_row_says_what_to_do(self):
        _, guards = _migrate(self.FENCE)
        fence = next(guard for guard in guards if guard.start_line == 9)
        assert "torchcodec.decoders.VideoDecoder(device=...)" in fence.tip and 'device="cpu"' in fence.tip

    @pytest.mark.parametrize("source, expected", [
        # a test around a call on the CPU, moved to the device afterwards: migrated
        ("import torch\nfrom torchcodec.decoders import VideoDecoder\n\n\ndef frames(path):\n"
         "    if torch.cuda.is_available():\n        return VideoDecoder(path)[:8].cuda()\n"
         "    return VideoDecoder(path, device='cpu')[:8]\n", "if torch_npu.npu.is_available():"),
        # a chain whose branch goes on is no fence: what follows is migrated as before
        ("import torch\n\n\ndef pick(x):\n    if x.device.type == 'cuda':\n        raise ValueError('no')\n"
         "    elif x.is_cpu:\n        x = x.float()\n    return x.to('cuda')\n", "return x.to('npu')"),
        # another device's message does not name NVIDIA's engines
        ("import logging\nimport torch\n\n\ndef setup(kwargs, device_type):\n    if device_type != 'cuda':\n"
         "        return\n    kwargs['device'] = device_type\n    logging.info('decoding on %s', device_type)\n",
         "if device_type != 'npu':"),
    ])
    def test_what_it_does_not_reach_is_migrated(self, source, expected):
        output, guards = _migrate(source)
        assert expected in output and not guards


class TestASkipDecoratorGuardsItsTest:
    """`@unittest.skipUnless(D, reason)`, `@unittest.skipIf(not D, ...)`, `@pytest.mark.skipif(not D,
    reason=...)` guard the test (or test class) they decorate as `if not D: return` guards what
    follows it: left as written where the test runs CUDA-only code or the reason says the test is
    CUDA's only; switched to the NPU where the test only needs a device."""

    KERNEL = "import torch\nimport triton\n\n\n@triton.jit\ndef _k(x_ptr):\n    pass\n\n\ndef launch(x):\n    _k[(1,)](x)\n\n\n"

    @pytest.mark.parametrize("decorator, body", [
        ('@unittest.skipUnless(torch.cuda.is_available(), "silu_and_mul op is CUDA-only")', "x = torch.ones(2).cuda()"),
        ('@unittest.skipIf(not torch.cuda.is_available(), "fused kernels run on CUDA only")', "x = torch.ones(2).cuda()"),
        ('@pytest.mark.skipif(not torch.cuda.is_available(), reason="requires a GPU")',
         "launch(torch.ones(2, device='cuda'))"),
        ('@pytest.mark.skipif(not torch.cuda.is_available(), reason="requires a GPU")\n'
         '@pytest.mark.parametrize("n", [1, 2])', "launch(torch.ones(n, device='cuda'))"),
    ])
    def test_left_as_written_before_cuda_only_tests(self, decorator, body):
        source = f"import pytest\nimport unittest\n{self.KERNEL}{decorator}\ndef test_it(n=1):\n    {body}\n"
        output, guards = _migrate(source)
        assert decorator in output and "torch_npu.npu.is_available" not in output
        assert guards and guards[0].start_line == source.splitlines().index(decorator.splitlines()[0]) + 1

    @pytest.mark.parametrize("decorator", [
        '@unittest.skipUnless(torch.cuda.is_available(), "requires CUDA")',
        '@unittest.skipIf(not torch.cuda.is_available(), "needs a GPU")',
        '@pytest.mark.skipif(not torch.cuda.is_available(), reason="requires a GPU")',
    ])
    def test_switched_before_tests_that_only_need_a_device(self, decorator):
        source = f"import pytest\nimport torch\nimport unittest\n\n\n{decorator}\ndef test_it():\n    x = torch.ones(2).cuda()\n"
        output, guards = _migrate(source)
        assert "torch_npu.npu.is_available()" in output and "x = torch.ones(2).npu()" in output and not guards

    @pytest.mark.parametrize("reason", [
        "flex_attention requires CUDA", "FlexAttention needs an NVIDIA GPU", "CUDA required for flash-attn",
        "xformers requires CUDA", "the Triton kernels require CUDA",
    ])
    def test_left_as_written_where_the_reason_names_what_needs_cuda_and_has_no_npu_form(self, reason):
        """The test's CUDA-only code is in another module of the project (the test imports it), and
        the reason says a thing that has no NPU form needs CUDA."""
        decorator = f'@unittest.skipUnless(torch.cuda.is_available(), "{reason}")'
        source = (f"import torch\nimport unittest\n\n\n{decorator}\nclass T(unittest.TestCase):\n"
                  "    def test_a(self):\n        from proj.model import attend\n        attend(torch.ones(2).cuda())\n")
        output, guards = _migrate(source)
        assert decorator in output and [g.start_line for g in guards] == [5] and reason in guards[0].tip

    @pytest.mark.parametrize("reason", [
        "CUDA required", "CUDA required for MoE forward", "requires two CUDA devices", "attention requires CUDA",
        "the trainer needs an NVIDIA GPU",
    ])
    def test_switched_where_the_reason_names_nothing_without_an_npu_form(self, reason):
        source = (f'import torch\nimport unittest\n\n\n@unittest.skipUnless(torch.cuda.is_available(), "{reason}")\n'
                  "class T(unittest.TestCase):\n    def test_a(self):\n        x = torch.ones(2).cuda()\n")
        output, guards = _migrate(source)
        assert "torch_npu.npu.is_available()" in output and not guards

    def test_a_test_class_skipped_as_a_whole(self):
        source = ('import torch\nimport unittest\n\n\n@unittest.skipUnless(torch.cuda.is_available(), '
                  '"the fused op is CUDA-only")\nclass T(unittest.TestCase):\n    def test_a(self):\n'
                  '        x = torch.ones(2).cuda()\n')
        output, guards = _migrate(source)
        assert "@unittest.skipUnless(torch.cuda.is_available()" in output and [g.start_line for g in guards] == [5]
