"""Train sentence embeddings: a bi-encoder on sentence pairs (Sentence-BERT), whose
vectors' cosine says how similar two texts are (semantic search, deduplication,
clustering).

Pipeline position: a pre-trained checkpoint (Google's, Hugging Face's, a
sentence-transformers folder or this project's) -> here -> eval results (Spearman's
correlation of the dev pairs' cosines with their scores) and test_results.tsv (each test
pair's cosine). Same flags as `run_classifier.py`; the data is GLUE's STS-B folder or your
own pairs (`tasks/sentence_embedding/data.py`). The task is `tasks.sentence_embedding`; the
run is `training.runner.run`. sentence-transformers' STS-B recipe: 4 epochs at learning
rate 2e-5, batch size 16, cosine regression on the scores scaled to [0, 1]:

    python run_sentence_embedding.py --data_dir=glue_data/STS-B \
      --vocab_file=all-MiniLM-L6-v2/vocab.txt \
      --bert_config_file=all-MiniLM-L6-v2/config.json \
      --init_checkpoint=all-MiniLM-L6-v2/model.safetensors --do_lower_case \
      --do_train --do_eval --max_seq_length=128 --train_batch_size=16 \
      --learning_rate=2e-5 --num_train_epochs=4 --output_dir=stsb_out
"""

from absl import app, flags

import cli
from cli import training_run
from tasks.sentence_embedding import ENTRY as TASK

training_run.define_flags(TASK)
FLAGS = flags.FLAGS


def main(_):
    if FLAGS.export_dir:
        raise app.UsageError("--export_dir: no SavedModel of sentence embeddings yet; "
                             "export_huggingface.py --init_checkpoint=<output_dir>/best/"
                             "model.ckpt --bert_config_file=... writes them for "
                             "sentence-transformers.")
    training_run.run(TASK, FLAGS)


if __name__ == "__main__":
    cli.run(main)
