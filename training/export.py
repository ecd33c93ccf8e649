"""SavedModel export of fine-tuned models, for TF Serving, TF Lite or plain TensorFlow.

Pipeline position: the last stage (fine-tuning -> SavedModel). `run_classifier.py` /
`run_ner.py --export_dir` and `export_saved_model.py` call `export_classifier` /
`export_tagger` (the tagger's signatures are described there).

A classifier's two signatures:
  * `serving_default`: raw strings. `text_a` (and `text_b` for sentence-pair tasks; an
    empty string there gives a single sequence) -> in-graph WordPiece
    (`data_prep.graph_tokenizer`, tensorflow-text ops) -> packing -> the model. Returns
    `probabilities` [batch, num_labels], `label_id` and `label` (the task's label
    strings); for regression `score`. Loading needs `import tensorflow_text`.
  * `serving_ids`: `input_ids`, `input_mask`, `segment_ids` (int32 [batch, seq_length]),
    core TensorFlow ops only; same outputs.
The export is written to a temporary folder and renamed: never half-written.
"""

import os
import shutil

import tensorflow as tf

from data_prep.graph_packing import keep_first, pack_ids
from data_prep.graph_tokenizer import GraphTokenizer
from data_prep.tokenization import load_vocab

INPUTS = ("input_ids", "input_mask", "segment_ids")


class _ServingModule(tf.Module):
    """What every export holds: the model (its variables held directly, since Keras 3
    layers are not all tracked by tf.Module), the in-graph tokenizer and special ids."""

    def __init__(self, name, model, vocab_file, do_lower_case, max_seq_length):
        super().__init__(name=name)
        self.model = model
        self.model_variables = [v.value if hasattr(v, "value") else v
                                for v in model.variables]
        self.tokenizer = GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
        vocab = load_vocab(vocab_file)
        self.cls_id, self.sep_id, self.unk_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]
        self.max_seq_length = max_seq_length


class _ClassifierModule(_ServingModule):
    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, label_list,
                 regression):
        super().__init__("bert_classifier", model, vocab_file, do_lower_case,
                         max_seq_length)
        self.regression = regression
        self.labels = tf.constant(label_list or [""], tf.string)

    def _outputs(self, inputs):
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        if self.regression:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, -1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits, -1), "label_id": label_id,
                "label": tf.gather(self.labels, label_id)}

    def from_ids(self, input_ids, input_mask, segment_ids):
        return self._outputs({"input_ids": input_ids, "input_mask": input_mask,
                              "segment_ids": segment_ids})

    def from_text(self, text_a, text_b=None):
        ids_a = self.tokenizer.tokenize(text_a)
        ids_b = None if text_b is None else self.tokenizer.tokenize(text_b)
        return self._outputs(pack_ids(ids_a, ids_b, self.max_seq_length, self.cls_id,
                                      self.sep_id))


def export_classifier(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                      label_list, regression=False, pair=True):
    """Writes the SavedModel; returns `export_dir`.

    Args:
        model: a `modeling.BertClassifier`.
        pair: bool. The raw-text signature takes `text_b` too.
    """
    module = _ClassifierModule(model, vocab_file, do_lower_case, max_seq_length,
                               label_list, regression)
    ids = tf.TensorSpec([None, None], tf.int32)
    text = tf.TensorSpec([None], tf.string)
    serving_ids = tf.function(module.from_ids, input_signature=[ids, ids, ids])
    if pair:
        serving_text = tf.function(lambda text_a, text_b: module.from_text(text_a, text_b),
                                   input_signature=[text, text])
    else:
        serving_text = tf.function(lambda text_a: module.from_text(text_a),
                                   input_signature=[text])
    module.serving_text, module.serving_ids = serving_text, serving_ids
    return _save(module, export_dir, {"serving_default": serving_text,
                                      "serving_ids": serving_ids})


def _split_words(tokenizer, text, unk_id):
    """Raw strings -> words split at whitespace and punctuation as the BERT tokenizer
    splits them (ragged [batch, (words)]), their byte offsets into the input (int32), and
    each word's WordPiece ids (ragged [n_words, (pieces)], at least one: [UNK])."""
    import tensorflow_text as tf_text

    classes = tokenizer._classes
    # Split at whitespace, and punctuation and CJK characters are words of their own.
    delimiters = "|".join([classes["split"], classes["split_off"]])
    words, begin, end = tf_text.regex_split_with_offsets(text, delimiters,
                                                         classes["split_off"])
    begin, end = tf.cast(begin, tf.int32), tf.cast(end, tf.int32)
    pieces = tokenizer.tokenize(words.flat_values)
    empty = tf.cast(pieces.row_lengths() == 0, tf.int64)
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(empty)], tf.constant(unk_id, tf.int64)), empty)
    return words, begin, end, tf.concat([pieces, unk], axis=1)


def _char_offsets(texts, byte_offsets):
    """Byte offsets into `texts` (same shape, 1-D) -> character offsets."""
    return tf.strings.length(tf.strings.substr(texts, tf.zeros_like(byte_offsets),
                                               byte_offsets), unit="UTF8_CHAR")


class _TaggerModule(_ServingModule):
    """Sentence in, entities with character offsets out (see `export_tagger`)."""

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, label_list):
        super().__init__("bert_tagger", model, vocab_file, do_lower_case, max_seq_length)
        types = sorted({t[2:] for t in label_list if t != "O"})
        self.labels = tf.constant(label_list, tf.string)
        self.types = tf.constant([""] + types, tf.string)
        self.label_type = tf.constant([0 if t == "O" else 1 + types.index(t[2:])
                                       for t in label_list], tf.int64)
        self.label_begins = tf.constant([t.startswith(("B-", "S-")) for t in label_list])

    def from_ids(self, input_ids, input_mask, segment_ids):
        logits = self.model({"input_ids": input_ids, "input_mask": input_mask,
                             "segment_ids": segment_ids}, training=False)["logits"]
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), -1)
        label_id = tf.argmax(probabilities, -1, output_type=tf.int32)
        return {"probabilities": probabilities, "label_id": label_id,
                "label": tf.gather(self.labels, label_id)}

    def from_text(self, text):
        words, begin, end, pieces = _split_words(self.tokenizer, text, self.unk_id)
        counts = pieces.row_lengths()
        per_row = words.with_flat_values(counts)                       # [batch, (words)]
        row_pieces = tf.RaggedTensor.from_row_lengths(
            pieces.flat_values, tf.reduce_sum(per_row, axis=1))        # [batch, (pieces)]
        packed = pack_ids(row_pieces, None, self.max_seq_length, self.cls_id, self.sep_id)
        label_id = self.from_ids(**packed)["label_id"]
        # Position of each word's first piece: 1 + pieces of the words before it.
        starts = 1 + tf.cumsum(per_row, axis=1, exclusive=True)
        fits = starts < self.max_seq_length - 1
        flat_rows = tf.cast(per_row.value_rowids(), tf.int64)
        flat_pos = tf.minimum(starts.flat_values, self.max_seq_length - 1)
        word_label = tf.gather_nd(label_id, tf.stack([flat_rows, flat_pos], 1))
        word_label = tf.where(fits.flat_values, word_label, 0)  # past the window: "O"
        kind = tf.gather(self.label_type, word_label)
        first_in_row = tf.equal(tf.range(tf.size(flat_rows, out_type=tf.int64)),
                                tf.gather(per_row.row_starts(), flat_rows))
        previous = tf.concat([[0], kind[:-1]], 0)
        previous = tf.where(first_in_row, tf.zeros_like(previous), previous)
        starts_entity = (kind > 0) & (tf.gather(self.label_begins, word_label) |
                                      (previous != kind))
        entity = tf.cumsum(tf.cast(starts_entity, tf.int64)) - 1
        inside = kind > 0
        n_entities = tf.reduce_sum(tf.cast(starts_entity, tf.int64))
        seg = tf.boolean_mask(entity, inside)
        ent_begin = tf.math.unsorted_segment_min(tf.boolean_mask(begin.flat_values, inside),
                                                 seg, n_entities)
        ent_end = tf.math.unsorted_segment_max(tf.boolean_mask(end.flat_values, inside),
                                               seg, n_entities)
        ent_row = tf.boolean_mask(flat_rows, starts_entity)
        ent_type = tf.gather(self.types, tf.boolean_mask(kind, starts_entity))
        row_text = tf.gather(text, ent_row)
        ent_text = tf.strings.substr(row_text, ent_begin, ent_end - ent_begin)
        # Byte offsets -> character offsets.
        char_begin = _char_offsets(row_text, ent_begin)
        char_end = char_begin + tf.strings.length(ent_text, unit="UTF8_CHAR")
        batch = tf.shape(text, out_type=tf.int64)[0]

        def rows(values, pad):
            return tf.RaggedTensor.from_value_rowids(values, ent_row, nrows=batch).to_tensor(
                pad)

        word_tags = words.with_flat_values(tf.gather(self.labels, word_label))
        return {"entity_type": rows(ent_type, ""), "entity_text": rows(ent_text, ""),
                "entity_start": rows(tf.cast(char_begin, tf.int64), -1),
                "entity_end": rows(tf.cast(char_end, tf.int64), -1),
                "words": words.to_tensor(""), "word_tags": word_tags.to_tensor("")}


def export_tagger(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                  label_list):
    """Writes a token-tagging SavedModel; returns `export_dir`.

    `serving_default` takes `text` (tf.string [batch], one sentence each): words are split
    at whitespace and punctuation as the BERT tokenizer does, each word's first WordPiece
    is tagged, and the tags become entities (IOB2: an entity starts at B-X or at an I-X
    after another type). Outputs, padded per row: `entity_type`, `entity_text`,
    `entity_start`/`entity_end` (character offsets into the input, end exclusive; -1
    padding), and `words`/`word_tags`. Words beyond `max_seq_length` pieces are tagged O.
    `serving_ids` takes token ids (core ops) and returns per-position `probabilities`,
    `label_id` and `label`.
    """
    module = _TaggerModule(model, vocab_file, do_lower_case, max_seq_length, label_list)
    ids = tf.TensorSpec([None, None], tf.int32)
    serving_ids = tf.function(module.from_ids, input_signature=[ids, ids, ids])
    serving_text = tf.function(module.from_text,
                               input_signature=[tf.TensorSpec([None], tf.string)])
    module.serving_text, module.serving_ids = serving_text, serving_ids
    return _save(module, export_dir, {"serving_default": serving_text,
                                      "serving_ids": serving_ids})


def _save(module, export_dir, signatures):
    tmp = f"{export_dir.rstrip('/')}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tf.saved_model.save(module, tmp, signatures=signatures)
    if os.path.exists(export_dir):
        shutil.rmtree(export_dir)
    os.replace(tmp, export_dir)
    return export_dir


class _SpanModule(_ServingModule):
    """Question + context in, start/end logits and token offsets out."""

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, max_query_length):
        super().__init__("bert_span_labeler", model, vocab_file, do_lower_case,
                         max_seq_length)
        self.max_query_length = max_query_length

    def from_ids(self, input_ids, input_mask, segment_ids):
        out = self.model({"input_ids": input_ids, "input_mask": input_mask,
                          "segment_ids": segment_ids}, training=False)
        return {"start_logits": tf.cast(out["start_logits"], tf.float32),
                "end_logits": tf.cast(out["end_logits"], tf.float32)}

    def from_text(self, question, context):
        query = self.tokenizer.tokenize(question)
        query = keep_first(query, tf.minimum(query.row_lengths(), self.max_query_length))
        words, begin, end, pieces = _split_words(self.tokenizer, context, self.unk_id)
        per_row = words.with_flat_values(pieces.row_lengths())
        row_pieces = tf.RaggedTensor.from_row_lengths(pieces.flat_values,
                                                      tf.reduce_sum(per_row, axis=1))
        room = self.max_seq_length - 3 - query.row_lengths()
        doc = keep_first(row_pieces, tf.minimum(row_pieces.row_lengths(), room))
        packed = pack_ids(query, doc, self.max_seq_length, self.cls_id, self.sep_id)
        outputs = self.from_ids(**packed)
        # Character offsets of each document piece's word in the context.
        word_of_piece = pieces.value_rowids()
        row_of_word = tf.cast(words.value_rowids(), tf.int64)
        texts = tf.gather(context, tf.gather(row_of_word, word_of_piece))
        piece_begin = _char_offsets(texts, tf.gather(begin.flat_values, word_of_piece))
        piece_end = _char_offsets(texts, tf.gather(end.flat_values, word_of_piece))
        piece_begin = keep_first(row_pieces.with_flat_values(piece_begin),
                                  doc.row_lengths())
        piece_end = keep_first(row_pieces.with_flat_values(piece_end), doc.row_lengths())
        batch = tf.shape(context, out_type=tf.int64)[0]

        def layout(values):
            lead = tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(query.row_lengths() + 2)], -1),
                query.row_lengths() + 2)
            tail = tf.RaggedTensor.from_row_lengths(tf.fill([batch], -1),
                                                    tf.ones([batch], tf.int64))
            return tf.concat([lead, tf.cast(values, tf.int32), tail], axis=1).to_tensor(
                -1, shape=[None, self.max_seq_length])

        outputs["token_start"] = layout(piece_begin)
        outputs["token_end"] = layout(piece_end)
        outputs["input_mask"] = packed["input_mask"]
        return outputs


def export_span_labeler(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                        max_query_length=64):
    """Writes a question-answering SavedModel; returns `export_dir`.

    `serving_default` takes `question` and `context` (tf.string [batch]); the question is
    cut to `max_query_length` pieces and the context to what fits in one window of
    `max_seq_length`. Returns `start_logits`, `end_logits` [batch, max_seq_length] and
    `token_start`/`token_end`: for each position, the character span in `context` of the
    word that piece belongs to (-1 outside the context), so the answer of the best valid
    (start, end) pair is `context[token_start[start]:token_end[end]]`. `serving_ids` takes
    token ids (core ops only) and returns the logits.
    """
    module = _SpanModule(model, vocab_file, do_lower_case, max_seq_length, max_query_length)
    ids = tf.TensorSpec([None, None], tf.int32)
    text = tf.TensorSpec([None], tf.string)
    serving_ids = tf.function(module.from_ids, input_signature=[ids, ids, ids])
    serving_text = tf.function(module.from_text, input_signature=[text, text])
    module.serving_text, module.serving_ids = serving_text, serving_ids
    return _save(module, export_dir, {"serving_default": serving_text,
                                      "serving_ids": serving_ids})
