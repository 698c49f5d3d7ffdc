"""The imitation's torch_npu.contrib and torch_npu.distributed: what each name computes, as torch_npu
documents it (its docstrings and operator documentation), on the CPU; its submodules; and a
two-rank program started with `python -m torch_npu.distributed.run`."""
import math
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from helpers import free_port  # noqa: E402
from standin_runner import import_imitation, standin_env  # noqa: E402


@pytest.fixture(scope="module")
def npu():
    return import_imitation()


class TestContribFunctions:
    def test_iou_gives_the_documented_example_of_the_operator(self, npu):
        # torch_npu's documentation of npu_iou: these boxes and ground truths give 0.4985 and 0.9961
        # (float16 on the NPU) where the exact IoU is 0.5 and 1; contrib's npu_iou(boxes1, boxes2)
        # is [len(boxes1), len(boxes2)]
        boxes = torch.tensor([[0, 0, 10, 10], [10, 10, 20, 20], [32, 32, 38, 42]], dtype=torch.float16)
        truths = torch.tensor([[0, 0, 10, 20], [0, 10, 10, 10], [10, 10, 20, 20]], dtype=torch.float16)
        iou = npu.contrib.function.npu_iou(boxes.float(), truths.float(), mode="iou")
        documented = torch.tensor([[0.4985, 0, 0], [0, 0, 0.9961], [0, 0, 0]])
        assert iou.shape == (3, 3) and torch.allclose(iou, documented, atol=0.005)

    def test_ptiou_and_normalized_boxes_follow_the_documented_formulas(self, npu):
        boxes1 = torch.tensor([[0.0, 0.0, 0.02, 0.02]])
        boxes2 = torch.tensor([[0.01, 0.0, 0.03, 0.02]])
        # scaled by 100: overlap 2, union 6
        ptiou = npu.contrib.function.npu_ptiou(boxes1, boxes2, is_normalized=True)
        assert torch.allclose(ptiou, torch.tensor([[2 / 6.001]]))
        iou = npu.contrib.function.npu_iou(boxes1, boxes2, mode="iou", is_normalized=True)
        assert torch.allclose(iou, torch.tensor([[2.001 / 6.001]]))
        with pytest.raises(ValueError):
            npu.contrib.function.npu_iou(boxes1, boxes2, mode="giou")

    def test_giou_of_centre_boxes(self, npu):
        boxes = torch.tensor([[0.5, 0.5, 1.0, 1.0], [0.5, 0.5, 1.0, 1.0]])
        others = torch.tensor([[0.5, 0.5, 1.0, 1.0], [2.5, 0.5, 1.0, 1.0]])
        giou = npu.contrib.function.npu_giou(boxes, others)
        # the same box: 1; apart by one box: no overlap, enclosing 3, union 2
        assert giou.shape == (2, 1) and torch.allclose(giou.flatten(), torch.tensor([1.0, -1 / 3]))

    def test_multiclass_nms_keeps_the_best_of_overlapping_boxes_per_class(self, npu):
        boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]])
        # two classes and the background column, which is ignored
        scores = torch.tensor([[0.9, 0.0, 0.5], [0.8, 0.0, 0.5], [0.0, 0.7, 0.5], [0.01, 0.02, 0.9]])
        dets, labels = npu.contrib.function.npu_multiclass_nms(boxes, scores, score_thr=0.05, nms_thr=0.45, max_num=4)
        assert dets.shape == (4, 5) and labels.shape == (4,) and dets.dtype == torch.float16
        assert dets[:2].tolist() == [[0.0, 0.0, 10.0, 10.0, pytest.approx(0.9, abs=1e-3)],
                                     [20.0, 20.0, 30.0, 30.0, pytest.approx(0.7, abs=1e-3)]]
        assert labels.tolist() == [0, 1, 0, 0] and not dets[2:].any()  # zero-padded to max_num

    def test_batched_nms_is_each_image_alone(self, npu):
        boxes = torch.tensor([[[0.0, 0, 10, 10], [1, 1, 10, 10]], [[0.0, 0, 5, 5], [10, 10, 15, 15]]])
        scores = torch.tensor([[[0.9, 0.1], [0.8, 0.1]], [[0.6, 0.1], [0.7, 0.1]]])
        dets, labels = npu.contrib.function.npu_batched_multiclass_nms(boxes, scores, max_num=2)
        for image in range(2):
            alone, alone_labels = npu.contrib.function.npu_multiclass_nms(boxes[image], scores[image], max_num=2)
            assert torch.equal(dets[image], alone) and torch.equal(labels[image], alone_labels)
        assert dets[1, :, 4].tolist() == [pytest.approx(0.7, abs=1e-3), pytest.approx(0.6, abs=1e-3)]

    def test_fused_softmax_and_byte_mask_dropout(self, npu):
        scores, mask = torch.randn(2, 4, 8, 8), torch.randn(2, 1, 8, 8)
        probs = npu.contrib.function.fuse_add_softmax_dropout(False, torch.nn.Dropout(0.5), mask, scores, 64, p=0.5)
        assert torch.allclose(probs, torch.softmax(mask + scores / math.sqrt(64), dim=-1))
        x = torch.ones(1000)
        assert torch.equal(npu.contrib.function.dropout_with_byte_mask(x, 0.5, training=False), x)
        kept = npu.contrib.function.dropout_with_byte_mask(x, 0.5)
        assert set(kept.tolist()) <= {0.0, 2.0} and 400 < int(kept.sum()) // 2 < 600

    def test_the_release_modules_hold_their_functions(self, npu):
        from torch_npu.contrib.function.iou import npu_iou
        from torch_npu.contrib.function import nms

        assert npu_iou is npu.contrib.function.npu_iou is npu.contrib.npu_iou
        assert nms.npu_multiclass_nms is npu.contrib.function.npu_multiclass_nms
        with pytest.raises(AttributeError):
            nms.npu_iou  # (iou's, not nms')


class TestContribModules:
    def test_fast_batch_norms_are_batch_norms_counting_in_int32(self, npu):
        torch.manual_seed(0)
        fast, plain = npu.contrib.module.FastBatchNorm2d(3), torch.nn.BatchNorm2d(3)
        x = torch.randn(4, 3, 5, 5)
        assert torch.allclose(fast(x), plain(x)) and torch.allclose(fast.running_var, plain.running_var)
        state = fast.state_dict()
        assert state["num_batches_tracked"].dtype == torch.int32 and int(state["num_batches_tracked"]) == 1
        assert npu.contrib.module.FastBatchNorm1d(3, track_running_stats=False).num_batches_tracked is None
        assert isinstance(npu.contrib.FastSyncBatchNorm(3), torch.nn.SyncBatchNorm)

    def test_label_smoothing_cross_entropy(self, npu):
        torch.manual_seed(0)
        pred, target = torch.randn(8, 5), torch.randint(0, 5, (8,))
        loss = npu.contrib.module.LabelSmoothingCrossEntropy(num_classes=5, smooth_factor=0.2)(pred, target)
        # the true class weighs 1 - s, each other s / (K - 1): torch's label_smoothing=e weighs the others
        # e / K and the true class 1 - e + e / K, the same for e = s K / (K - 1)
        expected = torch.nn.functional.cross_entropy(pred, target, label_smoothing=0.2 * 5 / 4)
        assert loss.dtype == torch.float32 and torch.allclose(loss, expected)
        plain = npu.contrib.module.LabelSmoothingCrossEntropy(num_classes=5)(pred, target)
        assert torch.allclose(plain, torch.nn.functional.cross_entropy(pred, target))

    def test_channel_shuffle_interleaves_the_groups(self, npu):
        x1, x2 = torch.randn(2, 4, 3, 3), torch.randn(2, 4, 3, 3)
        joined = torch.cat([x1, x2], 1)
        reference = joined.reshape(2, 2, 4, 3, 3).transpose(1, 2).reshape(2, 8, 3, 3)
        first, second = npu.contrib.module.ChannelShuffle(8)(x1, x2)
        assert torch.equal(torch.cat([first, second], 1), reference)
        whole = npu.contrib.module.ChannelShuffle(8, split_shuffle=False)(x1, x2)
        assert torch.equal(whole, reference)

    def test_bidirectional_lstm_joins_two_one_way_lstms(self, npu):
        torch.manual_seed(0)
        lstm = npu.contrib.module.BiLSTM(6, 4)
        x = torch.randn(5, 2, 6)
        out = lstm(x)
        forward, _ = lstm.fw_rnn(x)
        backward, _ = lstm.bw_rnn(x.flip(0))
        assert out.shape == (5, 2, 8) and torch.equal(out, torch.cat([forward, backward.flip(0)], 2))
        assert set(lstm.state_dict()) >= {"fw_rnn.weight_ih_l0", "bw_rnn.weight_hh_l0"}

    def test_the_dropouts_are_dropout(self, npu):
        x = torch.ones(1000)
        for name in ("NpuFairseqDropout", "NpuCachedDropout", "NpuPreGenDropout"):
            cls = getattr(npu.contrib.module, name)
            assert cls.enable_dropout_ensemble(torch.nn.Linear(1, 1)) is None
            layer = cls(0.5, module_name="attention")
            assert torch.equal(layer.eval()(x), x)
            assert set(layer.train()(x).tolist()) <= {0.0, 2.0}
        assert torch.equal(npu.contrib.module.DropoutWithByteMask(0.3).eval()(x), x)

    def test_prefetcher_gives_each_batch_then_none(self, npu):
        batches = [(torch.ones(2), torch.zeros(2)), (torch.full((2,), 2.0), torch.ones(2))]
        prefetcher = npu.contrib.module.Prefetcher(batches)
        seen = []
        inputs, targets = prefetcher.next()
        while inputs is not None:
            seen.append((inputs.tolist(), targets.tolist()))
            inputs, targets = prefetcher.next()
        assert seen == [([1.0, 1.0], [0.0, 0.0]), ([2.0, 2.0], [1.0, 1.0])] and targets is None

    def test_the_release_modules_hold_their_classes(self, npu):
        from torch_npu.contrib.module.crossentropy import LabelSmoothingCrossEntropy

        assert LabelSmoothingCrossEntropy is npu.contrib.module.LabelSmoothingCrossEntropy
        assert npu.contrib.module.activations.Mish is torch.nn.Mish


class TestDistributed:
    def test_the_names_it_hands_on_are_torch_distributed(self, npu):
        import torch.distributed as dist

        assert npu.distributed.all_reduce is dist.all_reduce and npu.distributed.P2POp is dist.P2POp
        assert npu.distributed.is_hccl_available()
        import torch.distributed.fsdp

        assert npu.distributed.fsdp is torch.distributed.fsdp
        from torch_npu.distributed import wrap

        assert wrap is torch.distributed.fsdp.wrap  # (torch_npu 1.11's copy of FSDP's wrap)

    def test_two_ranks_started_by_its_run_module_reduce_over_hccl(self, tmp_path):
        script = tmp_path / "reduce.py"
        script.write_text(textwrap.dedent("""
            import torch
            import torch_npu
            import torch_npu.distributed as dist

            dist.init_process_group("hccl")
            rank = dist.get_rank()
            torch_npu.npu.set_device(rank)
            value = torch.tensor([float(rank + 1)]).npu()
            dist.all_reduce(value)
            print(f"rank {rank} sum {value.item()}")
            dist.destroy_process_group()
        """))
        result = _two_ranks(script)
        assert "rank 0 sum 3.0" in result.stdout and "rank 1 sum 3.0" in result.stdout


    def test_gathers_and_scatters_take_any_tensor_of_the_size_as_hccl_does(self, tmp_path):
        """HCCL (as NCCL) takes a flat or stacked tensor of world size times the input's elements,
        and an input that requires a gradient; Gloo, under the imitation, neither (accelerate's
        `gather` and `gather_for_metrics` give both)."""
        script = tmp_path / "gather.py"
        script.write_text(textwrap.dedent("""
            import torch
            import torch_npu
            import torch.distributed as dist

            dist.init_process_group("hccl")
            rank = dist.get_rank()
            part = (torch.arange(3.0) + 10 * rank).requires_grad_()
            flat, stacked = torch.empty(6), torch.empty(2, 3)
            dist.all_gather_into_tensor(flat, part)
            dist.all_gather_into_tensor(stacked, part, async_op=True).wait()
            scattered = torch.empty(2)
            dist.reduce_scatter_tensor(scattered, torch.arange(4.0).view(2, 2) + rank)
            print(f"rank {rank} {flat.tolist()} {stacked.tolist()} {scattered.tolist()}")
            dist.destroy_process_group()
        """))
        result = _two_ranks(script)
        gathered = "[0.0, 1.0, 2.0, 10.0, 11.0, 12.0] [[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]]"
        assert f"rank 0 {gathered} [1.0, 3.0]" in result.stdout and f"rank 1 {gathered} [5.0, 7.0]" in result.stdout


def _two_ranks(script):
    """`script` run by two ranks that `python -m torch_npu.distributed.run` starts (they pass)."""
    command = [sys.executable, "-m", "torch_npu.distributed.run", "--nproc-per-node", "2",
               "--master-port", str(free_port()), str(script)]
    result = subprocess.run(command, cwd=script.parent, env=standin_env({"STANDIN_NPU_COUNT": 2}), capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_a_name_the_imitation_explains_says_why_where_the_release_has_it(tmp_path):
    """With the release's names (the dry run's STANDIN_TORCH_NPU_DATA), a contrib or distributed
    name the imitation does not implement fails as not imitated, with the reason."""
    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src", "gpu2npu", "data",
                        "torch_npu_2.1.0.json")
    script = tmp_path / "names.py"
    script.write_text(textwrap.dedent("""
        import torch_npu
        for module, name in ((torch_npu.contrib.module, "Focus"), (torch_npu.contrib.function, "npu_ciou"),
                             (torch_npu.distributed, "reinit_process_group")):
            try:
                getattr(module, name)
            except AttributeError as error:
                print(error)
    """))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env=standin_env({"STANDIN_TORCH_NPU_DATA": data}))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all("torch_npu has it; the CPU imitation does not, as" in line for line in lines), lines
    assert "slicing" in lines[0] and "documents" in lines[1] and "HCCL" in lines[2]
