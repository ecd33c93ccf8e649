"""A folder of plain-text books (BookCorpus-style, one book per .txt file) -> document
files: one sentence per line, a blank line between books.

Pipeline position: **books -> documents** -> build_vocab / create_pretraining_data.

Each book is one document. Paragraphs (blank-line separated, or one per line) are split
into sentences with the same segmenter as `extract_wikipedia`. Books are read in sorted
order, cleaned on every core, and written to files under temporary names.

    python extract_bookcorpus.py --input_dir=books --output_dir=book_docs \
      --num_output_files=16 [--language=en]
"""

import dataclasses
import multiprocessing
import sys
import time

from absl import flags

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting
from common.shared_settings import DocumentOutput
from data_prep.bookcorpus import book_sentences, find_books


@dataclasses.dataclass(frozen=True, kw_only=True)
class BookSettings(DocumentOutput):
    """The tool's settings."""
    input_dir: str = setting(help="Folder of book .txt files (searched recursively).")
    language: str = setting("en", help="Language code for sentence splitting.")


define_settings(BookSettings)
FLAGS = flags.FLAGS


def main(_):
    configs_from_flags(FLAGS, BookSettings)  # required settings given, values checked
    from common.progress import Progress
    from data_prep.document_writer import DocumentWriter
    from data_prep.sentences import check_language

    check_language(FLAGS.language)
    books = find_books(FLAGS.input_dir)
    progress = Progress("extract_bookcorpus", ["books", "sentences"])
    start, empty, invalid = time.time(), [], 0
    ctx = multiprocessing.get_context("spawn")
    with DocumentWriter(FLAGS.output_dir, "books", FLAGS.num_output_files,
                        inputs={"input_dir": books}) as writer, \
            ctx.Pool(max(1, FLAGS.num_workers)) as pool:
        for path, sentences, bad in pool.imap(book_sentences,
                                              [(b, FLAGS.language) for b in books]):
            if not sentences:
                empty.append(path)
            invalid += bad
            writer.write(sentences)
            progress.update(books=1, sentences=len(sentences))
    progress.close()
    notes = (f"; {len(empty)} empty books skipped ({', '.join(empty[:3])}...)" if empty else "")
    notes += f"; {invalid} bytes that were not UTF-8 dropped" if invalid else ""
    print(f"Wrote {writer.documents:,} books, {writer.sentences:,} sentences to "
          f"{FLAGS.num_output_files} files in {FLAGS.output_dir} "
          f"({time.time() - start:.1f} s){notes}.", file=sys.stderr)


if __name__ == "__main__":
    cli.run(main, log_beside_output=True)
