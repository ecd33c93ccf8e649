"""Extract article text from a Wikipedia dump (`*-pages-articles*.xml.bz2`) into document
files: one sentence per line, a blank line between articles.

Pipeline position: **dump -> documents** -> build_vocab / create_pretraining_data.

Only articles (namespace 0) are kept, redirects skipped, and of each article only its prose
passages (no lists, tables, headers, templates, references, files, categories:
`wikitext_cleaning`, with the namespace names the dump's <siteinfo> gives).
Sentences are split by `sentencex` in the dump's language. The XML is streamed; cleaning
runs on every core; output files are written under temporary names and renamed at the end.

    python -m data_prep.extract_wikipedia --input_file=enwiki-latest-pages-articles.xml.bz2 \
      --output_dir=wiki_docs --num_output_files=64
"""

import bz2
import dataclasses
import multiprocessing
import os
import sys
import time
import xml.etree.ElementTree as ET

from absl import flags

if not __package__:  # run by its path: this project's packages import from the
    # repository root, as under `python -m data_prep.<tool>`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cli  # noqa: E402
from cli.flags import configs_from_flags, define_settings  # noqa: E402
from common.settings import setting  # noqa: E402
from common.shared_settings import DocumentOutput  # noqa: E402


@dataclasses.dataclass(frozen=True, kw_only=True)
class WikipediaSettings(DocumentOutput):
    """The tool's settings."""
    input_file: str = setting(help="The dump: .xml.bz2 or .xml.")
    language: str = setting("", help="Language code for sentence splitting; by default "
                            "the dump's own (enwiki -> en, kowiki -> ko).")
    max_pages: int = setting(0, help="Stop after this many articles (0: all).")


define_settings(WikipediaSettings)
FLAGS = flags.FLAGS


def iter_articles(path, stats):
    """Yields (title, wikitext) of the namespace-0, non-redirect pages of a dump; sets
    stats["dbname"] and stats["namespaces"] (the names of the other namespaces, from the
    dump's <siteinfo>)."""
    opener = bz2.open if path.endswith(".bz2") else open
    try:
        handle = opener(path, "rb")
    except OSError as e:
        raise ValueError(f"{path}: cannot read the dump ({e}).") from e
    with handle:
        namespace = None
        try:
            for event, elem in ET.iterparse(handle, events=("start", "end")):
                tag = elem.tag.rsplit("}", 1)[-1]
                if namespace is None and event == "start":
                    namespace = elem.tag[:-len(tag)]
                    if tag != "mediawiki":
                        raise ValueError(f"{path}: not a MediaWiki XML dump (root element "
                                         f"<{tag}>).")
                if event != "end":
                    continue
                if tag == "dbname":
                    stats["dbname"] = (elem.text or "").strip()
                elif tag == "namespace" and elem.get("key") != "0" and elem.text:
                    stats.setdefault("namespaces", []).append(elem.text.strip())
                elif tag == "page":
                    stats["pages"] += 1
                    ns = elem.findtext(namespace + "ns")
                    text = elem.findtext(f"{namespace}revision/{namespace}text") or ""
                    redirect = elem.find(namespace + "redirect") is not None or \
                        text.lstrip()[:9].upper() == "#REDIRECT"
                    if ns != "0":
                        stats["other_namespaces"] += 1
                    elif redirect:
                        stats["redirects"] += 1
                    else:
                        yield elem.findtext(namespace + "title") or "", text
                    elem.clear()
        except ET.ParseError as e:
            raise ValueError(f"{path}: malformed XML ({e}).") from e
        except (EOFError, OSError) as e:
            raise ValueError(f"{path}: the dump is truncated or not bz2 ({e}).") from e


def language_of(dbname):
    """"enwiki" -> "en", "zh_yuewiki" -> "zh-yue"."""
    return dbname[:-len("wiki")].replace("_", "-") if dbname.endswith("wiki") else "en"


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


def run_as_script():
    """The tool's command line (also the root script's, where there is one)."""
    cli.run(main, log_beside_output=True)


if __name__ == "__main__":
    run_as_script()
