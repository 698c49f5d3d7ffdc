"""NPU110: Ray's GPU requests become requests for its NPU resource where the call is Ray's and
nothing else names resources; what stays, and Ray's other GPU questions, are reported."""
from helpers import migrate, read_csv

SOURCE = '''import ray
from ray.train import ScalingConfig


@ray.remote(num_gpus=1)
def train_shard(shard):
    return shard


@ray.remote(num_gpus=1, resources={"ssd": 1})
def load(path):
    return path


def run(cluster):
    ray.init(num_gpus=2)
    futures = [train_shard.options(num_gpus=0.5).remote(i) for i in range(4)]
    config = ScalingConfig(num_workers=4, use_gpu=True)
    return ray.get(futures), ray.get_gpu_ids(), config, cluster.options(num_gpus=3, **cluster.extra)
'''


def test_ray_gpu_requests_become_npu_requests_and_the_rest_is_reported(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "tune.py").write_text(SOURCE)
    target = migrate(project, tmp_path / "out")
    lines = (target / "tune.py").read_text().splitlines()
    assert lines[4] == '@ray.remote(resources={"NPU": 1})'
    assert lines[9] == '@ray.remote(num_gpus=1, resources={"ssd": 1})'
    assert lines[15] == '    ray.init(resources={"NPU": 2})'
    assert lines[16] == '    futures = [train_shard.options(resources={"NPU": 0.5}).remote(i) for i in range(4)]'
    assert "cluster.options(num_gpus=3, **cluster.extra)" in lines[18]
    changes = read_csv(target / "change_list.csv")
    assert [(row["Start Line"], row["Rule"]) for row in changes] == [("5", "NPU110"), ("16", "NPU110"), ("17", "NPU110")]
    rows = {(row["Start Line"], row["OP"]): row["Tips"] for row in read_csv(target / "unsupported_api.csv")}
    assert sorted(rows) == [("10", "ray num_gpus"), ("18", "ScalingConfig(use_gpu=...)"), ("19", "ray num_gpus"),
                            ("19", "ray.get_gpu_ids")]
    assert "resources_per_worker={'NPU': 1}" in rows[("18", "ScalingConfig(use_gpu=...)")]
    assert "get_accelerator_ids()['NPU']" in rows[("19", "ray.get_gpu_ids")]
    # idempotent: the migrated file has nothing more to change
    second = tmp_path / "second"
    second.mkdir()
    (second / "tune.py").write_text((target / "tune.py").read_text())
    again = migrate(second, tmp_path / "again")
    assert not [row for row in read_csv(again / "change_list.csv") if row["Rule"] == "NPU110"]


def test_placement_group_bundles_ask_for_npus_and_other_gpu_requests_are_reported(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "cluster.py").write_text(
        "import ray\nfrom ray.util.placement_group import placement_group\nfrom ray.train import ScalingConfig\n\n"
        "group = placement_group([{'GPU': 1, 'CPU': 8}] * 4, strategy='STRICT_PACK')\n"
        "spread = ray.util.placement_group(\n    bundles=[{\"GPU\": n} for n in range(2)])\n"
        "ray.get(placement_group(BUNDLES).ready())\n"
        "config = ScalingConfig(num_workers=2, resources_per_worker={'GPU': 1, 'CPU': 4})\n"
        "labels = {'GPU': 'A100'}\n")
    target = migrate(project, tmp_path / "out")
    lines = (target / "cluster.py").read_text().splitlines()
    assert lines[4] == "group = placement_group([{'NPU': 1, 'CPU': 8}] * 4, strategy='STRICT_PACK')"
    assert lines[6] == '    bundles=[{"NPU": n} for n in range(2)])'
    assert lines[9] == "labels = {'GPU': 'A100'}"  # not Ray's: left alone, not reported
    changes = read_csv(target / "change_list.csv")
    assert [(row["Start Line"], row["End Line"], row["Rule"]) for row in changes] == [
        ("5", "5", "NPU110"), ("6", "7", "NPU110")]
    rows = [(row["Start Line"], row["OP"]) for row in read_csv(target / "unsupported_api.csv")]
    assert rows == [("9", 'ray resource "GPU"')]


class TestBundlesBoundToANameFirst:
    """`bundles = [{"GPU": 1, "CPU": 1} for _ in range(n)]` then `placement_group(bundles)` (RL
    trainers' actor groups): the actors placed in the group ask for "NPU", so the bundles must too,
    or the group never forms on an Ascend node and the program waits for it forever.  The
    assignments of the name where the group is made are rewritten where each asks for "GPU"; a
    name bound to something else too, or bound in another scope than the call's, stays."""

    def _migrated(self, tmp_path, source):
        project = tmp_path / "proj"
        project.mkdir()
        (project / "groups.py").write_text(source)
        target = migrate(project, tmp_path / "out")
        return (target / "groups.py").read_text(), read_csv(target / "change_list.csv")

    def test_the_bundles_of_a_function_and_of_the_module_ask_for_npus(self, tmp_path):
        source = ("from ray.util.placement_group import placement_group\n\n\ndef actors(n, m):\n"
                  "    bundles = [{\"GPU\": 1, \"CPU\": 1} for _ in range(n)]\n"
                  "    pg = placement_group(bundles, strategy=\"PACK\")\n"
                  "    bundles = [{\"GPU\": 1, \"CPU\": 1} for _ in range(m)]\n"
                  "    return pg, placement_group(bundles, strategy=\"PACK\")\n\n\n"
                  "SHARED = [{'GPU': 1}] * 8\nshared = placement_group(bundles=SHARED)\n")
        output, changes = self._migrated(tmp_path, source)
        assert '    bundles = [{"NPU": 1, "CPU": 1} for _ in range(n)]\n' in output
        assert '    bundles = [{"NPU": 1, "CPU": 1} for _ in range(m)]\n' in output
        assert "SHARED = [{'NPU': 1}] * 8\n" in output
        assert [(row["Start Line"], row["Rule"]) for row in changes] == [
            ("5", "NPU110"), ("7", "NPU110"), ("11", "NPU110")]

    def test_a_name_bound_twice_or_elsewhere_stays(self, tmp_path):
        source = ("from ray.util.placement_group import placement_group\n\nBUNDLES = [{'GPU': 1}]\n\n\n"
                  "def elsewhere():\n    return placement_group(BUNDLES)\n\n\ndef twice(extra):\n"
                  "    bundles = [{'GPU': 1}]\n    bundles += extra\n    return placement_group(bundles)\n\n\n"
                  "def other(extra):\n    bundles = [{'GPU': 1}]\n    if extra:\n        bundles = extra\n"
                  "    return placement_group(bundles)\n")
        output, changes = self._migrated(tmp_path, source)
        assert output == source and not changes
