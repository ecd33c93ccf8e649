"""`BertConfig`: the model's hyper-parameters, read from and written to `bert_config.json`.

Pipeline position: read at the edges of every stage that builds a model (pre-training,
fine-tuning, feature extraction, export). Layers never see it: `encoder_kwargs()` turns it
into the encoder's constructor arguments in one place.

Matches the original `modeling.BertConfig` field for field (same names, same defaults,
`type_vocab_size` defaulting to 16 although the released configs use 2) and also reads a
Hugging Face BERT `config.json`. Unknown keys are kept and ignored, as the original does
(the Chinese and multilingual configs carry `pooler_*` and `directionality` keys).
"""

import copy
import json
import math

from common import file_io
from modeling.activations import SUPPORTED_ACTIVATIONS

# Token ids are int32, so no size may pass that; and a word-embedding table over 64 GiB
# is a typo in a config (the largest released BERT tables are under 1 GiB).
_LARGEST_SIZE = 2 ** 31 - 1
_LARGEST_TABLE_BYTES = 64 * 2 ** 30

# Field -> (default, type). `vocab_size` has no default, as in the original.
_REQUIRED = object()
_FIELDS = {
    "vocab_size": (_REQUIRED, int),
    "hidden_size": (768, int),
    "num_hidden_layers": (12, int),
    "num_attention_heads": (12, int),
    "intermediate_size": (3072, int),
    "hidden_act": ("gelu", str),
    "hidden_dropout_prob": (0.1, float),
    "attention_probs_dropout_prob": (0.1, float),
    "max_position_embeddings": (512, int),
    "type_vocab_size": (16, int),
    "initializer_range": (0.02, float),
    "causal_attention": (False, bool),
    "pre_layer_norm": (False, bool),
    "pooling": ("cls", str),
    "position_embedding_init": ("truncated_normal", str),
}
# What the pooled output (the classifier's input) summarises: the original's [CLS] vector,
# the mean of the real tokens' vectors, or the means of the two segments compared; each
# through the same tanh dense layer (for "pair_mean" it reads 4 * hidden_size features).
POOLINGS = ("cls", "mean", "pair_mean")
# Fields the original's bert_config.json does not have: written only when not at their
# default, so that a config of the original's kind reads and writes back unchanged.
# How a new model's position table starts: the original's truncated normal, or
# sinusoids (Vaswani et al. 2017) of the same RMS, whose dot products already depend on
# the distance between two positions, so a briefly trained model uses them sooner.
POSITION_EMBEDDING_INITS = ("truncated_normal", "sinusoidal")
_NEW_FIELDS = ("causal_attention", "pre_layer_norm", "pooling", "position_embedding_init")

# Hugging Face names its exact (erf) gelu "gelu", while the original release's "gelu" is the
# tanh approximation (modeling.py at HEAD). A config read from a Hugging Face file therefore
# has its activation renamed to what it computes.
_HF_ACTIVATIONS = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "swish",
    "swish": "swish",
}


class BertConfigError(ValueError):
    """A `bert_config.json` (or Hugging Face `config.json`) that cannot describe a BERT."""


class BertConfig:
    """Configuration of a BERT model, field for field the original `bert_config.json`.

    Args:
        vocab_size: int. Size of the WordPiece vocabulary (rows of `word_embeddings`).
        hidden_size: int. Width H of every layer. Defaults to 768.
        num_hidden_layers: int. Number L of Transformer blocks. Defaults to 12.
        num_attention_heads: int. Number of heads; must divide `hidden_size`. Defaults to 12.
        intermediate_size: int. Width of the feed-forward layer. Defaults to 3072.
        hidden_act: str. Feed-forward activation: "gelu" (tanh approximation, as the
            original), "gelu_exact" (erf), "relu", "tanh", "swish" or "linear".
            Defaults to "gelu".
        hidden_dropout_prob: float. Dropout after embeddings and each residual branch.
            Defaults to 0.1.
        attention_probs_dropout_prob: float. Dropout on attention probabilities.
            Defaults to 0.1.
        max_position_embeddings: int. Longest sequence the model accepts. Defaults to 512.
        type_vocab_size: int. Number of segment ids. Defaults to 16 (released models: 2).
        initializer_range: float. Stddev of the truncated-normal initialiser. Defaults to 0.02.
        causal_attention: bool. Each position attends only to itself and the positions
            before it (a left-to-right model, `run_pretraining.py --objective=ltr`; the
            pooled output is then the last real token's, as OpenAI GPT classifies).
            Not in the original; written to the file only when true. Defaults to False.
        pre_layer_norm: bool. Each block normalises the input of its two branches
            (x + attention(LayerNorm(x)), then the same for the feed-forward) instead of
            their sums, and a LayerNorm follows the last block (Xiong et al., 2020,
            https://arxiv.org/abs/2002.04745): trains at higher learning rates without
            collapsing, as short pre-training runs need. Not in the original, and not
            convertible to Hugging Face's BERT; written to the file only when true.
            Defaults to False.
        pooling: str. What the pooled output (the input of the classifier, the
            multiple-choice scorer and the next-sentence head) summarises: "cls", the
            [CLS] vector (the original's), or "mean", the mean of the real tokens' vectors
            (sentence-transformers' mean pooling; Cramming's `pooler: avg`), each through
            the same tanh dense layer; or "pair_mean": the mean of segment A's real
            tokens, u, and of segment B's, v (zeros for a single text), compared as
            [u; v; |u - v|; u * v] (the features of InferSent, Conneau et al. 2017, and of
            Sentence-BERT's classifier, Reimers & Gurevych 2019), whose dense layer reads
            4 * hidden_size features (a sentence pair's comparison that fine-tuning can
            use even where pre-training never trained the pooled vector). A model's choice
            travels with its bert_config.json into fine-tuning and export. Not in the
            original, and not convertible to Hugging Face's BERT (its pooler reads
            [CLS]); written to the file only when not "cls". Defaults to "cls".
        position_embedding_init: str. How a new model's position table is initialised:
            "truncated_normal" (the original's, as every other table) or "sinusoidal"
            (the sines and cosines of Vaswani et al. 2017, scaled to an RMS of
            `initializer_range`): positions near each other then start with similar
            vectors, which shortens the masked LM's frequent-token plateau. Only a model
            built from scratch reads it (a checkpoint's table replaces it); not in the
            original; written to the file only when not "truncated_normal".
        source: str or None. File the config came from, quoted in error messages.
        **extra: Unknown keys, kept (and written back) but not used; those of a Hugging
            Face config.json are dropped, so that it writes back in the original's
            layout (a bert_config.json the original and this project read).
    """

    def __init__(self, vocab_size, hidden_size=768, num_hidden_layers=12,
                 num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 max_position_embeddings=512, type_vocab_size=16, initializer_range=0.02,
                 causal_attention=False, pre_layer_norm=False, pooling="cls",
                 position_embedding_init="truncated_normal", source=None, **extra):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.causal_attention = causal_attention
        self.pre_layer_norm = pre_layer_norm
        self.pooling = pooling
        self.position_embedding_init = position_embedding_init
        self.source = source
        self.extra = dict(extra)
        self.validate()

    # ----------------------------------------------------------------------------- reading
    @classmethod
    def from_dict(cls, json_object, source=None):
        """Builds a config from a dict with the original's keys (or Hugging Face's).

        Raises:
            BertConfigError: a required field is missing, or a value has the wrong type or
                an impossible value. The message names `source` and the field.
        """
        where = source or "<dict>"
        if not isinstance(json_object, dict):
            raise BertConfigError(f"{where}: expected a JSON object with the BERT config "
                                  f"fields, got {type(json_object).__name__}.")
        obj = dict(json_object)
        hugging_face = _looks_like_hugging_face(obj)
        if hugging_face:
            obj = _from_hugging_face(obj, where)
        kwargs, extra = {}, {}
        for key, value in obj.items():
            if key in _FIELDS:
                kwargs[key] = _coerce(key, value, where)
            elif not hugging_face:  # Hugging Face's own keys are not the original's
                extra[key] = value
        for key, (default, _) in _FIELDS.items():
            if key not in kwargs:
                if default is _REQUIRED:
                    raise BertConfigError(
                        f"{where}: required field '{key}' is missing. Add it (the number "
                        f"of lines in vocab.txt for 'vocab_size').")
        return cls(source=source, **kwargs, **extra)

    @classmethod
    def from_json_file(cls, json_file):
        """Reads `bert_config.json` (or a Hugging Face `config.json`)."""
        try:
            with open(json_file, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise BertConfigError(f"{json_file}: cannot read the config file ({e}).") from e
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BertConfigError(f"{json_file}: not UTF-8 text ({e}).") from e
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise BertConfigError(
                f"{json_file}: not valid JSON at line {e.lineno} column {e.colno}: {e.msg}. "
                f"A BERT config is one JSON object such as "
                f'{{"vocab_size": 30522, "hidden_size": 768, ...}}.') from e
        return cls.from_dict(obj, source=str(json_file))

    # ----------------------------------------------------------------------------- writing
    def to_dict(self):
        output = {key: getattr(self, key) for key in _FIELDS
                  if key not in _NEW_FIELDS or getattr(self, key) != _FIELDS[key][0]}
        output.update(copy.deepcopy(self.extra))
        return output

    def to_json_string(self):
        """Serialises this config as the original does: indent 2, sorted keys."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        file_io.atomic_write_text(json_file, self.to_json_string())

    # ----------------------------------------------------------------------------- checks
    def validate(self):
        where = self.source or "<BertConfig>"
        for key, (_, typ) in _FIELDS.items():
            _coerce(key, getattr(self, key), where)
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            if getattr(self, key) < 1:
                raise BertConfigError(f"{where}: field '{key}' must be a positive integer, "
                                      f"got {getattr(self, key)}.")
            if getattr(self, key) > _LARGEST_SIZE:
                raise BertConfigError(
                    f"{where}: field '{key}' is {getattr(self, key)}; ids and sizes are "
                    f"int32 here, so it must be below {_LARGEST_SIZE + 1:,} (is it the "
                    f"number of lines in vocab.txt, for 'vocab_size'?).")
        table = self.vocab_size * self.hidden_size * 4
        if table > _LARGEST_TABLE_BYTES:
            raise BertConfigError(
                f"{where}: vocab_size x hidden_size = {self.vocab_size:,} x "
                f"{self.hidden_size:,} makes a {table / 2 ** 30:,.0f} GiB embedding table; "
                f"check both fields.")
        if self.hidden_size % self.num_attention_heads != 0:
            raise BertConfigError(
                f"{where}: field 'hidden_size' ({self.hidden_size}) is not a multiple of "
                f"'num_attention_heads' ({self.num_attention_heads}). Use a head count that "
                f"divides the hidden size (BERT-Base: 768 / 12 = 64 per head).")
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            p = getattr(self, key)
            if not 0.0 <= p < 1.0:
                raise BertConfigError(f"{where}: field '{key}' must be in [0, 1), got {p}.")
        if not (self.initializer_range > 0 and math.isfinite(self.initializer_range)):
            raise BertConfigError(f"{where}: field 'initializer_range' must be a positive "
                                  f"number, got {self.initializer_range}.")
        if self.pooling not in POOLINGS:
            raise BertConfigError(f"{where}: field 'pooling' is '{self.pooling}'; use one of: "
                                  f"{', '.join(POOLINGS)} (or leave it out: 'cls').")
        if self.position_embedding_init not in POSITION_EMBEDDING_INITS:
            raise BertConfigError(
                f"{where}: field 'position_embedding_init' is "
                f"'{self.position_embedding_init}'; use one of: "
                f"{', '.join(POSITION_EMBEDDING_INITS)} (or leave it out: 'truncated_normal').")
        if self.pooling != "cls" and self.causal_attention:
            raise BertConfigError(f"{where}: field 'pooling' is '{self.pooling}' but "
                                  f"'causal_attention' is true, whose pooled output is the "
                                  f"last real token's: leave 'pooling' out.")
        if self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise BertConfigError(
                f"{where}: field 'hidden_act' is '{self.hidden_act}', which is not a known "
                f"activation. Use one of: {', '.join(sorted(SUPPORTED_ACTIVATIONS))}.")

    def check_max_seq_length(self, max_seq_length):
        """The one check of an input length against this model: at least 3 pieces
        ([CLS] x [SEP]) and at most `max_position_embeddings`.

        Raises:
            BertConfigError: naming the flag, the field and the config file.
        """
        if max_seq_length < 3:
            raise BertConfigError(f"--max_seq_length={max_seq_length}: must be at least 3 "
                                  f"([CLS] x [SEP]).")
        if max_seq_length > self.max_position_embeddings:
            raise BertConfigError(
                f"--max_seq_length={max_seq_length} exceeds max_position_embeddings="
                f"{self.max_position_embeddings} in {self.source or 'the model config'}.")

    def encoder_kwargs(self):
        """The `BertEncoder` constructor arguments this config describes."""
        return dict(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            causal_attention=self.causal_attention,
            pre_layer_norm=self.pre_layer_norm,
            pooling=self.pooling,
            position_embedding_init=self.position_embedding_init,
        )

    def __eq__(self, other):
        return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"BertConfig({self.to_json_string().strip()})"


def _coerce(key, value, where):
    """Checks one field's type; ints written as 2.0 are accepted, booleans are not."""
    _, typ = _FIELDS[key]
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and not value.is_integer()):
            raise BertConfigError(f"{where}: field '{key}' must be an integer, got {value!r}.")
        return int(value)
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BertConfigError(f"{where}: field '{key}' must be a number, got {value!r}.")
        return float(value)
    if typ is bool:
        if not isinstance(value, bool):
            raise BertConfigError(f"{where}: field '{key}' must be true or false, got "
                                  f"{value!r}.")
        return value
    if not isinstance(value, str):
        raise BertConfigError(f"{where}: field '{key}' must be a string, got {value!r}.")
    return value


def _looks_like_hugging_face(obj):
    return "model_type" in obj or "layer_norm_eps" in obj or "architectures" in obj


def _from_hugging_face(obj, where):
    """Translates a Hugging Face BERT `config.json` into the original's fields."""
    model_type = obj.get("model_type", "bert")
    if model_type not in ("bert",):
        raise BertConfigError(f"{where}: field 'model_type' is '{model_type}'; only 'bert' "
                              f"configs describe this architecture.")
    pos = obj.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise BertConfigError(f"{where}: field 'position_embedding_type' is '{pos}'; only "
                              f"'absolute' position embeddings (as in BERT) are supported.")
    eps = obj.get("layer_norm_eps", 1e-12)
    if not isinstance(eps, (int, float)) or abs(eps - 1e-12) > 1e-15:
        raise BertConfigError(f"{where}: field 'layer_norm_eps' is {eps!r}; this "
                              f"implementation uses BERT's 1e-12.")
    act = obj.get("hidden_act", "gelu")
    if act not in _HF_ACTIVATIONS:
        raise BertConfigError(
            f"{where}: field 'hidden_act' is '{act}', which is not a known activation. Use "
            f"one of: {', '.join(sorted(_HF_ACTIVATIONS))}.")
    obj["hidden_act"] = _HF_ACTIVATIONS[act]
    if obj.pop("is_decoder", False):  # Hugging Face's causal self-attention
        obj["causal_attention"] = True
    return obj
