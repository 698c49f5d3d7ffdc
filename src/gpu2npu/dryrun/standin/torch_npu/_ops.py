"""torch_npu's operators (torch_npu.npu_*, fast_gelu and one_), computed on the CPU from their documented
semantics: the torch_npu API documentation of each operator (the wheel's _op_plugin_docs.py and
Ascend/op-plugin docs/zh/custom_APIs), and, where that names the CANN operator it runs without a
formula, the CANN operator's documentation.  Each contract, in brief:

Activations
  fast_gelu(self), npu_fast_gelu(input) -> x / (1 + exp(-1.702 x)) = x * sigmoid(1.702 x).
  npu_gelu(input, *, approximate="none") -> x * Phi(x) ("none": erf form; "tanh": tanh approximation).
  npu_silu(self) -> x * sigmoid(x); npu_silu_(self) does it in place and returns self.
  npu_mish(self) -> x * tanh(softplus(x)).
  npu_geglu(self, dim=-1, approximate=1, activate_left=False) -> (out, out_gelu): self is halved
    along dim into A, B; activate_left False: out_gelu = gelu(B), out = A * gelu(B); True:
    out_gelu = gelu(A), out = gelu(A) * B.  approximate 0 = erf gelu, 1 = tanh gelu.
  npu_gelu_mul(input, *, approximate="none") -> gelu(x1) * x2, x1 and x2 the first and second
    halves of the last dimension; input's dtype.
  npu_clipped_swiglu(x, *, group_index=None, dim=-1, alpha=1.702, limit=7.0, bias=1.0,
    interleaved=True) -> x viewed as [pre, cut * after] (cut = dim's size) split into A, B (the
    even and odd columns when interleaved, else the halves); A = min(A, limit),
    B = clamp(B, -limit, limit), y = A * sigmoid(alpha * A) * (B + bias), dim halved; x's dtype.
    group_index is not imitated (what the rows past sum(group_index) hold is not documented).

Norms
  npu_layer_norm_eval(input, normalized_shape, weight=None, bias=None, eps=1e-5) -> layer_norm.
  npu_add_rms_norm(x1, x2, gamma, epsilon=1e-6) -> (y, rstd, x): x = x1 + x2,
    rstd = 1 / sqrt(mean(x^2) + epsilon) over gamma's trailing dimensions (float32, those
    dimensions kept as 1), y = x * rstd * gamma (dtype of x1).
  npu_gemma_rms_norm(self, gamma, epsilon=1e-6) -> (y, rstd): as above without the add and with
    y = x * rstd * (1 + gamma).
  npu_group_norm_silu(input, weight, bias, group, eps=1e-5) -> (out, mean, rstd): group norm over
    dim 1 split in `group` groups (weight/bias None: 1 and 0), then silu; mean and rstd have shape
    (N, group); all three have input's dtype.
  npu_group_norm_swish(input, num_groups, weight, bias, eps=1e-5, swish_scale=1.0) -> (out, mean,
    rstd): the same group norm, then swish y / (1 + exp(-swish_scale * y)).
  npu_add_rms_norm_cast(x1, x2, gamma, epsilon=1e-6) -> (y1, y2, rstd, x): npu_add_rms_norm's y
    as y2 (x1's dtype) and cast to float32 as y1.

Softmax and losses
  npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False) -> softmax over the last
    dimension of x * scale, where mask is True filled with -10000; x's dtype.  Only
    fixed_triu_mask=False is supported (documented as a reserved parameter).
  npu_softmax_cross_entropy_with_logits(features, labels) -> -sum(labels * log_softmax(features))
    over the last dimension (one loss per row).
  npu_cross_entropy_loss(input, target, weight=None, reduction="mean", ignore_index=-100,
    label_smoothing=0.0, lse_square_scale_for_zloss=0.0, return_zloss=False) -> (loss, log_prob,
    zloss, lse_for_zloss): l_n = -weight[y_n] * log_softmax(x_n)[y_n], 0 where y_n == ignore_index
    (ignore_index < 0: none ignored); "mean": sum(l) / sum(weight[y_n] over the rows not ignored),
    "sum": sum(l), both of shape [1]; "none": l, [N].  log_prob [N, C]; zloss and lse_for_zloss
    are empty (documented as not yet supported, as are label_smoothing other than 0 here).
  npu_fused_cross_entropy_loss_with_max_sum(logits_max, sum_exp_logits, predicted_logits, *,
    label_smoothing=0.0, input=None, weight=None, vocab_parallel_logits=None) -> (loss, softmax):
    loss = log(sum_exp_logits) - predicted_logits; softmax = exp(vocab_parallel_logits -
    logits_max[:, None]) / sum_exp_logits[:, None] (float32), empty without vocab_parallel_logits.

Reductions and sorting
  npu_max / npu_min(self, dim, keepdim=False) -> (values, indices), indices int32.
  npu_sort_v2(self, dim=-1, descending=False, out=None) -> the sorted values only; the last
    dimension only.

Matrix products
  npu_linear(input, weight, bias=None) -> input @ weight^T + bias.
  npu_bmmV2(self, mat2, output_sizes=()) -> matmul with batch broadcasting (output_sizes is for the
    NPU's backward pass and is ignored).

Layout, shape and dtype
  npu_format_cast(self, acl_format | dst, customize_dtype=None) / npu_format_cast_(self, src,
    customize_dtype=None): change only the NPU's storage format: the values stay.  The out-of-place
    form returns self when it already has that format, else a same-valued copy; the in-place form
    returns self.  The format asked for is recorded on the tensor for get_npu_format.
  get_npu_format(self) -> the recorded format, else the base format torch_npu gives a new tensor:
    NCHW (0) for 4 dimensions (the documented example), NCDHW (30) for 5, ND (2) otherwise.
  npu_dtype_cast(input, dtype) -> a new tensor of dtype (float to int truncates).
  npu_confusion_transpose(self, perm, shape, transpose_first) -> permute then reshape
    (transpose_first) or reshape then permute; contiguous.
  npu_transpose(self, perm, require_contiguous=True) -> permute, contiguous.
  npu_broadcast(self, size) -> expand to size (new leading dimensions allowed), contiguous.
  npu_reshape(self, shape, can_refresh=False) -> the values in the new shape.
  npu_pad(input, paddings) -> zero padding; paddings are (before, after) pairs for dimension 0, 1,
    ... in order, missing pairs meaning no padding.
  npu_slice(self, offsets, size) -> self[o0:o0+s0, o1:o1+s1, ...].
  npu_one_hot(input, num_classes=-1, depth=1, on_value=1, off_value=0) -> float32 of input.shape +
    (depth,): on_value where the class equals the position, off_value elsewhere (classes outside
    [0, depth) give a row of off_value).  num_classes is the axis; only the last one (-1).
  npu_masked_fill_range(self, start, end, value, axis=-1) -> for a 2-D self and each range k and
    row n < start.shape[1]: self[n, start[k, n]:end[k, n]] = value[k] (ranges in order); 2-D self
    and the last axis only.

Position encoding and anchors
  npu_apply_rotary_pos_emb(query, key, cos, sin, layout="BSND", rotary_mode="half") ->
    (query, key) updated in place to x * cos + rotate(x) * sin: "half" rotate = cat(-x2, x1) of
    the halves, "quarter" cat(-x2, x1, -x4, x3) of the quarters, "interleave" each pair
    (x[2i], x[2i+1]) -> (-x[2i+1], x[2i]).  cos/sin broadcast to query and key (layout "BSND",
    "SBND", "BNSD" or "TND").
  npu_anchor_response_flags(self, featmap_size, stride, num_base_anchors) -> uint8 of
    feat_h * feat_w * num_base_anchors: 1 for every base anchor of each cell that holds a ground
    truth box's centre (cell = floor(centre / stride), clamped to the map; x uses stride[0], y
    stride[1], as the documented equivalent computation does).
  npu_interleave_rope(x, cos, sin) -> q * cos + rotate_half(q) * sin, where q is x (B, N, S, D)
    with each row's even elements first and its odd elements after them; x's dtype.

Matrix products (continued) and sequence mixing
  npu_transpose_batchmatmul(input, weight, *, bias=None, scale=None, perm_x1=None, perm_x2=None,
    perm_y=None, batch_split_factor=1) -> (input.permute(perm_x1) @ weight.permute(perm_x2))
    .permute(perm_y): [M, B, N] from [M, B, K] or [B, M, K] and [B, K, N]; defaults [0, 1, 2],
    [0, 1, 2], [1, 0, 2], the only documented perm_x2 and perm_y.  The int8 form (scale) and
    batch_split_factor > 1 are not imitated; bias is documented as not supported.
  npu_masked_causal_conv1d(input, weight, *, mask=None) -> out[s, b, h] = sum_k weight[k, h] *
    input[s - (W - 1 - k), b, h] (zeros before the start), input [S, B, H], weight [W, H]; rows
    out[s, b] where mask[b, s] is False are 0.
  npu_mhc_post(x, h_res, h_out, h_post) -> h_res @ x + h_post (outer) h_out per token (x when
    h_res is None): x [..., n, D], h_res [..., n, n], h_out [..., D], h_post [..., n]; x's dtype.

Indexing, scattering and filling
  npu_indexing(self, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,
    new_axis_mask=0, shrink_axis_mask=0) -> a strided slice: begin[i]:end[i]:strides[i] of each
    dimension, bit i of begin_mask / end_mask leaving out begin[i] / end[i], of ellipsis_mask an
    ellipsis, of new_axis_mask a new dimension of size 1, of shrink_axis_mask the one index begin[i]
    (the dimension dropped).
  npu_gather_sparse_index(input, index) -> input[index] (rows of dimension 0): index.shape +
    input.shape[1:].
  npu_scatter(self, indices, updates, dim) -> self with updates written along dim at indices, as
    torch.scatter with indices and updates unsqueezed at dim: they have self's dimensions without
    dim (the documented example); empty indices leave self unchanged.
  npu_scatter_nd_update(self, indices, updates) / npu_scatter_nd_update_ -> self[indices[p]] =
    updates[p] for each p of indices.shape[:-1] (indices' last dimension a <= self.dim() indexes
    self's first a dimensions; updates is indices.shape[:-1] + self.shape[a:]); the in-place form
    returns self.
  one_(self) -> self filled with ones, in place.
  npu_sign_bits_pack(self, size) -> uint8 [size, n / size]: the signs (1 for x >= 0) of 1-D self
    padded with -1 to a multiple of 8, element 8k + i as bit i of byte k.
  npu_sign_bits_unpack(input, size, dtype) -> [size, 8 * numel / size] of dtype (float16 or
    float32): bit i of byte k as element 8k + i, 1 -> 1.0 and 0 -> -1.0.
"""
import collections
import math

import torch
import torch.nn.functional as F

from ._fused import rotated as _rotate

__all__ = [
    "fast_gelu", "npu_fast_gelu", "npu_gelu", "npu_silu", "npu_silu_", "npu_mish", "npu_geglu",
    "npu_layer_norm_eval", "npu_add_rms_norm", "npu_gemma_rms_norm", "npu_group_norm_silu",
    "npu_scaled_masked_softmax", "npu_softmax_cross_entropy_with_logits",
    "npu_max", "npu_min", "npu_sort_v2",
    "npu_linear", "npu_bmmV2",
    "npu_format_cast", "npu_format_cast_", "get_npu_format", "npu_dtype_cast",
    "npu_confusion_transpose", "npu_transpose", "npu_broadcast", "npu_reshape", "npu_pad", "npu_slice",
    "npu_one_hot", "npu_masked_fill_range",
    "npu_apply_rotary_pos_emb", "npu_anchor_response_flags",
    "npu_gelu_mul", "npu_clipped_swiglu", "npu_group_norm_swish", "npu_add_rms_norm_cast",
    "npu_cross_entropy_loss", "npu_fused_cross_entropy_loss_with_max_sum", "npu_interleave_rope",
    "npu_transpose_batchmatmul", "npu_masked_causal_conv1d", "npu_mhc_post",
    "npu_indexing", "npu_gather_sparse_index", "npu_scatter", "npu_scatter_nd_update", "npu_scatter_nd_update_",
    "one_", "npu_sign_bits_pack", "npu_sign_bits_unpack",
]


# ----------------------------------------------------------------------------------------- activations

def fast_gelu(self):
    # torch_npu documents fast_gelu as FastGelu; its example (0.5991 -> 0.4403, 0.4094 -> 0.2733) is
    # the Atlas A2 formula of npu_fast_gelu below.
    return npu_fast_gelu(self)


def npu_fast_gelu(input):
    # Documented: x / (1 + exp(-1.702 x)) on Atlas A2/A3; the training-series form (a stabler
    # rewrite, with exp(0.851 (x - |x|)) as the numerator factor) is the same function.
    return input * torch.sigmoid(1.702 * input)


def npu_gelu(input, *, approximate="none"):
    # Documented: GELU(x) = x * Phi(x); "none" uses erf, "tanh" the tanh approximation.
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', not {approximate!r}")
    return F.gelu(input, approximate=approximate)


def npu_silu(self):
    # Documented as Swish: x * sigmoid(x).
    return F.silu(self)


def npu_silu_(self):
    # The in-place form (Tensor(a!) self -> Tensor(a!)): returns its argument.
    return F.silu(self, inplace=True)


def npu_mish(self):
    # Documented: mish(x) = x * tanh(softplus(x)), softplus(x) = ln(1 + e^x).
    return F.mish(self)


def npu_geglu(self, dim=-1, approximate=1, activate_left=False):
    # Documented (torch_npu npu_geglu, CANN GeGlu/GeGluV2): self is cut in two equal halves A, B
    # along dim; out = A * Gelu(B) (activate_left=True: Gelu(A) * B); the second output is the
    # Gelu of the activated half.  approximate: 0 = "none" (erf), 1 = "tanh".
    if approximate not in (0, 1):
        raise ValueError(f"approximate must be 0 (none) or 1 (tanh), not {approximate!r}")
    if self.shape[dim] % 2:
        raise ValueError(f"npu_geglu halves dimension {dim}, of odd size {self.shape[dim]}")
    a, b = self.chunk(2, dim=dim)
    mode = "tanh" if approximate == 1 else "none"
    if activate_left:
        gelu = F.gelu(a, approximate=mode)
        return gelu * b, gelu
    gelu = F.gelu(b, approximate=mode)
    return a * gelu, gelu


def npu_gelu_mul(input, *, approximate="none"):
    # Documented (op-plugin docs/zh/custom_APIs npu_gelu_mul): the last dimension (2d long) is cut
    # into x1 = [..., :d] and x2 = [..., d:]; out = GELU(x1) * x2 with GELU's erf form ("none") or
    # its tanh approximation ("tanh"); the output has input's dtype and half its last dimension.
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', not {approximate!r}")
    if input.dim() == 0 or input.shape[-1] % 2:
        raise ValueError("npu_gelu_mul halves the last dimension, which must have an even size")
    x1, x2 = input.float().chunk(2, dim=-1)
    return (F.gelu(x1, approximate=approximate) * x2).to(input.dtype)


def npu_clipped_swiglu(x, *, group_index=None, dim=-1, alpha=1.702, limit=7.0, bias=1.0, interleaved=True):
    # Documented (op-plugin npu_clipped_swiglu): x is merged into [pre, cut * after] around dim
    # (cut = x.shape[dim]); A and B are its even and odd columns (interleaved) or its first and
    # second halves; A is clipped above at limit, B to [-limit, limit]; y = A * sigmoid(alpha * A)
    # * (B + bias), reshaped to x's dimensions with dim halved, x's dtype.  With group_index only
    # the first sum(group_index) rows are computed, and the documentation does not say what the
    # others hold: not imitated.
    if group_index is not None:
        raise NotImplementedError("npu_clipped_swiglu: torch_npu does not document what the rows past "
                                  "sum(group_index) hold, so the stand-in computes it without group_index only")
    if x.dim() < 2:
        raise ValueError("npu_clipped_swiglu takes an x of 2 or more dimensions")
    dim = dim % x.dim()
    cut = x.shape[dim]
    if cut % 2:
        raise ValueError(f"dimension {dim} of x ({cut}) must have an even size")
    pre = math.prod(x.shape[:dim])
    merged = x.float().reshape(pre, -1)
    if interleaved:
        a, b = merged[:, 0::2], merged[:, 1::2]
    else:
        a, b = merged.chunk(2, dim=1)
    a = a.clamp(max=limit)
    b = b.clamp(min=-limit, max=limit)
    y = a * torch.sigmoid(alpha * a) * (b + bias)
    return y.reshape(*x.shape[:dim], cut // 2, *x.shape[dim + 1:]).to(x.dtype)


# ----------------------------------------------------------------------------------------------- norms

def npu_layer_norm_eval(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    # Documented: the same as torch.nn.functional.layer_norm (population variance; weight/bias
    # None mean ones and zeros).
    return F.layer_norm(input, list(normalized_shape), weight, bias, eps)


def _rstd(x, gamma, epsilon):
    """1 / RMS(x) over gamma's trailing dimensions of x, in float32, those dimensions kept as 1."""
    if gamma.dim() > x.dim() or tuple(x.shape[x.dim() - gamma.dim():]) != tuple(gamma.shape):
        raise ValueError(f"gamma's shape {tuple(gamma.shape)} must be the trailing dimensions of {tuple(x.shape)}")
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    return torch.rsqrt(x.float().pow(2).mean(dim=dims, keepdim=True) + epsilon)


def npu_add_rms_norm(x1, x2, gamma, epsilon=1e-06):
    # Documented: x = x1 + x2; RMSNorm(x) = x / RMS(x) * gamma with RMS(x) = sqrt(mean(x^2) + eps)
    # over gamma's dimensions; returns (y, rstd, x): rstd float32 shaped like x1 with the normalized
    # dimensions 1 ((2,3,4,8) with gamma (4,8) -> (2,3,1,1)); y and x have x1's dtype and shape.
    x = x1 + x2
    rstd = _rstd(x, gamma, epsilon)
    y = (x.float() * rstd * gamma.float()).to(x1.dtype)
    return y, rstd, x.to(x1.dtype)


def npu_gemma_rms_norm(self, gamma, epsilon=1e-06):
    # Documented (torch_npu npu_gemma_rms_norm, CANN GemmaRmsNorm): RmsNorm with gamma + 1:
    # y = x / RMS(x) * (1 + gamma); rstd = 1 / RMS(x), float32 (as CANN documents it), shaped like
    # x with gamma's dimensions 1.
    rstd = _rstd(self, gamma, epsilon)
    y = (self.float() * rstd * (1 + gamma.float())).to(self.dtype)
    return y, rstd


def npu_add_rms_norm_cast(x1, x2, gamma, epsilon=1e-06):
    # Documented (torch_npu npu_add_rms_norm_cast): npu_add_rms_norm fused with a cast of its
    # output: (y1, y2, rstd, x), y2 the normalized output in x1's dtype, y1 that output cast to
    # float32; rstd float32 with gamma's dimensions 1, x = x1 + x2 (x1's dtype).
    y, rstd, x = npu_add_rms_norm(x1, x2, gamma, epsilon)
    return y.to(torch.float32), y, rstd, x


def _group_norm(input, weight, bias, group, eps):
    """Group norm of `input` over `group` groups of dim 1 (float32), with its (N, group) mean and rstd."""
    if input.dim() < 2:
        raise ValueError("the group norm takes an input of 2 or more dimensions")
    n, c = input.shape[0], input.shape[1]
    if group <= 0 or c % group:
        raise ValueError(f"dimension 1 ({c}) must be divisible by the number of groups ({group})")
    grouped = input.float().reshape(n, group, -1)
    mean = grouped.mean(dim=-1)
    rstd = torch.rsqrt(grouped.var(dim=-1, unbiased=False) + eps)
    normed = ((grouped - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(input.shape)
    channel = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        normed = normed * weight.float().reshape(channel)
    if bias is not None:
        normed = normed + bias.float().reshape(channel)
    return normed, mean, rstd


def npu_group_norm_silu(input, weight, bias, group, eps=0.00001):
    # Documented: GroupNorm (population variance over each of the `group` groups of dim 1 and the
    # dimensions after it) scaled by weight and shifted by bias per channel, then SiLU; meanOut and
    # rstdOut have shape (N, group); out, meanOut and rstdOut have input's dtype.
    normed, mean, rstd = _group_norm(input, weight, bias, group, eps)
    return F.silu(normed).to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)


def npu_group_norm_swish(input, num_groups, weight, bias, eps=1e-05, swish_scale=1.0):
    # Documented (op-plugin npu_group_norm_swish): y = (x - E[x]) / sqrt(Var[x] + eps) * weight +
    # bias over num_groups groups of dim 1 (population variance), then swish y / (1 + e^(-scale y));
    # mean and rstd are (N, num_groups); all three have input's dtype.
    eps = 1e-05 if eps is None else eps
    swish_scale = 1.0 if swish_scale is None else swish_scale
    normed, mean, rstd = _group_norm(input, weight, bias, num_groups, eps)
    out = normed * torch.sigmoid(swish_scale * normed)
    return out.to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)


# ---------------------------------------------------------------------------------- softmax and losses

_MASKED = -10000.0


def npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    # Documented: softmax over the last dimension of x scaled by `scale` and masked by the bool
    # mask (broadcast to x), x's dtype.  True marks a masked position: CANN's
    # ScaledMaskedSoftmaxGrad documents the gradient as 0 where mask is 1, and Ascend's accuracy
    # checker fills those positions with -10000 before the softmax (so a row masked throughout is
    # uniform, not NaN).  fixed_triu_mask is documented as reserved: only False works.
    if fixed_triu_mask:
        raise ValueError("npu_scaled_masked_softmax: fixed_triu_mask is a reserved parameter; only False is supported")
    scores = (x.float() * scale).masked_fill(mask.bool(), _MASKED)
    return torch.softmax(scores, dim=-1).to(x.dtype)


def npu_softmax_cross_entropy_with_logits(features, labels):
    # Documented: loss = -sum_i labels_i * log(softmax(features)_i) along the last dimension; the
    # example's features of shape [1, 48] give one loss, of shape [1].
    if features.shape != labels.shape:
        raise ValueError(f"labels {tuple(labels.shape)} must have the shape of features {tuple(features.shape)}")
    return -(labels * torch.log_softmax(features, dim=-1)).sum(dim=-1)


def npu_cross_entropy_loss(input, target, weight=None, reduction="mean", ignore_index=-100, label_smoothing=0.0,
                           lse_square_scale_for_zloss=0.0, return_zloss=False):
    # Documented (op-plugin npu_cross_entropy_loss): log_softmax and nll_loss fused; input [N, C],
    # target [N] in [0, C); l_n = -weight[y_n] * log_prob[n, y_n], 0 where y_n is ignore_index (a
    # negative ignore_index ignores nothing); "mean" divides sum(l) by the sum of weight[y_n] over
    # the rows not ignored, "sum" sums, both to shape [1]; "none" keeps [N].  log_prob [N, C] has
    # input's dtype.  zloss and its lse are documented as not yet supported (empty tensors), and
    # the documented formula has no label smoothing: only 0.0 is imitated.
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")
    if lse_square_scale_for_zloss != 0.0 or return_zloss:
        raise NotImplementedError("npu_cross_entropy_loss: torch_npu documents zloss as not yet supported")
    if label_smoothing != 0.0:
        raise NotImplementedError("npu_cross_entropy_loss: torch_npu's formula has no label smoothing, so the "
                                  "stand-in computes only label_smoothing=0.0")
    if input.dim() != 2 or target.shape != input.shape[:1]:
        raise ValueError(f"input must be [N, C] and target [N], not {tuple(input.shape)} and {tuple(target.shape)}")
    classes = input.shape[1]
    target = target.long()
    kept = target != ignore_index if ignore_index >= 0 else torch.ones_like(target, dtype=torch.bool)
    if bool(((target[kept] < 0) | (target[kept] >= classes)).any()):
        raise ValueError(f"target values must lie in [0, {classes})")
    safe = torch.where(kept, target, torch.zeros_like(target))
    log_prob = torch.log_softmax(input.float(), dim=-1)
    w = torch.ones(classes) if weight is None else weight.float()
    w = w.to(input.device)[safe] * kept
    losses = -w * log_prob.gather(1, safe.unsqueeze(1)).squeeze(1)
    if reduction == "none":
        loss = losses
    elif reduction == "sum":
        loss = losses.sum().reshape(1)
    else:
        loss = (losses.sum() / w.sum()).reshape(1)
    return loss.to(input.dtype), log_prob.to(input.dtype), input.new_empty(0), input.new_empty(0)


def npu_fused_cross_entropy_loss_with_max_sum(logits_max, sum_exp_logits, predicted_logits, *, label_smoothing=0.0,
                                              input=None, weight=None, vocab_parallel_logits=None):
    # Documented (op-plugin npu_fused_cross_entropy_loss_with_max_sum): the last step of the
    # vocabulary-parallel cross entropy, after the all-reduce of the row maxima and sums:
    # loss = log(sum_exp_logits) - predicted_logits, and, given vocab_parallel_logits,
    # softmax = exp(vocab_parallel_logits - logits_max[:, None]) / sum_exp_logits[:, None]
    # (float32, else an empty tensor).  label_smoothing 0.0, input and weight None are the only
    # documented values.
    if label_smoothing != 0.0:
        raise ValueError("npu_fused_cross_entropy_loss_with_max_sum supports label_smoothing=0.0 only")
    if input is not None or weight is not None:
        raise ValueError("npu_fused_cross_entropy_loss_with_max_sum supports input=None and weight=None only")
    if not logits_max.shape == sum_exp_logits.shape == predicted_logits.shape:
        raise ValueError("logits_max, sum_exp_logits and predicted_logits must have one shape")
    total = sum_exp_logits.float()
    loss = torch.log(total) - predicted_logits.float()
    if vocab_parallel_logits is None:
        return loss, loss.new_empty(0)
    softmax = torch.exp(vocab_parallel_logits.float() - logits_max.float().unsqueeze(-1)) / total.unsqueeze(-1)
    return loss, softmax


# ------------------------------------------------------------------------------ reductions and sorting

_MaxMin = collections.namedtuple("MaxMin", ("values", "indices"))


def npu_max(self, dim, keepdim=False):
    # Documented: like torch.max(self, dim, keepdim) -> (values, indices); the example's indices
    # are int32.
    values, indices = torch.max(self, dim, keepdim)
    return _MaxMin(values, indices.to(torch.int32))


def npu_min(self, dim, keepdim=False):
    # Documented: like torch.min(self, dim, keepdim) -> (values, indices); indices int32.
    values, indices = torch.min(self, dim, keepdim)
    return _MaxMin(values, indices.to(torch.int32))


def npu_sort_v2(self, dim=-1, descending=False, out=None):
    # Documented: the values sorted along dim (ascending unless descending), without indices; only
    # the last dimension is supported.
    if self.dim() and dim not in (-1, self.dim() - 1):
        raise ValueError(f"npu_sort_v2 sorts along the last dimension only (dim=-1), not dim={dim}")
    values = torch.sort(self, dim=-1, descending=descending).values
    if out is not None:
        return out.resize_(values.shape).copy_(values)
    return values


# ------------------------------------------------------------------------------------ matrix products

def npu_linear(input, weight, bias=None):
    # Documented example: input (2, 16), weight (4, 16), bias (4,) -> (2, 4): input @ weight^T + bias.
    return F.linear(input, weight, bias)


def npu_bmmV2(self, mat2, output_sizes=()):
    # Documented: 1-D operands extended and batch dimensions broadcast, then a batched matmul, i.e.
    # torch.matmul; output_sizes only serves the NPU's backward pass.
    return torch.matmul(self, mat2)


# ---------------------------------------------------------------------------- layout, shape and dtype

_FORMAT_ATTR = "_standin_npu_format"
_NCHW, _ND, _NCDHW = 0, 2, 30  # torch_npu.Format values (the documentation's table)


def get_npu_format(self):
    # Documented by the format examples: a new 4-D NPU tensor reports 0 (NCHW); a cast tensor
    # reports the format it was cast to.  torch_npu gives a new tensor the base format of its rank:
    # NCDHW for 5 dimensions, NCHW for 4, ND (2) for the others.
    recorded = getattr(self, _FORMAT_ATTR, None)
    if recorded is not None:
        return recorded
    return {4: _NCHW, 5: _NCDHW}.get(self.dim(), _ND)


def _format_of(target):
    if isinstance(target, torch.Tensor):
        return get_npu_format(target)
    return int(target)  # an int or a torch_npu.Format


def npu_format_cast(self, acl_format, customize_dtype=None):
    # Documented: changes the NPU tensor's storage format (acl_format an int or a tensor whose format
    # to take).  Formats are NPU-internal layouts: the values stay, so the CPU result is the tensor
    # itself when it has that format already, else a same-valued copy reporting the new format.
    fmt = _format_of(acl_format)
    if get_npu_format(self) == fmt:
        return self
    result = self.clone()
    setattr(result, _FORMAT_ATTR, fmt)
    return result


def npu_format_cast_(self, src, customize_dtype=None):
    # Documented: changes self's format in place to src's (a tensor's format, an int or a
    # torch_npu.Format) and returns self; the values stay.
    setattr(self, _FORMAT_ATTR, _format_of(src))
    return self


def npu_dtype_cast(input, dtype):
    # Documented: returns the tensor converted to dtype (example: [0, 0.5, -1.] to int -> [0, 0, -1]).
    return input.to(dtype, copy=True)


def npu_confusion_transpose(self, perm, shape, transpose_first):
    # Documented: reshape and transpose fused; transpose_first True permutes by perm first, then
    # reshapes to shape; False reshapes first.  Example: (2, 3, 4, 6), perm (0, 2, 1, 3), shape
    # (2, 4, 18), True -> (2, 4, 18); perm (0, 2, 1), shape (2, 12, 6), False -> (2, 6, 12).
    if transpose_first:
        return self.permute(*perm).reshape(*shape).contiguous()
    return self.reshape(*shape).permute(*perm).contiguous()


def npu_transpose(self, perm, require_contiguous=True):
    # Documented: self with its dimensions permuted by perm, the result contiguous.
    return self.permute(*perm).contiguous()


def npu_broadcast(self, size):
    # Documented: self with its size-1 dimensions expanded to size (new dimensions in front), the
    # result contiguous.
    return self.expand(*size).contiguous()


def npu_reshape(self, shape, can_refresh=False):
    # Documented: changes the shape only, the data stay.
    return self.reshape(*shape).clone()


def npu_pad(input, paddings):
    # Documented example: [[20, 20, 10, 10]] padded with [1, 1, 1, 1] -> 3 x 6 with zeros around.
    # The Pad operator it runs takes a (before, after) pair per dimension, from dimension 0 on;
    # dimensions without a pair are not padded.
    paddings = list(paddings)
    if len(paddings) > 2 * input.dim():
        raise ValueError(f"{len(paddings)} paddings for a {input.dim()}-dimensional input")
    paddings += [0] * (2 * input.dim() - len(paddings))
    reversed_pairs = []
    for d in reversed(range(input.dim())):
        reversed_pairs += [paddings[2 * d], paddings[2 * d + 1]]
    return F.pad(input, reversed_pairs, mode="constant", value=0)


def npu_slice(self, offsets, size):
    # Documented example: [[1..5], [6..10]] with offsets [0, 0], size [2, 2] -> [[1, 2], [6, 7]]:
    # size[d] elements from offsets[d] in each dimension d.
    if len(offsets) != self.dim() or len(size) != self.dim():
        raise ValueError(f"npu_slice takes one offset and one size per dimension ({self.dim()})")
    result = self
    for d, (start, length) in enumerate(zip(offsets, size)):
        if start < 0 or length < 0 or start + length > self.shape[d]:
            raise ValueError(f"slice [{start}, {start + length}) is outside dimension {d} of size {self.shape[d]}")
        result = result.narrow(d, start, length)
    return result.clone()


def npu_one_hot(input, num_classes=-1, depth=1, on_value=1, off_value=0):
    # Documented: a one-hot tensor with on_value where the class is, off_value elsewhere; example:
    # IntTensor [5, 3, 2, 1], depth=5 -> float rows, the class 5 (outside depth) a row of zeros.
    # num_classes is the axis that takes the depth; only the last (-1) is imitated.
    if num_classes not in (-1, input.dim()):
        raise NotImplementedError("npu_one_hot: the stand-in puts the depth axis last only (num_classes=-1)")
    classes = torch.arange(depth, device=input.device)
    hit = input.long().unsqueeze(-1) == classes
    on = torch.tensor(on_value, dtype=torch.float32, device=input.device)
    off = torch.tensor(off_value, dtype=torch.float32, device=input.device)
    return torch.where(hit, on, off)


def npu_masked_fill_range(self, start, end, value, axis=-1):
    # Documented example: a 4 x 4 self, start [[0, 1, 2]], end [[1, 2, 3]], value [1.], axis 1 fills
    # row n from start[0, n] to end[0, n] (exclusive) with value[0]: start/end are (num, N) - num
    # ranges, one per row n - and value holds one fill value per range.  The documentation leaves
    # the 1-D and 3-D cases and the other axes unclear: only a 2-D self and its last axis here.
    if self.dim() != 2 or axis not in (-1, 1):
        raise NotImplementedError("npu_masked_fill_range: the stand-in fills along the last axis of a 2-D tensor only")
    if start.dim() != 2 or start.shape != end.shape:
        raise ValueError("start and end must be 2-D tensors of one shape (num, N)")
    if value.shape[0] != start.shape[0]:
        raise ValueError("value must hold one fill value per range (start.shape[0])")
    rows = start.shape[1]
    if rows > self.shape[0]:
        raise ValueError(f"{rows} rows of ranges for a tensor of {self.shape[0]} rows")
    columns = torch.arange(self.shape[1], device=self.device)
    result = self.clone()
    for k in range(start.shape[0]):
        inside = (columns >= start[k].unsqueeze(1)) & (columns < end[k].unsqueeze(1))
        mask = torch.zeros(self.shape, dtype=torch.bool, device=self.device)
        mask[:rows] = inside
        result = result.masked_fill(mask, value[k].to(self.dtype))
    return result


# ------------------------------------------------------------------------ position encoding and anchors

_ROPE_LAYOUTS = ("BSND", "SBND", "BNSD", "TND", "BSH")


def npu_apply_rotary_pos_emb(query, key, cos, sin, layout="BSND", rotary_mode="half"):
    # Documented (torch_npu npu_apply_rotary_pos_emb, CANN ApplyRotaryPosEmb): query and key are
    # updated in place to x * cos + rotate(x) * sin and returned; cos/sin are given in the layout of
    # query (N = 1, broadcast over the heads), so the layout only names the dimensions.
    if layout not in _ROPE_LAYOUTS:
        raise ValueError(f"layout must be one of {_ROPE_LAYOUTS}, not {layout!r}")
    divisor = 4 if rotary_mode == "quarter" else 2
    if query.shape[-1] % divisor or key.shape[-1] % divisor:
        raise ValueError(f"the last dimension must be divisible by {divisor} for rotary_mode {rotary_mode!r}")
    rotated_query = query * cos + _rotate(query, rotary_mode) * sin
    rotated_key = key * cos + _rotate(key, rotary_mode) * sin
    query.copy_(rotated_query)
    key.copy_(rotated_key)
    return query, key


def npu_anchor_response_flags(self, featmap_size, stride, num_base_anchors):
    # Documented by its equivalent computation: the centre of each ground-truth box [x1, y1, x2, y2]
    # falls in grid cell (floor(cx / stride[0]), floor(cy / stride[1])), clamped to the feature map;
    # that cell's flag is 1, and every cell's flag repeats for its num_base_anchors anchors (uint8).
    feat_h, feat_w = featmap_size
    centre_x = (self[:, 0] + self[:, 2]) * 0.5
    centre_y = (self[:, 1] + self[:, 3]) * 0.5
    grid_x = torch.floor(centre_x / stride[0]).long().clamp(0, feat_w - 1)
    grid_y = torch.floor(centre_y / stride[1]).long().clamp(0, feat_h - 1)
    flags = torch.zeros(feat_h * feat_w, dtype=torch.uint8, device=self.device)
    flags[grid_y * feat_w + grid_x] = 1
    return flags.repeat_interleave(num_base_anchors)



def npu_interleave_rope(x, cos, sin):
    # Documented (op-plugin npu_interleave_rope): q = x (B, N, S, D) reshaped to [..., D/2, 2],
    # its last two dimensions swapped and reshaped back (each row's even elements, then its odd
    # ones); q_embed = q * cos + RotateHalf(q) * sin, RotateHalf(q) = cat(-q[D/2:], q[:D/2]);
    # cos and sin are (B, 1, S or 1, D); the result has x's shape and dtype.
    if x.dim() != 4 or x.shape[-1] % 2:
        raise ValueError(f"x must be (B, N, S, D) with an even D, not {tuple(x.shape)}")
    if cos.shape != sin.shape:
        raise ValueError("cos and sin must have one shape")
    d = x.shape[-1]
    q = x.float().reshape(*x.shape[:-1], d // 2, 2).transpose(-1, -2).reshape(x.shape)
    return (q * cos.float() + _rotate(q, "half") * sin.float()).to(x.dtype)


# --------------------------------------------------------- matrix products (continued), sequence mixing

def npu_transpose_batchmatmul(input, weight, *, bias=None, scale=None, perm_x1=None, perm_x2=None, perm_y=None,
                              batch_split_factor=1):
    # Documented (op-plugin npu_transpose_batchmatmul): Y = (input^T1 @ weight^T2 + bias)^Ty, the
    # T's the permutations perm_x1 ([0, 1, 2] or [1, 0, 2], so that input is [B, M, K]), perm_x2
    # (only [0, 1, 2]: weight [B, K, N]) and perm_y (only [1, 0, 2]: Y [M, B, N]); dimension 0 is
    # the batch.  bias is documented as not supported yet; with scale the output is the NPU's int8
    # quantization, and for batch_split_factor > 1 only the output's shape is documented: neither
    # is imitated.
    perm_x1 = [0, 1, 2] if perm_x1 is None else list(perm_x1)
    perm_x2 = [0, 1, 2] if perm_x2 is None else list(perm_x2)
    perm_y = [1, 0, 2] if perm_y is None else list(perm_y)
    if perm_x1 not in ([0, 1, 2], [1, 0, 2]) or perm_x2 != [0, 1, 2] or perm_y != [1, 0, 2]:
        raise ValueError("npu_transpose_batchmatmul supports perm_x1 [0, 1, 2] or [1, 0, 2], perm_x2 [0, 1, 2] "
                         "and perm_y [1, 0, 2]")
    if bias is not None:
        raise ValueError("npu_transpose_batchmatmul: torch_npu documents bias as not supported yet")
    if scale is not None:
        raise NotImplementedError("npu_transpose_batchmatmul: with scale the output is the NPU's int8 quantization, "
                                  "whose rounding the stand-in does not reproduce")
    if batch_split_factor not in (None, 1):
        raise NotImplementedError("npu_transpose_batchmatmul: torch_npu documents only the output's shape for "
                                  "batch_split_factor > 1, not where each element goes")
    if input.dim() != 3 or weight.dim() != 3:
        raise ValueError("npu_transpose_batchmatmul takes 3-D input and weight")
    x1, x2 = input.permute(*perm_x1), weight.permute(*perm_x2)
    if x1.shape[0] != x2.shape[0] or x1.shape[2] != x2.shape[1]:
        raise ValueError(f"[B, M, K] {tuple(x1.shape)} and [B, K, N] {tuple(x2.shape)} do not match")
    return torch.bmm(x1.float(), x2.float()).permute(*perm_y).contiguous().to(input.dtype)


def npu_masked_causal_conv1d(input, weight, *, mask=None):
    # Documented (op-plugin npu_masked_causal_conv1d): input [S, B, H] is padded with W - 1 zeros
    # before the sequence, then convolved per channel: out[s, b, h] = sum_k weight[k, h] *
    # input[s - (W - 1 - k), b, h] (weight [W, H]); where the bool mask [B, S] is False, out[s, b, :]
    # is 0.  The result has input's shape and dtype.
    if input.dim() != 3 or weight.dim() != 2 or weight.shape[1] != input.shape[2]:
        raise ValueError(f"input must be [S, B, H] and weight [W, H], not {tuple(input.shape)} and "
                         f"{tuple(weight.shape)}")
    window, length = weight.shape[0], input.shape[0]
    padded = F.pad(input.float(), (0, 0, 0, 0, window - 1, 0))
    out = sum(weight[k].float() * padded[k:k + length] for k in range(window))
    if mask is not None:
        if tuple(mask.shape) != (input.shape[1], length):
            raise ValueError(f"mask must be [B, S] = {(input.shape[1], length)}, not {tuple(mask.shape)}")
        out = out * mask.bool().t().unsqueeze(-1)
    return out.to(input.dtype)


def npu_mhc_post(x, h_res, h_out, h_post):
    # Documented (op-plugin npu_mhc_post): x_{l+1} = H_res x_l + h_out (outer) H_post per token:
    # x [B, S, n, D] or [T, n, D], h_res [.., n, n] (the matrix product over n), h_out [.., D],
    # h_post [.., n]; without h_res, x_l + h_out (outer) H_post.  The result has x's shape and dtype.
    if h_out.shape[:-1] != x.shape[:-2] or h_out.shape[-1] != x.shape[-1] or h_post.shape != x.shape[:-1]:
        raise ValueError(f"h_out must be {tuple(x.shape[:-2]) + (x.shape[-1],)} and h_post {tuple(x.shape[:-1])}")
    mixed = x.float() if h_res is None else torch.matmul(h_res.float(), x.float())
    return (mixed + h_post.float().unsqueeze(-1) * h_out.float().unsqueeze(-2)).to(x.dtype)


# ----------------------------------------------------------------------- indexing, scattering, filling

def npu_indexing(self, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                 shrink_axis_mask=0):
    # Documented (torch_npu npu_indexing, the StridedSlice operator): begin/end/strides per
    # position; bit i of begin_mask (end_mask) ignores begin[i] (end[i]) for the widest range, of
    # ellipsis_mask makes position i an ellipsis, of new_axis_mask inserts a dimension of size 1,
    # of shrink_axis_mask takes the single index begin[i] and drops the dimension.  Example:
    # [[1, 2, 3, 4], [5, 6, 7, 8]] with [0, 0], [2, 2], [1, 1] -> [[1, 2], [5, 6]].
    if not len(begin) == len(end) == len(strides):
        raise ValueError("begin, end and strides must have one length")
    if any(step == 0 for step in strides):
        raise ValueError("strides must not be 0")
    if bin(ellipsis_mask).count("1") > 1:
        raise ValueError("ellipsis_mask may mark one position only")
    spec = []
    for i, (start, stop, step) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if ellipsis_mask & bit:
            spec.append(Ellipsis)
        elif new_axis_mask & bit:
            spec.append(None)
        elif shrink_axis_mask & bit:
            spec.append(int(start))
        else:
            spec.append(slice(None if begin_mask & bit else start, None if end_mask & bit else stop, step))
    if not any(item is Ellipsis for item in spec):
        spec.append(Ellipsis)  # the dimensions left over are taken whole
    used = sum(1 for item in spec if item is not None and item is not Ellipsis)
    if used > self.dim():
        raise ValueError(f"{used} positions index a {self.dim()}-dimensional tensor")
    at = next(i for i, item in enumerate(spec) if item is Ellipsis)
    spec[at:at + 1] = [slice(None)] * (self.dim() - used)
    result, d = self, 0
    for item in spec:
        if item is None:
            result = result.unsqueeze(d)
            d += 1
        elif isinstance(item, int):
            size = result.shape[d]
            if not -size <= item < size:
                raise IndexError(f"index {item} is outside dimension {d} of size {size}")
            result = result.select(d, item)
        else:
            picks = torch.tensor(range(*item.indices(result.shape[d])), dtype=torch.long, device=self.device)
            result = result.index_select(d, picks)
            d += 1
    return result.clone()


def npu_gather_sparse_index(input, index):
    # Documented (op-plugin npu_gather_sparse_index): the rows input[index[...]] of dimension 0,
    # indices in [0, input.shape[0] - 1] (no negative ones); out is index.shape + input.shape[1:]
    # (input [16, 32], index [2, 3] -> [2, 3, 32]), of input's dtype.
    index = index.long()
    if index.numel() and (int(index.min()) < 0 or int(index.max()) >= input.shape[0]):
        raise IndexError(f"index values must lie in [0, {input.shape[0] - 1}]")
    return input[index]


def npu_scatter(self, indices, updates, dim):
    # Documented (torch_npu npu_scatter): like torch.scatter; the example writes updates [u0, u1]
    # into a 2 x 2 self along dim 0 at indices [0, 1]: out[indices[j], j] = updates[j], so indices
    # (and updates, of its shape) have self's dimensions without dim; empty indices give self
    # unchanged.  Only that documented form is imitated.
    result = self.clone()
    if indices.numel() == 0:
        return result
    dim = dim % self.dim()
    if indices.shape != updates.shape:
        raise ValueError("indices and updates must have one shape")
    if indices.dim() != self.dim() - 1:
        raise NotImplementedError(f"npu_scatter: the stand-in takes the documented indices of {self.dim() - 1} "
                                  f"dimensions (self's without dim), not {indices.dim()}")
    return result.scatter_(dim, indices.long().unsqueeze(dim), updates.unsqueeze(dim).to(self.dtype))


def _scatter_nd(target, indices, updates):
    """target[indices[p]] = updates[p] for every p of indices.shape[:-1], in place."""
    depth = indices.shape[-1] if indices.dim() else 0
    if indices.dim() < 2 or depth > target.dim():
        raise ValueError("indices must have 2 or more dimensions, its last no larger than the input's rank")
    expected = tuple(indices.shape[:-1]) + tuple(target.shape[depth:])
    if tuple(updates.shape) != expected:
        raise ValueError(f"updates must have the shape {expected}, not {tuple(updates.shape)}")
    points = indices.long().reshape(-1, depth)
    target[tuple(points.t())] = updates.reshape(-1, *target.shape[depth:]).to(target.dtype)
    return target


def npu_scatter_nd_update(self, indices, updates):
    # Documented (torch_npu npu_scatter_nd_update): updates written into a copy of self at indices:
    # indices' last dimension a (<= self.dim()) indexes self's first a dimensions, and updates is
    # indices.shape[:-1] + self.shape[a:] (self (4, 5, 6), indices (3, 2) -> updates (3, 6)).
    return _scatter_nd(self.clone(), indices, updates)


def npu_scatter_nd_update_(self, indices, updates):
    # Documented: npu_scatter_nd_update into self itself (Tensor(a!) self -> Tensor(a!)).
    return _scatter_nd(self, indices, updates)


def one_(self):
    # Documented (torch_npu one_): fills self with 1 (the example: a 2 x 3 rand tensor becomes
    # ones); the schema is in place (Tensor(a!) self -> Tensor(a!)).
    return self.fill_(1)


def npu_sign_bits_pack(self, size):
    # Documented (torch_npu npu_sign_bits_pack, 1-bit Adam): the 1-D float self is padded with -1.0
    # to a multiple of 8; each element's sign bit (1 for x >= 0) goes, little-endian, into the
    # uint8 output reshaped to [size, -1].  Example: [5, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2]
    # with size 2 -> [[159], [15]] (159 = 0b10011111: elements 0-4 and 7 are >= 0).
    if self.dim() != 1:
        raise ValueError("npu_sign_bits_pack takes a 1-D tensor")
    padded = F.pad(self.float(), (0, -self.numel() % 8), value=-1.0)
    bits = (padded >= 0).to(torch.uint8).reshape(-1, 8)
    packed = (bits << torch.arange(8, dtype=torch.uint8, device=self.device)).sum(dim=1, dtype=torch.uint8)
    if size <= 0 or packed.numel() % size:
        raise ValueError(f"the {packed.numel()} packed bytes do not divide into {size} rows")
    return packed.reshape(size, -1)



def npu_sign_bits_unpack(input, size, dtype):
    # Documented (torch_npu npu_sign_bits_unpack): each byte of the 1-D uint8 input gives 8 elements,
    # bit i (little-endian) as element 8k + i, 1 -> 1.0 and 0 -> -1.0, reshaped to [size, -1].
    # Example: [159, 15], size 2, float32 -> [[1, 1, 1, 1, 1, -1, -1, 1], [1, 1, 1, 1, -1, -1, -1, -1]].
    # dtype is float16 or float32 (the schema's ScalarType; the text's "1" and "0" name these two).
    if input.dim() != 1 or input.dtype != torch.uint8:
        raise ValueError("npu_sign_bits_unpack takes a 1-D uint8 tensor")
    if dtype not in (torch.float16, torch.float32):
        raise ValueError(f"dtype must be torch.float16 or torch.float32, not {dtype!r}")
    bits = (input.unsqueeze(1) >> torch.arange(8, dtype=torch.uint8, device=input.device)) & 1
    values = bits.reshape(-1).to(dtype) * 2 - 1
    if size <= 0 or values.numel() % size:
        raise ValueError(f"the {values.numel()} unpacked values do not divide into {size} rows")
    return values.reshape(size, -1)
