"""Create masked-LM / next-sentence pre-training TFRecords from documents: the original
release's `create_pretraining_data.py`, at the repository root as there, with its flags.

Pipeline position: documents (one sentence per line, a blank line between documents) ->
**TFRecords** -> run_pretraining.py. The tool is `data_prep.create_pretraining_data`
(also `python -m data_prep.create_pretraining_data`); see docs/data.md.

    python create_pretraining_data.py --input_file='wiki_docs/*.txt' \
      --output_file=tfrecords/part-00.tfrecord,tfrecords/part-01.tfrecord \
      --vocab_file=vocab.txt --do_lower_case --max_seq_length=128 \
      --max_predictions_per_seq=20 --masked_lm_prob=0.15 --dupe_factor=10
"""

from data_prep.create_pretraining_data import run_as_script

if __name__ == "__main__":
    run_as_script()
