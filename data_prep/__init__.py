"""Corpora -> pre-training TFRecords, the library under the data tools at the repository's
root (`extract_wikipedia.py`, `extract_wikitext.py`, `extract_bookcorpus.py`,
`build_vocab.py`, `create_pretraining_data.py`, `inspect_tfrecord.py`): dump, WikiText and
book reading (`wikipedia_dump`, `wikitext_cleaning`, `wiki_namespaces`, `wikitext_dataset`,
`bookcorpus`), sentence splitting (`sentences`), corpus reading (`corpus`), documents
written (`document_writer`), the instances, their encoding and sharded writing
(`pretraining_data`, `pretraining_instances`, `fast_pretraining`, `example_encoder`,
`pretraining_records`) and the records read back (`record_inspection`).

Pipeline position: the first stage (text -> TFRecords). It uses the text layer (`text`)
and `common`; the tools' flags live in the root scripts. The fine-tuning tasks' readers
live in their folders under `tasks/`.
"""

from common import quiet

quiet.quiet_tensorflow_start()  # when we import TensorFlow: no start-up lines
