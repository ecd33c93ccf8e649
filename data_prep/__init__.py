"""Corpora -> pre-training TFRecords: Wikipedia, WikiText and BookCorpus extraction
(`extract_wikipedia`, `wikitext_cleaning`, `wiki_namespaces`; `extract_wikitext`,
`wikitext_dataset`; `extract_bookcorpus`),
sentence splitting (`sentences`), corpus reading (`corpus`), vocabulary building
(`build_vocab`, on `text.vocabulary`), and `create_pretraining_data` with its instances,
encoding and sharded writing (`pretraining_instances`, `fast_pretraining`,
`example_encoder`, `pretraining_records`, `document_writer`), and `inspect_tfrecord`.

Pipeline position: the first stage (text -> TFRecords). It uses the text layer (`text`)
and `common`; its tools' command lines go through `cli`. The fine-tuning tasks' readers
live in their folders under `tasks/`.
"""

from common import quiet

quiet.quiet_tensorflow_start()  # when we import TensorFlow: no start-up lines
