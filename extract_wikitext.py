"""WikiText (Merity et al., 2016: WikiText-2 and -103, the `wiki.*.tokens` / `*.txt`
files as released) -> document files: one sentence per line, a blank line between
articles.

Pipeline position: **WikiText -> documents** -> build_vocab / create_pretraining_data /
pretrain_from_text.py.

Read as it is, every paragraph and heading of the release would be a document of its
own and every paragraph one long "sentence": here an article is one document, its
paragraphs split into sentences (`data_prep.wikitext_dataset`). Files are read as
create_pretraining_data reads them and written under temporary names.

    python extract_wikitext.py --input_file=wikitext-103/wiki.train.tokens \
      --output_dir=wikitext_docs --num_output_files=4
"""

import dataclasses
import sys
import time

from absl import flags

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting

# Largest share of a file's lines that may hold bytes that are not UTF-8 (dropped, as
# create_pretraining_data drops them); more is refused: not WikiText.
MAX_INVALID_UTF8_SHARE = 0.5


@dataclasses.dataclass(frozen=True, kw_only=True)
class WikiTextSettings:
    """The tool's settings."""
    input_file: str = setting(help="WikiText files: comma-separated files or globs.")
    output_dir: str = setting(help="Folder for the document files.")
    num_output_files: int = setting(1, help="How many document files to write.")
    language: str = setting("en", help="Language code for sentence splitting.")


define_settings(WikiTextSettings)
FLAGS = flags.FLAGS


def main(_):
    configs_from_flags(FLAGS, WikiTextSettings)  # required settings given, values checked
    from data_prep import corpus
    from data_prep.document_writer import DocumentWriter
    from data_prep.sentences import check_language
    from data_prep.wikitext_dataset import TITLE, articles

    check_language(FLAGS.language)
    files = corpus.expand_input_patterns(FLAGS.input_file)
    stats, titles = corpus.CorpusStats(), [0]

    def lines(path):  # read as create_pretraining_data reads (`data_prep.corpus`)
        for raw in corpus.iter_lines(path, stats):
            line = raw.decode("utf-8")
            titles[0] += bool(TITLE.match(line))
            yield line

    start = time.time()
    with DocumentWriter(FLAGS.output_dir, "wikitext", FLAGS.num_output_files,
                        inputs={"input_file": files}) as writer:
        for path in files:
            for sentences in articles(lines(path), FLAGS.language):
                writer.write(sentences)
            # Raised inside the writer: nothing is published.
            corpus.check_text(stats.invalid_by_file, MAX_INVALID_UTF8_SHARE, flag=None)
        if not titles[0]:
            raise ValueError(f"{', '.join(files)}: no article title (a line \" = Title = \"): "
                             "this is not WikiText as released. Text that is already one "
                             "sentence per line goes to pretrain_from_text.py as it is.")
    print(f"Wrote {writer.documents:,} articles, {writer.sentences:,} sentences to "
          f"{FLAGS.num_output_files} file{'s' * (FLAGS.num_output_files != 1)} in "
          f"{FLAGS.output_dir} ({time.time() - start:.1f} s, sentences split as "
          f"'{FLAGS.language}').", file=sys.stderr)


if __name__ == "__main__":
    cli.run(main, log_beside_output=True)
