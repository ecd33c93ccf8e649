"""Extract article text from a Wikipedia dump (`*-pages-articles*.xml.bz2`) into document
files: one sentence per line, a blank line between articles.

Pipeline position: **dump -> documents** -> build_vocab / create_pretraining_data.

Only articles (namespace 0) are kept, redirects skipped, and of each article only its prose
passages (no lists, tables, headers, templates, references, files, categories:
`wikitext_cleaning`, with the namespace names the dump's <siteinfo> gives).
Sentences are split by `sentencex` in the dump's language. The XML is streamed; cleaning
runs on every core; output files are written under temporary names and renamed at the end.

    python extract_wikipedia.py --input_file=enwiki-latest-pages-articles.xml.bz2 \
      --output_dir=wiki_docs --num_output_files=64
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
from data_prep.wikipedia_dump import iter_articles, language_of


@dataclasses.dataclass(frozen=True, kw_only=True)
class WikipediaSettings(DocumentOutput):
    """The tool's settings."""
    input_file: str = setting(help="The dump: .xml.bz2 or .xml.")
    language: str = setting("", help="Language code for sentence splitting; by default "
                            "the dump's own (enwiki -> en, kowiki -> ko).")
    max_pages: int = setting(0, help="Stop after this many articles (0: all).")


define_settings(WikipediaSettings)
FLAGS = flags.FLAGS


def main(_):
    configs_from_flags(FLAGS, WikipediaSettings)  # required settings given, values checked
    from common.progress import Progress
    from data_prep.document_writer import DocumentWriter
    from data_prep.sentences import check_language
    from data_prep.wikitext_cleaning import article_sentences

    if FLAGS.language:  # else the dump's own ("simple", "be-x-old"...)
        check_language(FLAGS.language)
    stats = {"pages": 0, "redirects": 0, "other_namespaces": 0, "dbname": ""}
    articles = iter_articles(FLAGS.input_file, stats)
    first = next(articles, None)  # reads the siteinfo, hence the language
    language = FLAGS.language or language_of(stats["dbname"])
    if first is None:
        raise ValueError(f"{FLAGS.input_file}: no article (namespace 0, not a redirect).")

    namespaces = tuple(stats.get("namespaces", ()))

    def work():
        yield first[1], language, namespaces
        for count, (_, text) in enumerate(articles, start=2):
            if FLAGS.max_pages and count > FLAGS.max_pages:
                break
            yield text, language, namespaces

    progress = Progress("extract_wikipedia", ["articles", "sentences"])
    start = time.time()
    ctx = multiprocessing.get_context("spawn")
    with DocumentWriter(FLAGS.output_dir, "wiki", FLAGS.num_output_files,
                        inputs={"input_file": FLAGS.input_file}) as writer, \
            ctx.Pool(max(1, FLAGS.num_workers)) as pool:
        # imap keeps the dump's order, so the output is deterministic.
        for sentences in pool.imap(article_sentences, work(), chunksize=16):
            writer.write(sentences)
            progress.update(articles=1, sentences=len(sentences))
        if not writer.documents:  # raised inside: nothing is published
            raise ValueError(
                f"{FLAGS.input_file}: no article has prose left after cleaning (of "
                f"{progress.counts['articles']:,} read; passages under 20 characters, lists, "
                f"tables and templates are dropped).")
    progress.close()
    print(f"Read {stats['pages']:,} pages: {writer.documents:,} articles with text, "
          f"{stats['redirects']:,} redirects and {stats['other_namespaces']:,} pages of other "
          f"namespaces skipped; wrote {writer.sentences:,} sentences to "
          f"{FLAGS.num_output_files} files in {FLAGS.output_dir} ({time.time() - start:.1f} s,"
          f" sentences split as '{language}').", file=sys.stderr)


if __name__ == "__main__":
    cli.run(main, log_beside_output=True)
