"""Pre-train a BERT from plain text in a time budget, with one command: from scratch, or
continuing a released model on the text (domain- or task-adaptive pre-training).

Pipeline position: text -> vocabulary -> TFRecords -> pre-training -> a checkpoint for
the fine-tuning scripts. Every stage is the project's own tool (`build_vocab`,
`create_pretraining_data`, `run_pretraining.py`), with the CPU recipe of
`tasks.pretraining.from_text` (docs/pretraining.md, "Pre-training on a CPU"), or, with
`--init_checkpoint`, the model's own vocabulary and sizes and the schedule of
`tasks.pretraining.adaptation`; rerunning the same command resumes where it stopped.

    python pretrain_from_text.py --input_text='books/*.txt,wiki.txt' --output_dir=my_bert \
      [--budget_minutes=60] [--do_lower_case=False]
    python pretrain_from_text.py --input_text=reviews.txt --output_dir=my_adapted \
      --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
      --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt [--domain_words=500]
    python pretrain_from_text.py --input_text=reviews.txt --output_dir=my_adapted \
      --init_checkpoint=all-MiniLM-L6-v2/   # a model folder: its config and vocab.txt

The input: text files, one sentence per line, a blank line between documents; or one text
per line (reviews, tweets, abstracts: `--line_by_line`, the default for a file without a
blank line). The output folder gets vocab.txt, bert_config.json, the TFRecords and the
run; the checkpoint to fine-tune is output_dir/pretraining/export/bert_model.ckpt.
"""

import dataclasses
import os
import shutil
import sys
import tempfile
import time
from typing import Optional

from absl import flags, logging

import cli
from cli.flags import configs_from_flags, define_settings
from common import cpu
from common.settings import setting
from common.shared_settings import (
    BERT_CONFIG_HELP,
    CHECKPOINT_HELP,
    VOCAB_FILE_HELP,
    Casing,
    WholeWordMasking,
)
from tasks.pretraining.from_text import OBJECTIVES
from training.config import DTYPES, NON_NEGATIVE, POSITIVE, check, check_learning_rate


@dataclasses.dataclass(frozen=True, kw_only=True)
class FromTextSettings(Casing, WholeWordMasking):
    """The command's settings; the recipe is `tasks.pretraining.recipe.RECIPE`."""
    input_text: str = setting(help="Text files (comma-separated files or globs): one "
                              "sentence per line, a blank line between documents; or one "
                              "text per line (--line_by_line).")
    output_dir: str = setting(help="Where the vocabulary, records and run go.")
    budget_minutes: float = setting(60.0, help="Minutes of pre-training, its steps counted "
                                    "from its own speed (the stages before it take a few "
                                    "more).")
    objective: Optional[str] = setting(
        None, choices=OBJECTIVES, help="Pre-training objective: the masked LM alone (mlm), "
        "with next-sentence prediction (mlm_nsp, the original's), or with sentence-order "
        "prediction (mlm_sop: ALBERT's; is segment B before A?). Default: the recipe's "
        "(docs/pretraining.md says how it was chosen).")
    dtype: Optional[str] = setting(
        None, choices=DTYPES, help="Compute dtype of the pre-training (weights stay "
        "float32). bfloat16 buys more steps in the budget where the CPU has AVX512_BF16 "
        "or AMX (docs/pretraining.md). Default: float32, or what a resumed run started "
        "with.")
    line_by_line: Optional[bool] = setting(
        None, help="Each line of the input is a text of its own (a review, a tweet, an "
        "abstract), not a sentence of a document: the held-out share is taken in texts, "
        "and for the masked LM the texts are packed into full sequences. Default: so for "
        "each file with no blank line between two lines of text, said in one line; "
        "false: such a file is one document.")
    split_sentences: Optional[str] = setting(
        None, help="The input holds paragraphs, not sentences, per line: split each line "
        "into sentences with the rules of this language (a code: en, de, ja, ...; sentencex, "
        "as data_prep's extractors). Default: each line is one sentence, as "
        "create_pretraining_data.py reads it.")
    seed: int = setting(12345, help="Seed for the held-out split, masking and weights.")
    # The model files' flags mean what they mean in every tool (common.shared_settings);
    # here --init_checkpoint continues that model on the text (domain- or task-adaptive
    # pre-training: its vocabulary, casing, sizes and masked-LM head kept), and it may be
    # a model folder, whose bert_config.json (config.json) and vocab.txt are the defaults.
    init_checkpoint: Optional[str] = setting(None, help=CHECKPOINT_HELP)
    bert_config_file: Optional[str] = setting(None, help=BERT_CONFIG_HELP)
    vocab_file: Optional[str] = setting(None, help=VOCAB_FILE_HELP)
    domain_words: int = setting(
        0, help="With --init_checkpoint: put up to N frequent words of the text that the "
        "vocabulary splits into several pieces into its [unusedK] lines (every other line "
        "and id unchanged), each word's embedding starting from the mean of its old "
        "pieces'; the log names each word and slot.")

    learning_rate: Optional[float] = setting(
        None, help="Peak learning rate (default: the recipe's, 7e-4 from scratch, 2e-5 "
        "adapting a released model; docs/pretraining.md).")
    gradient_checkpointing: bool = setting(
        False, help="Recompute each Transformer layer's activations in the backward pass: "
        "less memory for a larger model (an adapted BERT-Large), about a third more "
        "compute a step (the plan measures it); docs/memory.md.")

    def __post_init__(self):
        check(self, {"budget_minutes": POSITIVE, "domain_words": NON_NEGATIVE,
                     "learning_rate": POSITIVE})
        check_learning_rate(self.learning_rate)
        if not self.init_checkpoint:
            given = [name for name in ("bert_config_file", "vocab_file")
                     if getattr(self, name)] + (["domain_words"] if self.domain_words
                                                  else [])
            if given:
                raise ValueError(
                    f"--{given[0]} continues a released model: give --init_checkpoint "
                    f"(its checkpoint or folder) too. Without it, the command pre-trains "
                    f"from scratch and learns a vocabulary of the text.")
        from text.chinese_words import check_segmenter
        check_segmenter(self.do_whole_word_mask, self.word_segmenter)
        if self.split_sentences is not None:
            from data_prep.sentences import check_language
            check_language(self.split_sentences, "--split_sentences")
        if os.path.exists(self.output_dir) and not os.path.isdir(self.output_dir):
            raise ValueError(f"--output_dir={self.output_dir} is a file: give a folder "
                             "(a new one, or the one of a run to resume).")


define_settings(FromTextSettings)
FLAGS = flags.FLAGS


def say(text):
    print(text, file=sys.stderr, flush=True)


def fine_tuning_advice(export, vocab, do_lower_case, pair_pooling=True):
    """The commands that fine-tune the run's checkpoint: on the user's own labelled
    sentences (the generic task's files and columns), and on a GLUE task.
    `pair_pooling`: the model pools by comparing the two segments (the recipe's)."""
    model = (f"--bert_config_file={export}/bert_config.json "
             f"--init_checkpoint={export}/bert_model.ckpt \\\n    --vocab_file={vocab} "
             f"--do_lower_case={do_lower_case} --max_seq_length=128")
    return (
        "Fine-tune it on your own sentence-classification set (my_data/train.tsv and "
        "dev.tsv with the columns text_a and label; for sentence pairs"
        + (", which its pooling compares," if pair_pooling else "")
        + " add a column text_b and --text_b_column=text_b; "
        "docs/classification.md):\n"
        f"  python run_classifier.py --task_name=generic --data_dir=my_data "
        f"--text_a_column=text_a --label_column=label \\\n    {model} --do_train --do_eval "
        f"--output_dir=my_classifier\n"
        "or on a GLUE task, e.g. SST-2 in glue_data/SST-2:\n"
        f"  python run_classifier.py --task_name=SST-2 --data_dir=glue_data/SST-2 \\\n"
        f"    {model} --do_train --do_eval --output_dir=sst2_classifier")


def main(_):
    configs_from_flags(FLAGS, FromTextSettings)  # required settings given, values checked
    from data_prep import corpus
    from tasks.pretraining import adaptation, from_text
    from training import runner
    from training.config import RuntimeConfig
    from training.preemption import TrainingStopped

    files = corpus.expand_input_patterns(FLAGS.input_text)
    out = FLAGS.output_dir
    adapting = bool(FLAGS.init_checkpoint)
    do_lower_case = FLAGS.do_lower_case
    if adapting:
        config_given, vocab_given = adaptation.model_files(
            FLAGS.init_checkpoint, FLAGS.bert_config_file, FLAGS.vocab_file)
        do_lower_case = adaptation.casing_of(FLAGS.init_checkpoint, do_lower_case,
                                             FLAGS["do_lower_case"].present)
        from text.tokenization import validate_case_matches_checkpoint
        validate_case_matches_checkpoint(do_lower_case, FLAGS.init_checkpoint)
    recipe = from_text.RECIPE
    os.makedirs(out, exist_ok=True)
    adaptation.check_same_start(out, {"init_checkpoint": FLAGS.init_checkpoint,
                                      "domain_words": FLAGS.domain_words})
    start = time.time()

    say("[1/5] Documents: held-out share for evaluation")
    train_text, heldout_text = from_text.prepare_text(
        files, out, FLAGS.split_sentences, FLAGS.line_by_line,
        FLAGS.objective or (adaptation.ADAPTATION if adapting else recipe)["objective"],
        FLAGS.seed)
    say(f"      {train_text}, {heldout_text}")
    init_checkpoint = None
    if adapting:
        say(f"[2/5] The model to continue: {FLAGS.init_checkpoint}, its vocabulary"
            + (f" with up to {FLAGS.domain_words:,} domain words" if FLAGS.domain_words
               else "") + " and sizes")
        vocab, config_file, init_checkpoint, notes = adaptation.prepare_model(
            out, FLAGS.init_checkpoint, config_given, vocab_given, do_lower_case,
            train_text, FLAGS.domain_words,
            FLAGS.objective or adaptation.ADAPTATION["objective"])
        for note in notes:
            say(f"      {note}")
        from modeling import BertConfig
        recipe = adaptation.recipe_for(BertConfig.from_json_file(config_file))
    else:
        say("[2/5] WordPiece vocabulary")
        vocab = from_text.learn_vocabulary(train_text, out, from_text.RECIPE["vocab_size"],
                                           do_lower_case)
        config_file = from_text.bert_config(out, vocab)
    say(f"      {vocab}, {config_file}")
    if FLAGS.learning_rate:
        recipe = dict(recipe, learning_rate=FLAGS.learning_rate)
    plan = from_text.kept_plan(out)  # a resumed run keeps its schedule
    for name in ("objective", "dtype", "do_whole_word_mask", "word_segmenter"):
        given = getattr(FLAGS, name)
        if plan is not None and FLAGS[name].present and getattr(plan, name) != given:
            raise ValueError(f"{os.path.join(out, 'recipe.json')}: this run pre-trains with "
                             f"--{name}={getattr(plan, name)}, not {given}: give another "
                             f"--output_dir, or resume without --{name}.")
    objective = plan.objective if plan else FLAGS.objective or recipe["objective"]
    # The training records' masking (the held-out records mask WordPieces alone, so that
    # held-out accuracy reads the same with or without it).
    masking = {name: getattr(plan if plan else FLAGS, name)
               for name in ("do_whole_word_mask", "word_segmenter")}
    sentence_order = objective == "mlm_sop"  # ALBERT's pairs in the records
    pack = from_text.packs_texts(out, objective)  # texts one per line, the masked LM
    records_dir = os.path.join(out, "records")
    heldout_records = [os.path.join(records_dir, from_text.heldout_records_name(objective))]
    from_text.write_records(heldout_text, heldout_records, vocab, do_lower_case, 1,
                            FLAGS.seed + 1, masked_lm_prob=from_text.HELDOUT_MASKED_LM_PROB,
                            sentence_order=sentence_order, recipe=recipe, pack=pack)
    say("[3/5] Speed of a training step here, to size the run to the budget")
    runtime = RuntimeConfig(seed=FLAGS.seed,
                            dtype=plan.dtype if plan else FLAGS.dtype or "float32")
    if plan is None:
        scratch = tempfile.mkdtemp(prefix="calibration-", dir=out)
        try:
            seconds = from_text.calibrate(
                heldout_text, vocab, do_lower_case, config_file, scratch, runtime,
                objective, steps=from_text.calibration_steps(FLAGS.budget_minutes),
                seed=FLAGS.seed + 2, recipe=recipe,
                gradient_checkpointing=FLAGS.gradient_checkpointing, pack=pack, **masking)
        except TrainingStopped as stopped:  # its checkpoint goes with the scratch folder
            raise stopped.saying(
                "the speed measurement (stage 3) is not kept. Rerun the same command: it "
                "keeps the documents, vocabulary and held-out records, and measures "
                "again.") from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        plan = from_text.choose_plan(out, FLAGS.budget_minutes, os.path.getsize(train_text),
                                     seconds, objective, runtime.dtype, recipe, **masking)
    say(f"      {plan.seconds_per_step:.2f} s a step: {plan.num_train_steps:,} steps "
        f"({plan.objective}, {plan.dtype}"
        + (", whole words masked" + (f", Chinese ones as {plan.word_segmenter} finds them"
                                     if plan.word_segmenter != "none" else "")
           if plan.do_whole_word_mask else "") + ") of "
        f"{recipe['train_batch_size']} sequences ({plan.num_warmup_steps:,} "
        f"warm-up, peak learning rate {recipe['learning_rate']:g}); the corpus masked "
        f"{plan.dupe_factor} times")
    native = cpu.native_bfloat16()
    if plan.dtype == "float32" and native:
        say(f"      This CPU multiplies bfloat16 natively ({native}): --dtype=bfloat16 "
            "trains the recipe faster to the same held-out loss (docs/pretraining.md, "
            "\"Pre-training on a CPU\"); it takes a new --output_dir.")
    warnings = [] if adapting else [from_text.shortfall(plan), from_text.small_corpus(
        os.path.getsize(train_text))]
    for warning in filter(None, warnings):
        logging.warning("%s", warning)
    say("[4/5] Pre-training TFRecords")
    records = [os.path.join(records_dir, f"train-{i:02d}.tfrecord") for i in range(2)]
    from_text.write_records(train_text, records, vocab, do_lower_case,
                            plan.dupe_factor, FLAGS.seed,
                            sentence_order=sentence_order, recipe=recipe, pack=pack,
                            **masking)
    say(f"      {records_dir}")
    say(f"[5/5] Pre-training ({FLAGS.budget_minutes:g} minutes, the steps counted again "
        f"from its own during warm-up; progress in {os.path.join(out, 'log.txt')})")
    training_start = time.time()
    head_steps = adaptation.new_head_steps(plan.num_train_steps) if adapting and \
        not adaptation.kept_start(out).get("has_head", True) else 0
    if head_steps:
        say(f"      first the new masked-LM head alone, {head_steps:,} steps")
        init_checkpoint = adaptation.train_new_head(out, records, heldout_records,
                                                    config_file, init_checkpoint,
                                                    head_steps, runtime, recipe)
    budget = from_text.time_budget(out, plan, training_start + FLAGS.budget_minutes * 60,
                                   head_steps)
    task = from_text.pretraining_task(records, heldout_records, config_file,
                                      plan.num_train_steps - head_steps,
                                      plan.num_warmup_steps,
                                      plan.objective,
                                      pretraining_dropout=recipe["pretraining_dropout"],
                                      recipe=recipe, init_checkpoint=init_checkpoint)
    result = runner.run(task, from_text.trainer_config(
        os.path.join(out, "pretraining"), plan.num_train_steps - head_steps, recipe,
        gradient_checkpointing=FLAGS.gradient_checkpointing), runtime, do_train=True,
        do_eval=True, time_budget=budget)
    export = os.path.join(out, "pretraining", "export")
    results = result.eval_results or {}
    steps = int(results.get("global_step", 0)) + head_steps
    trained = (f" in {(budget.last_loop_end - training_start) / 60:.1f} minutes"
               if budget.last_loop_end else " (resumed)")
    say(f"\nDone in {(time.time() - start) / 60:.1f} minutes: {steps:,} steps of "
        f"pre-training{trained}. Held-out masked-LM accuracy "
        f"{results.get('masked_lm_accuracy', float('nan')):.1%}, perplexity "
        f"{results.get('masked_lm_perplexity', float('nan')):.1f} (over "
        f"{results.get('masked_lm_predictions', 0):,.0f} masked tokens).")
    if "next_sentence_accuracy" in results:
        task = "sentence-order" if sentence_order else "next-sentence"
        say(f"Held-out {task} accuracy {results['next_sentence_accuracy']:.1%} "
            f"(always answering the more frequent label: "
            f"{results['next_sentence_majority_accuracy']:.1%}).")
    say(f"The checkpoint: {export}/bert_model.ckpt (with bert_config.json and {vocab}).")
    from modeling import BertConfig
    pooling = BertConfig.from_json_file(os.path.join(export, "bert_config.json")).pooling
    say(fine_tuning_advice(export, vocab, do_lower_case, pooling == "pair_mean"))
    logging.info("Pre-training from text finished: %s", results)


if __name__ == "__main__":
    cli.run(main)
