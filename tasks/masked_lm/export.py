"""The fill-mask SavedModel: texts with `[MASK]` in, each mask's top-k words out.

Pipeline position: after pre-training (`export_saved_model.py --task_type=masked_lm`).
Two signatures (see `serving.saved_model` for what they share):
  * `serving_default`: `text`, tf.string [batch], `[MASK]` where a word is missing ->
    in-graph WordPiece around the masks and packing -> `token` (string), `id` (int32)
    and `probability` (float32), each [batch, masks, top_k] (masks: the most of any text
    of the request; the others padded with "", -1 and 0), and `mask_count` [batch].
  * `serving_ids`: the three id inputs and `masked_lm_positions` (int32 [batch, masks])
    -> `top_k_ids` and `top_k_probabilities` [batch, masks, top_k]: core ops only (TF
    Lite, TF Serving); the fast path of `serving.load`.
"""

import tensorflow as tf

from serving import saved_model as export
from text.graph_packing import pack_ids
from text.tokenization import load_vocab


class MaskedLMModule(export.ServingModule):
    task = "masked_lm"
    fast_path = "tasks.masked_lm.fast_path:MaskedLMFastPath"

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, top_k):
        super().__init__("bert_masked_lm", model, vocab_file, do_lower_case,
                         max_seq_length, trim_padding=True)
        self.top_k = top_k
        vocab = load_vocab(vocab_file)
        self.mask_id = vocab["[MASK]"]
        tokens = [""] * (max(vocab.values()) + 1)
        for token, index in vocab.items():
            tokens[index] = token
        self.tokens = tf.constant(tokens, tf.string)

    def serving_config(self):
        return dict(super().serving_config(), top_k=self.top_k, mask_id=self.mask_id)

    def from_ids(self, input_ids, input_mask, segment_ids, masked_lm_positions):
        with tf.control_dependencies(self.check_inputs(input_ids, input_mask,
                                                       segment_ids)):
            inputs = {"input_ids": tf.identity(input_ids), "input_mask": input_mask,
                      "segment_ids": segment_ids,
                      "masked_lm_positions": masked_lm_positions}
        logits = self.model(inputs, training=False,
                            skip_padding=self.skip_padding)["masked_lm_logits"]
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), -1)
        best = tf.math.top_k(probabilities, k=min(self.top_k, self.model.encoder.vocab_size))
        return {"top_k_ids": best.indices, "top_k_probabilities": best.values}

    def from_text(self, text):
        text = export.as_batch(text)
        parts = tf.strings.split(text, sep="[MASK]")                       # [batch, (parts)]
        pieces = self.tokenizer.tokenize(parts.flat_values)                # [parts, (ids)]
        last = tf.scatter_nd(tf.expand_dims(parts.row_limits() - 1, 1),
                             tf.ones_like(parts.row_limits(), tf.bool),
                             tf.shape(parts.flat_values, out_type=tf.int64))
        mask = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(~last, tf.int64))],
                    tf.constant(self.mask_id, tf.int64)),
            tf.cast(~last, tf.int64), validate=False)                      # [parts, (0|1)]
        ids = tf.RaggedTensor.from_row_splits(
            tf.concat([tf.cast(pieces, tf.int64), mask], axis=1), parts.row_splits,
            validate=False).merge_dims(1, 2)                               # [batch, (ids)]
        packed = pack_ids(ids, None, self.max_seq_length, self.cls_id, self.sep_id)
        at_mask = tf.equal(packed["input_ids"], self.mask_id)
        positions = tf.ragged.boolean_mask(
            tf.broadcast_to(tf.range(tf.shape(at_mask)[1]), tf.shape(at_mask)), at_mask)
        count = tf.cast(positions.row_lengths(), tf.int32)
        width = tf.maximum(tf.reduce_max(count), 1)
        dense = tf.pad(positions.to_tensor(0), [[0, 0], [0, 1]])[:, :width]
        out = self.from_ids(packed["input_ids"], packed["input_mask"],
                            packed["segment_ids"], tf.cast(dense, tf.int32))
        real = tf.sequence_mask(count, width)[:, :, None]
        ids = tf.where(real, out["top_k_ids"], -1)
        return {"token": tf.where(real, tf.gather(self.tokens, out["top_k_ids"]), ""),
                "id": ids,
                "probability": tf.where(real, out["top_k_probabilities"], 0.0),
                "mask_count": count}


def export_masked_lm(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                     top_k=5, tflite=None, tflite_quantize=False):
    """Writes the SavedModel (see the module docstring); returns `export_dir`.

    Args:
        model: a `modeling.BertPretrainer` with its masked-LM head.
        top_k: int. The words answered per [MASK].
        tflite, tflite_quantize: also write `serving_ids` as TF Lite (see
            `serving.saved_model.save_signatures`).
    """
    module = MaskedLMModule(model, vocab_file, do_lower_case, max_seq_length, top_k)
    text = export.serving_function(module.from_text, [export.TEXT_SPEC])
    ids = export.serving_function(module.from_ids, [export.IDS_SPEC] * 4)
    module.serving_text, module.serving_ids = text, ids
    return export.save_signatures(module, export_dir, {"serving_default": text,
                                                       "serving_ids": ids},
                                  tflite="serving_ids", tflite_when=tflite,
                                  tflite_quantize=tflite_quantize)


def model_for_export(bert_config, options):
    """The masked LM of `bert_config` (no next-sentence head), weights not loaded."""
    from modeling import BertPretrainer
    return BertPretrainer(bert_config, next_sentence=False)


def save_for_export(model, export_dir, options, vocab_file, do_lower_case, max_seq_length,
                    tflite=None, tflite_quantize=False):
    return export_masked_lm(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                            options.top_k, tflite=tflite, tflite_quantize=tflite_quantize)
