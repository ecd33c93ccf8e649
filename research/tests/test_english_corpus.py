"""The recipe's English corpus builder (`research.paper.english_corpus`): the optional
task-text source."""

import pytest


def test_the_task_text_source_keeps_training_sentences_without_labels(tmp_path):
    """The corpus's optional SST-2 source (task-adaptive pre-training) takes train.tsv's
    sentences only: no label, no header, nothing of dev.tsv; an unknown source is refused."""
    from research.paper import english_corpus
    glue = tmp_path / "shared" / "glue" / "SST-2"
    glue.mkdir(parents=True)
    (glue / "train.tsv").write_text("sentence\tlabel\nhide new secretions \t0\n"
                                    "contains no wit \t0\nloves its characters \t1\n")
    (glue / "dev.tsv").write_text("sentence\tlabel\nit 's a charming journey \t1\n")
    [path] = english_corpus.sst2(str(tmp_path / "shared"), str(tmp_path), rows_per_document=2)
    with open(path, encoding="utf-8") as f:
        assert f.read() == ("hide new secretions\ncontains no wit\n\nloves its characters\n")
    with pytest.raises(SystemExit, match="task text qnli: not a source"):
        english_corpus.build(str(tmp_path / "shared"), str(tmp_path / "out"), ("qnli",))
