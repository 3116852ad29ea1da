"""What a grouped-norm kernel receives from ``normcheck.check(fn, op="grouped_norm")``: one call of
the grouped suite (batch, group, instance, layer, channel-layer or RMS norm on a tensor in one
memory layout), as the serve protocol's ``grouped_norm`` request describes it (docs/plugins.md)."""


class GroupedCall:
    """One grouped-norm call. Tensors are in the framework's dtype and in memory order (``shape``,
    ``axes`` name the axes: ``N``, ``C``, ``H``, ``W``, ``L``, ...); ``channel_axis`` is the channel's
    position in that order. Attributes: ``dtype`` (``f16``, ``bf16``, ``f32``, ``f64``: with NumPy,
    bf16 values arrive as float32 arrays and must come back as bf16 values), ``kind`` (``batch_norm``, ``group_norm``, ``instance_norm``,
    ``layer_norm``, ``channel_layer_norm``, ``rms_norm``), ``layout``, ``shape``, ``axes``,
    ``channel_axis``, ``groups``, ``normalized_dims`` (layer norm, RMSNorm: the trailing axes),
    ``eps``, ``momentum``, and the inputs ``x``, ``dy``, ``gamma``, ``beta`` (None for RMSNorm),
    ``running_mean``, ``running_var`` (batch norm only, else None).

    The kernel returns a dict with ``y``, ``dx``, ``dgamma``, ``dbeta`` (not for RMSNorm; shaped like
    gamma), and for batch norm ``running_mean``, ``running_var`` (the updated statistics, unbiased
    variance) and ``y_inference`` (inference mode from the statistics before the update); tensors
    shaped like the inputs, in the same dtype. Training statistics use the biased variance. Return
    None to decline a kind the kernel does not implement (the call is skipped, not failed)."""

    def __init__(self, manifest, tensors, framework, dtype=None):
        self.dtype = dtype
        self.kind = manifest["kind"]
        self.layout = manifest["layout"]
        self.shape = tuple(manifest["shape"])
        self.axes = tuple(manifest["axes"])
        self.channel_axis = int(manifest["channel_axis"])
        self.groups = int(manifest["groups"])
        self.normalized_dims = int(manifest["normalized_dims"])
        self.eps = float.fromhex(manifest["eps_hex"])
        self.momentum = float.fromhex(manifest["momentum_hex"])
        self._framework = framework
        for name in ("x", "dy", "gamma", "beta", "running_mean", "running_var"):
            setattr(self, name, tensors.get(name))

    def channels_first(self, t):
        """``t`` (memory order) with the channel axis moved to position 1: (N, C, ...), as
        torch.nn.functional's batch_norm, group_norm and instance_norm take it."""
        return self._framework.move_axis(t, self.channel_axis, 1)

    def from_channels_first(self, t):
        """The inverse of ``channels_first``: back to memory order, contiguous."""
        return self._framework.move_axis(t, 1, self.channel_axis)

    def __repr__(self):
        return f"<GroupedCall {self.kind} {self.layout} {self.shape} axes={''.join(self.axes)} eps={self.eps!r}>"
