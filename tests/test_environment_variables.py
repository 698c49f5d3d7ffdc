"""NPU107 (Python code) and the launch-script rules: CUDA/NCCL environment variables renamed only
where the Ascend variable takes the value the file gives it; reported otherwise."""
import textwrap

import pytest

from gpu2npu.knowledge import apidata, env_vars
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source):
    source = textwrap.dedent(source)
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


def _reported(result):
    return [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED]


def test_a_file_whose_only_cuda_is_an_allocator_setting_is_migrated():
    output, result = _migrate("""\
        import os
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True,max_split_size_mb:128"
        """)
    assert 'os.environ["PYTORCH_NPU_ALLOC_CONF"] = "expandable_segments:True,max_split_size_mb:128"' in output
    assert [c.rule for c in result.changes] == ["NPU107"]


def test_one_value_the_ascend_variable_does_not_take_leaves_every_mention():
    source = """\
        import os
        os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")
        print(os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
        """
    output, result = _migrate(source)
    assert output == textwrap.dedent(source)
    # (the read is left with the setting: the setting's row says what to do)
    assert _reported(result) == [(2, "PYTORCH_CUDA_ALLOC_CONF")]
    assert "backend:cudaMallocAsync" in result.findings[0].tip


@pytest.mark.parametrize("value, renamed", [("'1'", True), ("'0'", True), ("1", True), ("str(1)", True),
                                            ("'2'", False), ("str(mode)", False)])
def test_async_error_handling_modes(value, renamed):
    output, result = _migrate(f"import os\nos.environ['TORCH_NCCL_ASYNC_ERROR_HANDLING'] = {value}\n")
    assert ("HCCL_ASYNC_ERROR_HANDLING" in output) == renamed
    assert (_reported(result) == []) == renamed


def test_reads_follow_the_writes_and_env_dicts_count():
    output, _ = _migrate("""\
        import os, subprocess
        subprocess.run(cmd, env={**os.environ, "CUDA_LAUNCH_BLOCKING": "1"})
        sync = os.getenv("CUDA_LAUNCH_BLOCKING", "0") == "1"
        """)
    assert output.count("ASCEND_LAUNCH_BLOCKING") == 2 and "CUDA_LAUNCH_BLOCKING" not in output


def test_variables_without_a_counterpart_are_reported_with_the_ascend_way():
    output, result = _migrate("""\
        import os
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        def f():
            '''Reads NCCL_DEBUG.'''
            return "NCCL_DEBUG is " + os.environ["NCCL_P2P_DISABLE"]
        """)
    assert "NPU" not in output
    tips = {f.api: f.tip for f in result.findings if f.report == Report.UNSUPPORTED}
    assert sorted(tips) == ["CUBLAS_WORKSPACE_CONFIG", "NCCL_DEBUG"]
    assert "ASCEND_GLOBAL_LOG_LEVEL" in tips["NCCL_DEBUG"] and "HCCL_DETERMINISTIC" in tips["CUBLAS_WORKSPACE_CONFIG"]
    # only read (nothing in the file sets it): the program reads what its launcher sets, as before
    [note] = [f for f in result.findings if f.report == Report.NOTE and f.api == "NCCL_P2P_DISABLE"]
    assert note.start_line == 6 and "nothing to change" in note.tip


@pytest.mark.parametrize("read", [
    'timeout = int(os.environ.get("NCCL_TIMEOUT", "1800"))',
    'home = os.getenv("CUDA_HOME")',
    'if "NCCL_P2P_DISABLE" in os.environ:\n    pass',
    'level = os.environ["NCCL_DEBUG"]',
])
def test_a_variable_without_a_counterpart_only_read_is_a_note(read):
    _, result = _migrate("import os\n" + read + "\n")
    assert _reported(result) == []
    assert [f.report for f in result.findings if f.rule in ("NPU915", "NPU107")] == [Report.NOTE]


@pytest.mark.parametrize("source", [
    'import os\nos.environ["NCCL_DEBUG"] = "INFO"\nlevel = os.environ.get("NCCL_DEBUG")\n',  # set here too
    'import os\nos.environ.setdefault("NCCL_IB_DISABLE", "1")\n',
    'import os\nos.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)\n',
    'import os\ndel os.environ["NCCL_DEBUG"]\n',
])
def test_a_variable_without_a_counterpart_that_the_file_sets_or_removes_is_reported(source):
    _, result = _migrate(source)
    assert _reported(result)


@pytest.mark.parametrize("source, lines", [
    ('import os\nif os.getenv("NCCL_P2P_DISABLE") is None:\n    os.environ["NCCL_P2P_DISABLE"] = "1"\n', [3]),
    ('import os\nif "NCCL_P2P_DISABLE" not in env:\n    env["NCCL_P2P_DISABLE"] = "1"\n', [3]),
    ('import os\nmixing = os.environ.get("NCCL_GRAPH_MIXING_SUPPORT", "1") == "1"\n'
     'if mixing:\n    os.environ.setdefault("NCCL_GRAPH_MIXING_SUPPORT", "0")\n', [4]),
    # a value a counterpart refuses leaves every mention: the reads with the setting's row
    ('import os\nos.environ["NCCL_ASYNC_ERROR_HANDLING"] = "3"\nmode = os.environ["NCCL_ASYNC_ERROR_HANDLING"]\n', [2]),
    # two settings: a row each
    ('import os\nos.environ["NCCL_DEBUG"] = "INFO"\nif quiet:\n    os.environ["NCCL_DEBUG"] = "WARN"\n', [2, 4]),
])
def test_a_variable_the_file_sets_has_its_rows_where_it_is_set_not_where_it_is_read(source, lines):
    output, result = _migrate(source)
    assert output == source
    assert [line for line, _ in _reported(result)] == lines


@pytest.mark.parametrize("line, edited, reported", [
    ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True", None),
    ('export PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:256"', 'export PYTORCH_NPU_ALLOC_CONF="max_split_size_mb:256"', None),
    ("export PYTORCH_CUDA_ALLOC_CONF=$CONF", None, "PYTORCH_CUDA_ALLOC_CONF"),
    ("  NCCL_BLOCKING_WAIT: 1", "  HCCL_BLOCKING_WAIT: 1", None),
    ("NCCL_SOCKET_IFNAME=^lo,docker torchrun train.py", "HCCL_SOCKET_IFNAME=^lo,docker torchrun train.py", None),
])
def test_launch_script_values(line, edited, reported):
    # (the rules NPU504/NPU590 apply this to every match; their examples run in test_script_rule_examples)
    name = line.strip().split()[-1 if line.strip().startswith("export") else 0].split("=")[0].rstrip(":")
    start = line.index(name)
    new_name, tip = env_vars.script_edit(name, line, start + len(name))
    if edited is None:
        assert new_name is None and tip
    else:
        assert line[:start] + new_name + line[start + len(name):] == edited


def test_an_upper_case_constant_is_no_variable_unless_it_sits_where_variables_do():
    _, result = _migrate("""\
        import os
        impl = getattr(extension, "CUDA_IMPL", True)
        os.environ["CUDA_MODULE_LOADING"] = "LAZY"
        """)
    assert _reported(result) == [(3, "CUDA_MODULE_LOADING")]


def test_a_variable_whose_counterpart_takes_any_value_is_renamed_whatever_the_value():
    output, result = _migrate("import os\nos.environ['NCCL_SOCKET_IFNAME'] = settings.interface\n")
    assert "os.environ['HCCL_SOCKET_IFNAME'] = settings.interface" in output and _reported(result) == []


class TestAnEnvironmentBuiltByName:
    """A variable named as a keyword where a call builds an environment (`dict(os.environ, ...)`,
    `env.update(...)`, `os.environ.update(...)`) is that variable, as a string naming it is: a
    child process given CUDA_VISIBLE_DEVICES sees every NPU."""

    @pytest.mark.parametrize("line, expected", [
        ("env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))", "env = dict(os.environ, ASCEND_RT_VISIBLE_DEVICES=str(gpu))"),
        ("env.update(CUDA_LAUNCH_BLOCKING='1', NCCL_ASYNC_ERROR_HANDLING='0')",
         "env.update(ASCEND_LAUNCH_BLOCKING='1', HCCL_ASYNC_ERROR_HANDLING='0')"),
        ("os.environ.update(TORCH_NCCL_BLOCKING_WAIT='1')", "os.environ.update(HCCL_BLOCKING_WAIT='1')"),
    ])
    def test_renamed(self, line, expected):
        output, result = _migrate(f"import os\nimport subprocess\n\n\ndef run(cmd, gpu, env):\n    {line}\n")
        assert f"    {expected}\n" in output
        assert {change.rule for change in result.changes} <= {"NPU106", "NPU107"} and result.changes

    def test_a_value_the_counterpart_refuses_is_reported(self):
        output, result = _migrate("import os\nenv = dict(os.environ, NCCL_ASYNC_ERROR_HANDLING='3')\n")
        assert "NCCL_ASYNC_ERROR_HANDLING='3'" in output
        assert [api for _, api in _reported(result)] == ["NCCL_ASYNC_ERROR_HANDLING"]

    @pytest.mark.parametrize("source", [
        # a keyword of another call, or not a variable's name
        "import os\nrun(cmd, CUDA_VISIBLE_DEVICES=gpu)\n",
        "import os\nconfig.update(cuda_visible_devices='0')\n",
        "import os\nenv = dict(os.environ, MY_SETTING='1')\n",
    ])
    def test_left(self, source):
        output, result = _migrate(source)
        assert output == source and not result.changes


class TestATableOfFunctionsReadingTheEnvironment:
    """vLLM's `envs`: `{"CUDA_VISIBLE_DEVICES": lambda: os.environ.get("CUDA_VISIBLE_DEVICES")}`,
    read as `envs.CUDA_VISIBLE_DEVICES` elsewhere.  The key is the name the program reads the value
    by and stays with its readers; the variable the function reads is the Ascend one."""

    @pytest.mark.parametrize("binding", ["environment_variables =", "environment_variables: dict[str, Callable] ="])
    def test_the_key_stays_and_the_variable_read_moves(self, binding):
        source = (f"import os\n{binding} {{\n    'CUDA_VISIBLE_DEVICES': lambda: os.environ.get('CUDA_VISIBLE_DEVICES', None),\n}}\n"
                  "print(environment_variables['CUDA_VISIBLE_DEVICES']())\n")
        output, _ = _migrate(source)
        assert "'CUDA_VISIBLE_DEVICES': lambda: os.environ.get('ASCEND_RT_VISIBLE_DEVICES', None)" in output
        assert "environment_variables['CUDA_VISIBLE_DEVICES']()" in output

    def test_an_environment_given_to_a_process_moves(self):
        source = "import os\nimport subprocess\nenv = {'CUDA_VISIBLE_DEVICES': gpus}\nsubprocess.run(cmd, env=env)\n"
        output, _ = _migrate(source)
        assert "'ASCEND_RT_VISIBLE_DEVICES': gpus" in output

    @pytest.mark.parametrize("listing", [
        "IGNORED = {'LOCAL_RANK', 'CUDA_VISIBLE_DEVICES'}\n",
        "FACTORS = ['CUDA_VISIBLE_DEVICES', 'VLLM_HOST_IP']\n",
        "def ignored():\n    return ('CUDA_VISIBLE_DEVICES',)\n",
    ])
    def test_the_entrys_name_listed_elsewhere_in_the_file_stays_with_the_key(self, listing):
        table = ("import os\nenvironment_variables: dict = {\n"
                 "    'CUDA_VISIBLE_DEVICES': lambda: os.environ.get('CUDA_VISIBLE_DEVICES'),\n}\n")
        for source in (table + listing, listing + table):
            output, _ = _migrate(source)
            assert listing in output and "os.environ.get('ASCEND_RT_VISIBLE_DEVICES')" in output

    def test_a_list_of_variables_in_a_file_without_such_a_table_moves(self):
        output, _ = _migrate("import os\nCLEARED = ['CUDA_VISIBLE_DEVICES']\nfor name in CLEARED:\n    os.environ.pop(name)\n")
        assert "CLEARED = ['ASCEND_RT_VISIBLE_DEVICES']" in output


class TestTheVisibleDevicesSetFromRaysGpuIds:
    """CUDA_VISIBLE_DEVICES set from the GPU ids Ray gave the task (an RL trainer's vLLM worker where
    RAY_EXPERIMENTAL_NOSET_* keeps Ray from setting it) stays: an Ascend node has no GPU ids, and the
    empty value, renamed to ASCEND_RT_VISIBLE_DEVICES, would hide every NPU.  The call's row (NPU911)
    says where the NPU ids are and which variable they set.  Every other setting is renamed."""

    @pytest.mark.parametrize("setting, stays", [
        ('os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in ray.get_gpu_ids())\n', True),
        ('os.environ["CUDA_VISIBLE_DEVICES"] = str(ray.get_gpu_ids()[0])\n', True),
        ("env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(ray.get_gpu_ids()[0]))\n", True),
        # any other value is renamed
        ('os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpu_ids))\n', False),
        ('os.environ["CUDA_VISIBLE_DEVICES"] = str(ray.get_runtime_context().get_accelerator_ids()["GPU"][0])\n', False),
        ("env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(rank))\n", False),
    ])
    def test_stays_with_the_calls_row_where_its_value_is_them(self, setting, stays):
        output, result = _migrate("import os\nimport ray\n\n" + setting)
        assert ("CUDA_VISIBLE_DEVICES" in output) == stays and ("ASCEND_RT_VISIBLE_DEVICES" in output) != stays
        rows = [f for f in result.findings if f.api == "ray.get_gpu_ids"]
        assert len(rows) == stays and all("ASCEND_RT_VISIBLE_DEVICES" in row.tip for row in rows)
