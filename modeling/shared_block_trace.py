"""One traced function for every Transformer block of an encoder, in the training step.

Pipeline position: `BertEncoder`'s forward pass (`modeling.encoder._forward`) calls its
blocks through here while the training loop traces its step (`training.loop`, inside
`blocks_traced_once()`); exports, evaluation and eager calls call each block as a layer.

The blocks of an encoder are the same computation on other weights. Traced one by one,
each adds its ops to the step's graph (a MiniLM step: 4,700 ops, most of them six copies
of a block's forward and backward pass), and every op costs time three times before the
first step runs: its tracing, the step's conversion to a FunctionDef, and Grappler's
passes. Here the first block's `stateless_call` is a `tf.function` of the weights (and
the dropout layers' seed states, so each block draws the masks it drew before), traced
once; each block calls it with its own. Its gradient is traced once too, and the calls
are not inlined (`_noinline`), so Grappler optimises the block's function once, not six
copies. Measured on MiniLM (SST-2 batches, research/RESULTS-archive.md): the step's
trace 1.8 -> 1.2-1.3 s, its first call 2.7-3.2 -> 2.0 s, the same losses and steps.
"""

import contextlib
import threading
import weakref

import tensorflow as tf

_STATE = threading.local()
_FUNCTIONS = weakref.WeakKeyDictionary()  # the first block -> its traced function


@contextlib.contextmanager
def blocks_traced_once():
    """Within (this thread): an encoder's blocks traced in a training forward pass share
    one traced function (see the module docstring)."""
    previous = getattr(_STATE, "on", False)
    _STATE.on = True
    try:
        yield
    finally:
        _STATE.on = previous


def shared_block_call(blocks, training):
    """A function (block, x, mask_adder, token_index, dropout_seed) -> the block's output,
    computed by one traced function for every block of `blocks`; None where each block
    is called as a layer: outside `blocks_traced_once()`, not training, eagerly, or
    blocks that differ (configuration or dtype policy)."""
    if (not getattr(_STATE, "on", False) or training is not True or
            tf.executing_eagerly() or len(blocks) < 2):
        return None
    first = blocks[0]
    shape = _configuration(first)
    if any(type(b) is not type(first) or _configuration(b) != shape or not b.built
           for b in blocks):
        return None
    function = _FUNCTIONS.get(first)
    if function is None:
        function = _FUNCTIONS[first] = _traced_block(weakref.ref(first))

    def call(block, x, mask_adder, token_index, dropout_seed):
        trainable = [tf.convert_to_tensor(v) for v in block.trainable_variables]
        states = [tf.convert_to_tensor(v) for v in block.non_trainable_variables]
        out, new_states = function(trainable, states, x, mask_adder, token_index,
                                   dropout_seed)
        for variable, value in zip(block.non_trainable_variables, new_states):
            variable.assign(value)  # the seed generators move on as the layers' would
        return out
    return call


def _configuration(block):
    config = dict(block.get_config())
    config.pop("name", None)
    return config, block.dtype_policy.name


def _traced_block(first):
    @tf.function(autograph=False, experimental_attributes={"_noinline": True})
    def block(trainable, states, x, mask_adder, token_index, dropout_seed):
        return first().stateless_call(trainable, states, x, mask_adder, training=True,
                                      token_index=token_index, dropout_seed=dropout_seed)
    return block
