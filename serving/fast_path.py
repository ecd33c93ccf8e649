"""What a task's fast path is: raw text -> id arrays -> answers, in Python and NumPy, around
a model that takes ids (`model.tflite`, or the SavedModel's `serving_ids`).

Pipeline position: inside `serving.load` (`serving.predictor`). Each task with one
subclasses `FastPath` in its folder (`tasks/<task>/fast_path.py`, named in its registry
entry) and answers as its SavedModel's raw-text signature (`serving_default`) does, with
the tokenizer of `text.fast_tokenizer` and the packing of `text.packing`. These modules
import neither TensorFlow nor Keras: a serving process without them runs them on LiteRT.
"""

from text import packing


class FastPath:
    """A task's answers from raw text around an ids model.

    Subclasses define `prepare(columns) -> (inputs, state)`: the request (a dict of
    lists by raw-text input name, every list one value per row) as the model's int32
    inputs, padded to `length(...)`, and whatever `answer` needs; and
    `answer(outputs, state) -> dict`: the model's outputs (a dict of arrays) as the
    answers of the raw-text signature (the same keys, shapes and dtypes).

    A model that computes every position it is given (TF Lite) runs a request's rows in
    groups of similar length (`serving.length_groups`) unless `group_by_length` is
    False: for a task whose answers read the outputs at padded positions.
    `sequence_outputs` names the model's outputs with a position axis (padded back with
    zeros past a group's length).

    Args:
        config: dict. The export's `serving.json`.
        tokenizer: a `text.fast_tokenizer.FastTokenizer` of its vocabulary.
        seq_multiple: int. Requests are padded to a multiple of this many positions.
    """

    group_by_length = True
    sequence_outputs = ()

    def __init__(self, config, tokenizer, seq_multiple=8):
        self.config = config
        self.tokenizer = tokenizer
        self.seq_multiple = seq_multiple
        self.max_seq_length = config["max_seq_length"]
        self.text_inputs = config["text_inputs"]
        vocab = tokenizer.vocab
        self.cls_id, self.sep_id, self.unk_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]

    def length(self, longest):
        """Positions of a request whose longest sequence has `longest`."""
        return packing.padded_length(longest, self.seq_multiple, self.max_seq_length)

    def pack(self, pairs):
        """(a, b) id lists that fit -> the model's inputs, padded for this request."""
        longest = max(len(a) + len(b) + (3 if b else 2) for a, b in pairs)
        return packing.pack_id_pairs(pairs, self.cls_id, self.sep_id, self.length(longest))

    def prepare(self, columns):
        raise NotImplementedError

    def answer(self, outputs, state):
        raise NotImplementedError
