"""``torch_npu.contrib.function`` stand-in: each function computes, with torch on the CPU, the
result torch_npu documents for it; those whose result is an NPU operator's that the release
documents only in part are explained (torch_npu/_explained.py) and fail as not imitated."""

import math as _math

import torch as _torch

from .. import _names


def roll(input, shifts, dims):
    """torch.roll's result (torch_npu computes it with a faster kernel for swin's window shifts)."""
    return _torch.roll(input, shifts, dims)


def npu_fast_condition_index_put(x, condition, value):
    """`x[condition] = value`, in place, and x returned."""
    x[condition] = value
    return x


def matmul_transpose(tensor1, tensor2):
    """tensor1 @ tensor2 transposed in its last two dimensions."""
    return _torch.matmul(tensor1, tensor2.transpose(-2, -1))


def dropout_with_byte_mask(input1, p=0.5, training=True, inplace=False):
    """Dropout (the NPU keeps its mask as bytes; the values are dropout's)."""
    return _torch.nn.functional.dropout(input1, p, training, inplace)


def fuse_add_softmax_dropout(training, dropout, attn_mask, attn_scores, attn_head_size, p=0.5, dim=-1):
    """softmax(attn_mask + attn_scores / sqrt(attn_head_size)) along `dim`, then dropout with
    probability `p` in training (torch_npu fuses the three)."""
    probs = _torch.softmax(_torch.add(attn_mask, attn_scores, alpha=1 / _math.sqrt(attn_head_size)), dim=dim)
    return _torch.nn.functional.dropout(probs, p if training else 0.0, training)


def _as_box_dtype(boxes):
    return boxes if boxes.dtype in (_torch.float, _torch.half) else boxes.float()


def _overlaps(boxes1, boxes2):
    """(intersection, union) areas of every pair of (x1, y1, x2, y2) boxes: [N, M] each."""
    top_left = _torch.maximum(boxes1[:, None, :2], boxes2[None, :, :2])
    bottom_right = _torch.minimum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    intersection = (bottom_right - top_left).clamp(min=0).prod(-1)
    area1 = (boxes1[:, 2:] - boxes1[:, :2]).prod(-1)
    area2 = (boxes2[:, 2:] - boxes2[:, :2]).prod(-1)
    return intersection, area1[:, None] + area2[None, :] - intersection


def npu_iou(boxes1, boxes2, mode="ptiou", is_normalized=False, normalized_scale=100.):
    """IoU of every pair of boxes1 (N, 4) and boxes2 (M, 4), (xmin, ymin, xmax, ymax): [N, M].
    As documented: iou = (overlap + 0.001) / (union + 0.001), ptiou = overlap / (union + 0.001);
    normalized coordinates are first scaled by `normalized_scale`."""
    if mode not in ("iou", "ptiou"):
        raise ValueError("Expected mode in [iou, ptiou]")
    boxes1, boxes2 = _as_box_dtype(boxes1), _as_box_dtype(boxes2)
    if is_normalized:
        boxes1, boxes2 = boxes1 * normalized_scale, boxes2 * normalized_scale
    overlap, union = _overlaps(boxes1, boxes2)
    return (overlap + 0.001) / (union + 0.001) if mode == "iou" else overlap / (union + 0.001)


npu_ptiou = npu_iou


def npu_giou(boxes1, boxes2, is_permuted=True):
    """Generalized IoU of each pair boxes1[i], boxes2[i], boxes of (x_center, y_center, w, h) in
    rows (n, 4): giou = iou - (enclosing area - union) / enclosing area, shape (n, 1)."""
    if boxes1.shape != boxes2.shape:
        raise ValueError("Expected boxes1.shape == boxes2.shape")
    boxes1, boxes2 = _as_box_dtype(boxes1), _as_box_dtype(boxes2)

    def corners(boxes):
        return _torch.cat([boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2], dim=1)

    first, second = corners(boxes1), corners(boxes2)
    size = (_torch.minimum(first[:, 2:], second[:, 2:]) - _torch.maximum(first[:, :2], second[:, :2])).clamp(min=0)
    overlap = size.prod(-1)
    union = boxes1[:, 2:].prod(-1) + boxes2[:, 2:].prod(-1) - overlap
    enclosing = (_torch.maximum(first[:, 2:], second[:, 2:]) - _torch.minimum(first[:, :2], second[:, :2])).prod(-1)
    return (overlap / union - (enclosing - union) / enclosing)[:, None]


def _greedy_nms(boxes, scores, iou_threshold):
    """Indices of the boxes kept by greedy non-maximum suppression, by falling score."""
    order = scores.argsort(descending=True)
    kept = []
    while order.numel():
        best = order[0]
        kept.append(int(best))
        if order.numel() == 1:
            break
        overlap, union = _overlaps(boxes[best][None], boxes[order[1:]])
        order = order[1:][(overlap / union)[0] <= iou_threshold]
    return _torch.tensor(kept, dtype=_torch.long)


def _batch_nms(boxes, scores, score_thr, nms_thr, max_per_class, max_total):
    """npu_batch_nms as torch_npu documents it, for boxes (batch, n, q, 4) with q 1 or the number
    of classes and scores (batch, n, classes): per batch and class, the boxes scoring above
    `score_thr` that survive NMS at `nms_thr` (at most `max_per_class`), then the best
    `max_total` of all classes by score; boxes, scores and classes zero-padded to `max_total`,
    and the count kept.  In float16, as the NPU computes it."""
    batch, _, shared, _ = boxes.shape
    classes = scores.shape[2]
    out_boxes = boxes.new_zeros((batch, max_total, 4))
    out_scores = scores.new_zeros((batch, max_total))
    out_classes = scores.new_zeros((batch, max_total))
    out_num = _torch.zeros(batch, dtype=_torch.int32)
    for b in range(batch):
        found = []
        for c in range(classes):
            class_boxes = boxes[b, :, 0 if shared == 1 else c].float()
            class_scores = scores[b, :, c].float()
            above = (class_scores > score_thr).nonzero().flatten()
            kept = above[_greedy_nms(class_boxes[above], class_scores[above], nms_thr)][:max_per_class]
            found.extend((float(class_scores[i]), c, class_boxes[i]) for i in kept)
        found.sort(key=lambda item: -item[0])
        for slot, (score, c, box) in enumerate(found[:max_total]):
            out_boxes[b, slot], out_scores[b, slot], out_classes[b, slot] = box, score, c
        out_num[b] = min(len(found), max_total)
    return out_boxes, out_scores, out_classes, out_num


def npu_multiclass_nms(multi_bboxes, multi_scores, score_thr=0.05, nms_thr=0.45, max_num=50, score_factors=None):
    """Multi-class NMS of one image: bboxes (n, 4) or (n, classes, 4), scores (n, classes + 1)
    whose last column (background) is ignored.  Returns (max_num, 5) boxes with their score
    and (max_num,) 0-based labels, zero-padded, in float16 (torch_npu's npu_batch_nms)."""
    classes, count = multi_scores.size(1) - 1, multi_scores.size(0)
    scores = multi_scores[:, :-1] if score_factors is None else multi_scores[:, :-1] * score_factors[:, None]
    boxes = multi_bboxes.reshape(1, count, multi_bboxes.numel() // 4 // count, 4)
    nmsed_boxes, nmsed_scores, nmsed_classes, _ = _batch_nms(boxes.half(), scores.reshape(1, count, classes).half(),
                                                            score_thr, nms_thr, max_num, max_num)
    return _torch.cat([nmsed_boxes[0], nmsed_scores[0][:, None]], -1), nmsed_classes[0]


def npu_batched_multiclass_nms(multi_bboxes, multi_scores, score_thr=0.05, nms_thr=0.45, max_num=50,
                               score_factors=None):
    """npu_multiclass_nms for a batch: bboxes (bs, n, 4) or (bs, n, classes, 4), scores
    (bs, n, classes + 1); returns (bs, max_num, 5) and (bs, max_num)."""
    batch, count, classes = multi_scores.size(0), multi_scores.size(1), multi_scores.size(2) - 1
    scores = multi_scores[..., :-1] if score_factors is None else multi_scores[..., :-1] * score_factors[..., None]
    boxes = multi_bboxes.reshape(batch, count, multi_bboxes.numel() // 4 // count // batch, 4)
    nmsed_boxes, nmsed_scores, nmsed_classes, _ = _batch_nms(boxes.half(), scores.reshape(batch, count, classes).half(),
                                                            score_thr, nms_thr, max_num, max_num)
    return _torch.cat([nmsed_boxes, nmsed_scores[..., None]], -1), nmsed_classes


# The release's modules of this package, each holding its functions (torch_npu.contrib.function.iou...).
_SUBMODULES = {
    "iou": ("npu_iou", "npu_ptiou", "npu_giou", "npu_diou", "npu_ciou"),
    "nms": ("npu_multiclass_nms", "npu_batched_multiclass_nms"),
    "anchor_generator": ("npu_single_level_responsible_flags",),
    "bbox_coder": ("npu_bbox_coder_encode_yolo", "npu_bbox_coder_encode_xyxy2xywh", "npu_bbox_coder_decode_xywh2xyxy"),
    "index_op": ("npu_fast_condition_index_put",),
    "fused_attention": ("npu_fused_attention", "npu_fused_attention_with_layernorm"),
    "npu_functional": ("dropout_with_byte_mask",),
}

_names.apply_filter(__name__, globals())
_names.package_modules(__name__, globals(), _SUBMODULES)
