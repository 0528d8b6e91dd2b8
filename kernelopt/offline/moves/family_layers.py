"""The families read from a model's own layers (family.py's trace): a layer's operator found with its weights among the
model's parameters, by identity, so a template can take them by their state_dict names (a convolution, a
depthwise-separable pair, BatchNorm in training mode, GroupNorm, an affine LayerNorm)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

# family.py's Family, not imported here (family.py imports this module): each reader takes the family traced so far
# and returns it as read, or unchanged
Family = Any


def state_names(model: Any, *tensors: Any) -> tuple[str, ...] | None:
    """Each tensor's state_dict name among the model's own parameters and buffers, by identity ("" for
    None); None when one is not the model's."""
    names = {id(p): n for n, p in [*model.named_parameters(), *model.named_buffers()]}
    found = tuple("" if t is None else names.get(id(t)) for t in tensors)
    return None if None in found else found  # type: ignore[return-value]


def batch_norm(calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]], model: Any, family: Family) -> Family:
    """BatchNorm in training mode (its last call: input, weight, bias, running_mean, running_var,
    training, momentum, eps), its tensors a BatchNorm module's own, and before it nothing but that
    module counting the batch (num_batches_tracked.add_): the batch_norm family, with their
    state_dict names and the momentum the call used (None where the module averages: the traced
    call's is then a number)."""
    args = calls[-1][1]
    if len(args) < 8 or args[5] is not True:
        return family  # eval mode normalises with the running statistics: no template's work
    module = next((m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                   and (m.running_mean is args[3] if args[3] is not None else m.weight is args[1])), None)
    state = state_names(model, *args[1:5])
    if module is None or state is None:
        return family
    counts = [c for c in calls[:-1] if c[0] == "add_"]
    if any(c[1][0] is not module.num_batches_tracked for c in counts) or len(counts) > 1:
        return family  # an add_ of something else: work the template would drop
    batches = ""
    if module.num_batches_tracked is not None:
        batches = state_names(model, module.num_batches_tracked)[0]  # type: ignore[index]
    return replace(family, name="batch_norm", dim=1, eps=float(args[7]),
                     state=(*state, batches), momentum=None if module.momentum is None else float(args[6]))


def group_norm(args: tuple[Any, ...], model: Any, family: Family) -> Family:
    """GroupNorm (input, weight, bias, N, C, HxW, groups, eps): each (sample, group) a row of its
    channels' planes, with a weight and bias per channel (the model's own, or none); else the family."""
    if len(args) < 8 or not family.ndim or family.ndim < 2 or int(args[6]) < 1 or int(args[4]) % int(args[6]):
        return family
    state = state_names(model, args[1], args[2])
    if state is None:
        return family
    return replace(family, name="standardize", dim=1, eps=float(args[7]),
                     state=state if any(state) else (), groups=int(args[6]))


def affine_layer_norm(args: tuple[Any, ...], model: Any, family: Family) -> Family:
    """A LayerNorm with elementwise affine (its weight, and its bias or none, among the model's own
    parameters by identity): the standardize family with their state_dict names; else the family as it was."""
    if len(args) < 5 or not family.ndim or args[2] is None:
        return family
    state = state_names(model, args[2], args[3])
    if state is None:
        return family
    return replace(family, name="standardize", dim=family.ndim - len(args[1]),
                     eps=float(args[4]), state=state)


def convolution(args: tuple[Any, ...], model: Any, family: Family) -> Family:
    """A convolution alone (aten.convolution's weight and bias found among the model's own
    parameters, by identity), else the family as it was."""
    state = state_names(model, args[1], args[2])
    if state is None or not state[0]:
        return family
    return replace(family, name="conv", state=state, weight_shape=tuple(args[1].shape))


def separable_pair(depthwise: tuple[Any, ...], pointwise: tuple[Any, ...], model: Any, family: Family) -> Family:
    """A depthwise convolution, then a 1 x 1 convolution of its output (a depthwise-separable pair: both weights and
    biases the model's own), as family "separable"; else the family as it was."""
    first, second = tuple(depthwise[1].shape), tuple(pointwise[1].shape)
    channels, groups = family.shapes[0][1] if len(family.shapes[0]) > 1 else 0, depthwise[8]
    stride, padding, dilation, transposed, _, groups_1x1 = pointwise[3:9]
    if len(first) != 4 or depthwise[6] or groups != channels or first[1] != 1 or len(second) != 4 \
            or second[2:] != (1, 1) or second[1] != first[0] or transposed or groups_1x1 != 1 \
            or any(v != 1 for v in (*stride, *dilation)) or any(padding):
        return family
    state = state_names(model, depthwise[1], depthwise[2])
    state_1x1 = state_names(model, pointwise[1], pointwise[2])
    if state is None or state_1x1 is None or not state[0] or not state_1x1[0]:
        return family
    return replace(family, name="separable", state=state + state_1x1, weight_shape=first,
                     pointwise_shape=second)
