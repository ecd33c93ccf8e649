"""The tagging (NER) SavedModel: a sentence in, its entities with character offsets out.

Pipeline position: after fine-tuning (`run_ner.py --export_dir`,
`export_saved_model.py --task_type=tagging`); see `export_tagging` for the signatures and
`serving.saved_model` for what every export shares.
"""


import tensorflow as tf

from modeling import BertTokenClassifier
from serving import saved_model as export
from tasks import registry
from text.graph_packing import pack_ids


class TaggingModule(export.ServingModule):
    """Sentence in, entities with character offsets out (see `export_tagging`)."""

    task = "tagging"
    fast_path = "tasks.tagging.fast_path:TaggingFastPath"

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, label_list):
        super().__init__("bert_tagger", model, vocab_file, do_lower_case, max_seq_length)
        self.label_list = list(label_list)
        types = sorted({t[2:] for t in label_list if t != "O"})
        self.labels = tf.constant(label_list, tf.string)
        self.types = tf.constant([""] + types, tf.string)
        self.label_type = tf.constant([0 if t == "O" else 1 + types.index(t[2:])
                                       for t in label_list], tf.int64)
        self.label_begins = tf.constant([t.startswith(("B-", "S-")) for t in label_list])

    def serving_config(self):
        return dict(super().serving_config(), labels=self.label_list)

    def from_ids(self, input_ids, input_mask, segment_ids):
        return self._answers(self.run_model(input_ids, input_mask, segment_ids)["logits"])

    def from_packed(self, input_ids, segment_ids, position_ids, sequence_ids):
        """`serving_ids`' outputs at the positions of rows that pack several sentences
        (TF Lite only: see `serving.saved_model`)."""
        return self._answers(self.packed_logits(input_ids, segment_ids, position_ids,
                                                sequence_ids))

    def _answers(self, logits):
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), -1)
        label_id = tf.argmax(probabilities, -1, output_type=tf.int32)
        return {"probabilities": probabilities, "label_id": label_id,
                "label": tf.gather(self.labels, label_id)}

    def from_text(self, text):
        text = export.as_batch(text)
        words, begin, end, pieces = export.split_words(self.tokenizer, text, self.unk_id)
        counts = pieces.row_lengths()
        per_row = words.with_flat_values(counts)                       # [batch, (words)]
        row_pieces = tf.RaggedTensor.from_row_lengths(
            pieces.flat_values, tf.reduce_sum(per_row, axis=1),
            validate=False)                                            # [batch, (pieces)]
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
        char_begin = export.char_offsets(row_text, ent_begin)
        char_end = char_begin + tf.strings.length(ent_text, unit="UTF8_CHAR")
        batch = tf.shape(text, out_type=tf.int64)[0]

        def rows(values, pad):
            return tf.RaggedTensor.from_value_rowids(values, ent_row, nrows=batch,
                                                     validate=False).to_tensor(pad)

        word_tags = words.with_flat_values(tf.gather(self.labels, word_label))
        return {"entity_type": rows(ent_type, ""), "entity_text": rows(ent_text, ""),
                "entity_start": rows(tf.cast(char_begin, tf.int64), -1),
                "entity_end": rows(tf.cast(char_end, tf.int64), -1),
                "words": words.to_tensor(""), "word_tags": word_tags.to_tensor("")}


def export_tagging(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                   label_list, tflite=None, tflite_quantize=False):
    """Writes a token-tagging SavedModel; returns `export_dir`.

    `serving_default` takes `text` (tf.string [batch], one sentence each): words are split
    at whitespace and punctuation as the BERT tokenizer does, each word's first WordPiece
    is tagged, and the tags become entities (IOB2: an entity starts at B-X or at an I-X
    after another type). Outputs, padded per row: `entity_type`, `entity_text`,
    `entity_start`/`entity_end` (character offsets into the input, end exclusive; -1
    padding), and `words`/`word_tags`. Words beyond `max_seq_length` pieces are tagged O.
    `serving_ids` takes token ids (core ops) and returns per-position `probabilities`,
    `label_id` and `label`; `model.tflite` also holds `serving_packed`, the same outputs
    at the positions of rows that pack several sentences.
    """
    module = TaggingModule(model, vocab_file, do_lower_case, max_seq_length, label_list)
    return export.save(module, export_dir,
                       export.serving_function(module.from_text, [export.TEXT_SPEC]),
                       tflite, tflite_quantize)


def model_for_export(bert_config, options):
    labels = registry.labels_of(options)
    if not labels:
        raise ValueError("A tagger needs --labels or --labels_file (run_ner.py's "
                         "label_list.txt).")
    return BertTokenClassifier(bert_config, len(labels), **options.head_kwargs())


def save_for_export(model, export_dir, options, vocab_file, do_lower_case, max_seq_length,
                    tflite=None, tflite_quantize=False):
    return export_tagging(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                          registry.labels_of(options), tflite=tflite,
                          tflite_quantize=tflite_quantize)
