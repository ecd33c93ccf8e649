"""The question-answering SavedModel: a question and a context in, start/end logits and
the character span of every position out.

Pipeline position: after fine-tuning (`run_squad.py --export_dir`,
`export_saved_model.py --task_type=squad`); see `export_squad` for the signatures and
`serving.saved_model` for what every export shares.
"""


import tensorflow as tf

from modeling import BertSpanLabeler
from serving import saved_model as export
from serving.saved_model import untracked
from tasks.squad.config import SquadReading
from text.graph_packing import keep_first, pack_ids


class SquadModule(export.ServingModule):
    """Question + context in, start/end logits and token offsets out."""

    task = "squad"
    fast_path = "tasks.squad.fast_path:SquadFastPath"
    # The logits of padded positions stay the model's: as in the original's
    # post-processing, the n-best starts and ends are picked among every position, so
    # they can take a slot (and change the answer's probability) before being dropped.
    skip_padding = False

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, max_query_length,
                 reading=None):
        super().__init__("bert_span_labeler", model, vocab_file, do_lower_case,
                         max_seq_length)
        self.max_query_length = max_query_length
        untracked(self, "reading", dict(reading or {}, max_query_length=max_query_length))

    def serving_config(self):
        return dict(super().serving_config(), **self.reading)

    def from_ids(self, input_ids, input_mask, segment_ids):
        out = self.run_model(input_ids, input_mask, segment_ids)
        return {"start_logits": tf.cast(out["start_logits"], tf.float32),
                "end_logits": tf.cast(out["end_logits"], tf.float32)}

    def from_text(self, question, context):
        question, context = export.as_batch(question), export.as_batch(context)
        query = self.tokenizer.tokenize(question)
        query = keep_first(query, tf.minimum(query.row_lengths(), self.max_query_length))
        words, begin, end, pieces = export.split_words(self.tokenizer, context)
        per_row = words.with_flat_values(pieces.row_lengths())
        row_pieces = tf.RaggedTensor.from_row_lengths(
            pieces.flat_values, tf.reduce_sum(per_row, axis=1), validate=False)
        room = self.max_seq_length - 3 - query.row_lengths()
        doc = keep_first(row_pieces, tf.minimum(row_pieces.row_lengths(), room))
        packed = pack_ids(query, doc, self.max_seq_length, self.cls_id, self.sep_id)
        outputs = self.from_ids(**packed)
        # Character offsets of each document piece's word in the context.
        word_of_piece = pieces.value_rowids()
        row_of_word = tf.cast(words.value_rowids(), tf.int64)
        texts = tf.gather(context, tf.gather(row_of_word, word_of_piece))
        piece_begin = export.char_offsets(texts, tf.gather(begin.flat_values, word_of_piece))
        piece_end = export.char_offsets(texts, tf.gather(end.flat_values, word_of_piece))
        piece_begin = keep_first(row_pieces.with_flat_values(piece_begin),
                                  doc.row_lengths())
        piece_end = keep_first(row_pieces.with_flat_values(piece_end), doc.row_lengths())
        batch = tf.shape(context, out_type=tf.int64)[0]

        def layout(values):
            lead = tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(query.row_lengths() + 2)], -1),
                query.row_lengths() + 2, validate=False)
            tail = tf.RaggedTensor.from_row_lengths(
                tf.fill([batch], -1), tf.ones([batch], tf.int64), validate=False)
            return tf.concat([lead, tf.cast(values, tf.int32), tail], axis=1).to_tensor(
                -1, shape=[None, self.max_seq_length])

        outputs["token_start"] = layout(piece_begin)
        outputs["token_end"] = layout(piece_end)
        outputs["input_mask"] = packed["input_mask"]
        return outputs


def export_squad(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                 max_query_length=64, tflite=None, tflite_quantize=False, **reading):
    """Writes a question-answering SavedModel; returns `export_dir`.

    `serving_default` takes `question` and `context` (tf.string [batch]); the question is
    cut to `max_query_length` pieces and the context to what fits in one window of
    `max_seq_length`. Returns `start_logits`, `end_logits` [batch, max_seq_length] and
    `token_start`/`token_end`: for each position, the character span in `context` of the
    word that piece belongs to (-1 outside the context), so the answer of the best valid
    (start, end) pair is `context[token_start[start]:token_end[end]]`. `serving_ids` takes
    token ids (core ops only) and returns the logits. `reading`: the other fields of
    `SquadReading` (doc_stride, n_best_size, ...), for `serving.load`'s answers (its
    defaults where not given).
    """
    reading = dict(SquadReading().reading(), **reading)
    module = SquadModule(model, vocab_file, do_lower_case, max_seq_length, max_query_length,
                         reading)
    return export.save(module, export_dir, export.serving_function(
        module.from_text, [export.TEXT_SPEC, export.TEXT_SPEC]),
        tflite, tflite_quantize)


def model_for_export(bert_config, options):
    return BertSpanLabeler(bert_config, **options.head_kwargs())


def save_for_export(model, export_dir, options, vocab_file, do_lower_case, max_seq_length,
                    tflite=None, tflite_quantize=False):
    reading = options.reading()
    return export_squad(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                        reading.pop("max_query_length"), tflite=tflite,
                        tflite_quantize=tflite_quantize, **reading)
