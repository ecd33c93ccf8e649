"""Predict masked words with a checkpoint's masked-LM head (fill-mask).

Pipeline position: after pre-training (a Google release, a Hugging Face masked-LM model,
`run_pretraining.py`'s or `pretrain_from_text.py`'s export). Flags as
`extract_features.py`; the logic is `tasks.masked_lm.predict`.

    python fill_mask.py --input_file=input.txt --output_file=predictions.jsonl \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt [--top_k=5]

The input: one text per line, with `[MASK]` where a word is missing. The output: one JSON
line per text, `{"text": ..., "predictions": [[{"token": ..., "id": ..., "probability":
...}, ... top_k], ... one list per [MASK], in order]}`.
"""

import dataclasses
import json
import time

from absl import flags, logging

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting
from common.shared_settings import ModelVocabulary, SequenceLength, WeightedModelFiles
from training.config import BATCH, WHOLE_POSITIVE, check


@dataclasses.dataclass(frozen=True, kw_only=True)
class FillMaskSettings(WeightedModelFiles, ModelVocabulary, SequenceLength):
    """This script's settings, named as `extract_features.py`'s."""
    input_file: str = setting(help="Text file with one text per line, [MASK] where a "
                              "word is missing.")
    output_file: str = setting(help="JSON-lines file to write, one object per line.")
    top_k: int = setting(5, help="Predictions per [MASK], most probable first.")
    batch_size: int = setting(32, help="Texts per batch.")
    tied_embeddings_only: bool = setting(
        False, help="For a checkpoint without a masked-LM head (refused otherwise): score "
        "the vocabulary with the word embeddings alone (the last layer's vector times each "
        "word's embedding; no transform, no bias): rough predictions.")

    def __post_init__(self):
        check(self, {"top_k": WHOLE_POSITIVE, "batch_size": BATCH})


define_settings(FillMaskSettings)
FLAGS = flags.FLAGS


def read_texts(input_file):
    """The file's lines (stripped; an empty line is refused, as a line without
    [MASK]), each naming its line number when it has no [MASK]."""
    from tasks.masked_lm import masks
    try:
        with open(input_file, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except UnicodeDecodeError as err:
        raise ValueError(f"{input_file}: not UTF-8 text ({err}).") from None
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ValueError(f"{input_file}: empty; write one text per line, with {masks.MASK} "
                         f"where a word is missing.")
    for number, line in enumerate(lines, start=1):
        if masks.MASK not in line:
            raise ValueError(f"{input_file}:{number}: no {masks.MASK} in this line; write "
                             f"{masks.MASK} where a word is missing (e.g. \"The capital of "
                             f"France is {masks.MASK}.\").")
    return [line.strip() for line in lines]


def main(_):
    settings, = configs_from_flags(FLAGS, FillMaskSettings)
    from common import file_io
    from common.progress import Progress
    from tasks.masked_lm import masks
    from tasks.masked_lm.predict import FillMask

    file_io.refuse_inputs_as_outputs(
        {"output_file": settings.output_file},
        {name: getattr(settings, name) for name in ("input_file", "vocab_file",
                                                     "bert_config_file", "init_checkpoint")})
    texts = read_texts(settings.input_file)
    predictor = FillMask.from_files(
        settings.bert_config_file, settings.vocab_file, settings.init_checkpoint,
        settings.do_lower_case, settings.max_seq_length, settings.tied_embeddings_only,
        batch_size=settings.batch_size)
    start = time.time()
    progress = Progress("fill_mask", ["texts"], total=("texts", len(texts)))
    with file_io.atomic_output(settings.output_file, "w") as out:
        for first in range(0, len(texts), settings.batch_size):
            chunk = texts[first:first + settings.batch_size]
            try:
                answers = predictor(chunk, settings.top_k)
            except masks.NoMaskError as err:  # name the line, not the index in the batch
                raise ValueError(f"{settings.input_file}:{first + err.index + 1}: "
                                 f"{err.reason}") from None
            for answer in answers:
                out.write(json.dumps(answer, ensure_ascii=False) + "\n")
            progress.update(texts=len(chunk))
    progress.close()
    logging.info("Wrote the top %d predictions of every [MASK] of %d texts to %s in %.1f s.",
                 settings.top_k, len(texts), settings.output_file, time.time() - start)


if __name__ == "__main__":
    cli.run(main)
