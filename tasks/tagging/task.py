"""Token tagging: named-entity recognition on CoNLL-2003 or any CoNLL-style data, scored
with entity-level F1 as conlleval computes it.

Pipeline position: a pre-trained checkpoint -> this task (through `training.runner`, from
`run_ner.py`) -> label_list.txt, eval_results.txt, test_predictions.txt (CoNLL columns:
word, gold, predicted), test_results.txt and a SavedModel. The task reads the files
(`tasks.tagging.conll`), windows them (`.features`), trains
`modeling.BertTokenClassifier`, scores entities (`.metrics`) and exports (`.export`).

Loss: softmax cross-entropy at each word's first WordPiece (`label_weights`), summed and
divided by the number of such positions in the global batch.
"""

import os

import tensorflow as tf
from absl import logging

from common import file_io, tables
from modeling import BertTokenClassifier
from tasks.tagging import conll, features, metrics
from tasks.tagging.config import TaggingExportOptions
from text.tokenization import FullTokenizer
from training import loop
from training.task import (
    Task,
    TrainInput,
    array_dataset_fn,
    static_shapes_needed,
    steps_for_epochs,
    token_count,
)

LABEL_LIST = "label_list.txt"


class TaggingTask(Task):
    """Fine-tunes `modeling.BertTokenClassifier` on CoNLL-style data (`TaggingConfig`)."""

    name = "tagging"
    main_metric = "f1"
    skip_padding = True  # tags of real tokens only

    def __init__(self, config):
        super().__init__(config)
        self.tokenizer = FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
        self.label_list, self.train_sentences = None, None
        self.dev, self.test = None, None
        self._converted = {}  # "dev" -> the features of its sentences, made once a run

    # ------------------------------------------------------------------ inputs
    def read(self, split):
        """(path, sentences) of a split, tags converted as `tag_scheme` says."""
        path = conll.find_split(self.config.data_dir, split)
        sentences = conll.read_conll(path)
        if self.config.tag_scheme == "iob2":
            for s in sentences:
                s.tags = conll.iob1_to_iob2(s.tags)
        return path, sentences

    def _features(self, sentences):
        c = self.config
        label_map = {tag: i for i, tag in enumerate(self.label_list)}
        return features.convert_sentences(sentences, self.tokenizer, label_map,
                                          c.max_seq_length, c.doc_stride, c.document_context)

    def _check_tags(self, path, sentences):
        known = set(self.label_list)
        for s in sentences:
            for offset, tag in enumerate(s.tags):
                if tag not in known:
                    raise conll.ConllError(
                        f"{path}:{s.line + offset}: tag {tag!r} does not occur in the "
                        f"training data {self.train_path} (tags: {self.label_list}).")

    def prepare(self, output_dir, do_train=False, do_eval=False, do_predict=False):
        """Reads the training data (the label list comes from it; written to
        label_list.txt) and the dev / test files the run uses, whose tags must all occur
        in training."""
        self.train_path, self.train_sentences = self.read("train")
        self._converted = {}
        self.label_list = conll.label_list(self.train_sentences)
        file_io.atomic_write_text(os.path.join(output_dir, LABEL_LIST),
                                  "\n".join(self.label_list) + "\n")
        if do_eval:
            self.dev = self.read("dev")
            self._check_tags(*self.dev)
        if do_predict:
            self.test = self.read("test")
            self._check_tags(*self.test)

    def input_paths(self):
        read = [self.train_path] + [split[0] for split in (self.dev, self.test) if split]
        return dict(super().input_paths(), data_dir=read)

    def build_model(self, bert_config):
        return BertTokenClassifier(bert_config, len(self.label_list),
                                   **self.config.head_kwargs())

    def train_input(self, global_batch_size, seed):
        c = self.config
        arrays, windows = self._features(self.train_sentences)
        logging.info("%d training sentences in %d windows, %d tags.",
                     len(self.train_sentences), len(windows), len(self.label_list))
        steps, warmup = steps_for_epochs(len(windows), global_batch_size,
                                         c.num_train_epochs, c.warmup_proportion)
        arrays = {k: v for k, v in arrays.items() if k != "predict_weights"}
        # The loss weighs only labelled positions, so batches are cut to their longest
        # sequence (not on TPUs): the same loss for less compute.
        return TrainInput(array_dataset_fn(arrays, global_batch_size, seed,
                                           pad_to_longest=not static_shapes_needed()),
                          steps, warmup, len(windows))

    def normalizers(self, batch):
        return {"labelled": tf.reduce_sum(batch["label_weights"])}

    def loss(self, model, batch, normalizers, training):
        logits = tf.cast(self.encode(model, batch, training)["logits"], tf.float32)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch["label_ids"],
                                                              logits=logits)
        loss = tf.reduce_sum(xent * batch["label_weights"]) / tf.maximum(
            normalizers["labelled"], 1.0)
        return loss, {"tokens": token_count(batch)}

    # ------------------------------------------------------------------ results
    def predict_tags(self, model, sentences, split=None):
        """Each sentence's predicted tags (one per word). `split` ("dev"): the sentences
        are that split's, evaluated at every checkpoint: their features are made once a
        run and kept."""
        if split is None:
            arrays, windows = self._features(sentences)
        else:
            if split not in self._converted:  # each evaluation of a run reads the same
                self._converted[split] = self._features(sentences)
            arrays, windows = self._converted[split]
        logits = loop.predict_arrays(model, arrays, ["logits"],
                                     self.config.predict_batch_size,
                                     skip_padding=self.padding_skipped(),
                                     sequence_outputs=["logits"],
                                     max_seq_length=self.config.max_seq_length)["logits"]
        return features.word_predictions(windows, logits.argmax(-1), sentences,
                                         self.label_list)

    def evaluate(self, model, strategy=None):
        """conlleval's figures on the dev file."""
        _, dev = self.dev
        return metrics.evaluate([s.tags for s in dev],
                                self.predict_tags(model, dev, "dev"))

    def format_results(self, results):
        return metrics.format_results(results)

    def predict(self, model):
        """test_predictions.txt (word, gold, predicted; -DOCSTART- between documents, the
        file conlleval reads), test_entities.tsv (a header; per predicted entity its
        sentence's number in the test file, its label, its words and their span) and
        test_results.txt."""
        path, test = self.test
        predicted = self.predict_tags(model, test)
        lines, document = [], None
        for sentence, tags in zip(test, predicted):
            if sentence.document != document:
                lines.append("-DOCSTART- O O\n")
                document = sentence.document
            lines.extend(f"{w} {g} {p}\n" for w, g, p in zip(sentence.words, sentence.tags,
                                                               tags))
            lines.append("\n")
        results = metrics.evaluate([s.tags for s in test], predicted)
        logging.info("***** Test results (%s) *****\n%s", path, self.format_results(results))
        entities = tables.tsv(
            ["sentence", "label", "text", "first_word", "end_word"],
            ([number, kind, " ".join(sentence.words[first:end]), first, end]
             for number, (sentence, tags) in enumerate(zip(test, predicted), 1)
             for first, end, kind in sorted(metrics.chunks(tags))))
        return {"test_predictions.txt": "".join(lines), "test_entities.tsv": entities,
                "test_results.txt": self.format_results(results)}, results

    def serving_requests(self):
        """The dev sentences as texts, their words joined by spaces."""
        return [" ".join(s.words) for s in self.dev[1]] if self.dev else None

    def export_options(self):
        return TaggingExportOptions(labels=tuple(self.label_list),
                                    **self.config.head_kwargs())

    def export(self, model, export_dir, tflite_quantize=False):
        c = self.config
        # here, not at the top: the export's modules import tensorflow-text (0.2 s)
        from tasks.tagging.export import save_for_export
        save_for_export(model, export_dir, self.export_options(), c.vocab_file,
                        c.do_lower_case, c.max_seq_length, tflite_quantize=tflite_quantize)
        logging.info("Exported a SavedModel to %s (serving_default: a sentence -> entities "
                     "with character offsets; serving_ids: token ids).", export_dir)
