"""torch_npu's operators (torch_npu.npu_* and fast_gelu), computed on the CPU from their documented
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

Softmax and losses
  npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False) -> softmax over the last
    dimension of x * scale, where mask is True filled with -10000; x's dtype.  Only
    fixed_triu_mask=False is supported (documented as a reserved parameter).
  npu_softmax_cross_entropy_with_logits(features, labels) -> -sum(labels * log_softmax(features))
    over the last dimension (one loss per row).

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
"""
import collections

import torch
import torch.nn.functional as F

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


def npu_group_norm_silu(input, weight, bias, group, eps=0.00001):
    # Documented: GroupNorm (population variance over each of the `group` groups of dim 1 and the
    # dimensions after it) scaled by weight and shifted by bias per channel, then SiLU; meanOut and
    # rstdOut have shape (N, group); out, meanOut and rstdOut have input's dtype.
    if input.dim() < 2:
        raise ValueError("npu_group_norm_silu takes an input of 2 or more dimensions")
    n, c = input.shape[0], input.shape[1]
    if group <= 0 or c % group:
        raise ValueError(f"dimension 1 ({c}) must be divisible by group ({group})")
    grouped = input.float().reshape(n, group, -1)
    mean = grouped.mean(dim=-1)
    rstd = torch.rsqrt(grouped.var(dim=-1, unbiased=False) + eps)
    normed = ((grouped - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(input.shape)
    channel = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        normed = normed * weight.float().reshape(channel)
    if bias is not None:
        normed = normed + bias.float().reshape(channel)
    return F.silu(normed).to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)


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


def _rotate(x, rotary_mode):
    if rotary_mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    if rotary_mode == "quarter":
        x1, x2, x3, x4 = x.chunk(4, dim=-1)
        return torch.cat((-x2, x1, -x4, x3), dim=-1)
    if rotary_mode == "interleave":
        even, odd = x[..., ::2], x[..., 1::2]
        return torch.stack((-odd, even), dim=-1).reshape(x.shape)
    raise ValueError(f"rotary_mode must be 'half', 'quarter' or 'interleave', not {rotary_mode!r}")


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

